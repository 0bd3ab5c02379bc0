#!/usr/bin/env bash
# Build the three release binaries (envreg, facet, agent-exec) from this checkout with
# `cargo build --release --locked` and install them into DIR/bin (default ~/.local/bin).
#
#   scripts/install.sh [--prefix DIR]
#
# Each binary is copied next to its destination and renamed over it, so a running
# `envreg serve` or a hook in flight keeps its old file and nothing is ever half
# written. CARGO_TARGET_DIR is honoured (reuse a warm build); CARGO names the cargo to
# run (default: cargo on PATH). Exit codes: 0 installed, 1 build or install failed,
# 2 usage error.
set -euo pipefail

BINARIES=(envreg facet agent-exec)

usage() {
  cat <<'EOF'
usage: scripts/install.sh [--prefix DIR]

Builds envreg, facet and agent-exec in release mode (cargo build --release --locked)
and installs them into DIR/bin. DIR defaults to ~/.local, so the binaries land in
~/.local/bin.

  --prefix DIR   install into DIR/bin (created if missing)
  -h, --help     show this help

Environment: CARGO_TARGET_DIR (where cargo builds), CARGO (the cargo to run).
EOF
}

die_usage() {
  echo "install.sh: $1" >&2
  echo "try: scripts/install.sh --help" >&2
  exit 2
}

die() {
  echo "install.sh: $1" >&2
  exit 1
}

prefix=""
prefix_set=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --prefix)
      [ "$#" -ge 2 ] || die_usage "--prefix needs a folder (e.g. --prefix ~/.local)"
      prefix="$2"
      prefix_set=1
      shift 2
      ;;
    --prefix=*)
      prefix="${1#--prefix=}"
      prefix_set=1
      shift
      ;;
    *)
      die_usage "unknown argument: $1"
      ;;
  esac
done

if [ "$prefix_set" -eq 1 ] && [ -z "$prefix" ]; then
  die_usage "--prefix is empty; give a folder (e.g. --prefix ~/.local)"
fi
if [ "$prefix_set" -eq 0 ]; then
  [ -n "${HOME:-}" ] || die_usage "HOME is not set; pass --prefix DIR"
  prefix="$HOME/.local"
fi
case "$prefix" in
  /*) ;;
  *) prefix="$PWD/$prefix" ;;
esac
bin_dir="${prefix%/}/bin"

# Checked before the (long) build: a destination that cannot be used fails now.
if [ -e "$bin_dir" ] && [ ! -d "$bin_dir" ]; then
  die "$bin_dir exists and is not a folder"
fi
mkdir -p "$bin_dir" 2>/dev/null || die "cannot create $bin_dir"
[ -w "$bin_dir" ] || die "$bin_dir is not writable"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo="${CARGO:-cargo}"
command -v "$cargo" >/dev/null 2>&1 ||
  die "cargo not found (install Rust 1.95+ from https://rustup.rs, or set CARGO)"

target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in
  /*) ;;
  *) target_dir="$root/$target_dir" ;;
esac

packages=()
for name in "${BINARIES[@]}"; do
  packages+=(-p "$name")
done
echo "install.sh: building ${BINARIES[*]} (release, --locked) in $target_dir" >&2
(cd "$root" && CARGO_TARGET_DIR="$target_dir" "$cargo" build --release --locked "${packages[@]}") ||
  die "the release build failed (see above); nothing was installed"

for name in "${BINARIES[@]}"; do
  [ -x "$target_dir/release/$name" ] || die "the build did not produce $target_dir/release/$name; nothing was installed"
done

installed=()
for name in "${BINARIES[@]}"; do
  tmp="$bin_dir/.$name.install.$$"
  if ! install -m 0755 "$target_dir/release/$name" "$tmp" || ! mv -f "$tmp" "$bin_dir/$name"; then
    rm -f "$tmp"
    die "could not install $bin_dir/$name${installed:+ (already installed: ${installed[*]})}"
  fi
  installed+=("$name")
  echo "installed $bin_dir/$name ($("$bin_dir/$name" --version 2>/dev/null || echo "version unknown"))"
done

case ":${PATH:-}:" in
  *":$bin_dir:"* | *":$bin_dir/:"*)
    echo "$bin_dir is on PATH"
    ;;
  *)
    echo "$bin_dir is NOT on PATH; add it, e.g. in ~/.profile:"
    echo "  export PATH=\"$bin_dir:\$PATH\""
    ;;
esac
