//! The Claude Code plugin (`integrations/claude-code/envreg-facet`, listed by the
//! repository's `.claude-plugin/marketplace.json`) in the real, pinned Claude Code
//! (npm `@anthropic-ai/claude-code`, scripts/peers/package.json), against the scripted
//! Messages API of `model-script`. Claude Code starts the plugin's MCP servers and
//! runs its hooks — `envreg` and `facet` by name from `PATH`, where the freshly built
//! binaries come first — and sends every tool result back to the "model", which is
//! where these tests read what happened.
//!
//! Two ways in: `--plugin-dir` (one session), and `claude plugin marketplace add` +
//! `claude plugin install` into a scratch `CLAUDE_CONFIG_DIR`, then a plain session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::live;

use std::path::PathBuf;
use std::process::{Command, Output};

use live::Project;
use model_script::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};

const PLUGIN: &str = "envreg-facet";
const ENVREG_PREFIX: &str = "mcp__plugin_envreg-facet_envreg__";
const FACET_TOOL: &str = "mcp__plugin_envreg-facet_facet__facet";

fn plugin_dir() -> PathBuf {
    live::repo_root().join("integrations/claude-code/envreg-facet")
}

fn claude() -> PathBuf {
    live::peer(
        "claude",
        "the Claude Code CLI (npm @anthropic-ai/claude-code)",
    )
}

/// `claude ARGS` with the project's scratch home and config, our binaries on PATH.
fn claude_command(project: &Project) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.arg("180")
        .arg(claude())
        .current_dir(project.ops())
        .env("PATH", project.path_var())
        .env("HOME", project.path("home"))
        .env("CLAUDE_CONFIG_DIR", project.path("home/.claude"))
        .env("XDG_CONFIG_HOME", project.path("home/.config"))
        .env("XDG_STATE_HOME", project.path("home/.local/state"))
        .env("FACET_STATE_DIR", project.path("state"))
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        // MCP tools are otherwise deferred behind a search tool the script does not use.
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("IS_SANDBOX", "1")
        .env_remove("ENVREG_REGISTRY")
        .env_remove("ENVREG_SESSION_ID")
        .env_remove("FACET_CONFIG")
        .env_remove("FACET_TOOL_NAME")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .stdin(std::process::Stdio::null());
    cmd
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

struct Session {
    output: String,
    /// `claude -p --output-format json`'s result object.
    result: Value,
    requests: Vec<Value>,
}

/// One `claude -p` session against `turns`.
fn session(project: &Project, turns: Vec<Turn>, extra: &[&str]) -> Session {
    let server = ScriptedServer::start(Script::new(turns));
    let output = claude_command(project)
        .args(["-p", "do the thing", "--output-format", "json"])
        .args(extra)
        .env("ANTHROPIC_BASE_URL", &server.origin)
        .env("ANTHROPIC_API_KEY", "sk-scripted-model")
        .output()
        .unwrap();
    let result = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    Session {
        output: text(&output),
        result,
        requests: live::messages_requests(&server),
    }
}

impl Session {
    fn tool_result(&self, call_id: &str) -> (String, bool) {
        live::anthropic_tool_result(&self.requests, call_id).unwrap_or_else(|| {
            panic!(
                "no tool result for {call_id} reached the model:\n{}",
                self.output
            )
        })
    }

    fn denied_tools(&self) -> Vec<String> {
        self.result["permission_denials"]
            .as_array()
            .map(|denials| {
                denials
                    .iter()
                    .filter_map(|d| d["tool_name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn resolve_turn(call_id: &str) -> Turn {
    Turn::tool_call(
        call_id,
        format!("{ENVREG_PREFIX}env_resolve"),
        json!({"serviceId": "checkout-api", "environmentId": "staging"}),
    )
}

/// The resolve answer came from the registry through the plugin's server: ids and a
/// path that only `examples/registry` holds.
fn assert_resolved(session: &Session, call_id: &str) {
    let (result, is_error) = session.tool_result(call_id);
    assert!(!is_error, "{result}\n{}", session.output);
    let value: Value = serde_json::from_str(&result)
        .unwrap_or_else(|e| panic!("the model got no JSON ({e}): {result}"));
    assert_eq!(
        value["deployment"]["id"], "checkout-api-staging",
        "{result}"
    );
    assert_eq!(value["environment"]["tier"], "staging", "{result}");
    assert!(result.contains("/opt/checkout-api"), "{result}");
}

fn read_outside_turn(project: &Project, call_id: &str) -> Turn {
    Turn::tool_call(
        call_id,
        "Read",
        json!({"file_path": project.path("project/shared/secret.txt")}),
    )
}

/// facet's hook (from the plugin) asked; `-p` has nobody to answer, so the file was
/// not read and the model got facet's sentence.
fn assert_read_refused(project: &Project, session: &Session, call_id: &str) {
    let all = session
        .requests
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !all.contains("SECRET-OUTSIDE-THE-FACET"),
        "the file was read"
    );
    let (result, is_error) = session.tool_result(call_id);
    assert!(is_error, "{result}");
    let sentence = format!(
        "{} is outside — this session's facet is {}.",
        project.path("project/shared/secret.txt").display(),
        project.ops().display()
    );
    assert!(result.contains(&sentence), "{sentence:?} not in {result:?}");
    assert!(
        session.denied_tools().contains(&"Read".to_owned()),
        "{}",
        session.output
    );
}

fn secret(project: &Project) {
    std::fs::create_dir_all(project.path("project/shared")).unwrap();
    std::fs::write(
        project.path("project/shared/secret.txt"),
        "SECRET-OUTSIDE-THE-FACET",
    )
    .unwrap();
}

#[test]
fn claude_plugin_validate_passes_on_the_plugin_and_the_marketplace() {
    let project = Project::new("elicitation");
    for target in [plugin_dir(), live::repo_root()] {
        let output = claude_command(&project)
            .args(["plugin", "validate"])
            .arg(&target)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            target.display(),
            text(&output)
        );
        assert!(
            text(&output).contains("Validation passed"),
            "{}",
            text(&output)
        );
    }
    let manifest =
        std::fs::read_to_string(live::repo_root().join(".claude-plugin/marketplace.json")).unwrap();
    assert!(
        manifest.contains("\"name\": \"envreg-facet\""),
        "{manifest}"
    );
}

/// The names the model is offered, the plugin's hook matchers, the hooks' `--facet-tool`
/// and facet's own tool table all agree.
fn assert_names_agree(offered: &[String]) {
    for tool in envreg_core::tools::TOOL_NAMES {
        let name = format!("{ENVREG_PREFIX}{tool}");
        assert!(offered.contains(&name), "{name} not offered: {offered:?}");
    }
    assert!(offered.contains(&FACET_TOOL.to_owned()), "{offered:?}");

    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(plugin_dir().join("hooks/hooks.json")).unwrap(),
    )
    .unwrap();
    let matched = |event: &str, command_prefix: &str| -> Vec<String> {
        let entries = hooks["hooks"][event].as_array().unwrap();
        let mut out = Vec::new();
        for entry in entries {
            let commands: Vec<&str> = entry["hooks"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|h| h["command"].as_str())
                .collect();
            if !commands.iter().any(|c| c.starts_with(command_prefix)) {
                continue;
            }
            for command in &commands {
                if let Some((_, tool)) = command.split_once("--facet-tool ") {
                    assert_eq!(
                        tool.split_whitespace().next(),
                        Some(FACET_TOOL),
                        "{command}"
                    );
                }
            }
            let matcher = regex::Regex::new(entry["matcher"].as_str().unwrap()).unwrap();
            out.extend(offered.iter().filter(|n| matcher.is_match(n)).cloned());
        }
        out.sort();
        out
    };
    assert_eq!(
        matched("PreToolUse", "envreg hook"),
        [
            format!("{ENVREG_PREFIX}env_delete"),
            format!("{ENVREG_PREFIX}env_save")
        ],
        "the approval hook must see exactly the two write tools"
    );
    let facet_pre = matched("PreToolUse", "facet hook");
    let table = facet_core::tools::ToolTable::builtin();
    for name in offered.iter().filter(|n| table.get(n).is_some()) {
        assert!(
            facet_pre.contains(name),
            "facet's table judges {name}, but its matcher misses it"
        );
    }
    assert!(facet_pre.contains(&FACET_TOOL.to_owned()), "{facet_pre:?}");
    assert!(
        facet_pre
            .iter()
            .all(|n| n == FACET_TOOL || table.get(n).is_some()),
        "facet's matcher sends tools its table does not judge: {facet_pre:?}"
    );
    assert_eq!(
        matched("PostToolUse", "facet hook"),
        [FACET_TOOL.to_owned()]
    );
}

#[test]
fn with_plugin_dir_the_model_resolves_saves_and_is_kept_in_its_facet() {
    let project = Project::new("host");
    secret(&project);
    let prod = project.ops().join("environments/prod.yaml");
    let staging = project.ops().join("environments/staging.yaml");
    let prod_before = std::fs::read(&prod).unwrap();
    let turns = vec![
        resolve_turn("call-resolve"),
        read_outside_turn(&project, "call-read"),
        Turn::tool_call(
            "call-save-prod",
            format!("{ENVREG_PREFIX}env_save"),
            json!({"kind": "environment", "record": {"id": "prod", "schemaVersion": 1,
                   "name": "Production (changed by the model)", "tier": "production",
                   "platform": "kubernetes"}}),
        ),
        Turn::tool_call(
            "call-save-staging",
            format!("{ENVREG_PREFIX}env_save"),
            json!({"kind": "environment", "record": {"id": "staging", "schemaVersion": 1,
                   "name": "Staging (saved by the model)", "tier": "staging",
                   "platform": "kubernetes"}}),
        ),
        Turn::text("done"),
    ];
    // env_save is allowed by rule, so only the plugin's hook stands between the model
    // and a production write (the registry trusts the host: approvalChannel: host).
    let allowed = format!("{ENVREG_PREFIX}env_resolve {ENVREG_PREFIX}env_save");
    let plugin = plugin_dir().display().to_string();
    let session = session(
        &project,
        turns,
        &["--plugin-dir", &plugin, "--allowedTools", &allowed],
    );
    assert!(
        !session.requests.is_empty(),
        "no model request:\n{}",
        session.output
    );
    assert_names_agree(&live::offered_tools(&session.requests[0]));
    assert_resolved(&session, "call-resolve");
    assert_read_refused(&project, &session, "call-read");

    // The production save: asked by `envreg hook`; print mode has nobody to answer.
    let (result, is_error) = session.tool_result("call-save-prod");
    assert!(is_error, "{result}");
    assert!(
        result.contains("env_save writes production environment prod (writePolicy.requireApprovalForProductionSave"),
        "{result}"
    );
    assert_eq!(
        std::fs::read(&prod).unwrap(),
        prod_before,
        "prod.yaml changed"
    );
    let denied = session.denied_tools();
    assert!(
        denied.contains(&format!("{ENVREG_PREFIX}env_save")),
        "{denied:?}"
    );

    // The staging save: no opinion from the hook, allowed by the rule, written.
    let (result, is_error) = session.tool_result("call-save-staging");
    assert!(!is_error, "{result}\n{}", session.output);
    assert!(result.contains("\"id\":\"staging\""), "{result}");
    assert!(
        std::fs::read_to_string(&staging)
            .unwrap()
            .contains("Staging (saved by the model)"),
        "staging.yaml was not written"
    );
    assert_eq!(
        denied.iter().filter(|t| t.ends_with("env_save")).count(),
        1,
        "only the production save was refused: {denied:?}"
    );
}

fn install_from_marketplace(project: &Project) {
    let root = live::repo_root().display().to_string();
    for args in [
        vec!["plugin", "marketplace", "add", root.as_str()],
        vec!["plugin", "install", "envreg-facet@envreg-facet"],
    ] {
        let output = claude_command(project).args(&args).output().unwrap();
        assert!(
            output.status.success(),
            "claude {args:?}: {}",
            text(&output)
        );
    }
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path("home/.claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        settings["enabledPlugins"][format!("{PLUGIN}@{PLUGIN}")],
        true,
        "{settings:#}"
    );
}

#[test]
fn installed_from_the_marketplace_the_plugin_serves_and_guards() {
    let project = Project::new("elicitation");
    secret(&project);
    install_from_marketplace(&project);
    let turns = vec![
        resolve_turn("call-resolve"),
        read_outside_turn(&project, "call-read"),
        Turn::text("done"),
    ];
    let allowed = format!("{ENVREG_PREFIX}env_resolve");
    let session = session(&project, turns, &["--allowedTools", &allowed]);
    assert!(
        !session.requests.is_empty(),
        "no model request:\n{}",
        session.output
    );
    assert_names_agree(&live::offered_tools(&session.requests[0]));
    assert_resolved(&session, "call-resolve");
    assert_read_refused(&project, &session, "call-read");
}
