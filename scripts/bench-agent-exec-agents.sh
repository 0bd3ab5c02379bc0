#!/usr/bin/env bash
# Whole-process overhead of `agent-exec run --backend KIND` over running the same agent
# program directly, in the same run, against the same scripted model server
# (model-script, on loopback; every model request gets the same one-turn text reply).
# Pairs are interleaved (direct, agent-exec, direct, ...) so drift in machine load hits
# both sides alike; medians, p90 and the median delta are printed per kind.
#
#   scripts/bench-agent-exec-agents.sh                 # codex, 10 pairs
#   RUNS=30 scripts/bench-agent-exec-agents.sh codex   # more pairs
#
# What the agent-exec side adds on top of the program: process start, config parse,
# the backend probe (`verify`) only when the verification cache misses (the first run;
# see docs/agent-exec.md),
# journal open + 5 SQLite transactions, workspace snapshots before and after, the
# program in its own process group, stream parsing, tree reaping. The direct side is
# the exact argv the backend uses (checked before timing through a logging wrapper),
# the same prompt on stdin, the same working directory and provider environment.
#
# Needs the real agent programs (scripts/test.sh installs them: setup.d/15-npm-peers.sh).
# Adding a backend: add a case to `setup_kind` below (its agent-exec config table, its
# direct argv, its environment, where its prompt goes, how to recognise its answer).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-10}
if [ $# -eq 0 ]; then set -- codex; fi
peers=${PEERS_DIR:-$root/target/peers}
npm_bin=${AGENT_EXEC_NPM_BIN:-$peers/npm/node_modules/.bin}
target=${CARGO_TARGET_DIR:-$root/target}

cargo build --release -q -p agent-exec
cargo build --release -q -p agent-exec-backends --example model_script_serve
bin="$target/release/agent-exec"
serve="$target/release/examples/model_script_serve"

# Not under /tmp: codex refuses to set up its helper binaries in a CODEX_HOME there.
mkdir -p "$target/tmp"
work=$(mktemp -d -p "$target/tmp" bench-agents.XXXXXX)
# The verification cache (and anything else agent-exec keeps) stays in this run's folder:
# the first agent-exec run probes, the rest take the cache, as for a user.
export XDG_STATE_HOME="$work/state"
coproc SERVER { "$serve"; }
server_pid=$SERVER_PID
server_in=${SERVER[1]}
IFS= read -r line <&"${SERVER[0]}"; base_url=${line#base_url=}
IFS= read -r line <&"${SERVER[0]}"; origin=${line#origin=}
cleanup() {
  exec {server_in}>&- 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "== model-script at $base_url; $runs interleaved pairs per kind"

json_array() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }

prompt="say done"
# Set by setup_kind for one kind:
#   config_table  the [backends.KIND] table for agent-exec (program, env)
#   direct        the program's argv (array), exactly what the backend runs
#   direct_env    KEY=VALUE for the direct run (array), the table's env
#   prompt_stdin  1 when the prompt goes on the program's stdin, 0 when in argv
#   answer        a substring of the direct run's stdout that proves the model answered
#   probe         the backend's `verify` probe (array; empty if none), timed alongside to
#                 show how much of the delta it is
setup_kind() {
  local kind=$1 dir=$2
  case "$kind" in
    codex)
      local program="$npm_bin/codex"
      [ -x "$program" ] || { echo "missing the real codex ($program): npm @openai/codex; run scripts/test.sh" >&2; return 1; }
      mkdir -p "$dir/codex-home"
      cat >"$dir/codex-home/config.toml" <<EOF
model = "scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "$base_url"
wire_api = "responses"
env_key = "SCRIPTED_KEY"
EOF
      config_table="kind = \"codex\"
program = \"$program\"
env = { CODEX_HOME = \"$dir/codex-home\", SCRIPTED_KEY = \"dummy-bench-key\" }"
      # CodexBackend::kind_args for the CLI's default tool policy (`reasoning`: codex's
      # built-in tools off), then `-`: the prompt is on stdin.
      direct=("$program" exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
        --disable shell_tool --disable unified_exec --disable shell_snapshot --disable view_image
        --disable multi_agent --disable goals --disable image_generation
        -c 'web_search="disabled"' -)
      direct_env=("CODEX_HOME=$dir/codex-home" "SCRIPTED_KEY=dummy-bench-key")
      prompt_stdin=1
      answer='"text":"bench: done"'
      probe=("$program" exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
        --disable shell_tool --version)
      ;;
    claude-code)
      # The npm package ships a native binary: no Node needed at run time.
      local program="$npm_bin/claude"
      [ -x "$program" ] || { echo "missing the real Claude Code ($program): npm @anthropic-ai/claude-code; run scripts/test.sh" >&2; return 1; }
      mkdir -p "$dir/home"
      # A private HOME (the user's settings are not read), a dummy key, IS_SANDBOX=1
      # (bypassPermissions refuses root otherwise), no telemetry or update checks.
      direct_env=("ANTHROPIC_BASE_URL=$origin" "ANTHROPIC_API_KEY=dummy-bench-key" "IS_SANDBOX=1"
        "HOME=$dir/home" "CLAUDE_CONFIG_DIR=$dir/home/.claude"
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" "DISABLE_AUTOUPDATER=1")
      local env_table="" kv
      for kv in "${direct_env[@]}"; do env_table+="${env_table:+, }${kv%%=*} = \"${kv#*=}\""; done
      config_table="kind = \"claude-code\"
program = \"$program\"
env = { $env_table }"
      # ClaudeCodeBackend::agent_run for the CLI's default tool policy (`reasoning`: no
      # tools, no MCP servers); the prompt is on stdin.
      direct=("$program" -p --output-format stream-json --verbose --permission-mode bypassPermissions
        --tools= --strict-mcp-config)
      prompt_stdin=1
      answer='"result":"bench: done"'
      # ClaudeCodeBackend::verify: `claude --version`, then `claude --help` (format check).
      probe=(sh -c '"$0" --version && "$0" --help' "$program")
      ;;
    agent-native)
      # pi's bin is a Node script (`#!/usr/bin/env node`; Node >= 20.6 on PATH).
      local program="$npm_bin/pi"
      [ -x "$program" ] || { echo "missing the real pi ($program): npm @mariozechner/pi-coding-agent; run scripts/test.sh" >&2; return 1; }
      # pi's provider comes from models.json in a private PI_CODING_AGENT_DIR (the
      # user's ~/.pi is not read); apiKey names the variable holding the dummy key.
      mkdir -p "$dir/pi-agent" "$dir/home"
      cat >"$dir/pi-agent/models.json" <<EOF
{"providers": {"scripted": {"baseUrl": "$base_url", "api": "openai-completions",
  "apiKey": "PI_SCRIPTED_KEY",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "scripted"}]}}}
EOF
      echo '{"retry": {"enabled": false}}' >"$dir/pi-agent/settings.json"
      config_table="kind = \"agent-native\"
program = \"$program\"
model = \"scripted/scripted\"
env = { PI_CODING_AGENT_DIR = \"$dir/pi-agent\", HOME = \"$dir/home\", PI_SCRIPTED_KEY = \"dummy-bench-key\" }"
      # PiBackend::kind_args for the CLI's default tool policy (`reasoning`: --no-tools);
      # the prompt is on stdin; PI_OFFLINE=1 is the backend's default environment. pi
      # keeps its session (for resume) in the execution's own folder under the state
      # directory; the direct run keeps it in one folder of its own (argv_fix maps the
      # one onto the other for the argv check).
      mkdir -p "$dir/sessions"
      direct=("$program" --mode json --session-dir "$dir/sessions" --model scripted/scripted --no-tools)
      argv_fix="s#^$XDG_STATE_HOME/agent-exec/sessions/agent-native/[0-9a-f]\{32\}\$#$dir/sessions#"
      direct_env=("PI_CODING_AGENT_DIR=$dir/pi-agent" "HOME=$dir/home" "PI_SCRIPTED_KEY=dummy-bench-key" "PI_OFFLINE=1")
      prompt_stdin=1
      answer='"text":"bench: done"'
      # PiBackend::verify: the version from pi's package.json (a file read), then the
      # format check: pi in JSON mode against a loopback port nobody listens on.
      local refused
      refused=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      mkdir -p "$dir/pi-probe"
      printf '{"providers": {"agent-exec-probe": {"baseUrl": "http://127.0.0.1:%s/v1", "api": "openai-completions", "apiKey": "agent-exec-probe", "models": [{"id": "probe"}]}}}\n' \
        "$refused" >"$dir/pi-probe/models.json"
      echo '{"retry": {"enabled": false, "provider": {"maxRetries": 0}}}' >"$dir/pi-probe/settings.json"
      # Then, for resume, a second pi continuing the probe's session file (the real
      # probe stops it at its session header; this one runs to its refused request).
      probe=(sh -c 'd=$(mktemp -d) && echo "agent-exec format probe" | PI_CODING_AGENT_DIR="$1" "$0" --mode json --session-dir "$d" --no-tools --model agent-exec-probe/probe >/dev/null && f=$(ls "$d"/*.jsonl) && echo "agent-exec resume probe" | PI_CODING_AGENT_DIR="$1" "$0" --mode json --session-dir "$d" --session "$f" --no-tools --model agent-exec-probe/probe >/dev/null; s=$?; rm -rf "$d"; exit $s' "$program" "$dir/pi-probe")
      ;;
    acp)
      # Slot: an ACP agent (codex-acp) — direct means driving the same JSON-RPC session
      # by hand, which needs a client; not a shell one-liner.
      echo "acp: no direct command wired in this script yet" >&2; return 1 ;;
    *)
      echo "unknown kind $kind (known: codex, claude-code, agent-native; slot: acp)" >&2; return 1 ;;
  esac
}

for kind in "$@"; do
  dir="$work/$kind"
  mkdir -p "$dir/ws"
  probe=()
  argv_fix=""
  setup_kind "$kind" "$dir" || continue
  # The same backend twice: the measured one, and one whose program is a wrapper that
  # records its argv, to check that `direct` is exactly what agent-exec runs.
  cat >"$dir/argv.sh" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > "$dir/argv.log"
exec "${direct[0]}" "\$@"
EOF
  chmod +x "$dir/argv.sh"
  {
    echo "[backends.$kind]"; echo "$config_table"; echo
    echo "[backends.$kind-argv]"; echo "$config_table" | sed "s#^program = .*#program = \"$dir/argv.sh\"#"
  } >"$dir/config.toml"
  wrapped=("$bin" --config "$dir/config.toml" --journal "$dir/journal.sqlite3" run --backend "$kind" --prompt "$prompt" --workspace "$dir/ws")

  out=$("$bin" --config "$dir/config.toml" --journal "$dir/journal.sqlite3" run --backend "$kind-argv" --prompt "$prompt" --workspace "$dir/ws" 2>"$dir/sanity.err") || {
    echo "$kind: agent-exec run failed:" >&2; cat "$dir/sanity.err" >&2; exit 1; }
  [ "$out" = "bench: done" ] || { echo "$kind: agent-exec printed '$out', expected 'bench: done'" >&2; exit 1; }
  expected=$(printf '%s\n' "${direct[@]:1}")
  if [ "$(sed "$argv_fix" "$dir/argv.log")" != "$expected" ]; then
    echo "$kind: the direct argv differs from what agent-exec runs:" >&2
    diff <(echo "$expected") <(sed "$argv_fix" "$dir/argv.log") >&2 || true
    exit 1
  fi

  echo "== $kind"
  python3 - "$runs" "$prompt" "$prompt_stdin" "$answer" "$dir/ws" \
    "$(json_array "${direct[@]}")" "$(json_array "${direct_env[@]}")" "$(json_array "${wrapped[@]}")" \
    "$(json_array "${probe[@]}")" <<'PY'
import json, os, statistics, subprocess, sys, time
runs, prompt, prompt_stdin, answer, ws = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
direct, direct_env, wrapped, probe = (json.loads(a) for a in sys.argv[6:10])
env = dict(os.environ)
env.update(kv.split("=", 1) for kv in direct_env)
if not prompt_stdin:
    direct = direct + [prompt]

def run_direct():
    p = subprocess.run(direct, input=prompt.encode() if prompt_stdin else b"", cwd=ws, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or answer.encode() not in p.stdout:
        sys.exit(f"direct run failed (exit {p.returncode}): {p.stdout[-400:]!r}")

def run_wrapped():
    p = subprocess.run(wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode != 0 or p.stdout.strip() != b"bench: done":
        sys.exit(f"agent-exec run failed (exit {p.returncode}): {p.stdout[-400:]!r}")

def run_probe():
    p = subprocess.run(probe, stdin=subprocess.DEVNULL, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit(f"the verify probe failed (exit {p.returncode})")

commands = [("direct", run_direct), ("agent-exec", run_wrapped)]
if probe:
    commands.append(("verify probe", run_probe))
for _ in range(2):  # warm-up (page cache, codex's first-run setup)
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
    print(f"{name:14s} median {statistics.median(s):8.1f} ms   p90 {q(s, .9):8.1f} ms   min {min(s):8.1f} ms")
d, w = statistics.median(samples["direct"]), statistics.median(samples["agent-exec"])
print(f"added by agent-exec: {w - d:+.1f} ms at the median ({w / d:.2f}x the direct run)")
if probe:
    v = statistics.median(samples["verify probe"])
    print(f"  the verify probe alone: ~{v:.1f} ms (paid only when the verification cache misses)")
PY
done
