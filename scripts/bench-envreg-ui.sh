#!/usr/bin/env bash
# envreg ui on the synthetic 10,000-record registry (envreg synth: 100 environments,
# 2,000 services, 6,000 deployments, 200 rule profiles, 1,700 bindings), release build:
#   - server time of the matrix's first page and of one cell page, p50 and p99, as the
#     server measured it (its `Server-Timing: page;dur=…` header: registry read,
#     resolve, HTML), and the client's total over loopback beside it;
#   - the first page's bytes;
#   - the baseline, in the same run: the same cell's `envreg resolve --json` (the whole
#     process, registry open included, as a person or script runs it).
# Runs are interleaved (matrix, cell, matrix, ...) so load drift hits both alike.
#
#   scripts/bench-envreg-ui.sh              # 100 page pairs, 10 CLI runs
#   RUNS=300 CLI_RUNS=20 scripts/bench-envreg-ui.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-100}
cli_runs=${CLI_RUNS:-10}
target=${CARGO_TARGET_DIR:-$root/target}
cargo build --release -q -p envreg
bin="$target/release/envreg"
mkdir -p "$target/tmp"
work=$(mktemp -d -p "$target/tmp" bench-ui.XXXXXX)
ui_pid=
cleanup() {
  if [ -n "$ui_pid" ]; then kill "$ui_pid" 2>/dev/null || true; wait "$ui_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" synth "$work/registry" >/dev/null
# The synthetic sample cell (envreg_core::synth::sample): env-000 / svc-0000 / dep-00000.
env=env-000 service=svc-0000 deployment=dep-00000
"$bin" --registry "$work/registry" --json resolve "$service" --env "$env" --deployment "$deployment" >/dev/null

"$bin" --registry "$work/registry" ui --listen 127.0.0.1:0 >"$work/ui.out" 2>"$work/ui.err" &
ui_pid=$!
for _ in $(seq 1 600); do
  grep -q '^envreg ui: ' "$work/ui.out" && break
  sleep 0.1
done
url=$(sed -n 's/^envreg ui: //p' "$work/ui.out")
[ -n "$url" ] || { echo "envreg ui did not start: $(cat "$work/ui.err")" >&2; exit 1; }
echo "== envreg ui at $url on $work/registry; $runs interleaved page pairs, $cli_runs CLI runs"

cell_path="cell/$env/$service"
# Warm-up: the first request of each page builds the snapshot's lazy indexes.
curl -sf -o /dev/null "$url"; curl -sf -o /dev/null "$url$cell_path"

one() { # URL → "server_ms client_ms bytes"
  curl -sf -D "$work/headers" -o /dev/null -w '%{time_total} %{size_download}\n' "$1" >"$work/line"
  local server
  server=$(tr -d '\r' <"$work/headers" | sed -n 's/^server-timing: page;dur=//Ip')
  read -r total bytes <"$work/line"
  echo "$server $(python3 -c "print(f'{$total * 1000:.3f}')") $bytes"
}
: >"$work/matrix"; : >"$work/cell"
for _ in $(seq 1 "$runs"); do
  one "$url" >>"$work/matrix"
  one "$url$cell_path" >>"$work/cell"
done
: >"$work/cli"
for _ in $(seq 1 "$cli_runs"); do
  start=$(date +%s%N)
  "$bin" --registry "$work/registry" --json resolve "$service" --env "$env" --deployment "$deployment" >/dev/null
  end=$(date +%s%N)
  echo "$(( (end - start) / 1000 ))" >>"$work/cli"
done

python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
def pct(values, p):
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(p / 100 * (len(values) - 1))))
    return values[k]
def rows(name):
    with open(f"{work}/{name}") as f:
        return [tuple(float(x) for x in line.split()) for line in f if line.strip()]
matrix, cell = rows("matrix"), rows("cell")
cli = [r[0] / 1000 for r in rows("cli")]
for label, data in (("matrix page 1", matrix), ("cell page", cell)):
    server = [r[0] for r in data]; client = [r[1] for r in data]
    print(f"{label:14} server p50 {pct(server, 50):8.2f} ms  p99 {pct(server, 99):8.2f} ms   "
          f"client p50 {pct(client, 50):8.2f} ms  p99 {pct(client, 99):8.2f} ms   bytes {int(data[0][2])}")
print(f"{'envreg resolve --json (same cell, whole process)':48} p50 {pct(cli, 50):8.2f} ms  p99 {pct(cli, 99):8.2f} ms")
cell_p50 = pct([r[0] for r in cell], 50)
print(f"SUMMARY matrix_p50_ms={pct([r[0] for r in matrix], 50):.2f} cell_p50_ms={cell_p50:.2f} "
      f"first_page_bytes={int(matrix[0][2])} cli_resolve_p50_ms={pct(cli, 50):.2f} "
      f"cell_over_cli={cell_p50 / pct(cli, 50):.4f}")
PY
