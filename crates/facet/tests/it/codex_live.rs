//! The real Codex CLI (npm `@openai/codex`, installed by
//! scripts/setup.d/15-npm-peers.sh) running `facet hook --dialect codex` as its
//! PreToolUse hook. The model is a scripted Responses API on loopback
//! (tests/py/fake_responses.py) that asks Codex to apply a patch; Codex itself builds
//! the hook envelope, runs the hook, honours (or not) its answer, and sends the
//! hook's reason back to the "model".
//!
//! What this pins down about Codex 0.171: a patch sent as a shell heredoc reaches the
//! hook as `tool_name: "Bash"` with `{"command": "apply_patch <<'EOF' …"}`; hooks run
//! only with `[features] hooks = true` and trusted (here
//! `--dangerously-bypass-hook-trust`); a `deny` blocks the call and its reason is
//! what the model reads.
use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::Tree;

fn codex() -> PathBuf {
    test_support::peers::npm_bin("codex", "@openai/codex")
}

/// What one Codex run left behind.
struct CodexRun {
    output: String,
    /// The request bodies Codex sent to the scripted model.
    requests: Vec<Value>,
    /// What the hook was given, one JSON line per call.
    hook_inputs: Vec<Value>,
}

fn run_codex(tree: &Tree, name: &str, patch: &str) -> CodexRun {
    run_codex_with(tree, name, "", patch, None)
}

/// [`run_codex`] with the shell command starting with `prefix` (`cd .. && `) and
/// the `exec_command` call carrying `workdir` when given.
fn run_codex_with(
    tree: &Tree,
    name: &str,
    prefix: &str,
    patch: &str,
    workdir: Option<&str>,
) -> CodexRun {
    let work = tree.path(name);
    std::fs::create_dir_all(work.join("home")).unwrap();
    let log = work.join("requests.jsonl");
    let hook_log = work.join("hook-inputs.jsonl");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/fake_responses.py");
    let mut server = Command::new("python3");
    server.arg(script).env("PATCH", patch).env("PREFIX", prefix);
    if let Some(workdir) = workdir {
        server.env("WORKDIR", workdir);
    }
    let mut server = server
        .env("LOG", &log)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs the scripted model");
    let mut port = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let port = port.trim().to_owned();
    assert!(!port.is_empty(), "the scripted model did not start");

    // The hook command keeps a copy of what Codex sent it, then runs facet.
    let hook = format!(
        "tee -a '{}' | FACET_STATE_DIR='{}' '{}' hook --dialect codex",
        hook_log.display(),
        tree.state().display(),
        support::facet_bin().display()
    );
    let config = format!(
        r#"model = "gpt-5-codex"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[features]
hooks = true

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"

[[hooks.PreToolUse]]
matcher = ".*"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "{}"
timeout = 30
"#,
        hook.replace('\\', "\\\\").replace('"', "\\\"")
    );
    std::fs::write(work.join("home/config.toml"), config).unwrap();

    let output = Command::new("timeout")
        .arg("120")
        .arg(codex())
        .args([
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "apply the patch",
        ])
        .current_dir(tree.room())
        .env("CODEX_HOME", work.join("home"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();

    let read_lines = |path: &Path| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let requests = read_lines(&log)
        .into_iter()
        .map(|entry| serde_json::from_str(entry["body"].as_str().unwrap()).unwrap())
        .collect();
    CodexRun {
        output: format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        requests,
        hook_inputs: read_lines(&hook_log),
    }
}

/// The tool output Codex sent back to the model for `call-1`.
fn tool_output(run: &CodexRun) -> String {
    run.requests
        .iter()
        .flat_map(|request| request["input"].as_array().cloned().unwrap_or_default())
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == "call-1")
        .map(|item| item["output"].to_string())
        .unwrap_or_else(|| panic!("no output for call-1 reached the model:\n{}", run.output))
}

#[test]
fn codex_runs_the_hook_and_a_patch_outside_the_facet_is_refused() {
    let tree = Tree::new();
    let escape = tree.path("outside/escaped_by_codex.txt");
    let patch = "*** Begin Patch\n*** Add File: ../../../outside/escaped_by_codex.txt\n+escaped\n*** End Patch\n";
    let run = run_codex(&tree, "codex-outside", patch);

    assert!(!escape.exists(), "the patch ran:\n{}", run.output);
    let envelope = run
        .hook_inputs
        .first()
        .unwrap_or_else(|| panic!("the hook never ran:\n{}", run.output));
    assert_eq!(envelope["hook_event_name"], "PreToolUse");
    assert_eq!(envelope["cwd"], tree.room().display().to_string());
    assert!(
        envelope["tool_input"]["command"]
            .as_str()
            .unwrap()
            .contains("*** Add File: ../../../outside/"),
        "{envelope}"
    );
    let output = tool_output(&run);
    assert!(
        output.contains(&format!(
            "../../../outside/escaped_by_codex.txt is refused — this session's facet is {}, and \
             this session has no approval channel, so nobody can be asked to grant it here. Ask \
             the user to run `facet grant ",
            tree.room().display()
        )),
        "{output}"
    );
}

#[test]
fn codex_applies_a_patch_inside_the_facet() {
    let tree = Tree::new();
    let patch = "*** Begin Patch\n*** Add File: made_by_codex.txt\n+inside\n*** End Patch\n";
    let run = run_codex(&tree, "codex-inside", patch);
    assert!(
        !run.hook_inputs.is_empty(),
        "the hook never ran:\n{}",
        run.output
    );
    assert_eq!(
        std::fs::read_to_string(tree.room().join("made_by_codex.txt"))
            .ok()
            .as_deref(),
        Some("inside\n"),
        "{}",
        run.output
    );
    assert!(!tool_output(&run).contains("blocked by PreToolUse hook"));
}

/// Issue 21, finding 6: `cd DIR && apply_patch`, which Codex applies in `DIR`, is
/// judged there. Before, the patch's path was judged against the session's folder
/// (inside) and Codex wrote the file one folder up.
#[test]
fn codex_cd_then_apply_patch_is_judged_where_codex_applies_it() {
    let tree = Tree::new();
    let escape = tree.path("project/src/other/escaped_by_cd.txt");
    let patch = "*** Begin Patch\n*** Add File: other/escaped_by_cd.txt\n+escaped\n*** End Patch\n";
    let run = run_codex_with(&tree, "codex-cd", "cd .. && ", patch, None);

    assert!(!escape.exists(), "the patch ran:\n{}", run.output);
    let envelope = run
        .hook_inputs
        .first()
        .unwrap_or_else(|| panic!("the hook never ran:\n{}", run.output));
    assert!(
        envelope["tool_input"]["command"]
            .as_str()
            .unwrap()
            .starts_with("cd .. && apply_patch <<'EOF'"),
        "{envelope}"
    );
    let output = tool_output(&run);
    assert!(
        output.contains(&format!(
            "other/escaped_by_cd.txt → {} is refused — this session's facet is {}, and this session has no approval channel",
            escape.display(),
            tree.room().display()
        )),
        "{output}"
    );
}

/// What Codex 0.171 tells a hook about a shell call's `workdir`: nothing. The hook
/// input is `{"command"}` alone, so a patch sent through the shell with a `workdir`
/// cannot be placed by facet (docs/facet.md names this limit). Should a later Codex
/// send it, this test fails, and facet's `workdir` reading (tested in
/// `codex_patch_forms.rs`) takes over.
#[test]
fn codex_does_not_send_the_shell_workdir_to_hooks() {
    let tree = Tree::new();
    let patch = "*** Begin Patch\n*** Add File: via_workdir.txt\n+x\n*** End Patch\n";
    let run = run_codex_with(&tree, "codex-workdir", "", patch, Some("sub"));
    let envelope = run
        .hook_inputs
        .first()
        .unwrap_or_else(|| panic!("the hook never ran:\n{}", run.output));
    let keys: Vec<&String> = envelope["tool_input"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["command"], "{envelope}");
}
