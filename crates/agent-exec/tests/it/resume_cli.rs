//! `agent-exec resume` refusals, end to end: the binary, a real journal file, and the
//! four reasons a resume is refused (issue 12 §1) — succeeded, still running under a
//! live owner, no session handle, a backend without verified `resume` — each a
//! `failed` result (exit 1) with a message a user can act on. The resume that
//! continues a real agent is in `resume_live.rs`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use agent_exec_contract::{ContractRequest, WorkspaceHandle};
use agent_exec_journal::{End, ExecutionStart, SqliteJournal, State};
use serde_json::Value;

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let config = "[backends.echo]\nkind = \"command\"\nargv = [\"cat\"]\n\
                      [backends.crash]\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"cat >/dev/null; kill -SEGV $$\"]\n";
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn agent_exec(&self, args: &[&str]) -> Output {
        Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
            .env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"))
            .args(args)
            .output()
            .unwrap()
    }

    fn run(&self, backend: &str, id: &str) -> Output {
        let ws = self.path("ws");
        self.agent_exec(&[
            "run",
            "--backend",
            backend,
            "--prompt",
            "the task",
            "--workspace",
            ws.to_str().unwrap(),
            "--execution-id",
            id,
        ])
    }

    /// The journal as another runner (this test process) writes it.
    fn journal(&self) -> SqliteJournal {
        SqliteJournal::open(&self.path("journal.sqlite3"))
            .unwrap()
            .0
    }
}

/// An execution of `backend` whose attempt 1 reported `session`, written by this
/// process (alive: it owns the execution until `end` settles it).
fn journaled_with_session(
    journal: &SqliteJournal,
    ws: &Path,
    id: &str,
    backend: &str,
    end: Option<State>,
) {
    let request = ContractRequest {
        execution_id: id.into(),
        prompt: "the task".into(),
        workspace: WorkspaceHandle {
            root: ws.display().to_string(),
            writable: Vec::new(),
        },
        ..Default::default()
    };
    let json = serde_json::to_string(&request).unwrap();
    journal
        .start_execution(&ExecutionStart {
            execution_id: id,
            backend,
            request_json: Some(&json),
            deadline: None,
        })
        .unwrap();
    journal.start_attempt(id, 1, backend).unwrap();
    journal
        .record_session(id, 1, "0199a213-81c0-7800-8aa1-bbab2a035a53")
        .unwrap();
    if let Some(outcome) = end {
        let end = End {
            outcome,
            error_json: Some(r#"{"code":"agent.unknown_outcome","side_effects":"possible"}"#),
            error_code: Some("agent.unknown_outcome"),
            usage: Default::default(),
            cancel_requested: false,
        };
        journal.finish_attempt(id, 1, &end).unwrap();
        journal.finish_execution(id, &end).unwrap();
    }
}

/// What varies per run (pids, host, times) masked.
fn masked(text: &str) -> String {
    let mut out = text.to_owned();
    for (pattern, replacement) in [
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "[time]"),
        (r"pid \d+ on [^\s;]+", "pid [pid] on [host]"),
        (r"workspace: \S+", "workspace: [dir]"),
    ] {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, replacement)
            .into_owned();
    }
    out
}

fn refused(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(1),
        "a refusal is a failed result: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "failed");
    assert_eq!(result["err"]["side_effects"], "none", "nothing ran");
    result
}

#[test]
fn every_refusal_says_why_and_leaves_the_journal_as_it_was() {
    let sandbox = Sandbox::new();
    let ws = sandbox.path("ws");

    // Succeeded: there is nothing to resume.
    assert!(sandbox.run("echo", "res-done").status.success());
    // Unknown, but its backend never reported a session handle.
    assert_eq!(sandbox.run("crash", "res-nohandle").status.code(), Some(3));
    // A handle, on a backend that cannot resume (a `command` backend never verifies it).
    let journal = sandbox.journal();
    journaled_with_session(&journal, &ws, "res-noresume", "echo", Some(State::Unknown));
    // A handle, and still running under a live owner (this process).
    journaled_with_session(&journal, &ws, "res-live", "echo", None);

    let mut transcript = String::new();
    for (id, code, needle) in [
        ("res-done", "agent.internal", "already succeeded"),
        ("res-nohandle", "agent.internal", "has no session handle"),
        ("res-live", "agent.internal", "is still running in pid"),
        ("res-noresume", "agent.missing_capability", "resume"),
        ("res-never", "agent.internal", "is not in the journal"),
    ] {
        let before = sandbox.agent_exec(&["runs", "show", id, "--json"]).stdout;
        let out = sandbox.agent_exec(&["resume", id, "--json"]);
        let result = refused(&out);
        assert_eq!(result["err"]["code"], code, "{id}: {result}");
        let reason = result["err"]["reason"].as_str().unwrap();
        assert!(
            reason.contains(needle) && reason.contains(id) || code == "agent.missing_capability",
            "{id}: {reason}"
        );
        let after = sandbox.agent_exec(&["runs", "show", id, "--json"]).stdout;
        assert_eq!(
            String::from_utf8_lossy(&after),
            String::from_utf8_lossy(&before),
            "{id}: the journal is left as it was"
        );
        // What a person reads (no --json).
        let human = sandbox.agent_exec(&["resume", id]);
        assert_eq!(human.status.code(), Some(1), "{id}");
        transcript.push_str(&format!(
            "--- resume {id}\n{}",
            masked(&String::from_utf8_lossy(&human.stderr))
        ));
    }
    let noresume = sandbox.agent_exec(&["resume", "res-noresume", "--json"]);
    let reason = refused(&noresume)["err"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("echo") && reason.contains("resume"),
        "names the backend and the capability: {reason}"
    );
    insta::assert_snapshot!("resume_refusals", transcript);
}

#[test]
fn bad_usage_is_refused_before_anything_runs() {
    let sandbox = Sandbox::new();
    let prompt_file = sandbox.path("p.txt");
    std::fs::write(&prompt_file, "x").unwrap();
    for args in [
        vec![
            "resume",
            "x",
            "--prompt",
            "a",
            "--prompt-file",
            prompt_file.to_str().unwrap(),
        ],
        vec!["resume", "x", "--prompt", " "],
        vec!["resume", "x", "--deadline", "0s"],
        vec!["resume", "x", "--request", "-"],
        vec!["resume", "x", "--backend", "echo"],
        vec!["resume", "has space"],
    ] {
        let out = sandbox.agent_exec(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        !sandbox.path("journal.sqlite3").exists()
            || sandbox.agent_exec(&["runs", "--json"]).stdout == b"[]\n",
        "nothing journaled"
    );
}

#[test]
fn runs_show_names_each_attempts_session() {
    let sandbox = Sandbox::new();
    let ws = sandbox.path("ws");
    journaled_with_session(
        &sandbox.journal(),
        &ws,
        "show-1",
        "echo",
        Some(State::Unknown),
    );
    let out = sandbox.agent_exec(&["runs", "show", "show-1"]);
    assert!(out.status.success());
    insta::assert_snapshot!(
        "runs_show_session",
        masked(&String::from_utf8_lossy(&out.stdout))
    );
}
