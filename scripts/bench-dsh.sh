#!/usr/bin/env bash
# What an envreg tool call costs in DeepSeek Harness, measured in one run
# (crates/envreg/benches/dsh.rs): the envreg dsh-bridge per call against a process per
# call, then env_resolve inside real dsh headless through the native plugin dsh-envreg
# against the same call through dsh-mcp-client. Outside the CI gate; needs the dsh
# peer, so it sources scripts/setup.d like scripts/test.sh (PEERS_DIR defaults to
# target/peers). Bench profile; about a minute on top of the build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PEERS_DIR="${PEERS_DIR:-$root/target/peers}"
for setup in scripts/setup.d/15-npm-peers.sh scripts/setup.d/16-dsh.sh; do
  # shellcheck disable=SC1090
  . "$setup"
done
exec cargo bench -p envreg --bench dsh "$@"
