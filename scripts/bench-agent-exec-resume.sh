#!/usr/bin/env bash
# `agent-exec resume` against a fresh run of the same scripted task (issue 12 §5), with
# the real codex against model-script on loopback, in one run: wall time, model
# requests and bytes sent to the model server, per side. See
# crates/agent-exec/examples/resume_bench.rs for what each side does.
#
#   scripts/bench-agent-exec-resume.sh
#
# Needs the real codex (scripts/test.sh installs it: setup.d/15-npm-peers.sh). Uses the
# debug build (both sides run the same binary; the time is the agent's, not ours);
# PROFILE=release for a release build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
peers=${PEERS_DIR:-$root/target/peers}
export AGENT_EXEC_NPM_BIN=${AGENT_EXEC_NPM_BIN:-$peers/npm/node_modules/.bin}
target=${CARGO_TARGET_DIR:-$root/target}
profile=${PROFILE:-debug}
flag=(); [ "$profile" = release ] && flag=(--release)
cargo build -q "${flag[@]}" -p agent-exec --bin agent-exec --example resume_bench
export AGENT_EXEC_BIN="$target/$profile/agent-exec"
# Not under /tmp: codex refuses to set up its helper binaries in a CODEX_HOME there.
mkdir -p "$target/tmp"
BENCH_DIR=$(mktemp -d -p "$target/tmp" bench-resume.XXXXXX)
export BENCH_DIR
trap 'rm -rf "$BENCH_DIR"' EXIT
echo "== resume vs a fresh run of the same task (codex $("$AGENT_EXEC_NPM_BIN/codex" --version 2>/dev/null | head -1)), one run, load $(cut -d' ' -f1 /proc/loadavg)"
"$target/$profile/examples/resume_bench"
