//! `agent-exec run --request FILE|-` (a `ContractRequest` exactly as Go's
//! `encoding/json` writes it, written here by hand from the seed's struct tags) and
//! `--output-schema FILE`, end to end through the binary: real processes, a real
//! journal, the loopback OpenAI-compatible server of `support`.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

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

    fn ws(&self) -> String {
        std::fs::canonicalize(self.path("ws"))
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"));
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"));
        cmd
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = self.command();
        cmd.args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(text) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        child.wait_with_output().unwrap()
    }

    fn runs(&self) -> Value {
        let out = self.run(&["runs", "--json"], None);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn show(&self, id: &str) -> Value {
        let out = self.run(&["runs", "show", id, "--json"], None);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn result(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?} / {}", out.stdout, stderr(out)))
}

/// A `command` backend that prints `prompt=<stdin>` and touches `ran` in the workspace.
const ECHO: &str = "[backends.echo]\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"touch ran; printf 'prompt=%s' \\\"$(cat)\\\"\"]\n";

/// `json.Marshal(exec.ContractRequest{ExecutionID: id, Prompt: "from go", Workspace:
/// exec.WorkspaceHandle{Root: root}})`, the zero deadline as Go writes it.
fn go_request(id: &str, root: &str, budget: &str) -> String {
    format!(
        r#"{{"execution_id":{},"session_scope":{{}},"prompt":"from go","workspace":{{"root":{}}},"tool_policy":{{"profile":""}},"budget":{budget}}}"#,
        serde_json::to_string(id).unwrap(),
        serde_json::to_string(root).unwrap()
    )
}

const ZERO: &str = r#"{"deadline":"0001-01-01T00:00:00Z"}"#;

#[test]
fn a_go_request_from_a_file_with_the_zero_deadline_runs_without_one() {
    let sandbox = Sandbox::new(ECHO);
    let file = sandbox.write("req.json", &go_request("go-1", &sandbox.ws(), ZERO));
    let out = sandbox.run(
        &["run", "--backend", "echo", "--request", &file, "--json"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = result(&out);
    assert_eq!(result["outcome"], "succeeded");
    assert_eq!(result["text"], "prompt=from go");
    let record = sandbox.show("go-1");
    assert_eq!(record["state"], "succeeded");
    assert!(record["deadline"].is_null(), "no deadline: {record}");
    assert_eq!(record["request"]["prompt"], "from go");
    assert_eq!(
        record["request"]["budget"]["deadline"], "0001-01-01T00:00:00Z",
        "journaled as Go wrote it"
    );
}

#[test]
fn a_go_request_on_stdin_keeps_its_deadline_scope_and_required() {
    let sandbox = Sandbox::new(ECHO);
    let deadline = (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .replace_nanosecond(123_456_789)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let text = go_request(
        "go-2",
        &sandbox.ws(),
        &format!(r#"{{"max_completion_tokens":50,"deadline":"{deadline}"}}"#),
    )
    .replace(
        r#""session_scope":{}"#,
        r#""session_scope":{"tenant":"t","session":"s"}"#,
    )
    .replace(r#""budget""#, r#""required":["text"],"budget""#);
    let out = sandbox.run(
        &["run", "--backend", "echo", "--request", "-", "--json"],
        Some(&text),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(result(&out)["text"], "prompt=from go");
    let record = sandbox.show("go-2");
    assert_eq!(record["request"]["session_scope"]["tenant"], "t");
    assert_eq!(record["request"]["required"][0], "text");
    assert_eq!(record["request"]["budget"]["deadline"], deadline.as_str());
}

#[test]
fn a_malformed_request_is_a_usage_error_naming_the_field_and_nothing_runs() {
    let sandbox = Sandbox::new(ECHO);
    let ws = sandbox.ws();
    let cases: Vec<(String, &str)> = vec![
        (
            go_request("bad-1", &ws, r#"{"deadline":"tomorrow"}"#),
            "budget.deadline",
        ),
        (
            go_request(
                "bad-2",
                &ws,
                r#"{"max_prompt_tokens":-5,"deadline":"0001-01-01T00:00:00Z"}"#,
            ),
            "budget.max_prompt_tokens",
        ),
        (go_request("", &ws, ZERO), "execution_id"),
        (go_request("has space", &ws, ZERO), "execution_id"),
        (go_request("bad-3", "relative/ws", ZERO), "workspace.root"),
        (
            go_request("bad-4", "/no/such/dir/anywhere", ZERO),
            "workspace.root",
        ),
        (
            go_request("bad-5", &ws, ZERO).replace(r#""prompt":"from go""#, r#""prompt":"""#),
            "prompt",
        ),
        (
            go_request("bad-6", &ws, ZERO)
                .replace(r#""budget""#, r#""required":["text","telepathy"],"budget""#),
            "required[1]",
        ),
        (
            go_request("bad-7", &ws, ZERO).replace(
                r#""budget""#,
                r#""output_schema":{"type":"no-such-type"},"budget""#,
            ),
            "output_schema",
        ),
        (
            go_request("bad-8", &ws, ZERO)
                .replace(r#""budget""#, r#""output_schema":[1],"budget""#),
            "output_schema",
        ),
        ("{\"execution_id\": ".into(), "EOF"),
    ];
    for (text, field) in cases {
        let out = sandbox.run(
            &["run", "--backend", "echo", "--request", "-", "--json"],
            Some(&text),
        );
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert!(stderr(&out).contains(field), "{text}: {}", stderr(&out));
        assert!(
            out.stdout.is_empty(),
            "{text}: a usage error prints no result"
        );
    }
    assert!(!sandbox.path("ws/ran").exists(), "nothing ran");
    assert_eq!(
        sandbox.runs().as_array().map(Vec::len).unwrap_or(0),
        0,
        "nothing journaled"
    );
}

#[test]
fn request_excludes_the_flags_that_would_say_it_twice() {
    let sandbox = Sandbox::new(ECHO);
    let file = sandbox.write("req.json", &go_request("dup", &sandbox.ws(), ZERO));
    for extra in [
        vec!["--prompt", "x"],
        vec!["--workspace", "."],
        vec!["--target", "a.md"],
        vec!["--deadline", "5s"],
        vec!["--require", "text"],
        vec!["--execution-id", "other"],
        vec!["--output-schema", "s.json"],
    ] {
        let mut args = vec!["run", "--backend", "echo", "--request", &file];
        args.extend(&extra);
        let out = sandbox.run(&args, None);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot be used with"),
            "{extra:?}: {}",
            stderr(&out)
        );
    }
    // Without --request, --prompt and --workspace are still required.
    let out = sandbox.run(&["run", "--backend", "echo", "--prompt", "x"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--workspace"), "{}", stderr(&out));
}

fn openai_config(server: &support::ScriptedServer) -> String {
    format!(
        "{ECHO}\n[backends.llm]\nkind = \"openai\"\nbase_url = {}\nmodel = \"verbatim\"\n",
        serde_json::to_string(&server.base_url).unwrap()
    )
}

#[test]
fn output_schema_asks_the_backend_and_the_runtime_checks_the_answer() {
    let server = support::ScriptedServer::start();
    let sandbox = Sandbox::new(&openai_config(&server));
    let schema = sandbox.write(
        "schema.json",
        r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
    );
    let ws = sandbox.ws();
    let run = |prompt: &str, id: &str| {
        sandbox.run(
            &[
                "run",
                "--backend",
                "llm",
                "--prompt",
                prompt,
                "--workspace",
                &ws,
                "--output-schema",
                &schema,
                "--execution-id",
                id,
                "--json",
            ],
            None,
        )
    };
    let out = run(r#"{"n": 7}"#, "so-ok");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(result(&out)["text"], r#"{"n": 7}"#);
    let sent = server
        .requests()
        .into_iter()
        .find(|r| r.execution_id.as_deref() == Some("so-ok"))
        .unwrap();
    assert_eq!(
        sent.body["response_format"]["json_schema"]["schema"]["required"][0],
        "n"
    );
    // The schema made `structured-output` a requirement of the journaled request.
    let record = sandbox.show("so-ok");
    assert!(
        record["request"]["required"]
            .as_array()
            .unwrap()
            .contains(&Value::from("structured-output")),
        "{record}"
    );

    let out = run(r#"{"n": "seven"}"#, "so-bad");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failed = result(&out);
    assert_eq!(failed["outcome"], "failed");
    assert_eq!(failed["err"]["code"], "agent.missing_deliverable");
    assert_eq!(failed["err"]["side_effects"], "none");
    assert!(
        failed["err"]["reason"].as_str().unwrap().contains("/n"),
        "{failed}"
    );
    assert!(failed.get("text").is_none());
}

#[test]
fn output_schema_is_refused_before_anything_runs_when_invalid_or_unsupported() {
    let sandbox = Sandbox::new(ECHO);
    let ws = sandbox.ws();
    let invalid = sandbox.write("invalid.json", r#"{"type": 12}"#);
    let not_json = sandbox.write("not.json", "type: object");
    for schema in [&invalid, &not_json] {
        let out = sandbox.run(
            &[
                "run",
                "--backend",
                "echo",
                "--prompt",
                "x",
                "--workspace",
                &ws,
                "--output-schema",
                schema,
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("schema") || stderr(&out).contains("not JSON"),
            "{}",
            stderr(&out)
        );
    }
    // A valid schema on a backend that cannot verify structured output: refused.
    let valid = sandbox.write("valid.json", r#"{"type": "object"}"#);
    let out = sandbox.run(
        &[
            "run",
            "--backend",
            "echo",
            "--prompt",
            "x",
            "--workspace",
            &ws,
            "--output-schema",
            &valid,
            "--json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(result(&out)["err"]["code"], "agent.missing_capability");
    assert!(!sandbox.path("ws/ran").exists(), "nothing ran");
}
