#!/usr/bin/env bash
# Issue 14 §2 at full size: 1,000 runs per backend (command, and claude-code's driver
# with a stand-in program), each daemonizing with `env -i setsid` — 0 processes may be
# left behind. CI runs the same test with 100 runs per backend; this is the long one
# (about 145 s on the shared two-core build machine). RUNS=N to change the count.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
AGENT_EXEC_LEFTOVER_RUNS="${RUNS:-1000}" exec cargo test -p agent-exec-backends \
  --test leftovers many_runs_leave_no_process_behind -- --nocapture
