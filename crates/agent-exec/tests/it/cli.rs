//! The `agent-exec` binary end to end: real processes, a real journal file, real signals.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::PathBuf;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

/// A sandbox: its own config, state and home directories, a workspace and a journal.
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

    /// The binary in the sandbox's environment, with its config but no journal.
    fn base_command(&self) -> StdCommand {
        let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin!("agent-exec"));
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"));
        cmd
    }

    fn std_command(&self) -> StdCommand {
        let mut cmd = self.base_command();
        cmd.arg("--journal").arg(self.path("journal.sqlite3"));
        cmd
    }

    fn cmd(&self) -> Command {
        Command::from_std(self.std_command())
    }

    fn run_args(&self, backend: &str, prompt: &str) -> Vec<String> {
        vec![
            "run".into(),
            "--backend".into(),
            backend.into(),
            "--prompt".into(),
            prompt.into(),
            "--workspace".into(),
            self.path("ws").to_str().unwrap().into(),
        ]
    }

    fn show(&self, id: &str) -> Value {
        let out = self
            .cmd()
            .args(["runs", "show", id, "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn command_config(name: &str, script: &str) -> String {
    format!(
        "[backends.{name}]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
        toml_string(script)
    )
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_run_through_the_command_backend_end_to_end() {
    let script = "body=$(cat); printf 'wrote %s' \"$body\"; mkdir -p out; printf '%s' \"$body\" > out/reply.md";
    let sandbox = Sandbox::new(&command_config("review", script));
    let mut args = sandbox.run_args("review", "the answer");
    args.extend(
        [
            "--target",
            "out/reply.md",
            "--require",
            "text,files",
            "--execution-id",
            "e2e-1",
            "--deadline",
            "60s",
            "--json",
            "--events",
        ]
        .map(String::from),
    );
    let out = sandbox.cmd().args(&args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // --json: exactly the contract's Go tags.
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "succeeded");
    assert_eq!(result["text"], "wrote the answer");
    assert_eq!(
        result["files"]["out/reply.md"], "dGhlIGFuc3dlcg==",
        "base64, as Go encodes []byte"
    );
    let keys: Vec<_> = result.as_object().unwrap().keys().cloned().collect();
    for key in &keys {
        assert!(
            [
                "execution_id",
                "outcome",
                "text",
                "files",
                "logs",
                "err",
                "usage"
            ]
            .contains(&key.as_str()),
            "{key}"
        );
    }
    assert!(result.get("err").is_none(), "no err on success (omitempty)");
    assert_eq!(
        result["execution_id"], "e2e-1",
        "the result names its execution"
    );

    // --events: JSON lines on stderr, in order, text deltas adding up to the text.
    let events = json_lines(&out.stderr);
    let text: String = events
        .iter()
        .filter(|e| e["kind"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "wrote the answer");
    assert_eq!(events.last().unwrap()["kind"], "message_end");

    // The journal has it, with its deadline and transitions.
    let record = sandbox.show("e2e-1");
    assert_eq!(record["state"], "succeeded");
    assert_eq!(record["backend"], "review");
    assert!(record["deadline"].is_string());
    assert_eq!(record["request"]["targets"][0], "out/reply.md");
    let last = record["transitions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["to"], "succeeded");
}

#[test]
fn failures_are_reported_in_the_result_and_the_exit_code() {
    let config = format!(
        "{}{}",
        command_config("refuser", "cat >/dev/null; echo nope >&2; exit 3"),
        command_config("crasher", "cat >/dev/null; kill -KILL $$")
    );
    let sandbox = Sandbox::new(&config);
    let mut args = sandbox.run_args("refuser", "x");
    args.push("--json".into());
    let out = sandbox.cmd().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "failed");
    assert_eq!(result["err"]["code"], "agent.provider_rejected");
    assert_eq!(result["err"]["side_effects"], "none");
    assert_eq!(result["usage"], serde_json::json!({}));

    let mut args = sandbox.run_args("crasher", "x");
    args.push("--json".into());
    let out = sandbox.cmd().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "a crash is unknown");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "unknown");

    // A capability the backend lacks: refused before anything runs.
    let mut args = sandbox.run_args("refuser", "x");
    args.extend(["--require", "usage", "--json"].map(String::from));
    let out = sandbox.cmd().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["err"]["code"], "agent.missing_capability");

    // An unknown backend names the known ones.
    let out = sandbox
        .cmd()
        .args(sandbox.run_args("nobody", "x"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown backend `nobody`")
            && stderr.contains("crasher, gemini, opencode, refuser"),
        "{stderr}"
    );
}

#[test]
fn runs_lists_the_journal_newest_first() {
    let sandbox = Sandbox::new(&command_config("echo", "cat"));
    for id in ["first", "second"] {
        let mut args = sandbox.run_args("echo", id);
        args.extend(["--execution-id".into(), id.into()]);
        sandbox.cmd().args(&args).assert().success();
    }
    let out = sandbox.cmd().args(["runs", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["execution_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["second", "first"]);
    let human = sandbox.cmd().arg("runs").output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.starts_with("EXECUTION"), "{human}");
    assert!(
        human.contains("second") && human.contains("succeeded"),
        "{human}"
    );

    // Reusing the id of a succeeded execution is refused: it is not run again (a step
    // retry continues only a failed step; see a_finished_execution_id_is_not_run_again).
    let mut args = sandbox.run_args("echo", "again");
    args.extend(["--execution-id".into(), "first".into()]);
    sandbox.cmd().args(&args).assert().code(1);
    let record = sandbox.show("first");
    assert_eq!(record["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(record["state"], "succeeded");

    let missing = sandbox
        .cmd()
        .args(["runs", "show", "nope"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
}

/// Polls until `check` holds (or panics after 20 s); for waiting on another process.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pid_alive(pid: &str) -> bool {
    pid.parse().is_ok_and(test_support::procfs::alive)
}

#[test]
fn a_runner_killed_with_sigkill_leaves_unknown_after_the_next_open() {
    let sandbox = Sandbox::new(&command_config(
        "sleeper",
        "echo $$ > ../agent.pid; exec sleep 30",
    ));
    let mut args = sandbox.run_args("sleeper", "x");
    args.extend(["--execution-id".into(), "doomed".into()]);
    let mut runner = sandbox
        .std_command()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = sandbox.path("agent.pid");
    wait_for("the agent to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty())
    });
    let agent_pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();

    // While the runner lives, another process's open leaves the execution alone.
    assert_eq!(sandbox.show("doomed")["state"], "running");

    runner.kill().unwrap(); // SIGKILL
    runner.wait().unwrap();
    let record = sandbox.show("doomed");
    assert_eq!(record["state"], "unknown");
    assert_eq!(record["error_code"], "agent.unknown_outcome");
    assert_eq!(record["error"]["side_effects"], "possible");
    assert_eq!(record["attempts"][0]["state"], "unknown");

    // The orphaned agent is a documented limit of SIGKILL on the runner; clean it up.
    if pid_alive(&agent_pid) {
        let _ = StdCommand::new("kill").args(["-KILL", &agent_pid]).status();
    }
}

#[test]
fn ctrl_c_cancels_cleanly_and_still_prints_the_result() {
    let sandbox = Sandbox::new(&command_config("hang", "echo started; sleep 1000 & wait"));
    let mut args = sandbox.run_args("hang", "x");
    args.extend(["--json", "--events", "--execution-id", "interrupted"].map(String::from));
    let runner = sandbox
        .std_command()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the run to start", || {
        let out = sandbox.cmd().args(["runs", "--json"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).contains("\"running\"")
    });
    std::thread::sleep(Duration::from_millis(200));
    let pid = runner.id().to_string();
    StdCommand::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let out = runner.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "canceled");
    assert_eq!(result["err"]["code"], "agent.canceled");
    let record = sandbox.show("interrupted");
    assert_eq!(record["state"], "canceled");
    assert!(record["cancel_requested"].as_bool().unwrap());
    let events = json_lines(&out.stderr);
    assert_eq!(events.first().unwrap()["text"], "started\n");
}

#[test]
fn bad_config_names_the_file_and_the_key() {
    for (config, needle) in [
        (
            "[backends.review]\nkind = \"telepathy\"\n",
            "backends.review.kind: unknown kind `telepathy`",
        ),
        (
            "[backends.review]\nkind = \"command\"\n",
            "missing field `argv`",
        ),
        ("[backends.review\n", "line 1"),
    ] {
        let sandbox = Sandbox::new(config);
        let out = sandbox.cmd().arg("backends").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{config}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let file = sandbox.path("config.toml");
        assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
        assert!(stderr.contains(needle), "{needle} not in {stderr}");
    }
}

#[test]
fn config_is_found_through_the_environment_and_xdg() {
    let sandbox = Sandbox::new(&command_config("from-env", "cat"));
    let list = |cmd: &mut StdCommand| {
        let out = cmd.args(["backends", "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        // The built-in backends are always listed; what a config adds is the rest.
        v.as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap().to_owned())
            .filter(|name| !agent_exec_backends::config::BUILT_IN.contains(&name.as_str()))
            .collect::<Vec<_>>()
    };
    let bare = |sandbox: &Sandbox| {
        let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin!("agent-exec"));
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", sandbox.path("home"))
            .env("XDG_CONFIG_HOME", sandbox.path("xdg-config"))
            .env("XDG_STATE_HOME", sandbox.path("xdg-state"));
        cmd
    };
    assert!(
        list(&mut bare(&sandbox)).is_empty(),
        "no config: no backends but the built-in ones"
    );
    assert_eq!(
        list(bare(&sandbox).env("AGENT_EXEC_CONFIG", sandbox.path("config.toml"))),
        ["from-env"]
    );
    let xdg = sandbox.path("xdg-config/agent-exec");
    std::fs::create_dir_all(&xdg).unwrap();
    std::fs::write(xdg.join("config.toml"), command_config("from-xdg", "cat")).unwrap();
    assert_eq!(list(&mut bare(&sandbox)), ["from-xdg"]);
    // The default journal lives under the XDG state home.
    let mut run = bare(&sandbox);
    run.args([
        "run",
        "--backend",
        "from-xdg",
        "--prompt",
        "x",
        "--workspace",
    ])
    .arg(sandbox.path("ws"));
    assert!(
        run.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    );
    assert!(
        sandbox
            .path("xdg-state/agent-exec/journal.sqlite3")
            .exists()
    );
}

#[test]
fn backends_lists_aliases_and_declared_and_verified_capabilities() {
    let config = format!(
        "{}\n[aliases]\nold-review = \"review\"\n",
        command_config("review", "cat")
    );
    let sandbox = Sandbox::new(&config);
    let out = sandbox.cmd().arg("backends").output().unwrap();
    insta::assert_snapshot!("backends_human", String::from_utf8_lossy(&out.stdout));
    let out = sandbox
        .cmd()
        .args(["backends", "--verify", "--json"])
        .output()
        .unwrap();
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "agent-native",
            "claude-code",
            "codex",
            "copilot",
            "gemini",
            "opencode",
            "review"
        ],
        "configured and built-in backends, by name"
    );
    let review = names.iter().position(|name| *name == "review").unwrap();
    let v = &all.as_array().unwrap()[review..];
    assert_eq!(
        v[0]["aliases"][0],
        serde_json::json!({"name": "old-review", "deprecated": true})
    );
    assert_eq!(
        v[0]["declared"],
        serde_json::json!(["text", "files", "stream", "cancel"])
    );
    assert_eq!(
        v[0]["verified"],
        serde_json::json!(["text", "files", "stream", "cancel"])
    );
    // Issue 14 §2: which mechanism keeps a run's processes from outliving it here
    // (this machine gives a cgroup per run; `AGENT_EXEC_TEST_NO_CGROUP` says it does not).
    let expected = if std::env::var_os("AGENT_EXEC_TEST_NO_CGROUP").is_some() {
        "subreaper"
    } else {
        "cgroup"
    };
    for backend in all.as_array().unwrap() {
        assert_eq!(backend["confinement"], expected, "{backend}");
        assert!(
            backend["confinement_detail"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{backend}"
        );
    }
    let out = sandbox
        .cmd()
        .args(["backends", "--verify"])
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        human
            .matches(&format!("  leftover processes: {expected} ("))
            .count(),
        names.len(),
        "{human}"
    );

    let out = sandbox
        .cmd()
        .args(sandbox.run_args("old-review", "x"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("deprecated"));
}

#[test]
fn the_openai_backend_through_the_cli_never_shows_the_key() {
    let server = support::ScriptedServer::start();
    let secret = "sk-test-5ecret-never-printed";
    let config = format!(
        "[backends.deep]\nkind = \"openai\"\nbase_url = {}\nmodel = \"echo\"\napi_key_env = \"DEEP_KEY\"\n\n\
         [backends.leaky]\nkind = \"openai\"\nbase_url = {}\nmodel = \"leaky\"\napi_key_env = \"DEEP_KEY\"\n\n\
         [backends.echoer]\nkind = \"openai\"\nbase_url = {}\nmodel = \"echo-key\"\napi_key_env = \"DEEP_KEY\"\n",
        toml_string(&server.base_url),
        toml_string(&server.base_url),
        toml_string(&server.base_url)
    );
    let sandbox = Sandbox::new(&config);
    let mut args = sandbox.run_args("deep", "hello there");
    args.extend(["--json", "--events", "--require", "text,stream,usage"].map(String::from));
    let out = sandbox
        .cmd()
        .env("DEEP_KEY", secret)
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["text"], "echo: hello there");
    assert_eq!(result["usage"]["prompt_tokens"], 7);
    let auth: Vec<_> = server
        .requests()
        .iter()
        .filter_map(|r| r.authorization.clone())
        .collect();
    assert!(
        auth.iter().all(|a| a == &format!("Bearer {secret}")),
        "the key is sent, as a bearer token"
    );

    // A server that echoes the key as model text, split across deltas: neither the
    // result nor any text_delta event shows it.
    let mut args = sandbox.run_args("echoer", "x");
    args.extend(["--json", "--events"].map(String::from));
    let out = sandbox
        .cmd()
        .env("DEEP_KEY", secret)
        .args(&args)
        .output()
        .unwrap();
    let everything = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{everything}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["text"], "key: Bearer [redacted] ok", "{everything}");
    assert!(!everything.contains(secret), "the key leaked: {everything}");
    assert!(
        !everything.contains("5ecret"),
        "a piece of the key leaked: {everything}"
    );

    let mut args = sandbox.run_args("leaky", "x");
    args.push("--json".into());
    let out = sandbox
        .cmd()
        .env("DEEP_KEY", secret)
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let everything = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(everything.contains("[redacted]"), "{everything}");
    assert!(!everything.contains(secret), "the key leaked: {everything}");
    let journal = std::fs::read(sandbox.path("journal.sqlite3")).unwrap();
    let wal = std::fs::read(sandbox.path("journal.sqlite3-wal")).unwrap_or_default();
    for bytes in [journal, wal] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the key reached the journal"
        );
    }

    let out = sandbox
        .cmd()
        .args(["backends", "--verify"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("problem:") && text.contains("$DEEP_KEY"),
        "{text}"
    );
    assert!(!text.contains(secret));
}

#[test]
fn the_journal_can_live_in_postgresql() {
    let url = test_support::peers::env(
        "AGENT_EXEC_TEST_PG_URL",
        "the PostgreSQL server",
        test_support::peers::Setup::Postgres,
    );
    let sandbox = Sandbox::new(&command_config("echo", "cat"));
    let id = format!(
        "pg-cli-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let with_pg = |args: &[&str]| {
        let mut cmd = sandbox.base_command();
        cmd.args(["--journal", &url]).args(args);
        cmd.output().unwrap()
    };
    let ws = sandbox.path("ws");
    let out = with_pg(&[
        "run",
        "--backend",
        "echo",
        "--prompt",
        "hi",
        "--workspace",
        ws.to_str().unwrap(),
        "--execution-id",
        &id,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = with_pg(&["runs", "show", &id, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["state"], "succeeded");
    assert!(
        !sandbox.path("journal.sqlite3").exists(),
        "nothing went to SQLite"
    );
    assert!(
        !sandbox.path("xdg-state/agent-exec").exists(),
        "nor to the default journal"
    );
}

/// What a user reads, with the parts that vary per run (times, ids, pids, host) masked.
fn masked(text: &str) -> String {
    let rules = [
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "[time]"),
        (r"pid \d+ on \S+", "pid [pid] on [host]"),
        (r"workspace: \S+", "workspace: [dir]"),
    ];
    let mut out = text.to_owned();
    for (pattern, replacement) in rules {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, replacement)
            .into_owned();
    }
    out
}

#[test]
fn what_the_user_reads_after_a_run() {
    let sandbox = Sandbox::new(&format!(
        "{}{}",
        command_config("echo", "cat"),
        command_config("refuser", "cat >/dev/null; echo 'no such file' >&2; exit 3")
    ));
    let mut args = sandbox.run_args("echo", "hello");
    args.extend(["--execution-id", "snap-ok", "--deadline", "1h"].map(String::from));
    let ok = sandbox.cmd().args(&args).output().unwrap();
    let mut args = sandbox.run_args("refuser", "hello");
    args.extend(["--execution-id", "snap-failed"].map(String::from));
    let failed = sandbox.cmd().args(&args).output().unwrap();
    insta::assert_snapshot!(
        "run_human",
        format!(
            "--- ok stdout\n{}--- ok stderr\n{}--- failed stdout\n{}--- failed stderr\n{}",
            String::from_utf8_lossy(&ok.stdout),
            String::from_utf8_lossy(&ok.stderr),
            String::from_utf8_lossy(&failed.stdout),
            String::from_utf8_lossy(&failed.stderr)
        )
    );
    let runs = sandbox.cmd().arg("runs").output().unwrap();
    insta::assert_snapshot!("runs_human", masked(&String::from_utf8_lossy(&runs.stdout)));
    let show = sandbox
        .cmd()
        .args(["runs", "show", "snap-failed"])
        .output()
        .unwrap();
    insta::assert_snapshot!(
        "runs_show_human",
        masked(&String::from_utf8_lossy(&show.stdout))
    );
}

#[test]
fn the_deadline_cancels_the_whole_run_and_a_prompt_file_is_read() {
    let sandbox = Sandbox::new(&format!(
        "{}{}",
        command_config("hang", "sleep 1000 & wait"),
        command_config("echo", "cat")
    ));
    let mut args = sandbox.run_args("hang", "x");
    args.extend(["--deadline", "500ms", "--json"].map(String::from));
    let out = sandbox.cmd().args(&args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "canceled");
    assert_eq!(result["err"]["code"], "agent.deadline_exceeded");

    std::fs::write(sandbox.path("prompt.txt"), "from a file\n").unwrap();
    let out = sandbox
        .cmd()
        .args(["run", "--backend", "echo", "--prompt-file"])
        .arg(sandbox.path("prompt.txt"))
        .arg("--workspace")
        .arg(sandbox.path("ws"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from a file\n");

    for bad in [
        vec!["--deadline", "soon"],
        vec!["--deadline", "0"],
        vec!["--deadline", "999999999999s"],
        vec!["--require", "telepathy"],
        vec!["--execution-id", "has space"],
    ] {
        let mut args = sandbox.run_args("echo", "x");
        args.extend(bad.iter().map(|s| s.to_string()));
        let out = sandbox.cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(bad[0]),
            "{bad:?}"
        );
    }
}

#[test]
fn backends_verify_exits_non_zero_when_a_program_is_missing() {
    let config =
        "[backends.gone]\nkind = \"command\"\nargv = [\"/nonexistent/agent-exec-test-program\"]\n";
    let sandbox = Sandbox::new(config);
    let out = sandbox
        .cmd()
        .args(["backends", "--verify", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("verification failed for:"), "{stderr}");
    assert!(stderr.contains("gone"), "{stderr}");
    // The listing is still printed in full.
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(all.as_array().unwrap().iter().any(|b| b["name"] == "gone"));
}

/// An acp backend whose program never answers `initialize`: its capability probe
/// hangs (for up to the probe's own 20 s timeout). It writes its pid first.
fn hanging_probe_sandbox() -> Sandbox {
    let sandbox = Sandbox::new("");
    let script = sandbox.path("hang-acp.sh");
    let pid_file = sandbox.path("probe.pid");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 333\n",
            pid_file.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        sandbox.path("config.toml"),
        format!(
            "[backends.stall]\nkind = \"acp\"\nprogram = {}\n",
            toml_string(script.to_str().unwrap())
        ),
    )
    .unwrap();
    sandbox
}

fn probe_pid(sandbox: &Sandbox) -> String {
    let pid_file = sandbox.path("probe.pid");
    wait_for("the probe to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| !p.trim().is_empty())
    });
    std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn the_deadline_covers_the_capability_probe_and_leaves_no_process() {
    let sandbox = hanging_probe_sandbox();
    let mut args = sandbox.run_args("stall", "x");
    args.extend(["--deadline", "1s", "--json"].map(String::from));
    let out = sandbox.cmd().args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "canceled", "{result}");
    assert_eq!(result["err"]["code"], "agent.deadline_exceeded", "{result}");
    assert_eq!(result["err"]["side_effects"], "none", "{result}");
    assert!(
        result["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("being probed"),
        "{result}"
    );
    let pid = probe_pid(&sandbox);
    wait_for("the probe's process to be gone", || !pid_alive(&pid));
}

#[test]
fn sigterm_during_the_capability_probe_prints_canceled_and_leaves_no_process() {
    let sandbox = hanging_probe_sandbox();
    let mut args = sandbox.run_args("stall", "x");
    args.push("--json".into());
    let runner = sandbox
        .std_command()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = probe_pid(&sandbox);
    StdCommand::new("kill")
        .args(["-TERM", &runner.id().to_string()])
        .status()
        .unwrap();
    let out = runner.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "canceled", "{result}");
    assert_eq!(result["err"]["code"], "agent.canceled", "{result}");
    wait_for("the probe's process to be gone", || !pid_alive(&pid));
}

#[test]
fn a_credential_a_command_backend_prints_never_reaches_the_output() {
    let secret = "sk-supersecret-12345";
    for (name, script) in [
        (
            "ok",
            "echo \"the key is $MY_API_KEY\"; echo \"warn $MY_API_KEY\" >&2",
        ),
        (
            "bad",
            "echo \"the key is $MY_API_KEY\"; echo \"denied for $MY_API_KEY\" >&2; exit 1",
        ),
    ] {
        let config = format!(
            "{}env = {{ MY_API_KEY = {} }}\n",
            command_config(name, script),
            toml_string(secret)
        );
        let sandbox = Sandbox::new(&config);
        for json in [true, false] {
            let mut args = sandbox.run_args(name, "x");
            args.push("--events".into());
            if json {
                args.push("--json".into());
            }
            let out = sandbox.cmd().args(&args).output().unwrap();
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains(secret), "{name} json={json}: {all}");
            assert!(all.contains("[redacted]"), "{name} json={json}: {all}");
        }
        let runs = sandbox.cmd().args(["runs", "--json"]).output().unwrap();
        let id = serde_json::from_slice::<Value>(&runs.stdout).unwrap()[0]["execution_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let shown = sandbox.cmd().args(["runs", "show", &id]).output().unwrap();
        assert!(!String::from_utf8_lossy(&shown.stdout).contains(secret));
    }
}

#[test]
fn a_password_in_a_journal_url_query_is_never_shown() {
    let sandbox = Sandbox::new("");
    let out = sandbox
        .base_command()
        .args([
            "--journal",
            "postgres://u@127.0.0.1:1/db?password=hunter2secret",
            "runs",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("hunter2secret"), "{all}");
    assert!(all.contains("password=[redacted]"), "{all}");
}

#[test]
fn a_finished_execution_id_is_not_run_again() {
    let sandbox = Sandbox::new(&format!(
        "{}{}{}",
        command_config("ok", "echo ran >> ../ran.log; echo done"),
        command_config("flaky", "echo ran >> ../flaky.log; exit 1"),
        command_config(
            "writer",
            "echo ran >> ../writer.log; touch wrote.txt; exit 1"
        ),
    ));
    let run = |backend: &str, id: &str| {
        let mut args = sandbox.run_args(backend, "x");
        args.extend(["--execution-id", id, "--json"].map(String::from));
        sandbox.cmd().args(&args).output().unwrap()
    };
    let runs_of = |log: &str| {
        std::fs::read_to_string(sandbox.path(log))
            .unwrap_or_default()
            .lines()
            .count()
    };

    // Succeeded: a second run under the id is refused, and the program does not run.
    assert!(run("ok", "r-1").status.success());
    let again = run("ok", "r-1");
    assert!(!again.status.success());
    let result: Value = serde_json::from_slice(&again.stdout).unwrap();
    let reason = result["err"]["reason"].as_str().unwrap();
    for needle in ["\"r-1\"", "succeeded", "side effects: none"] {
        assert!(reason.contains(needle), "{reason}");
    }
    assert_eq!(runs_of("ran.log"), 1);
    let record = sandbox.show("r-1");
    assert_eq!(record["state"], "succeeded");
    assert_eq!(record["attempts"].as_array().unwrap().len(), 1);

    // Failed after writing a file (side effects possible): refused too.
    assert_eq!(run("writer", "w-1").status.code(), Some(1));
    let again = run("writer", "w-1");
    assert!(!again.status.success());
    let result: Value = serde_json::from_slice(&again.stdout).unwrap();
    let reason = result["err"]["reason"].as_str().unwrap();
    assert!(reason.contains("side effects: possible"), "{reason}");
    assert_eq!(runs_of("writer.log"), 1);

    // Failed without side effects: a step retry continues it.
    assert_eq!(run("flaky", "f-1").status.code(), Some(1));
    assert_eq!(run("flaky", "f-1").status.code(), Some(1));
    assert_eq!(runs_of("flaky.log"), 2);
    assert_eq!(sandbox.show("f-1")["attempts"].as_array().unwrap().len(), 2);
}

/// A reader that goes away (`agent-exec runs | head -1`) is not a panic: listings end
/// quietly with success, and `run` still exits with its outcome's code.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let sandbox = Sandbox::new(&command_config("echo", "cat"));
    let ran = sandbox
        .cmd()
        .args(sandbox.run_args("echo", "first"))
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0));
    let closed = |args: Vec<String>| {
        let mut command = sandbox.std_command();
        command
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        (output.status.code(), stderr)
    };
    for args in [
        vec!["backends".to_owned(), "--json".to_owned()],
        vec!["backends".to_owned()],
        vec!["runs".to_owned(), "--json".to_owned()],
    ] {
        let (code, stderr) = closed(args.clone());
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
    }
    let mut run = sandbox.run_args("echo", "second");
    run.push("--json".to_owned());
    let (code, stderr) = closed(run);
    assert_eq!(code, Some(0), "run keeps its outcome's exit code: {stderr}");
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = Command::cargo_bin("agent-exec")
        .unwrap()
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let line = String::from_utf8(output.stdout).unwrap();
    let shape =
        regex::Regex::new(r"^agent-exec \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n$")
            .unwrap();
    assert!(shape.is_match(&line), "unexpected --version: {line:?}");
}
