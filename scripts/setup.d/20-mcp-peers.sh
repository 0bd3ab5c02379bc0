# shellcheck shell=bash
# Real MCP peers for envreg-mcp's and facet's tests (sourced by scripts/test.sh with
# PEERS_DIR set):
#   - PyPI `mcp` (the official Python SDK client) and `jsonschema` into $PEERS_DIR/venv,
#     at the exact versions of scripts/peers/requirements.txt
#   - npm `@modelcontextprotocol/inspector-cli` comes from 15-npm-peers.sh
# Idempotent: pip runs only when the installed requirements differ from the committed ones.
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
mcp_peers_setup() {
  local requirements stamp
  requirements="$(cd "$(dirname "${BASH_SOURCE[0]}")/../peers" && pwd)/requirements.txt"
  stamp="$PEERS_DIR/venv/.installed-from.requirements.txt"
  mkdir -p "$PEERS_DIR"
  if [ ! -x "$PEERS_DIR/venv/bin/python" ]; then
    python3 -m venv "$PEERS_DIR/venv" || return 1
  fi
  if [ -e "$stamp" ] && cmp -s "$stamp" "$requirements"; then
    return 0
  fi
  "$PEERS_DIR/venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" || {
    echo "20-mcp-peers: pip install failed" >&2
    return 1
  }
  cp "$requirements" "$stamp"
}
mcp_peers_setup
