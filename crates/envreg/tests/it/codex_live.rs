//! envreg in the real, pinned Codex CLI (npm `@openai/codex`, scripts/peers/package.json)
//! against the scripted Responses API of `model-script`, configured with exactly
//! `integrations/codex/config.toml` (the documented block: envreg over MCP, envreg's
//! approval hook, facet's hooks and tool) after a prelude that points Codex at the
//! scripted model. `envreg` and `facet` are the freshly built binaries, first on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::live;

use std::path::PathBuf;
use std::process::Command;

use live::Project;
use model_script::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};

fn codex() -> PathBuf {
    live::peer("codex", "the Codex CLI (npm @openai/codex)")
}

fn documented_block() -> String {
    std::fs::read_to_string(live::repo_root().join("integrations/codex/config.toml")).unwrap()
}

struct Run {
    output: String,
    requests: Vec<Value>,
}

fn run_codex(project: &Project, turns: Vec<Turn>) -> Run {
    let server = ScriptedServer::start(Script::new(turns));
    let home = project.path("home/.codex");
    std::fs::create_dir_all(&home).unwrap();
    // The prelude (top-level keys must precede every table), then the block verbatim.
    let config = format!(
        "model = \"gpt-5-codex\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n\n{}",
        server.base_url,
        documented_block()
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let output = Command::new("timeout")
        .arg("180")
        .arg(codex())
        .args([
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "do the thing",
        ])
        .current_dir(project.ops())
        .env("PATH", project.path_var())
        .env("HOME", project.path("home"))
        .env("CODEX_HOME", &home)
        .env("FACET_STATE_DIR", project.path("state"))
        .env_remove("ENVREG_REGISTRY")
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let requests = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/responses")
        .map(|r| r.body)
        .collect();
    Run {
        output: format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        requests,
    }
}

impl Run {
    fn tool_output(&self, call_id: &str) -> String {
        live::responses_tool_output(&self.requests, call_id).unwrap_or_else(|| {
            panic!(
                "no output for {call_id} reached the model:\n{}\nrequests: {}",
                self.output,
                self.requests.len()
            )
        })
    }

    /// The tool names inside the namespace tool `namespace` of the first request.
    fn offered_namespace(&self, namespace: &str) -> Vec<String> {
        self.requests
            .first()
            .and_then(|r| r["tools"].as_array())
            .and_then(|tools| tools.iter().find(|t| t["name"] == namespace))
            .and_then(|ns| ns["tools"].as_array())
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[test]
fn codex_with_the_documented_block_resolves_and_refuses_a_production_save() {
    let project = Project::new("host");
    let prod = project.ops().join("environments/prod.yaml");
    let prod_before = std::fs::read(&prod).unwrap();
    let staging = project.ops().join("environments/staging.yaml");
    let turns = vec![
        Turn::namespaced_tool_call(
            "call-resolve",
            "mcp__envreg",
            "env_resolve",
            json!({"serviceId": "checkout-api", "environmentId": "staging"}),
        ),
        Turn::namespaced_tool_call(
            "call-save-prod",
            "mcp__envreg",
            "env_save",
            json!({"kind": "environment", "record": {"id": "prod", "schemaVersion": 1,
                   "name": "Production (changed by the model)", "tier": "production",
                   "platform": "kubernetes"}}),
        ),
        Turn::namespaced_tool_call(
            "call-save-staging",
            "mcp__envreg",
            "env_save",
            json!({"kind": "environment", "record": {"id": "staging", "schemaVersion": 1,
                   "name": "Staging (saved by the model)", "tier": "staging",
                   "platform": "kubernetes"}}),
        ),
        Turn::text("done"),
    ];
    let run = run_codex(&project, turns);
    // Codex 0.171 offers each MCP server as one namespace tool (`mcp__envreg`) holding
    // the server's tools by their bare names; hooks see `mcp__envreg__env_save`.
    let offered = run.offered_namespace("mcp__envreg");
    for tool in envreg_core::tools::TOOL_NAMES {
        assert!(
            offered.iter().any(|name| name == tool),
            "{tool} not offered in mcp__envreg: {offered:?}\n{}",
            run.output
        );
    }

    // The resolve answer, from the registry through envreg serve, reached the model.
    let resolved = run.tool_output("call-resolve");
    assert!(resolved.contains("checkout-api-staging"), "{resolved}");
    assert!(resolved.contains("/opt/checkout-api"), "{resolved}");

    // The production save: refused by `envreg hook --dialect codex`, with its reason;
    // the registry (approvalChannel: host) would otherwise have written it.
    let refused = run.tool_output("call-save-prod");
    assert!(
        refused.contains("env_save writes production environment prod"),
        "{refused}"
    );
    assert!(
        refused.contains("`envreg save environment FILE`"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read(&prod).unwrap(),
        prod_before,
        "prod.yaml changed"
    );

    // A staging save: the hook has no opinion, and it is written.
    let saved = run.tool_output("call-save-staging");
    assert!(!saved.contains("envreg refused"), "{saved}");
    assert!(
        std::fs::read_to_string(&staging)
            .unwrap()
            .contains("Staging (saved by the model)"),
        "staging.yaml was not written: {saved}\n{}",
        run.output
    );
}
