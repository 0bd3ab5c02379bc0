//! The conformance suite (the contract's seven invariants, resume) on the `opencode`
//! backend: the real `OpenCodeBackend` — its argv, its config content, its parser, its
//! verify ladder, the one agent-CLI driver — with an `sh` stand-in for `opencode` that
//! speaks `opencode run --format json` as recorded from opencode-ai 1.18.33
//! (`tests/data/opencode-*.jsonl`): `step_start`, `text`, `step_finish` ending in
//! `stop`, or an `error` line and exit 1. The processes, their trees and the files they
//! write are real; only OpenCode's words are scripted. The live suite is
//! `opencode_live.rs`.

use std::sync::Arc;

use agent_exec_backends::opencode::OpenCodeBackend;

use crate::stand_in;
use stand_in::StandInHarness;

/// The stand-in: `--version` and the verify probes (no execution id in the
/// environment) answer as OpenCode does against a provider that says 400 — an `error`
/// line for the session, continuing the one `--session=ID` names; a run plays
/// `stand_in::SCENARIOS`.
const STAND_IN: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "1.18.33"; exit 0; }
session=ses_$(tr -d - < /proc/sys/kernel/random/uuid)
for arg in "$@"; do
  case "$arg" in --session=*) session=${arg#--session=} ;; esac
done
body=$(cat)
event() { printf '{"type":"%s","timestamp":1,"sessionID":"%s"%s}\n' "$1" "$session" "$2"; }
error() { event error ',"error":{"name":"APIError","data":{"message":"'"$1"'","statusCode":'"$2"',"isRetryable":false}}'; exit 1; }
[ -z "$AGENT_EXEC_EXECUTION_ID" ] && error "probe" 400
# The model call starts (and with it the session's first line) before anything else.
event step_start ',"part":{"type":"step-start"}'
answer() {
  [ -n "$1" ] && event text ',"part":{"type":"text","text":"'"$1"'"}'
  event step_finish ',"part":{"type":"step-finish","reason":"stop","tokens":{"input":3,"output":2}}'
}
fail() { error "Incorrect API key provided" 401; }
"#;

fn harness() -> StandInHarness {
    StandInHarness::sh("opencode", STAND_IN, |config, _| {
        Arc::new(OpenCodeBackend::new(config))
    })
}

agent_exec_conformance::conformance_tests!(harness());

#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    stand_in::passes_verify_with_every_declared_capability(&harness()).await;
}
