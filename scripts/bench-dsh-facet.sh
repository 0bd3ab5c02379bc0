#!/usr/bin/env bash
# The dsh-facet guard's cost per judged call against a DeepSeek Harness step with the
# guard off, measured in one run (outside the test gate; needs the dsh peer of
# scripts/setup.d/16-dsh.sh — PEERS_DIR as for scripts/test.sh).
#
#   scripts/bench-dsh-facet.sh [N] [ROUNDS]   # default 40 judged reads x 3 rounds
#
# Real dsh headless, scripted model on loopback: N `read` calls inside the facet, with
# the dsh-facet row and without it, interleaved. A step is the gap between two model
# requests (the tool call, then the next request's assembly); with the guard each step
# pays one `judge` and one `context` round trip to `facet dsh-bridge`. Medians. The
# facet binary is the release build; the harness (crates/facet/examples/
# bench_dsh_guard.rs) runs in the dev profile, on both sides alike.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PEERS_DIR="${PEERS_DIR:-$root/target/peers}"
for step in scripts/setup.d/15-npm-peers.sh scripts/setup.d/16-dsh.sh; do
  # shellcheck disable=SC1090
  . "$step"
done
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p facet --bin facet >&2
cargo run -q -p facet --example bench_dsh_guard -- "$CARGO_TARGET_DIR/release/facet" "${1:-40}" "${2:-3}"
