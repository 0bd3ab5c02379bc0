#!/usr/bin/env bash
# The whole test suite on a fresh machine. It first installs the real peers the tests
# talk to (scripts/setup.d/*.sh, in order: PyPI and npm packages, Debian packages, a
# PostgreSQL server), then checks formatting and lints, then runs every test.
# A test whose peer is missing fails loudly; nothing is skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# A clean build of the workspace writes about 5.1 GB under target/debug (see Cargo.toml's
# profile.dev) and the peers about 2.7 GB more; say so up front rather than die in the
# linker with ENOSPC.
target_dir="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$target_dir"
free_kb=$(df -Pk "$target_dir" | awk 'NR == 2 { print $4 }')
if [ -n "$free_kb" ] && [ "$free_kb" -lt $((10 * 1024 * 1024)) ]; then
  echo "test.sh: warning: only $((free_kb / 1024)) MiB free under $target_dir; a clean build and its peers need about 10 GiB" >&2
fi
export PEERS_DIR="${PEERS_DIR:-$root/target/peers}"
mkdir -p "$PEERS_DIR"
for setup in scripts/setup.d/*.sh; do
  [ -e "$setup" ] || continue
  echo "== setup: $setup" >&2
  # Sourced, so a setup step can export what the tests need (a server URL, a PATH entry).
  # shellcheck disable=SC1090
  . "$setup"
done
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
