# shellcheck shell=bash
# The real Codex CLI for facet's live hook test (crates/facet/tests/codex_live.rs):
# npm `@openai/codex` (a Rust binary shipped in the npm package) into $PEERS_DIR/npm.
# Idempotent: skipped when a codex binary is already there.
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
if [ ! -e "$PEERS_DIR/npm/node_modules/.bin/codex" ]; then
  npm install --silent --no-audit --no-fund --prefix "$PEERS_DIR/npm" '@openai/codex@0.171.0'
fi
