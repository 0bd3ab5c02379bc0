//! The real Claude Code CLI (npm `@anthropic-ai/claude-code`, installed by
//! scripts/setup.d/15-npm-peers.sh) with `facet hook` in its settings and
//! `facet serve` as its MCP server. The model is a scripted Messages API on loopback
//! (tests/py/fake_messages.py) that makes one tool call; Claude Code itself builds
//! every hook envelope, runs the hook, honours its answer, and sends the results
//! back to the "model", which is where the test reads them.
use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::Tree;

fn claude() -> PathBuf {
    test_support::peers::npm_bin("claude", "@anthropic-ai/claude-code")
}

struct ClaudeRun {
    output: String,
    /// Every request body Claude Code sent to the scripted model, as text.
    requests: Vec<String>,
    /// What the hook was given, one JSON value per call.
    hook_inputs: Vec<Value>,
    /// What the hook answered (non-empty answers only).
    hook_outputs: Vec<Value>,
}

fn run_claude(tree: &Tree, name: &str, tool: &str, input: &Value, extra: &[&str]) -> ClaudeRun {
    let work = tree.path(name);
    std::fs::create_dir_all(work.join("home")).unwrap();
    let log = work.join("requests.jsonl");
    let hook_in = work.join("hook-inputs.jsonl");
    let hook_out = work.join("hook-outputs.jsonl");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/fake_messages.py");
    let mut server = Command::new("python3")
        .arg(script)
        .env("TOOL", tool)
        .env("INPUT", input.to_string())
        .env("LOG", &log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs the scripted model");
    let mut port = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let port = port.trim().to_owned();

    // The hook keeps a copy of its input and of its answer (one line each).
    let hook = work.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ntee -a '{}' | FACET_STATE_DIR='{}' '{}' hook | tee -a '{}'\necho >> '{}'\n",
            hook_in.display(),
            tree.state().display(),
            support::facet_bin().display(),
            hook_out.display(),
            hook_in.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let command = json!([{ "type": "command", "command": hook.display().to_string() }]);
    let settings = json!({"hooks": {
        "SessionStart": [{"hooks": command}],
        "UserPromptSubmit": [{"hooks": command}],
        "PreToolUse": [{"matcher": "Read|Write|Edit|MultiEdit|NotebookEdit|Grep|Glob|LS|mcp__facet__facet", "hooks": command}],
        "PostToolUse": [{"matcher": "mcp__facet__facet", "hooks": command}],
    }});
    std::fs::write(work.join("settings.json"), settings.to_string()).unwrap();
    let mcp = json!({"mcpServers": {"facet": {
        "type": "stdio",
        "command": support::facet_bin(),
        "args": ["serve"],
        "env": {"FACET_STATE_DIR": tree.state()},
    }}});
    std::fs::write(work.join("mcp.json"), mcp.to_string()).unwrap();

    let output = Command::new("timeout")
        .arg("120")
        .arg(claude())
        .args(["-p", "do the thing", "--output-format", "json"])
        .arg("--settings")
        .arg(work.join("settings.json"))
        .arg("--mcp-config")
        .arg(work.join("mcp.json"))
        .args(extra)
        .current_dir(tree.room())
        .env("HOME", work.join("home"))
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-scripted-model")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        // MCP tools are otherwise deferred behind a search tool the scripted model
        // does not use; running as root needs IS_SANDBOX for bypassPermissions.
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("IS_SANDBOX", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();

    let lines = |path: &Path| -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    let requests = lines(&log)
        .iter()
        .map(|line| {
            // Re-serialized, so every request reads the same way (no \u escapes).
            let entry: Value = serde_json::from_str(line).unwrap();
            let body: Value = serde_json::from_str(entry["body"].as_str().unwrap()).unwrap();
            body.to_string()
        })
        .collect();
    let parse = |path: &Path| -> Vec<Value> {
        lines(path)
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    ClaudeRun {
        output: format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        requests,
        hook_inputs: parse(&hook_in),
        hook_outputs: parse(&hook_out),
    }
}

fn events(run: &ClaudeRun) -> Vec<String> {
    run.hook_inputs
        .iter()
        .map(|input| {
            let event = input["hook_event_name"].as_str().unwrap_or_default();
            match input["tool_name"].as_str() {
                Some(tool) => format!("{event} {tool}"),
                None => event.to_owned(),
            }
        })
        .collect()
}

fn decisions(run: &ClaudeRun) -> Vec<String> {
    run.hook_outputs
        .iter()
        .filter_map(|answer| answer["hookSpecificOutput"]["permissionDecision"].as_str())
        .map(str::to_owned)
        .collect()
}

#[test]
fn claude_code_under_bypass_permissions_gets_a_refusal_it_shows_the_model() {
    let tree = Tree::new();
    let outside = tree.path("project/shared/types.rs");
    std::fs::write(&outside, "SECRET-OUTSIDE-THE-FACET").unwrap();
    let input = json!({"file_path": outside});
    let run = run_claude(
        &tree,
        "cc-bypass",
        "Read",
        &input,
        &["--permission-mode", "bypassPermissions"],
    );

    assert_eq!(
        events(&run),
        vec!["SessionStart", "UserPromptSubmit", "PreToolUse Read"],
        "{}",
        run.output
    );
    assert_eq!(decisions(&run), vec!["deny"], "{}", run.output);
    let all = run.requests.join("\n");
    assert!(
        !all.contains("SECRET-OUTSIDE-THE-FACET"),
        "the file was read"
    );
    // What the model read: the rule at session start, the binding without an
    // approval channel, and the refusal sentence as the tool's result.
    assert!(all.contains("# Facet scope"), "{}", run.output);
    assert!(
        all.contains("this session has no approval channel"),
        "{}",
        run.output
    );
    // The way forward is the panel, which works without a channel, not
    // `facet action=add`, which is refused there too.
    let refusal = format!(
        "{} is refused — this session's facet is {}, and this session has no approval channel, \
         so nobody can be asked to grant it here. Ask the user to run `facet grant ",
        outside.display(),
        tree.room().display()
    );
    assert!(
        all.contains(&refusal),
        "{refusal} not in the requests:\n{}",
        run.output
    );
}

#[test]
fn claude_code_runs_the_facet_mcp_tool_and_the_hook_states_the_binding() {
    let tree = Tree::new();
    let run = run_claude(
        &tree,
        "cc-status",
        "mcp__facet__facet",
        &json!({"action": "status"}),
        &["--allowedTools", "mcp__facet__facet"],
    );
    assert_eq!(
        events(&run),
        vec![
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse mcp__facet__facet",
            "PostToolUse mcp__facet__facet"
        ],
        "{}",
        run.output
    );
    // The server answered (its note is in the tool result the model got) and the
    // hook's PostToolUse context carried the binding.
    let all = run.requests.join("\n");
    assert!(all.contains("recordedBy"), "{}", run.output);
    assert!(
        all.contains("PostToolUse:mcp__facet__facet hook additional context: facet: "),
        "{}",
        run.output
    );
}

#[test]
fn claude_code_puts_a_widening_to_the_user_and_nothing_is_granted_unanswered() {
    let tree = Tree::new();
    let run = run_claude(
        &tree,
        "cc-add",
        "mcp__facet__facet",
        &json!({"action": "add", "paths": ["../../shared"]}),
        &[],
    );
    assert!(
        events(&run).contains(&"PreToolUse mcp__facet__facet".to_owned()),
        "{}",
        run.output
    );
    assert_eq!(decisions(&run), vec!["ask"], "{}", run.output);
    // Print mode has nobody to answer the question: the call does not run, and the
    // session's grants stay empty.
    assert!(!events(&run).contains(&"PostToolUse mcp__facet__facet".to_owned()));
    let session = run.hook_inputs[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let status = tree.panel(&["status", "--session", &session, "--json"]);
    let value: Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(value["binding"]["granted"], json!([]));
}
