# Real MCP peers for envreg-mcp's tests (sourced by scripts/test.sh with PEERS_DIR set):
#   - PyPI `mcp` (the official Python SDK client, 2.x) and `jsonschema` into $PEERS_DIR/venv
#   - npm `@modelcontextprotocol/inspector-cli` (bin: mcp-inspector-cli) into $PEERS_DIR/npm
# Idempotent: each step is skipped when what it installs is already there.
# shellcheck shell=bash
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
mkdir -p "$PEERS_DIR"
if [ ! -x "$PEERS_DIR/venv/bin/python" ]; then
  python3 -m venv "$PEERS_DIR/venv"
fi
if ! "$PEERS_DIR/venv/bin/python" -c 'import mcp, jsonschema, httpx' >/dev/null 2>&1; then
  "$PEERS_DIR/venv/bin/pip" install --quiet --disable-pip-version-check 'mcp>=2.3,<3' 'jsonschema>=4'
fi
if [ ! -e "$PEERS_DIR/npm/node_modules/.bin/mcp-inspector-cli" ]; then
  npm install --silent --no-audit --no-fund --prefix "$PEERS_DIR/npm" '@modelcontextprotocol/inspector-cli@^1.0.3'
fi
