#!/usr/bin/env bash
# Whole-process wall time of one `facet hook` PreToolUse call, side by side with
# /bin/true in the same run, interleaved, medians. The hook runs once per tool call,
# so this figure *is* the product's speed. Target: at most 3x /bin/true.
#
#   scripts/bench-facet-hook.sh [RUNS]     # default 300 runs of each
#
# An interleaved loop (hook, true, hook, true, ...) timed with bash's builtin
# $EPOCHREALTIME, so no extra process is timed on either side. hyperfine is not
# used: the Debian build (1.15) has no --input to feed stdin without a shell, and
# its shell-start-up subtraction is below its own resolution at these durations
# (it reported a 0 ms /bin/true here). Builds the release binary first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-300}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p facet --bin facet >&2
bin="$CARGO_TARGET_DIR/release/facet"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project/.git" "$work/project/src/room" "$work/project/shared" "$work/state"
export FACET_STATE_DIR="$work/state"
# The measured call: a Read outside the facet, so the hook does the full work —
# state read, containment walk, decision, answer (an "ask" on stdout).
event="$work/event.json"
printf '{"session_id":"bench","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"%s"},"tool_use_id":"t","permission_mode":"default"}' \
  "$work/project/src/room" "$work/project/shared/types.rs" >"$event"
# First sight records the session's root; every measured call after that reads it.
"$bin" hook <"$event" >/dev/null
echo "== one answer:" >&2
"$bin" hook <"$event" >&2
echo >&2

# Primary figure: an interleaved loop (hook, true, hook, true, ...) timed with
# bash's $EPOCHREALTIME, a builtin, so no extra process is timed on either side.
# Both sides pay the same fork+exec from bash, as a host pays it.
hook_us=()
true_us=()
for ((i = 0; i < runs; i++)); do
  t0=$EPOCHREALTIME; "$bin" hook <"$event" >/dev/null; t1=$EPOCHREALTIME
  /bin/true <"$event" >/dev/null; t2=$EPOCHREALTIME
  hook_us+=($(( (${t1/./} - ${t0/./}) ))); true_us+=($(( (${t2/./} - ${t1/./}) )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
h=$(median "${hook_us[@]}"); t=$(median "${true_us[@]}")
awk -v h="$h" -v t="$t" -v n="$runs" 'BEGIN {printf "interleaved, %d runs each: median facet hook %.3f ms, median /bin/true %.3f ms, ratio %.2fx\n", n, h/1e3, t/1e3, h/t}'
