#!/usr/bin/env bash
# Wall time of one scripted one-tool run through `agent-exec run --backend copilot`
# against the same run of GitHub Copilot CLI directly, interleaved in one run (direct,
# agent-exec, direct, …), against the same scripted model (model-script on loopback,
# Chat Completions, Copilot's bring-your-own-key mode, offline). Each run: the model
# calls `view` on a file in the workspace, then answers "bench: done".
#
#   scripts/bench-agent-exec-copilot.sh            # 10 pairs, release build
#   RUNS=20 PROFILE=debug scripts/bench-agent-exec-copilot.sh
#
# The direct side is the exact argv the backend runs (checked first through a logging
# wrapper; only the per-run session id and usage file differ), the same prompt on
# stdin, working directory and environment. What agent-exec adds: its own start, the
# config, the verify probe when the verification cache misses (the first run only),
# the journal, workspace snapshots, the process tree, stream parsing, the usage file.
# Needs the real copilot (scripts/test.sh installs it: setup.d/15-npm-peers.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-10}
profile=${PROFILE:-release}
peers=${PEERS_DIR:-$root/target/peers}
npm_bin=${AGENT_EXEC_NPM_BIN:-$peers/npm/node_modules/.bin}
target=${CARGO_TARGET_DIR:-$root/target}
program="$npm_bin/copilot"
[ -x "$program" ] || { echo "missing the real copilot ($program): npm @github/copilot; run scripts/test.sh" >&2; exit 1; }

flag=(); [ "$profile" = release ] && flag=(--release)
cargo build "${flag[@]}" -q -p agent-exec
cargo build "${flag[@]}" -q -p agent-exec-backends --example model_script_serve
bin="$target/$profile/agent-exec"
serve="$target/$profile/examples/model_script_serve"

mkdir -p "$target/tmp"
work=$(mktemp -d -p "$target/tmp" bench-copilot.XXXXXX)
export XDG_STATE_HOME="$work/state"
mkdir -p "$work/ws" "$work/home" "$work/usage"
echo "INSIDE-NOTES" > "$work/ws/notes.txt"
# Copilot unpacks its package once per cache folder: one shared by both sides.
cache=${XDG_CACHE_HOME:-$HOME/.cache}

export MODEL_SCRIPT_TOOL_CALL="{\"name\": \"view\", \"arguments\": {\"path\": \"$work/ws/notes.txt\"}}"
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

env_pairs=("HOME=$work/home" "COPILOT_HOME=$work/home/.copilot" "XDG_CACHE_HOME=$cache"
  "COPILOT_PROVIDER_BASE_URL=$base_url" "COPILOT_PROVIDER_TYPE=openai"
  "COPILOT_PROVIDER_WIRE_API=completions" "COPILOT_PROVIDER_API_KEY=dummy-bench-key"
  "COPILOT_OFFLINE=true")
env_table=""
for kv in "${env_pairs[@]}"; do env_table+="${env_table:+, }${kv%%=*} = \"${kv#*=}\""; done
table="kind = \"copilot\"
model = \"gpt-4.1\"
env = { $env_table }"
cat >"$work/argv.sh" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > "$work/argv.log"
exec "$program" "\$@"
EOF
chmod +x "$work/argv.sh"
{
  echo "[backends.copilot]"; echo "program = \"$program\""; echo "$table"; echo
  echo "[backends.copilot-argv]"; echo "program = \"$work/argv.sh\""; echo "$table"
} >"$work/config.toml"
prompt="read notes.txt"
run_args=(run --prompt "$prompt" --workspace "$work/ws" --allow-tool view)

# CopilotBackend's argv for an allowlist of `view`; session id and usage file per run.
direct_args() {
  printf '%s\n' --output-format json --allow-all-tools --no-ask-user --no-auto-update \
    --disable-builtin-mcps "--session-id=$1" --model=gpt-4.1 --available-tools=view \
    "--usage-output-file=$2"
}
out=$("$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" "${run_args[@]}" --backend copilot-argv 2>"$work/sanity.err") || {
  echo "agent-exec run failed:" >&2; cat "$work/sanity.err" >&2; exit 1; }
[ "$out" = "bench: done" ] || { echo "agent-exec printed '$out', expected 'bench: done'" >&2; exit 1; }
seen=$(sed -e 's#^--session-id=.*#--session-id=ID#' -e 's#^--usage-output-file=.*#--usage-output-file=FILE#' "$work/argv.log")
if [ "$seen" != "$(direct_args ID FILE)" ]; then
  echo "the direct argv differs from what agent-exec runs:" >&2
  diff <(direct_args ID FILE) <(echo "$seen") >&2 || true
  exit 1
fi
echo "== copilot ($profile agent-exec), model-script at $base_url; $runs interleaved pairs"

python3 - "$runs" "$prompt" "$work" "$program" "$bin" "$(printf '%s\n' "${env_pairs[@]}")" "${run_args[@]}" <<'PY'
import os, statistics, subprocess, sys, time, uuid
runs, prompt, work, program, bin_ = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
env = dict(os.environ)
env.update(kv.split("=", 1) for kv in sys.argv[6].splitlines())
run_args = sys.argv[7:]
wrapped = [bin_, "--config", f"{work}/config.toml", "--journal", f"{work}/journal.sqlite3", *run_args, "--backend", "copilot"]

def run_direct():
    session = str(uuid.uuid4())
    usage = f"{work}/usage/{session}.json"
    argv = [program, "--output-format", "json", "--allow-all-tools", "--no-ask-user", "--no-auto-update",
            "--disable-builtin-mcps", f"--session-id={session}", "--model=gpt-4.1",
            "--available-tools=view", f"--usage-output-file={usage}"]
    p = subprocess.run(argv, input=prompt.encode(), cwd=f"{work}/ws", env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or b'"content":"bench: done"' not in p.stdout or b'"toolName":"view"' not in p.stdout:
        sys.exit(f"direct run failed (exit {p.returncode}): {p.stdout[-400:]!r}")

def run_wrapped():
    p = subprocess.run(wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or p.stdout.strip() != b"bench: done":
        sys.exit(f"agent-exec run failed (exit {p.returncode}): {p.stdout[-400:]!r}")

commands = [("direct", run_direct), ("agent-exec", run_wrapped)]
for _ in range(2):
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
