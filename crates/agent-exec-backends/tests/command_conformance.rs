//! The conformance suite (the contract's seven invariants) on the `command` backend,
//! with `sh` scripts standing in for agent programs: the processes, their trees and
//! the files they write are real.

use std::path::PathBuf;
use std::sync::Arc;

use agent_exec_backends::command::{CommandBackend, CommandConfig, EXECUTION_ID_VAR};
use agent_exec_conformance::{Harness, Scenario};
use agent_exec_contract::Backend;

struct CommandHarness {
    logs: tempfile::TempDir,
}

impl CommandHarness {
    fn new() -> Self {
        agent_exec_runtime::become_subreaper().expect("subreaper");
        CommandHarness {
            logs: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn log(&self) -> PathBuf {
        self.logs.path().join("invocations")
    }
}

impl Harness for CommandHarness {
    fn backend(&self, name: &str, scenario: Scenario) -> Arc<dyn Backend> {
        let body = match scenario {
            Scenario::Echo => "cat",
            Scenario::Silent => "cat >/dev/null",
            Scenario::Fail => "cat >/dev/null; echo refused >&2; exit 3",
            Scenario::Crash => "cat >/dev/null; kill -SEGV $$",
            Scenario::Hang => "sleep 1000 & sh -c 'sleep 1000 & wait' & wait",
            Scenario::WriteTarget => {
                "body=$(cat); for t in $AGENT_EXEC_TARGETS; do \
                 mkdir -p \"$(dirname \"$t\")\"; printf '%s' \"$body\" > \"$t\"; done"
            }
            Scenario::WriteThenFail => "cat >/dev/null; echo partial > partial.txt; exit 4",
        };
        // The invocation log is outside the workspace: logging is not a side effect.
        let script = format!(
            "echo \"${EXECUTION_ID_VAR}\" >> '{}'; {body}",
            self.log().display()
        );
        let mut config = CommandConfig::new(name, vec!["sh".into(), "-c".into(), script]);
        config.grace_ms = 300;
        Arc::new(CommandBackend::new(config))
    }

    fn invocations(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        Some(text.lines().map(str::to_owned).collect())
    }

    fn leftover_processes(&self, execution_id: &str) -> Option<usize> {
        Some(test_support::procfs::with_env(format!("{EXECUTION_ID_VAR}={execution_id}")).len())
    }
}

agent_exec_conformance::conformance_tests!(CommandHarness::new());
