#!/usr/bin/env bash
# envreg over MCP: round-trip p50/p99 and throughput of env_resolve next to the echo
# tool (the SDK's floor) answering as many bytes as env_resolve does, and next to a
# 5-byte echo, over stdio and streamable HTTP, on the 10,000-record synthetic registry,
# all in one run. Target: env_resolve throughput >= half of the size-matched echo's.
# Whole-process figures: a real server process, a real socket/pipe, release build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec cargo bench -p envreg-mcp --bench roundtrip "$@"
