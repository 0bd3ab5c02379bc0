//! The conformance suite (the contract's seven invariants, resume) on the `copilot`
//! backend: the real `CopilotBackend` — its argv, its parser, its verify ladder, the
//! one agent-CLI driver, its usage-file reader — with an `sh` stand-in for `copilot`
//! that speaks `copilot --output-format json` as recorded from GitHub Copilot CLI
//! 1.0.102 (`tests/data/copilot-*.jsonl`): the prompt as `user.message`, a turn, the
//! message, `session.error` on failure, the final `result`; and writes the usage file
//! `--usage-output-file` names. The processes, their trees and the files they write
//! are real; only Copilot's words are scripted. The live suite is `copilot_live.rs`.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_exec_backends::copilot::CopilotBackend;

mod stand_in;
use stand_in::StandInHarness;

/// The stand-in's head: `--version` and the verify probes (no execution id in the
/// environment) answer as Copilot does; a run plays `stand_in::SCENARIOS`. Sessions are
/// folders with an `events.jsonl` under `$COPILOT_HOME` (the probe's) or beside the
/// invocation log, as Copilot keeps them, so `--resume` of a session that was never
/// started fails as Copilot's does.
const STAND_IN: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "GitHub Copilot CLI 1.0.102."; exit 0; }
home=${COPILOT_HOME:-$(dirname "$INVOCATIONS")/copilot-home}
mkdir -p "$home/session-state"
session=; usage=
for arg in "$@"; do
  case "$arg" in
    --session-id=*) session=${arg#--session-id=} ;;
    --resume=*)
      session=${arg#--resume=}
      [ -e "$home/session-state/$session" ] || { echo "Error: No session, task, or name matched '$session'." >&2; exit 1; } ;;
    --usage-output-file=*) usage=${arg#--usage-output-file=} ;;
  esac
done
mkdir -p "$home/session-state/$session"
body=$(cat)
echo '{"type":"user.message","data":{}}' >> "$home/session-state/$session/events.jsonl"
# printf, not echo: dash's echo reads backslashes as escapes.
json=$(printf '%s' "$body" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')
echo '{"type":"session.tools_updated","data":{"model":"gpt-4.1"},"ephemeral":true}'
echo '{"type":"user.message","data":{"content":"'"$json"'"}}'
echo '{"type":"assistant.turn_start","data":{"turnId":"0"}}'
if [ -z "$AGENT_EXEC_EXECUTION_ID" ]; then
  # A verify probe: Copilot would now retry the refused provider for some 20 s.
  sleep 30; exit 1
fi
answer() {
  printf '%s\n' '{"type":"assistant.message_delta","data":{"messageId":"m1","deltaContent":"'"$1"'"}}'
  printf '%s\n' '{"type":"assistant.message","data":{"messageId":"m1","content":"'"$1"'","toolRequests":[]}}'
  printf '%s\n' '{"modelMetrics":{"gpt-4.1":{"usage":{"inputTokens":3,"outputTokens":2}}}}' > "$usage"
  echo '{"type":"result","sessionId":"'"$session"'","exitCode":0}'
}
fail() {
  echo '{"type":"session.error","data":{"errorType":"authentication","message":"Authentication failed with provider (HTTP 401).","statusCode":401}}'
  echo '{"type":"result","sessionId":"'"$session"'","exitCode":1}'
  exit 1
}
"#;

fn harness() -> StandInHarness {
    StandInHarness::sh("copilot", STAND_IN, |config, _| {
        Arc::new(CopilotBackend::new(config))
    })
}

agent_exec_conformance::conformance_tests!(harness());

#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    stand_in::passes_verify_with_every_declared_capability(&harness()).await;
}

/// A stand-in that answers one successful turn, then leaves at the usage file's path
/// what `$TRICK` says: Copilot's file, a FIFO (reading it must not wait for a writer),
/// `/dev/zero` (endless), or a sparse 8 GB file. The program, or any tool it runs, can
/// do this: the path is in its argv.
const TRICKSTER: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "GitHub Copilot CLI 1.0.102."; exit 0; }
for arg in "$@"; do
  case "$arg" in --usage-output-file=*) usage=${arg#--usage-output-file=} ;; esac
done
cat > /dev/null
rm -f "$usage"
case "$TRICK" in
  file) printf '%s\n' '{"modelMetrics":{"m":{"usage":{"inputTokens":7,"outputTokens":5}}}}' > "$usage" ;;
  fifo) mkfifo "$usage" ;;
  zero) ln -s /dev/zero "$usage" ;;
  sparse) truncate -s 8G "$usage" ;;
esac
echo '{"type":"assistant.message","data":{"messageId":"m1","content":"done","toolRequests":[]}}'
echo '{"type":"result","sessionId":"0cb916db-26aa-40f2-86b5-1ba81b225fd2","exitCode":0}'
"#;

async fn run_with_trick(trick: &str) -> agent_exec_contract::ContractResult {
    use agent_exec_backends::agent_program::ProgramConfig;
    use agent_exec_contract::{Backend as _, EventSink, ExecutionContext};
    agent_exec_runtime::become_subreaper().expect("subreaper");
    let dir = tempfile::tempdir().unwrap();
    let program = stand_in::write_program(dir.path(), "copilot", TRICKSTER);
    let workspace = tempfile::tempdir().unwrap();
    let mut config = ProgramConfig::new("trick");
    config.program = Some(program.display().to_string());
    config.env.insert("TRICK".into(), trick.into());
    let request = agent_exec_contract::ContractRequest {
        execution_id: format!("trick-{trick}"),
        prompt: "hi".into(),
        workspace: agent_exec_contract::WorkspaceHandle {
            root: workspace.path().display().to_string(),
            writable: Vec::new(),
        },
        ..Default::default()
    };
    let (sink, _rx) = EventSink::channel();
    // A generous bound, not a timing claim: a reader that waits on the FIFO would
    // wait forever, and the test must then fail rather than hang.
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        CopilotBackend::new(config).execute(&request, ExecutionContext::new(sink)),
    )
    .await
    .unwrap_or_else(|_| panic!("reading the usage file ({trick}) hung the run"))
}

#[tokio::test]
async fn the_usage_file_is_read_bounded_and_never_waited_on() {
    let result = run_with_trick("file").await;
    assert_eq!(result.outcome, agent_exec_contract::Outcome::Succeeded);
    assert_eq!(
        (result.usage.prompt_tokens, result.usage.completion_tokens),
        (7, 5)
    );
    for (trick, why) in [
        ("fifo", "not a usage report"),
        ("zero", "over the limit"),
        ("sparse", "over the limit"),
    ] {
        let result = run_with_trick(trick).await;
        assert_eq!(
            result.outcome,
            agent_exec_contract::Outcome::Succeeded,
            "{trick}: {result:#?}"
        );
        assert_eq!(result.text, "done");
        assert_eq!(result.usage, Default::default(), "{trick}");
        assert!(
            result.logs.contains("copilot's usage file") && result.logs.contains(why),
            "{trick}: {}",
            result.logs
        );
    }
}
