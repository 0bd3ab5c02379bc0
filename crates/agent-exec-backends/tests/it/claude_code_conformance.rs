//! The conformance suite (the contract's seven invariants, structured output, resume)
//! on the `claude-code` backend: the real `ClaudeCodeBackend` — its argv, its parser,
//! its verify ladder, the one agent-CLI driver — with an `sh` stand-in for `claude`
//! that speaks `claude -p --output-format stream-json` as recorded from Claude Code
//! 2.1.332 (`tests/data/claude-code-*.jsonl`): the `init` line, then the final
//! `result`. The processes, their trees and the files they write are real; only
//! Claude Code's words are scripted. The live suite is `claude_code_live.rs`.

use std::sync::Arc;

use agent_exec_backends::claude_code::ClaudeCodeBackend;

use crate::stand_in;
use stand_in::StandInHarness;

/// The stand-in's head: `--version` and the verify probes (no execution id in the
/// environment) answer as Claude Code does; a run plays `stand_in::SCENARIOS`.
const STAND_IN: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "2.1.332 (Claude Code)"; exit 0; }
session=$(cat /proc/sys/kernel/random/uuid)
tools='[]'
for arg in "$@"; do
  case "$arg" in
    --resume=*) session=${arg#--resume=} ;;
    --json-schema=*) tools='["StructuredOutput"]' ;;
  esac
done
body=$(cat)
echo '{"type":"system","subtype":"init","session_id":"'"$session"'","tools":'"$tools"',"model":"m"}'
if [ -z "$AGENT_EXEC_EXECUTION_ID" ]; then
  # A verify probe: Claude Code's own answer to the refused provider.
  echo '{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","result":"API Error: Connection refused"}'
  exit 1
fi
answer() { printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"'"$1"'","usage":{"input_tokens":3,"output_tokens":2}}'; }
fail() { echo '{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"API Error: 401 refused"}'; exit 1; }
"#;

fn harness() -> StandInHarness {
    StandInHarness::sh("claude", STAND_IN, |config, _| {
        Arc::new(ClaudeCodeBackend::new(config))
    })
}

agent_exec_conformance::conformance_tests!(harness());

#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    stand_in::passes_verify_with_every_declared_capability(&harness()).await;
}
