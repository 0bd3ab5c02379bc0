//! The conformance suite (the contract's seven invariants, structured output, resume)
//! on the `gemini` backend: the real `GeminiBackend` — its argv, its parser, its
//! verify ladder, the one agent-CLI driver — with an `sh` stand-in for `gemini` that
//! speaks `gemini --output-format=stream-json` as recorded from Gemini CLI 0.61.0
//! (`tests/data/gemini-*.jsonl`): `init`, the prompt's `message`, the answer, `result`.
//! The processes, their trees and the files they write are real; only Gemini's words
//! are scripted. The live suite is `gemini_live.rs`.

use std::sync::Arc;

use agent_exec_backends::gemini::GeminiBackend;

use crate::stand_in;
use stand_in::StandInHarness;

/// The stand-in's head: `--version` and the verify probes (no execution id in the
/// environment) answer as Gemini does; a run plays `stand_in::SCENARIOS`.
const STAND_IN: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "0.61.0"; exit 0; }
session=$(cat /proc/sys/kernel/random/uuid)
for arg in "$@"; do
  case "$arg" in
    --resume=*) session=${arg#--resume=} ;;
  esac
done
body=$(cat)
echo '{"type":"init","timestamp":"t","session_id":"'"$session"'","model":"m"}'
echo '{"type":"message","timestamp":"t","role":"user","content":"prompt"}'
# A verify probe: the stream is proven here, and the probe stops the tree.
[ -z "$AGENT_EXEC_EXECUTION_ID" ] && exec sleep 30
answer() {
  [ -n "$1" ] && printf '%s\n' '{"type":"message","timestamp":"t","role":"assistant","content":"'"$1"'","delta":true}'
  echo '{"type":"result","timestamp":"t","status":"success","stats":{"input_tokens":3,"output_tokens":2}}'
}
fail() { echo '{"type":"result","timestamp":"t","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":400,\"message\":\"API key not valid.\"}}]"}}'; exit 1; }
"#;

fn harness() -> StandInHarness {
    StandInHarness::sh("gemini", STAND_IN, |config, _| {
        Arc::new(GeminiBackend::new(config))
    })
}

agent_exec_conformance::conformance_tests!(harness());

#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    stand_in::passes_verify_with_every_declared_capability(&harness()).await;
}
