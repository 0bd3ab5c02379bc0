#!/usr/bin/env bash
# What `--output-schema` adds to a run with a ~100 KB answer (issue 12 §5), measured
# against the no-schema baseline in the same run, three ways:
#
#  1. Whole process: `agent-exec run --backend llm` (kind `openai`) against a loopback
#     OpenAI-compatible server (the example `openai_answer_serve`) that streams the same
#     ~100 KB JSON answer to every execution, with and without `--output-schema`, in
#     interleaved rounds (plain, schema, schema, plain, ...), so drift in machine load
#     hits both alike. Both sides run the same probes (`verify` is not cached for this
#     backend) and stream the same bytes; what differs is reading the schema file, the
#     `response_format` in the request, and the runtime's compile + parse + validation.
#  2. In process: `cargo bench -p agent-exec-runtime --bench structured_output` —
#     `Runtime::run` with and without a schema on a backend that answers at once, and the
#     parts alone (compiling the schema, `Schema::check_text` on the answer, a bare
#     `serde_json` parse).
#
#   scripts/bench-agent-exec-structured.sh            # 40 rounds, BENCH_N=300
#   RUNS=100 BENCH_N=500 scripts/bench-agent-exec-structured.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-40}
target=${CARGO_TARGET_DIR:-$root/target}

cargo build --release -q -p agent-exec
cargo build --release -q -p agent-exec-backends --example openai_answer_serve
bin="$target/release/agent-exec"
serve="$target/release/examples/openai_answer_serve"

work=$(mktemp -d)
# The answer and the schema: the shape of the in-process bench's (700 review findings).
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
findings = [{"id": i, "path": f"src/module_{i}/file_{i}.rs", "severity": ["low", "medium", "high"][i % 3],
             "line": i * 7, "message": "a finding the reviewing agent reported, in a sentence"}
            for i in range(700)]
json.dump({"summary": "review done", "findings": findings}, open(f"{work}/answer.json", "w"))
json.dump({"type": "object", "required": ["summary", "findings"], "properties": {
    "summary": {"type": "string"},
    "findings": {"type": "array", "items": {
        "type": "object", "required": ["id", "path", "severity", "line", "message"],
        "additionalProperties": False, "properties": {
            "id": {"type": "integer", "minimum": 0}, "path": {"type": "string", "pattern": "^src/"},
            "severity": {"enum": ["low", "medium", "high"]}, "line": {"type": "integer"},
            "message": {"type": "string", "maxLength": 200}}}}}}, open(f"{work}/schema.json", "w"))
PY
mkdir -p "$work/ws"
coproc SERVER { "$serve" "$work/answer.json"; }
server_pid=$SERVER_PID
server_in=${SERVER[1]}
IFS= read -r line <&"${SERVER[0]}"; base_url=${line#base_url=}
cleanup() {
  exec {server_in}>&- 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/config.toml" <<EOF
[backends.llm]
kind = "openai"
base_url = "$base_url"
model = "scripted"
EOF

run=("$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" run --backend llm --prompt review --workspace "$work/ws")
# Sanity: both sides succeed with the whole answer; the schema side validated it.
plain_out=$("${run[@]}" 2>/dev/null)
schema_out=$("${run[@]}" --output-schema "$work/schema.json" 2>/dev/null)
cmp -s <(printf '%s' "$plain_out") <(printf '%s' "$schema_out") \
  || { echo "the two runs printed different answers" >&2; exit 1; }
python3 -c 'import json,sys; json.loads(sys.argv[1])' "$plain_out" \
  || { echo "the answer is not the JSON served" >&2; exit 1; }
echo "== 1. whole process: $runs interleaved rounds, answer $(wc -c <"$work/answer.json") bytes, openai backend over loopback"
pack() { printf '%s\x1f' "$@"; }
python3 - "$runs" "$(pack "${run[@]}")" "$(pack "${run[@]}" --output-schema "$work/schema.json")" <<'PY'
import statistics, subprocess, sys, time
runs = int(sys.argv[1])
plain, schema = (a.rstrip("\x1f").split("\x1f") for a in sys.argv[2:])
samples = {"plain": [], "schema": []}
def once(name, cmd):
    t = time.perf_counter_ns()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    samples[name].append((time.perf_counter_ns() - t) / 1e6)
for _ in range(3):  # warm-up, untimed
    subprocess.run(plain, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(schema, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
for i in range(runs):
    order = [("plain", plain), ("schema", schema)]
    for name, cmd in (order if i % 2 == 0 else order[::-1]):
        once(name, cmd)
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
p, s = statistics.median(samples["plain"]), statistics.median(samples["schema"])
print(f"agent-exec run, no --output-schema (baseline) median {p:8.2f} ms   p90 {q(samples['plain'], .9):8.2f} ms")
print(f"agent-exec run, --output-schema              median {s:8.2f} ms   p90 {q(samples['schema'], .9):8.2f} ms")
print(f"added by --output-schema                            {s - p:8.2f} ms at the median (ratio {s / p:.3f})")
PY
exec {server_in}>&-
wait "$server_pid" || true

echo "== 2. in process: cargo bench -p agent-exec-runtime --bench structured_output (BENCH_N=${BENCH_N:-300})"
BENCH_N=${BENCH_N:-300} cargo bench -q -p agent-exec-runtime --bench structured_output 2>/dev/null
