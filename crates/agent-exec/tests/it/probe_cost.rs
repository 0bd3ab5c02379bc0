//! What a run costs at the provider, counted by the scripted OpenAI-compatible server
//! (`support`, real HTTP): once a backend is verified, `run` sends exactly one request
//! — its own. Before: four on every run (three capability probes, then the request).
//! Also: probes carry an execution id of their own (`verify-…`), a run that requires
//! more probes what it requires, a failure that says the endpoint changed drops the
//! cached verification, and `backends --verify NAME` probes and exits for that backend
//! alone.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;
use support::ScriptedServer;

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(config: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The binary in the sandbox, with a PATH holding none of the built-in agents'
    /// programs (so their probes fail, as on a machine without them).
    fn agent_exec(&self, args: &[&str]) -> Output {
        Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
            .env_remove("AGENT_EXEC_CONFIG")
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"))
            .args(args)
            .current_dir(self.path("ws"))
            .output()
            .unwrap()
    }

    /// `run --backend NAME --prompt "Say hello" --json` and `extra`; the result.
    fn run(&self, backend: &str, extra: &[&str]) -> (Option<i32>, Value) {
        let mut args = vec![
            "run",
            "--backend",
            backend,
            "--prompt",
            "Say hello",
            "--workspace",
            ".",
            "--json",
        ];
        args.extend(extra);
        let out = self.agent_exec(&args);
        let result = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {} {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), result)
    }
}

fn openai_table(name: &str, server: &ScriptedServer, model: &str) -> String {
    format!(
        "[backends.{name}]\nkind = \"openai\"\nbase_url = {}\nmodel = {model:?}\nmax_retries = 0\n",
        serde_json::to_string(&server.base_url).unwrap()
    )
}

#[test]
fn a_verified_openai_run_sends_one_request() {
    let server = ScriptedServer::start();
    let sandbox = Sandbox::new(&openai_table("tiny", &server, "echo"));

    // The first run probes what it requires (nothing: the one-token base probe).
    let (code, result) = sandbox.run("tiny", &[]);
    assert_eq!(code, Some(0), "{result}");
    assert_eq!(result["text"], "echo: Say hello");
    let first = server.requests();
    assert_eq!(first.len(), 2, "one probe, then the run: {first:?}");
    let probe_id = first[0].execution_id.clone().unwrap_or_default();
    assert!(probe_id.starts_with("verify-"), "{probe_id:?}");
    assert!(!first[1].is_probe());

    // The figure: every later run sends exactly its own request.
    for n in 1..=3 {
        let before = server.requests().len();
        let (code, result) = sandbox.run("tiny", &[]);
        assert_eq!(code, Some(0), "{result}");
        let sent = &server.requests()[before..];
        assert_eq!(sent.len(), 1, "run {n} after verification: {sent:?}");
        assert!(!sent[0].is_probe());
    }

    // A run that requires more probes that once (and keeps what was proven).
    let before = server.requests().len();
    let (code, result) = sandbox.run("tiny", &["--require", "structured-output"]);
    assert_eq!(code, Some(0), "{result}");
    let sent = &server.requests()[before..];
    assert_eq!(sent.iter().filter(|r| r.is_probe()).count(), 2, "{sent:?}");
    assert!(
        sent.iter()
            .any(|r| r.is_probe() && r.body["response_format"]["type"] == "json_schema")
    );
    for extra in [&["--require", "structured-output"][..], &[]] {
        let before = server.requests().len();
        let (code, result) = sandbox.run("tiny", extra);
        assert_eq!(code, Some(0), "{result}");
        assert_eq!(server.requests().len() - before, 1, "{extra:?}");
    }

    // `backends --verify tiny` always probes everything, and says what it spent.
    let before = server.requests().len();
    let out = sandbox.agent_exec(&["backends", "--verify", "tiny", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "only the backend named: {listed:?}");
    let probe = &listed[0]["probe"];
    let id = probe["execution_id"].as_str().unwrap();
    assert!(id.starts_with("verify-"), "{probe}");
    assert_ne!(id, probe_id);
    assert!(
        probe["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{probe}"
    );
    let sent = &server.requests()[before..];
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent.iter().all(|r| r.execution_id.as_deref() == Some(id)));
    let human = sandbox.agent_exec(&["backends", "--verify", "tiny"]);
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(
        human.contains("  probe:    execution verify-") && human.contains(" in / "),
        "{human}"
    );
    // And the run after it still sends one request.
    let before = server.requests().len();
    sandbox.run("tiny", &[]);
    assert_eq!(server.requests().len() - before, 1);
}

/// A run that fails as `agent.provider_unavailable` (the endpoint cut the connection
/// before any token) drops the cached verification: the next run probes again.
#[test]
fn an_unavailable_provider_drops_the_cached_verification() {
    let server = ScriptedServer::start();
    // `early-cut`: probes succeed; a run's first request per id is cut before a token.
    let sandbox = Sandbox::new(&openai_table("cut", &server, "early-cut"));
    let cached = sandbox.path("xdg-state/agent-exec/verified/cut.json");
    let (code, result) = sandbox.run("cut", &["--execution-id", "cut-1"]);
    assert_eq!(code, Some(1), "{result}");
    assert_eq!(result["err"]["code"], "agent.provider_unavailable");
    assert_eq!(server.probes().len(), 1);
    assert!(!cached.exists(), "the entry outlived the failure");
    // The next run probes again (and, cut again, drops the entry again).
    let (code, result) = sandbox.run("cut", &["--execution-id", "cut-2"]);
    assert_eq!(code, Some(1), "{result}");
    assert_eq!(
        server.probes().len(),
        2,
        "the second run trusted a stale entry"
    );
    assert!(!cached.exists());
}

/// `backends --verify` exits 1 only for a backend the config declares or the caller
/// named; a built-in agent whose program is not installed is listed with its problem.
/// Before: no NAME, and any absent built-in made it exit 1.
#[test]
fn backends_verify_exits_for_what_was_asked() {
    let server = ScriptedServer::start();
    let config = format!(
        "{}[backends.gone]\nkind = \"command\"\nargv = [\"/nonexistent/agent-exec-test-program\"]\n",
        openai_table("tiny", &server, "echo")
    );
    let sandbox = Sandbox::new(&config);
    let out = sandbox.agent_exec(&["backends", "--verify", "tiny"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = sandbox.agent_exec(&["backends", "--verify", "gone"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gone"));
    // Built-ins absent, only `tiny` configured: success.
    std::fs::write(
        sandbox.path("config.toml"),
        openai_table("tiny", &server, "echo"),
    )
    .unwrap();
    let out = sandbox.agent_exec(&["backends", "--verify", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codex = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "codex")
        .unwrap();
    assert_eq!(codex["verified"], serde_json::json!([]), "{codex}");
    // Named, an absent built-in is a failure.
    let out = sandbox.agent_exec(&["backends", "--verify", "codex"]);
    assert_eq!(out.status.code(), Some(1));
    // An unknown name is bad usage.
    let out = sandbox.agent_exec(&["backends", "--verify", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown backend"));
}
