//! The conformance suite (the contract's seven invariants, resume) on the
//! `agent-native` backend: the real `PiBackend` — its argv, its sessions, its parser,
//! its verify ladder, the one agent-CLI driver — with an `sh` stand-in for `pi` that
//! speaks `pi --mode json` as recorded from pi 0.73.1 (`tests/data/pi-*.jsonl`): the
//! `session` header, then `agent_end` judged by its last message's `stopReason`. The
//! processes, their trees, the session files and the files they write are real; only
//! pi's words are scripted. The live suite is `pi_live.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::command::EXECUTION_ID_VAR;
use agent_exec_backends::pi::PiBackend;
use agent_exec_backends::session_store::SessionStore;
use agent_exec_conformance::{Harness, Scenario};
use agent_exec_contract::Backend;
use agent_exec_runtime::procfs;

/// The stand-in: `--version` and the verify probes (no execution id in the
/// environment) answer as pi does, keeping each session as a `<stamp>_<id>.jsonl` file
/// in `--session-dir` and continuing the one `--session FILE` names; a run says what
/// `$SCENARIO` says.
const STAND_IN: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "0.73.1"; exit 0; }
dir=; file=; prev=
for arg in "$@"; do
  case "$prev" in --session-dir) dir=$arg ;; --session) file=$arg ;; esac
  prev=$arg
done
if [ -n "$file" ]; then
  id=$(basename "$file" .jsonl); id=${id##*_}
else
  id=$(cat /proc/sys/kernel/random/uuid)
  file="$dir/$(date -u +%Y-%m-%dT%H-%M-%S-000Z)_$id.jsonl"
fi
body=$(cat)
header='{"type":"session","version":3,"id":"'"$id"'","timestamp":"2026-12-01T02:58:56.721Z","cwd":"/"}'
[ -n "$dir" ] && printf '%s\n' "$header" >> "$file"
printf '%s\n' "$header"
end() {
  printf '%s\n' '{"type":"agent_end","messages":[{"role":"assistant","content":[{"type":"text","text":"'"$1"'"}],"usage":{"input":3,"output":2,"cacheRead":0,"cacheWrite":0},"stopReason":"'"$2"'","errorMessage":"'"$3"'"}]}'
}
if [ -z "$AGENT_EXEC_EXECUTION_ID" ]; then
  # A verify probe: pi's answer to the refused provider.
  end "" error "Connection error."; exit 0
fi
echo "$AGENT_EXEC_EXECUTION_ID" >> "$INVOCATIONS"
# printf, not echo: dash's echo reads backslashes as escapes.
json=$(printf '%s' "$body" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')
case "$SCENARIO" in
  echo) end "$json" stop "" ;;
  silent) end "" stop "" ;;
  fail) end "" error "401 Incorrect API key provided" ;;
  crash) kill -SEGV $$ ;;
  hang) sleep 1000 & sh -c 'sleep 1000 & wait' & wait ;;
  write-target)
    printf '%s\n' "$body" | sed -n 's/^- //p' | while read -r target; do
      mkdir -p "$(dirname "$target")"; printf '%s' "$body" > "$target"
    done
    end "$json" stop "" ;;
  write-then-fail) echo partial > partial.txt; end "" error "401 Incorrect API key provided" ;;
esac
"#;

struct PiHarness {
    dir: tempfile::TempDir,
}

impl PiHarness {
    fn new() -> Self {
        agent_exec_runtime::become_subreaper().expect("subreaper");
        let dir = tempfile::tempdir().expect("temp dir");
        let program = dir.path().join("pi");
        std::fs::write(&program, STAND_IN).expect("stand-in");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        PiHarness { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

impl Harness for PiHarness {
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
        config.program = Some(text(&self.path("pi")));
        config.env.insert("SCENARIO".into(), scenario.into());
        // Outside the workspace: logging is not a side effect.
        config
            .env
            .insert("INVOCATIONS".into(), text(&self.path("invocations")));
        config.grace_ms = 300;
        Arc::new(PiBackend::new(config).with_session_store(SessionStore::at(self.path("sessions"))))
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

agent_exec_conformance::conformance_tests!(PiHarness::new());

/// The stand-in passes the real verify ladder whole, so the suite above runs the
/// paths a verified pi takes (resume), not their refusals.
#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    let harness = PiHarness::new();
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
