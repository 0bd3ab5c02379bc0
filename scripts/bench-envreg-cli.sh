#!/usr/bin/env bash
# Whole-process figures for the envreg CLI: what a person or a script pays per command,
# process start and a cold registry load included (the warm, in-process figures are the
# criterion bench in crates/envreg-core/benches/).
#
# Usage: scripts/bench-envreg-cli.sh [DIVISOR]
#   DIVISOR scales the synthetic registry down (1 = the issue's 10,000 records).
#
# Every command is measured in the same run next to two floors, so figures are quoted
# as ratios: `envreg --version` (process start, no registry) and `cat` of every record
# file (reading the bytes a cold load must read). Uses hyperfine (installed with apt
# when missing and possible), else a loop timed with /usr/bin/time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
divisor=${1:-1}
target=${CARGO_TARGET_DIR:-$root/target}

cargo build --release -p envreg >&2
envreg="$target/release/envreg"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
synth="$work/synth"
"$envreg" --json synth "$synth" --divisor "$divisor" >"$work/synth.json"
records=$(sed -n 's/.*"records": \([0-9]*\).*/\1/p' "$work/synth.json")
field() { sed -n "s/.*\"$1\": \"\([^\"]*\)\".*/\1/p" "$work/synth.json"; }
env_id=$(field environmentId)
service=$(field serviceId)
deployment=$(field deploymentId)
operation=$(field operation)
query=$(field findQuery)
example="$root/examples/registry"
echo "synthetic registry: $records records in $synth (sample $service in $env_id)" >&2

if ! command -v hyperfine >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get install -y hyperfine >/dev/null 2>&1 || true
  fi
fi

# name|command pairs, floors first.
commands=(
  "floor: process start|$envreg --version"
  "floor: read every record file|find $synth -name '*.yaml' -exec cat {} + >/dev/null"
  "validate ($records records)|$envreg --registry $synth validate"
  "list --kind environment ($records records)|$envreg --registry $synth list --kind environment"
  "find $query ($records records)|$envreg --registry $synth find $query"
  "resolve ($records records)|$envreg --registry $synth resolve $service --env $env_id --deployment $deployment"
  "resolve-operation ($records records)|$envreg --registry $synth resolve-operation $operation --env $env_id --service $service --deployment $deployment"
  "resolve (example registry)|$envreg --registry $example resolve checkout-api --env staging"
  "validate (example registry)|$envreg --registry $example validate"
)

# The machine's load decides how noisy wall times are; print it with the figures.
echo "$(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if command -v hyperfine >/dev/null 2>&1; then
  args=()
  for entry in "${commands[@]}"; do
    args+=(--command-name "${entry%%|*}" "${entry#*|}")
  done
  hyperfine --warmup 2 --min-runs 10 --ignore-failure --export-markdown "$work/results.md" "${args[@]}" >&2
  cat "$work/results.md"
else
  echo "hyperfine not available; timing 10 runs of each with /usr/bin/time" >&2
  printf '| command | mean wall seconds (10 runs) |\n|---|---|\n'
  for entry in "${commands[@]}"; do
    name=${entry%%|*}
    cmd=${entry#*|}
    /usr/bin/time -f '%e' -o "$work/t" bash -c "for i in 1 2 3 4 5 6 7 8 9 10; do $cmd >/dev/null 2>&1 || true; done"
    printf '| %s | %s |\n' "$name" "$(awk '{ printf "%.4f", $1 / 10 }' "$work/t")"
  done
fi
