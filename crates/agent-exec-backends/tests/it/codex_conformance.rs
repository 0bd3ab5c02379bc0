//! The conformance suite (the contract's seven invariants, structured output, resume)
//! on the `codex` backend: the real `CodexBackend` — its argv, its parser, its verify
//! ladder, the one agent-CLI driver — with an `sh` stand-in for `codex` that speaks
//! `codex exec --json` as recorded from codex-cli 0.171.0 (`tests/data/codex-*.jsonl`):
//! `thread.started`, `turn.started`, an `agent_message`, `turn.completed` or
//! `turn.failed`. The processes, their trees and the files they write are real; only
//! codex's words are scripted. The live suite is `codex_live.rs`.

use std::sync::Arc;

use agent_exec_backends::codex::CodexBackend;

use crate::stand_in;
use stand_in::StandInHarness;

/// The stand-in's head: `--version` and the verify probes (no execution id in the
/// environment) answer as codex does; a run plays `stand_in::SCENARIOS`.
const STAND_IN: &str = r#"#!/bin/sh
for arg in "$@"; do
  [ "$arg" = --version ] && { echo "codex-cli-exec 0.171.0"; exit 0; }
done
if [ "$2" = resume ]; then
  eval "thread=\${$(($# - 1))}"
else
  thread=$(cat /proc/sys/kernel/random/uuid)
fi
body=$(cat)
echo '{"type":"thread.started","thread_id":"'"$thread"'"}'
echo '{"type":"turn.started"}'
# A verify probe: the stream is proven here, and the probe stops the tree.
[ -z "$AGENT_EXEC_EXECUTION_ID" ] && exec sleep 30
answer() {
  [ -n "$1" ] && printf '%s\n' '{"type":"item.completed","item":{"type":"agent_message","text":"'"$1"'"}}'
  echo '{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":2}}'
}
fail() { echo '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: refused"}}'; exit 1; }
"#;

fn harness() -> StandInHarness {
    StandInHarness::sh("codex", STAND_IN, |config, _| {
        Arc::new(CodexBackend::new(config))
    })
}

agent_exec_conformance::conformance_tests!(harness());

#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    stand_in::passes_verify_with_every_declared_capability(&harness()).await;
}
