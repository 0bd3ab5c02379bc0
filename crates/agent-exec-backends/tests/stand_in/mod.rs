//! What the agent-CLI conformance tests share (`codex_conformance.rs`,
//! `claude_code_conformance.rs`, `pi_conformance.rs`): the real backend — its argv, its
//! parser, its verify ladder, the one agent-CLI driver — over an `sh` stand-in for the
//! program that speaks its recorded stream. Each test holds only what differs: the
//! stand-in's own words (an `sh` stand-in ends in the shared [`SCENARIOS`]), the
//! program's file name and how the backend is built.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::command::EXECUTION_ID_VAR;
use agent_exec_conformance::{Harness, Scenario};
use agent_exec_contract::{Backend, Capability, Verification};

/// Builds the backend under test from its config and the harness's folder.
pub type Build = fn(ProgramConfig, &Path) -> Arc<dyn Backend>;

pub struct StandInHarness {
    dir: tempfile::TempDir,
    program: &'static str,
    build: Build,
}

impl StandInHarness {
    /// `script` is written as `program` (executable) in a fresh folder.
    pub fn new(program: &'static str, script: &str, build: Build) -> Self {
        agent_exec_runtime::become_subreaper().expect("subreaper");
        let dir = tempfile::tempdir().expect("temp dir");
        write_program(dir.path(), program, script);
        StandInHarness {
            dir,
            program,
            build,
        }
    }

    /// [`new`](Self::new) with an `sh` stand-in: `head`, then [`SCENARIOS`].
    pub fn sh(program: &'static str, head: &str, build: Build) -> Self {
        Self::new(program, &format!("{head}{SCENARIOS}"), build)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// The end of every `sh` stand-in, the same for each program: it logs the run, then
/// plays `$SCENARIO` (the names [`StandInHarness`] gives the suite's scenarios) with the
/// two functions the stand-in's head defines in its program's words — `answer TEXT` (a
/// successful turn answering TEXT; no message for "") and `fail` (the provider's
/// refusal) — after reading the prompt into `$body` and answering verify's probes.
pub const SCENARIOS: &str = r#"echo "$AGENT_EXEC_EXECUTION_ID" >> "$INVOCATIONS"
# printf, not echo: dash's echo reads backslashes as escapes.
json=$(printf '%s' "$body" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')
case "$SCENARIO" in
  echo) answer "$json" ;;
  silent) answer "" ;;
  fail) fail ;;
  crash) kill -SEGV $$ ;;
  hang) sleep 1000 & sh -c 'sleep 1000 & wait' & wait ;;
  write-target)
    printf '%s\n' "$body" | sed -n 's/^- //p' | while read -r target; do
      mkdir -p "$(dirname "$target")"; printf '%s' "$body" > "$target"
    done
    answer "$json" ;;
  write-then-fail) echo partial > partial.txt; fail ;;
esac
"#;

/// Writes `script` as the executable program `dir/name` and returns its path: every
/// stand-in program (the harness's, and the live tests' impostors for `verify`).
pub fn write_program(dir: &Path, name: &str, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, script).expect("stand-in");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

impl Harness for StandInHarness {
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
        config.program = Some(text(&self.path(self.program)));
        config.env.insert("SCENARIO".into(), scenario.into());
        // Outside the workspace: logging is not a side effect.
        config
            .env
            .insert("INVOCATIONS".into(), text(&self.path("invocations")));
        config.grace_ms = 300;
        (self.build)(config, self.dir.path())
    }

    fn invocations(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.path("invocations")).unwrap_or_default();
        Some(text.lines().map(str::to_owned).collect())
    }

    fn leftover_processes(&self, execution_id: &str) -> Option<usize> {
        Some(test_support::procfs::with_env(format!("{EXECUTION_ID_VAR}={execution_id}")).len())
    }
}

/// The stand-in passes the real verify ladder whole, so the suite runs the paths a
/// verified program takes (resume, structured output), not their refusals: every
/// declared capability is verified, and a problem may only name a capability the
/// backend does not declare (`acp`'s `usage`: ACP v1 has no token counts to verify).
pub async fn passes_verify_with_every_declared_capability(
    harness: &StandInHarness,
) -> Verification {
    let backend = harness.backend("conf-verify", Scenario::Echo);
    let verification = backend.verify().await;
    let declared = backend.descriptor().capabilities;
    for capability in &declared {
        assert!(
            verification.verified.contains(capability),
            "{capability:?}: {verification:?}"
        );
    }
    for problem in &verification.problems {
        let named = problem
            .split_once(':')
            .map(|(name, _)| Capability::from_wire(name));
        assert!(
            named.is_some_and(|capability| !declared.contains(&capability)),
            "a problem with a declared capability: {problem}: {verification:?}"
        );
    }
    verification
}
