//! facet inside the real OpenCode (npm `opencode-ai` 1.18.33, installed by
//! scripts/setup.d/15-npm-peers.sh), headless (`opencode run --format json`), with
//! exactly the one-step setup (`integrations/opencode/` copied into its config folder:
//! the plugin shim and `facet serve` as its MCP server). The model is model-script's Chat Completions server on loopback,
//! reached through OpenCode's custom OpenAI-compatible provider; OpenCode itself
//! calls the plugin, which runs the freshly built `facet hook --dialect opencode`
//! (first on `PATH`), and sends each tool result back to the "model" — which is
//! where the test reads what the model saw.
//!
//! What this pins down about OpenCode 1.18.33: the plugin's `tool.execute.before`
//! runs before the tool and before OpenCode's own permission check; what it throws
//! is the tool's error result; OpenCode's `permission.external_directory` (default
//! `ask`, auto-rejected headless) refuses what facet granted unless set to `allow`,
//! and that rejection ends the run.
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use facet_core::seed::{outside_reason_no_channel, panel_grant_command, widen_refused_no_channel};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};
use support::Tree;

fn opencode() -> PathBuf {
    test_support::peers::npm_bin("opencode", "opencode-ai")
}

/// `integrations/opencode/`: the folder the one-step setup copies into OpenCode's
/// config folder.
fn integration() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/opencode")
}

/// What one OpenCode run left behind.
struct OpenCodeRun {
    /// stdout (the JSON events) and stderr, for failure messages.
    output: String,
    /// The session id OpenCode gave the run.
    session: String,
    /// Every request body the scripted model received that offered tools (the
    /// conversation's turns; the title request is left out).
    turns: Vec<Value>,
    /// Every request body, as text, title request included.
    all_bodies: String,
}

impl OpenCodeRun {
    /// The content of the tool message answering `call_id`, as the model got it.
    fn tool_result(&self, call_id: &str) -> String {
        self.turns
            .iter()
            .flat_map(|body| body["messages"].as_array().cloned().unwrap_or_default())
            .find(|message| message["role"] == "tool" && message["tool_call_id"] == call_id)
            .map(|message| message["content"].to_string())
            .unwrap_or_else(|| {
                panic!(
                    "no result for {call_id} reached the model:\n{}",
                    self.output
                )
            })
    }
}

impl OpenCodeRun {
    /// The error OpenCode's own `tool_use` event reports for `call_id`, if it failed.
    fn tool_error(&self, call_id: &str) -> Option<String> {
        self.output
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["type"] == "tool_use" && event["part"]["callID"] == call_id)
            .and_then(|event| event["part"]["state"]["error"].as_str().map(str::to_owned))
    }
}

/// Runs `opencode run` in `tree.room()` against `turns`, set up as docs/hosts.md
/// says; `allow_external: false` puts `permission.external_directory` back to `ask`
/// in the project's config.
fn run_opencode(
    tree: &Tree,
    name: &str,
    turns: Vec<Turn>,
    allow_external: bool,
    facet_config: Option<&Path>,
) -> OpenCodeRun {
    let work = tree.path(name);
    let home = work.join("home");
    let config_dir = home.join(".config/opencode");
    offline_config_dir(&config_dir);
    // The one-step setup, exactly: the integration folder copied into OpenCode's
    // config folder (the plugin, and `opencode.json` with the MCP server and
    // `permission.external_directory: allow`).
    std::fs::create_dir_all(config_dir.join("plugin")).unwrap();
    std::fs::copy(
        integration().join("plugin/facet.js"),
        config_dir.join("plugin/facet.js"),
    )
    .unwrap();
    std::fs::copy(
        integration().join("opencode.json"),
        config_dir.join("opencode.json"),
    )
    .unwrap();
    let server = ScriptedServer::start(Script::new(turns));
    let facet = support::facet_bin();
    // The project's own config: the scripted model, and — to show OpenCode's own
    // check — `external_directory` back at its default.
    let mut config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "model-script",
            "options": {"baseURL": server.base_url, "apiKey": "sk-scripted-model"},
            "models": {"scripted": {"name": "scripted"}},
        }},
        "model": "scripted/scripted",
    });
    if !allow_external {
        config["permission"] = json!({"external_directory": "ask"});
    }
    std::fs::write(tree.room().join("opencode.json"), config.to_string()).unwrap();
    let path = format!(
        "{}:{}",
        facet.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("timeout");
    match facet_config {
        Some(config) => command.env("FACET_CONFIG", config),
        None => command.env_remove("FACET_CONFIG"),
    };
    let output = command
        .arg("120")
        .arg(opencode())
        .args(["run", "--format", "json", "do the thing"])
        .current_dir(tree.room())
        // OpenCode (1.18.33) takes its folder from `$PWD` when set, not from the
        // process's working directory: the test's own `PWD` would make it run there.
        .env("PWD", tree.room())
        .env("PATH", path)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("FACET_STATE_DIR", tree.state())
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let session = stdout
        .lines()
        .find_map(|line| {
            let event: Value = serde_json::from_str(line).ok()?;
            event["sessionID"].as_str().map(str::to_owned)
        })
        .unwrap_or_default();
    let requests = server.requests();
    OpenCodeRun {
        output: format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)),
        session,
        turns: requests
            .iter()
            .filter(|request| {
                request.body["tools"]
                    .as_array()
                    .is_some_and(|t| !t.is_empty())
            })
            .map(|request| request.body.clone())
            .collect(),
        all_bodies: requests
            .iter()
            .map(|request| request.body.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// OpenCode installs its plugin SDK (`@opencode-ai/plugin`) from npm into each
/// config folder at start, unless the folder's `package-lock.json` already lists it
/// and `node_modules/` exists (opencode-ai 1.18.33, `Npm.install`). The shim imports
/// nothing from it, so the tests mark it installed and the run stays offline.
fn offline_config_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("node_modules")).unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("package-lock.json"),
        r#"{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}"#,
    )
    .unwrap();
}

fn read(call_id: &str, path: &str) -> Turn {
    Turn::tool_call(call_id, "read", json!({ "filePath": path }))
}

#[test]
fn opencode_refuses_reads_outside_the_facet_serves_inside_and_refuses_widening() {
    let tree = Tree::new();
    let room = tree.room();
    let secret = tree.path("project/src/other/secret.txt");
    std::fs::write(&secret, "SECRET-OUTSIDE-THE-FACET\n").unwrap();
    std::fs::write(room.join("inside.txt"), "INSIDE-THE-FACET\n").unwrap();
    std::fs::write(tree.path("project/src/climbed.txt"), "CLIMBED-OUT\n").unwrap();
    std::fs::create_dir_all(room.join("a/b")).unwrap();
    tree.symlink(room.join("a/b"), "project/src/room/inner");
    let run = run_opencode(
        &tree,
        "refusals",
        vec![
            read("call_outside", &secret.display().to_string()),
            read("call_inside", "inside.txt"),
            // Through the link `inner` the kernel stays inside (room/a/climbed.txt);
            // OpenCode joins lexically and opens project/src/climbed.txt.
            read("call_climb", "inner/../../climbed.txt"),
            Turn::tool_call(
                "call_widen",
                "facet_facet",
                json!({"action": "add", "paths": ["../other"]}),
            ),
            Turn::text("done"),
        ],
        true,
        None,
    );
    assert!(!run.session.is_empty(), "no session id:\n{}", run.output);
    let root = room.display().to_string();
    let grant =
        |path: &Path| panel_grant_command(&[path.display().to_string()], &run.session, false);

    let outside = run.tool_result("call_outside");
    let expected = outside_reason_no_channel(
        &root,
        &secret.display().to_string(),
        &root,
        Some(&grant(&secret)),
    );
    assert!(
        outside.contains(&expected),
        "{outside}\nexpected: {expected}"
    );

    let inside = run.tool_result("call_inside");
    assert!(inside.contains("INSIDE-THE-FACET"), "{inside}");

    let climbed = tree.path("project/src/climbed.txt");
    let climb = run.tool_result("call_climb");
    let expected = outside_reason_no_channel(
        &root,
        "inner/../../climbed.txt",
        &root,
        Some(&grant(&climbed)),
    );
    assert!(climb.contains(&expected), "{climb}\nexpected: {expected}");

    let widen = run.tool_result("call_widen");
    let other = tree.path("project/src/other");
    let expected = widen_refused_no_channel(Some(&grant(&other)));
    assert!(widen.contains(&expected), "{widen}\nexpected: {expected}");

    // What the model was told up front: facet's rule and this session's binding, in
    // the system prompt of every turn (the plugin's system-prompt hook).
    let system: String = run.turns[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "system")
        .map(|message| message["content"].to_string())
        .collect();
    let rule = serde_json::to_string(&facet_core::seed::facet_rule_text()).unwrap();
    assert!(
        system.contains(rule.trim_matches('"')) && system.contains(&root),
        "{system}"
    );

    // Neither refused file's content ever reached the model.
    assert!(
        !run.all_bodies.contains("SECRET-OUTSIDE"),
        "{}",
        run.all_bodies
    );
    assert!(
        !run.all_bodies.contains("CLIMBED-OUT"),
        "{}",
        run.all_bodies
    );
}

/// `permission.external_directory` left at its default (`ask`): OpenCode asks about
/// any path outside the folder it runs in, nobody answers headless, and the call is
/// rejected — even a folder facet grants (here a standing grant for every session
/// under the project). With `allow`, as docs/hosts.md says, facet decides alone.
#[test]
fn opencode_own_external_directory_check_refuses_what_facet_granted_unless_allowed() {
    let tree = Tree::new();
    let shared = tree.path("project/shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("types.rs"), "GRANTED-CONTENT\n").unwrap();
    let config = tree.path("facet-config.toml");
    std::fs::write(
        &config,
        format!(
            "[projects.{:?}]\ngrants = [\"shared\"]\n",
            tree.path("project").display().to_string()
        ),
    )
    .unwrap();
    let file = shared.join("types.rs").display().to_string();
    let turns = || vec![read("call_granted", &file), Turn::text("done")];

    let asked = run_opencode(&tree, "ask", turns(), false, Some(&config));
    let rejected = asked.tool_error("call_granted").unwrap_or_default();
    assert!(
        rejected.contains("rejected permission"),
        "OpenCode's own check should have rejected it:\n{}",
        asked.output
    );
    // The rejection ends the run: the model is not called again.
    assert_eq!(asked.turns.len(), 1, "{}", asked.output);
    assert!(
        !asked.all_bodies.contains("GRANTED-CONTENT"),
        "{}",
        asked.all_bodies
    );

    let allowed = run_opencode(&tree, "allow", turns(), true, Some(&config));
    let served = allowed.tool_result("call_granted");
    assert!(served.contains("GRANTED-CONTENT"), "{served}");
}
