#!/usr/bin/env bash
# Wall time of one scripted one-tool run of OpenCode through `agent-exec run --backend
# opencode` against the same OpenCode run directly, interleaved in one run, against one
# scripted model (model-script's model_script_serve, on loopback) whose every run is a
# `write` tool call (out.txt) and then the text "bench: done". Medians, p90 and the
# median delta.
#
#   scripts/bench-agent-exec-opencode.sh              # 5 pairs, release build
#   RUNS=10 PROFILE=debug scripts/bench-agent-exec-opencode.sh
#
# The direct side is the exact argv and environment the backend uses (checked before
# timing through a wrapper that logs its argv): `opencode run --format json --title
# agent-exec`, the prompt on stdin, OPENCODE_CONFIG_CONTENT holding the permission
# table of `--allow-tool edit`, PWD the workspace. OpenCode's home is a scratch folder
# marked as having its plugin SDK installed (else OpenCode installs it from npm at
# every start), with models.dev and update checks off.
#
# Needs the real OpenCode (scripts/test.sh installs it: setup.d/15-npm-peers.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-5}
profile=${PROFILE:-release}
peers=${PEERS_DIR:-$root/target/peers}
npm_bin=${AGENT_EXEC_NPM_BIN:-$peers/npm/node_modules/.bin}
target=${CARGO_TARGET_DIR:-$root/target}
program="$npm_bin/opencode"
[ -x "$program" ] || { echo "missing the real OpenCode ($program): npm opencode-ai; run scripts/test.sh" >&2; exit 1; }

if [ "$profile" = release ]; then flag=--release; else flag=; fi
cargo build $flag -q -p agent-exec
cargo build $flag -q -p agent-exec-backends --example model_script_serve
bin="$target/$profile/agent-exec"
serve="$target/$profile/examples/model_script_serve"

work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
export MODEL_SCRIPT_TOOL_CALL='{"name": "write", "arguments": {"filePath": "out.txt", "content": "bench"}}'
coproc SERVER { "$serve"; }
server_pid=$SERVER_PID
server_in=${SERVER[1]}
IFS= read -r line <&"${SERVER[0]}"; base_url=${line#base_url=}
cleanup() {
  exec {server_in}>&- 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "== model-script at $base_url; $runs interleaved pairs; agent-exec $profile build"

home="$work/home"
mkdir -p "$home/.config/opencode/node_modules" "$work/ws"
echo '{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}' >"$home/.config/opencode/package.json"
echo '{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}' >"$home/.config/opencode/package-lock.json"
cat >"$home/.config/opencode/opencode.json" <<EOF
{"provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "model-script",
  "options": {"baseURL": "$base_url", "apiKey": "{env:SCRIPTED_KEY}"},
  "models": {"scripted": {"name": "scripted"}}}},
 "model": "scripted/scripted"}
EOF
env_vars=("HOME=$home" "XDG_CONFIG_HOME=$home/.config" "XDG_DATA_HOME=$home/.local/share"
  "XDG_CACHE_HOME=$home/.cache" "OPENCODE_DISABLE_MODELS_FETCH=1" "OPENCODE_DISABLE_AUTOUPDATE=1"
  "SCRIPTED_KEY=dummy-bench-key")
env_table=""
for kv in "${env_vars[@]}"; do env_table+="${env_table:+, }${kv%%=*} = \"${kv#*=}\""; done
cat >"$work/argv.sh" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > "$work/argv.log"
env > "$work/env.log"
exec "$program" "\$@"
EOF
chmod +x "$work/argv.sh"
cat >"$work/config.toml" <<EOF
[backends.opencode]
kind = "opencode"
program = "$program"
env = { $env_table }

[backends.opencode-argv]
kind = "opencode"
program = "$work/argv.sh"
env = { $env_table }
EOF
prompt="write out.txt"
run_args=(run --prompt "$prompt" --allow-tool edit --workspace "$work/ws")
# OpenCodeBackend for `--allow-tool edit`: its argv, and its environment on top of ours.
direct=("$program" run --format json --title agent-exec)
direct_env=("${env_vars[@]}" "PWD=$work/ws"
  'OPENCODE_CONFIG_CONTENT={"permission":{"*":"deny","edit":"allow"}}')

out=$("$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" "${run_args[@]}" --backend opencode-argv 2>"$work/sanity.err") || {
  echo "agent-exec run failed:" >&2; cat "$work/sanity.err" >&2; exit 1; }
[ "$out" = "bench: done" ] || { echo "agent-exec printed '$out', expected 'bench: done'" >&2; exit 1; }
if [ "$(cat "$work/argv.log")" != "$(printf '%s\n' "${direct[@]:1}")" ]; then
  echo "the direct argv differs from what agent-exec runs:" >&2
  diff <(printf '%s\n' "${direct[@]:1}") "$work/argv.log" >&2 || true
  exit 1
fi
grep -qxF "${direct_env[-1]}" "$work/env.log" || { echo "the backend's OPENCODE_CONFIG_CONTENT differs:" >&2; grep OPENCODE_CONFIG_CONTENT "$work/env.log" >&2; exit 1; }
rm -f "$work/ws/out.txt"

json_array() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }
python3 - "$runs" "$prompt" "$work/ws" "$(json_array "${direct[@]}")" "$(json_array "${direct_env[@]}")" \
  "$(json_array "$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" "${run_args[@]}" --backend opencode)" <<'PY'
import json, os, statistics, subprocess, sys, time
runs, prompt, ws = int(sys.argv[1]), sys.argv[2], sys.argv[3]
direct, direct_env, wrapped = (json.loads(a) for a in sys.argv[4:7])
env = dict(os.environ)
env.update(kv.split("=", 1) for kv in direct_env)
out = os.path.join(ws, "out.txt")

def check_written():
    with open(out) as f:
        assert f.read() == "bench", "the tool did not write out.txt"
    os.remove(out)

def run_direct():
    p = subprocess.run(direct, input=prompt.encode(), cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or b'"text":"bench: done"' not in p.stdout:
        sys.exit(f"direct run failed (exit {p.returncode}): {p.stdout[-400:]!r}")
    check_written()

def run_wrapped():
    p = subprocess.run(wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or p.stdout.strip() != b"bench: done":
        sys.exit(f"agent-exec run failed (exit {p.returncode}): {p.stdout[-400:]!r}")
    check_written()

commands = [("direct", run_direct), ("agent-exec", run_wrapped)]
for _, fn in commands:  # warm-up (page cache; agent-exec's first run probes)
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
    print(f"{name:11s} median {statistics.median(s):8.1f} ms   p90 {q(s, .9):8.1f} ms   min {min(s):8.1f} ms")
d, w = statistics.median(samples["direct"]), statistics.median(samples["agent-exec"])
print(f"added by agent-exec: {w - d:+.1f} ms at the median ({w / d:.2f}x the direct run)")
PY
