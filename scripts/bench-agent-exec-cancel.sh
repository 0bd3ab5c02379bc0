#!/usr/bin/env bash
# agent-exec process-tree benchmarks (release build), figures printed on stdout:
#   1. cancel -> whole tree reaped: p50/p90/p99 of ProcessTree::terminate on a 4-process
#      tree that honours SIGTERM, against a naive killpg + wait-for-leader baseline;
#   2. `command` backend overhead: median of CommandBackend::execute and Runtime::run
#      against spawning the same program directly, same run, interleaved.
# BENCH_N sets the number of cycles (defaults: 300 and 200).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
echo "== cancel -> whole tree reaped"
cargo bench -q -p agent-exec-runtime --bench cancel_tree
echo "== command backend overhead"
cargo run -q --release -p agent-exec-backends --example command_overhead
