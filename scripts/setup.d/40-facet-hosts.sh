# shellcheck shell=bash
# The real agent hosts for facet's live hook tests (crates/facet/tests/*_live.rs), into
# $PEERS_DIR/npm: npm `@openai/codex` and `@anthropic-ai/claude-code` (each ships its
# native binary inside the npm package). Both tests drive the host against a scripted
# model on loopback, so no account or key is needed.
# Idempotent: each is skipped when its binary is already there.
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
if [ ! -e "$PEERS_DIR/npm/node_modules/.bin/codex" ]; then
  npm install --silent --no-audit --no-fund --prefix "$PEERS_DIR/npm" '@openai/codex@0.171.0'
fi
if [ ! -e "$PEERS_DIR/npm/node_modules/.bin/claude" ]; then
  npm install --silent --no-audit --no-fund --prefix "$PEERS_DIR/npm" '@anthropic-ai/claude-code@2.1.332'
fi
