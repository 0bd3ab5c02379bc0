#!/usr/bin/env bash
# Run one cargo-fuzz target for a bounded time (default 60 s). Outside the CI gate.
#   scripts/fuzz.sh                 # list the targets
#   scripts/fuzz.sh envreg_load 300 # fuzz the record loader for five minutes
# The machine's toolchain is stable; RUSTC_BOOTSTRAP lets cargo-fuzz pass its -Z flags.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz"
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
if [ $# -eq 0 ]; then RUSTC_BOOTSTRAP=1 cargo fuzz list; exit 0; fi
target=$1; secs=${2:-60}
RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" -- -max_total_time="$secs" -rss_limit_mb=2048
