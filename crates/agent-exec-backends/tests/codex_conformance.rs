//! The conformance suite (the contract's seven invariants, structured output, resume)
//! on the `codex` backend: the real `CodexBackend` — its argv, its parser, its verify
//! ladder, the one agent-CLI driver — with an `sh` stand-in for `codex` that speaks
//! `codex exec --json` as recorded from codex-cli 0.171.0 (`tests/data/codex-*.jsonl`):
//! `thread.started`, `turn.started`, an `agent_message`, `turn.completed` or
//! `turn.failed`. The processes, their trees and the files they write are real; only
//! codex's words are scripted. The live suite is `codex_live.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::codex::CodexBackend;
use agent_exec_backends::command::EXECUTION_ID_VAR;
use agent_exec_conformance::{Harness, Scenario};
use agent_exec_contract::Backend;
use agent_exec_runtime::procfs;

/// The stand-in: `--version` and the verify probes (no execution id in the
/// environment) answer as codex does; a run says what `$SCENARIO` says.
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
echo "$AGENT_EXEC_EXECUTION_ID" >> "$INVOCATIONS"
# printf, not echo: dash's echo reads backslashes as escapes.
json=$(printf '%s' "$body" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')
message() { printf '%s\n' '{"type":"item.completed","item":{"type":"agent_message","text":"'"$1"'"}}'; }
completed() { echo '{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":2}}'; }
failed() { echo '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: refused"}}'; exit 1; }
case "$SCENARIO" in
  echo) message "$json"; completed ;;
  silent) completed ;;
  fail) failed ;;
  crash) kill -SEGV $$ ;;
  hang) sleep 1000 & sh -c 'sleep 1000 & wait' & wait ;;
  write-target)
    printf '%s\n' "$body" | sed -n 's/^- //p' | while read -r target; do
      mkdir -p "$(dirname "$target")"; printf '%s' "$body" > "$target"
    done
    message "$json"; completed ;;
  write-then-fail) echo partial > partial.txt; failed ;;
esac
"#;

struct CodexHarness {
    dir: tempfile::TempDir,
}

impl CodexHarness {
    fn new() -> Self {
        agent_exec_runtime::become_subreaper().expect("subreaper");
        let dir = tempfile::tempdir().expect("temp dir");
        let program = dir.path().join("codex");
        std::fs::write(&program, STAND_IN).expect("stand-in");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        CodexHarness { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

impl Harness for CodexHarness {
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
        config.program = Some(text(&self.path("codex")));
        config.env.insert("SCENARIO".into(), scenario.into());
        // Outside the workspace: logging is not a side effect.
        config
            .env
            .insert("INVOCATIONS".into(), text(&self.path("invocations")));
        config.grace_ms = 300;
        Arc::new(CodexBackend::new(config))
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

agent_exec_conformance::conformance_tests!(CodexHarness::new());

/// The stand-in passes the real verify ladder whole, so the suite above runs the
/// paths a verified codex takes (resume, structured output), not their refusals.
#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    let harness = CodexHarness::new();
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
