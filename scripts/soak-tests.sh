#!/usr/bin/env bash
# Flake hunt, outside the gate: run `cargo test --workspace` RUNS times, odd runs with
# LOAD busy loops competing for the cores, and report each run's status and failures.
# CI runs the suite once on a shared 2-core machine; a test that fails one run in ten
# fails CI one submission in ten. Usage: scripts/soak-tests.sh [RUNS] [LOAD]
# (defaults 4 and 2). Each run goes on past a failing test binary (--no-fail-fast), so
# one run reports every flake it meets. Needs the peers scripts/test.sh installs (it sources the same
# scripts/setup.d steps). Logs: $SOAK_DIR (default target/soak)/run-N.log.
set -euo pipefail
runs="${1:-4}"
load="${2:-2}"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PEERS_DIR="${PEERS_DIR:-$root/target/peers}"
for setup in scripts/setup.d/*.sh; do
  # shellcheck disable=SC1090
  . "$setup" >/dev/null
done
logs="${SOAK_DIR:-${CARGO_TARGET_DIR:-$root/target}/soak}"
mkdir -p "$logs"
cargo test --workspace --locked --no-run >/dev/null 2>&1
busy=()
stop_load() {
  if [ "${#busy[@]}" -gt 0 ]; then kill "${busy[@]}" 2>/dev/null || true; fi
  busy=()
}
trap stop_load EXIT
failed=0
for i in $(seq 1 "$runs"); do
  with_load=0
  if [ $((i % 2)) = 1 ] && [ "$load" -gt 0 ]; then
    with_load="$load"
    for _ in $(seq 1 "$load"); do
      (while :; do :; done) &
      busy+=("$!")
    done
  fi
  start=$(date +%s)
  status=0
  cargo test --workspace --locked --no-fail-fast >"$logs/run-$i.log" 2>&1 || status=$?
  stop_load
  echo "run $i: busy loops $with_load, exit $status, $(($(date +%s) - start)) s"
  if [ "$status" != 0 ]; then
    failed=$((failed + 1))
    grep -E '^test .* FAILED|panicked at' "$logs/run-$i.log" | sed 's/^/  /' || true
  fi
done
echo "$failed of $runs runs failed (logs in $logs)"
[ "$failed" = 0 ]
