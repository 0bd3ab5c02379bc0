//! The conformance suite (the contract's seven invariants, structured output, resume)
//! on the `claude-code` backend: the real `ClaudeCodeBackend` — its argv, its parser,
//! its verify ladder, the one agent-CLI driver — with an `sh` stand-in for `claude`
//! that speaks `claude -p --output-format stream-json` as recorded from Claude Code
//! 2.1.332 (`tests/data/claude-code-*.jsonl`): the `init` line, then the final
//! `result`. The processes, their trees and the files they write are real; only
//! Claude Code's words are scripted. The live suite is `claude_code_live.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::claude_code::ClaudeCodeBackend;
use agent_exec_backends::command::EXECUTION_ID_VAR;
use agent_exec_conformance::{Harness, Scenario};
use agent_exec_contract::Backend;
use agent_exec_runtime::procfs;

/// The stand-in: `--version` and the verify probes (no execution id in the
/// environment) answer as Claude Code does; a run says what `$SCENARIO` says.
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
echo "$AGENT_EXEC_EXECUTION_ID" >> "$INVOCATIONS"
# printf, not echo: dash's echo reads backslashes as escapes.
json=$(printf '%s' "$body" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')
result() { printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"'"$1"'","usage":{"input_tokens":3,"output_tokens":2}}'; }
failed() { echo '{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"API Error: 401 refused"}'; exit 1; }
case "$SCENARIO" in
  echo) result "$json" ;;
  silent) result "" ;;
  fail) failed ;;
  crash) kill -SEGV $$ ;;
  hang) sleep 1000 & sh -c 'sleep 1000 & wait' & wait ;;
  write-target)
    printf '%s\n' "$body" | sed -n 's/^- //p' | while read -r target; do
      mkdir -p "$(dirname "$target")"; printf '%s' "$body" > "$target"
    done
    result "$json" ;;
  write-then-fail) echo partial > partial.txt; failed ;;
esac
"#;

struct ClaudeCodeHarness {
    dir: tempfile::TempDir,
}

impl ClaudeCodeHarness {
    fn new() -> Self {
        agent_exec_runtime::become_subreaper().expect("subreaper");
        let dir = tempfile::tempdir().expect("temp dir");
        let program = dir.path().join("claude");
        std::fs::write(&program, STAND_IN).expect("stand-in");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        ClaudeCodeHarness { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

impl Harness for ClaudeCodeHarness {
    fn backend(&self, name: &str, scenario: Scenario) -> Arc<dyn Backend> {
        let scenario = match scenario {
            Scenario::Echo => "echo",
            Scenario::Silent => "silent",
            Scenario::Fail => "fail",
            Scenario::Crash => "crash",
            Scenario::Hang => "hang",
            Scenario::WriteTarget => "write-target",
            Scenario::WriteThenFail => "write-then-fail",
        };
        let mut config = ProgramConfig::new(name);
        config.program = Some(text(&self.path("claude")));
        config.env.insert("SCENARIO".into(), scenario.into());
        // Outside the workspace: logging is not a side effect.
        config
            .env
            .insert("INVOCATIONS".into(), text(&self.path("invocations")));
        config.grace_ms = 300;
        Arc::new(ClaudeCodeBackend::new(config))
    }

    fn invocations(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.path("invocations")).unwrap_or_default();
        Some(text.lines().map(str::to_owned).collect())
    }

    fn leftover_processes(&self, execution_id: &str) -> Option<usize> {
        let needle = format!("{EXECUTION_ID_VAR}={execution_id}").into_bytes();
        Some(
            procfs::pids()
                .into_iter()
                .filter(|&pid| procfs::stat(pid).is_some_and(|s| !s.is_gone()))
                .filter(|&pid| procfs::environ_contains(pid, &needle))
                .count(),
        )
    }
}

agent_exec_conformance::conformance_tests!(ClaudeCodeHarness::new());

/// The stand-in passes the real verify ladder whole, so the suite above runs the
/// paths a verified codex takes (resume, structured output), not their refusals.
#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    let harness = ClaudeCodeHarness::new();
    let backend = harness.backend("conf-verify", Scenario::Echo);
    let verification = backend.verify().await;
    assert!(verification.problems.is_empty(), "{verification:?}");
    for capability in backend.descriptor().capabilities {
        assert!(
            verification.verified.contains(&capability),
            "{capability:?}: {verification:?}"
        );
    }
}
