//! Results kept in the journal, read back by other processes: `result`, `runs show`,
//! `runs prune`, and `wait`/`cancel` on an SQLite journal (issue 20, findings 1, 7
//! and 9). Real processes, a real journal file.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Its own config (`command` backends), state, home, workspace and journal.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(backends: &[(&str, &str)]) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let config: String = backends
            .iter()
            .map(|(name, script)| {
                format!(
                    "[backends.{name}]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
                    serde_json::to_string(script).unwrap()
                )
            })
            .collect();
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"));
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"))
            .args(args);
        cmd
    }

    fn output(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn run(&self, backend: &str, id: &str, extra: &[&str]) -> Output {
        let ws = self.path("ws");
        let mut args = vec![
            "run",
            "--backend",
            backend,
            "--prompt",
            "the prompt",
            "--workspace",
            ws.to_str().unwrap(),
            "--execution-id",
            id,
        ];
        args.extend(extra);
        self.output(&args)
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn result_prints_exactly_what_run_json_printed() {
    let sandbox = Sandbox::new(&[
        (
            "writer",
            "body=$(cat); printf 'wrote %s' \"$body\"; mkdir -p out; printf '%s' \"$body\" > out/reply.md",
        ),
        ("broken", "echo partial; echo 'it broke' >&2; exit 3"),
    ]);
    for (backend, id, code) in [("writer", "res-ok", 0), ("broken", "res-fail", 1)] {
        let run = sandbox.run(backend, id, &["--target", "out/reply.md", "--json"]);
        assert_eq!(run.status.code(), Some(code), "{}", stderr(&run));
        let printed: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(
            printed["execution_id"], id,
            "the result names its execution"
        );

        let result = sandbox.output(&["result", id]);
        assert_eq!(result.status.code(), Some(code), "{}", stderr(&result));
        assert_eq!(
            String::from_utf8_lossy(&result.stdout),
            String::from_utf8_lossy(&run.stdout),
            "byte for byte"
        );
    }

    // `runs show` has the request and the result, in both forms.
    let show = sandbox.output(&["runs", "show", "res-ok", "--json"]);
    let record: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(record["request"]["prompt"], "the prompt");
    assert_eq!(record["result"]["text"], "wrote the prompt");
    assert_eq!(
        record["result"]["files"]["out/reply.md"],
        "dGhlIHByb21wdA=="
    );
    assert!(
        record.get("output_tail").is_none(),
        "the stream is the kept text: not kept twice"
    );
    let human = sandbox.output(&["runs", "show", "res-fail"]);
    let text = String::from_utf8_lossy(&human.stdout);
    for needle in [
        "  request:\n    prompt:\n      the prompt\n",
        "  result:   failed\n",
        "it broke",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }

    // Not in the journal, or not ended: said, with what to do.
    let missing = sandbox.output(&["result", "nobody"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no execution \"nobody\""));
}

#[test]
fn runs_prune_deletes_ended_runs_older_than_asked() {
    let sandbox = Sandbox::new(&[("ok", "echo fine")]);
    assert!(sandbox.run("ok", "prune-1", &[]).status.success());
    let kept = sandbox.output(&["runs", "prune", "--older-than", "1h"]);
    assert!(kept.status.success(), "{}", stderr(&kept));
    assert!(String::from_utf8_lossy(&kept.stdout).starts_with("pruned 0 execution(s)"));
    assert!(sandbox.output(&["result", "prune-1"]).status.success());

    let pruned = sandbox.output(&["runs", "prune", "--older-than", "1ms"]);
    assert!(String::from_utf8_lossy(&pruned.stdout).starts_with("pruned 1 execution(s)"));
    assert_eq!(
        sandbox.output(&["result", "prune-1"]).status.code(),
        Some(2)
    );
    let bad = sandbox.output(&["runs", "prune", "--older-than", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--older-than"), "{}", stderr(&bad));
}

/// Finding 9: `cancel` and `wait` needed PostgreSQL. Two real processes on one SQLite
/// journal: a runner, and the commands of another process.
#[test]
fn cancel_and_wait_work_on_an_sqlite_journal_from_another_process() {
    let sandbox = Sandbox::new(&[("hang", "echo ready; exec sleep 300")]);
    let ws = sandbox.path("ws");
    let mut runner = sandbox
        .command(&[
            "run",
            "--backend",
            "hang",
            "--prompt",
            "x",
            "--workspace",
            ws.to_str().unwrap(),
            "--execution-id",
            "far-1",
            "--json",
            "--events",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The program's first output, as an event: the execution is journaled and runs.
    let mut events = BufReader::new(runner.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(
            events.read_line(&mut line).unwrap() > 0,
            "the runner ended early"
        );
    }

    let early = sandbox.output(&["wait", "far-1", "--timeout", "300ms"]);
    assert_eq!(early.status.code(), Some(5), "{}", stderr(&early));
    assert!(
        stderr(&early).contains("still running"),
        "{}",
        stderr(&early)
    );

    let cancel = sandbox.output(&["cancel", "far-1"]);
    assert_eq!(cancel.status.code(), Some(0), "{}", stderr(&cancel));
    assert!(stderr(&cancel).contains("cancel requested"));

    let waited = sandbox.output(&["wait", "far-1", "--json"]);
    assert_eq!(waited.status.code(), Some(4), "{}", stderr(&waited));

    let status = runner.wait().unwrap();
    let mut printed = String::new();
    runner
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    let mut rest = String::new();
    events.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(4), "{rest}");
    assert!(
        rest.contains("cancel requested by `agent-exec cancel`"),
        "{rest}"
    );
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout),
        printed,
        "as run printed it"
    );
    let result: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(result["outcome"], "canceled");
    assert_eq!(result["err"]["code"], "agent.canceled");

    let again = sandbox.output(&["cancel", "far-1"]);
    assert_eq!(again.status.code(), Some(0));
    assert!(stderr(&again).contains("had already ended canceled"));
    let show = sandbox.output(&["runs", "show", "far-1", "--json"]);
    let record: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert!(
        record["cancel_request"]
            .as_str()
            .unwrap()
            .starts_with("cancel requested by `agent-exec cancel`")
    );
    assert_eq!(record["output_tail"], "ready\n", "what it streamed is kept");
}

/// Finding 7: one row with `owner_pid = -1` made every command fail, `run` included.
#[test]
fn a_bad_journal_row_stops_nothing() {
    let sandbox = Sandbox::new(&[("ok", "echo fine")]);
    assert!(sandbox.run("ok", "victim", &[]).status.success());
    rusqlite::Connection::open(sandbox.path("journal.sqlite3"))
        .unwrap()
        .execute_batch(
            "UPDATE executions SET state = 'running', owner_pid = -1
                 WHERE execution_id = 'victim';",
        )
        .unwrap();
    let run = sandbox.run("ok", "after", &[]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        stderr(&run)
            .contains("execution \"victim\" is left as it is: owner_pid -1 is not a process id"),
        "{}",
        stderr(&run)
    );
    let runs = sandbox.output(&["runs"]);
    assert!(runs.status.success(), "{}", stderr(&runs));
    assert!(String::from_utf8_lossy(&runs.stdout).contains("victim"));
}

/// Finding 9: a refusal's hint named `--execution-id` to a `--request` caller, who
/// cannot add it (it conflicts with `--request`).
#[test]
fn hints_name_the_way_the_id_was_given() {
    let sandbox = Sandbox::new(&[("ok", "echo fine")]);
    assert!(sandbox.run("ok", "done-1", &[]).status.success());

    let again = sandbox.run("ok", "done-1", &["--json"]);
    assert_eq!(again.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(result["execution_id"], "done-1");
    let reason = result["err"]["reason"].as_str().unwrap();
    assert!(reason.contains("use a new --execution-id"), "{reason}");

    let request = |id: &str| {
        let file = sandbox.path("req.json");
        let body = serde_json::json!({
            "execution_id": id,
            "prompt": "p",
            "workspace": {"root": sandbox.path("ws")},
        });
        std::fs::write(&file, body.to_string()).unwrap();
        sandbox.output(&[
            "run",
            "--backend",
            "ok",
            "--request",
            file.to_str().unwrap(),
            "--json",
        ])
    };
    let refused = request("done-1");
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let result: Value = serde_json::from_slice(&refused.stdout).unwrap();
    let reason = result["err"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("put a new `execution_id` in the --request JSON"),
        "{reason}"
    );
    assert!(!reason.contains("--execution-id"), "{reason}");

    let bad = request("two words");
    assert_eq!(bad.status.code(), Some(2));
    let message = stderr(&bad);
    assert!(message.contains(": execution_id: "), "{message}");
    assert!(!message.contains("--execution-id"), "{message}");
}

/// A runner killed before it returned a result: `result` rebuilds one from the
/// journal and says so, never printing nothing.
#[test]
fn result_of_a_killed_runner_is_rebuilt_and_says_so() {
    let sandbox = Sandbox::new(&[(
        "doomed",
        "echo $$ > ../agent.pid; echo ready; exec sleep 300",
    )]);
    let ws = sandbox.path("ws");
    let mut runner = sandbox
        .command(&[
            "run",
            "--backend",
            "doomed",
            "--prompt",
            "x",
            "--workspace",
            ws.to_str().unwrap(),
            "--execution-id",
            "killed-1",
            "--events",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut events = BufReader::new(runner.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(
            events.read_line(&mut line).unwrap() > 0,
            "the runner ended early"
        );
    }
    runner.kill().unwrap(); // SIGKILL
    runner.wait().unwrap();
    let out = sandbox.output(&["result", "killed-1"]);
    // The program a SIGKILLed runner leaves is another finding's (crash cleanup).
    if let Ok(pid) = std::fs::read_to_string(sandbox.path("agent.pid")) {
        let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
    }
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("kept no result"), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["execution_id"], "killed-1");
    assert_eq!(result["outcome"], "unknown");
    assert_eq!(result["err"]["code"], "agent.unknown_outcome");
}
