//! `envreg hook`, the real binary, on PreToolUse envelopes as Claude Code and Codex
//! write them (Claude Code's shape: `session_id`, `transcript_path`, `cwd`,
//! `permission_mode`, `hook_event_name`, `tool_name`, `tool_input`; Codex adds
//! `turn_id` and `model`). Every answer the host would read is an insta snapshot;
//! no opinion is asserted as exit 0 with nothing on stdout.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::Sandbox;
use serde_json::{Value, json};

fn production_env() -> Value {
    json!({"id": "prod", "schemaVersion": 1, "name": "Production (EU)",
           "tier": "production", "platform": "kubernetes"})
}

fn staging_env() -> Value {
    json!({"id": "staging", "schemaVersion": 1, "name": "Staging",
           "tier": "staging", "platform": "kubernetes"})
}

fn envelope(sandbox: &Sandbox, dialect: &str, tool: &str, input: Value) -> Value {
    let mut event = json!({
        "session_id": "5f0c6a0e-hook-test",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": sandbox.registry(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
    });
    if dialect == "codex" {
        event["turn_id"] = json!("turn-1");
        event["model"] = json!("gpt-5-codex");
    }
    event
}

struct Answer {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?} / {}", self.stdout, self.stderr))
    }

    fn assert_no_opinion(&self, what: &str) {
        assert_eq!(self.code, 0, "{what}: {}", self.stderr);
        assert_eq!(self.stdout, "", "{what}: expected no opinion");
    }

    fn decision(&self) -> (String, String) {
        assert_eq!(self.code, 0, "{}", self.stderr);
        let value = self.json();
        let out = &value["hookSpecificOutput"];
        assert_eq!(out["hookEventName"], "PreToolUse");
        (
            out["permissionDecision"].as_str().unwrap().to_owned(),
            out["permissionDecisionReason"].as_str().unwrap().to_owned(),
        )
    }
}

/// `envreg hook [--dialect D] EXTRA…` with `stdin`, run from a folder that holds no
/// registry, with no server of the test process recorded (so only a flag names one).
fn hook(sandbox: &Sandbox, dialect: &str, extra: &[&str], stdin: &[u8]) -> Answer {
    let output = sandbox
        .bare()
        .current_dir(sandbox.home())
        .args(["hook", "--dialect", dialect])
        .args(extra)
        .write_stdin(stdin.to_vec())
        .output()
        .unwrap();
    Answer {
        code: output.status.code().unwrap_or(-1),
        stdout: sandbox.redact(&String::from_utf8_lossy(&output.stdout)),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The hook on one call, with the sandbox's registry named (as a host whose server
/// recorded nothing would configure it).
fn call(sandbox: &Sandbox, dialect: &str, tool: &str, input: Value) -> Answer {
    let event = envelope(sandbox, dialect, tool, input);
    named(sandbox, dialect, event.to_string().as_bytes())
}

fn named(sandbox: &Sandbox, dialect: &str, stdin: &[u8]) -> Answer {
    let registry = sandbox.registry().display().to_string();
    hook(sandbox, dialect, &["--registry", &registry], stdin)
}

#[test]
fn a_production_save_is_asked_in_claude_code_and_refused_in_codex() {
    let sandbox = Sandbox::with_example();
    let input = json!({"kind": "environment", "record": production_env()});
    let asked = call(
        &sandbox,
        "claude-code",
        "mcp__envreg__env_save",
        input.clone(),
    );
    assert_eq!(asked.decision().0, "ask");
    insta::assert_json_snapshot!("claude_code_production_save", asked.json());
    let refused = call(&sandbox, "codex", "mcp__envreg__env_save", input);
    assert_eq!(refused.decision().0, "deny");
    insta::assert_json_snapshot!("codex_production_save", refused.json());
}

#[test]
fn a_deployment_in_production_is_asked_and_one_moved_out_of_it_too() {
    let sandbox = Sandbox::with_example();
    let deployment = |env: &str| {
        json!({"kind": "deployment", "record": {
            "id": "checkout-api-prod-blue", "schemaVersion": 1, "name": "Checkout API (prod, blue)",
            "serviceRef": "checkout-api", "environmentRef": env}})
    };
    let asked = call(&sandbox, "claude-code", "env_save", deployment("prod"));
    insta::assert_json_snapshot!("claude_code_production_deployment_save", asked.json());
    // Production before the save counts as much as after it.
    let (decision, reason) =
        call(&sandbox, "claude-code", "env_save", deployment("staging")).decision();
    assert_eq!(decision, "ask");
    assert!(
        reason.contains("production deployment checkout-api-prod-blue"),
        "{reason}"
    );
}

#[test]
fn a_confirmed_delete_is_asked_and_refused_with_the_cli_way_forward() {
    let sandbox = Sandbox::with_example();
    let input = json!({"kind": "service", "id": "search-indexer", "confirm": true});
    let asked = call(
        &sandbox,
        "claude-code",
        "mcp__plugin_envreg-facet_envreg__env_delete",
        input.clone(),
    );
    insta::assert_json_snapshot!("claude_code_confirmed_delete", asked.json());
    let refused = call(&sandbox, "codex", "mcp__envreg__env_delete", input);
    insta::assert_json_snapshot!("codex_confirmed_delete", refused.json());
    assert!(
        refused
            .decision()
            .1
            .contains("`envreg delete service search-indexer --confirm`")
    );
}

#[test]
fn calls_the_table_does_not_gate_get_no_opinion() {
    let sandbox = Sandbox::with_example();
    for dialect in ["claude-code", "codex"] {
        for (tool, input) in [
            (
                "mcp__envreg__env_save",
                json!({"kind": "environment", "record": staging_env()}),
            ),
            (
                "mcp__envreg__env_save",
                json!({"kind": "environment", "record": production_env(), "dryRun": true}),
            ),
            (
                "mcp__envreg__env_save",
                json!({"kind": "service", "record": {"id": "whatever"}}),
            ),
            (
                "mcp__envreg__env_delete",
                json!({"kind": "service", "id": "search-indexer", "confirm": false}),
            ),
            (
                "mcp__envreg__env_resolve",
                json!({"serviceId": "checkout-api", "environmentId": "prod"}),
            ),
            ("mcp__facet__facet", json!({"action": "status"})),
            ("Read", json!({"file_path": "/etc/hosts"})),
        ] {
            call(&sandbox, dialect, tool, input.clone())
                .assert_no_opinion(&format!("{dialect} {tool} {input}"));
        }
    }
    // Another event than PreToolUse (a hook registered too widely).
    let mut event = envelope(
        &sandbox,
        "claude-code",
        "mcp__envreg__env_save",
        json!({"kind": "environment", "record": production_env()}),
    );
    event["hook_event_name"] = json!("PostToolUse");
    named(&sandbox, "claude-code", event.to_string().as_bytes()).assert_no_opinion("PostToolUse");
}

#[test]
fn a_policy_that_turns_approval_off_is_honoured() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "envreg.yaml",
        "writePolicy: { requireApprovalForDelete: false, requireApprovalForProductionSave: false, approvalChannel: host }\n",
    );
    call(
        &sandbox,
        "claude-code",
        "env_save",
        json!({"kind": "environment", "record": production_env()}),
    )
    .assert_no_opinion("production save, approval off");
    call(
        &sandbox,
        "codex",
        "env_delete",
        json!({"kind": "service", "id": "search-indexer", "confirm": true}),
    )
    .assert_no_opinion("delete, approval off");
}

#[test]
fn what_cannot_be_judged_is_asked_or_refused_never_allowed() {
    let sandbox = Sandbox::with_example();
    let save_prod = envelope(
        &sandbox,
        "claude-code",
        "mcp__envreg__env_save",
        json!({"kind": "environment", "record": production_env()}),
    );
    let mut no_tool = save_prod.clone();
    no_tool.as_object_mut().unwrap().remove("tool_name");
    let mut bad_record = save_prod.clone();
    bad_record["tool_input"]["record"] = json!({"id": "prod", "tier": "production"});
    let mut bad_flag = save_prod.clone();
    bad_flag["tool_input"]["dryRun"] = json!("no");
    let mut no_registry = save_prod.clone();
    no_registry["cwd"] = json!("/");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not_json", b"{\"tool_name\": \"env_save\", ".to_vec()),
        ("empty", Vec::new()),
        ("no_tool_name", no_tool.to_string().into_bytes()),
        ("invalid_record", bad_record.to_string().into_bytes()),
        ("bad_dry_run", bad_flag.to_string().into_bytes()),
        ("no_registry", no_registry.to_string().into_bytes()),
    ];
    for (name, stdin) in cases {
        // Every case but `no_registry` has the registry named.
        let run = |dialect| match name {
            "no_registry" => hook(&sandbox, dialect, &[], &stdin),
            _ => named(&sandbox, dialect, &stdin),
        };
        let asked = run("claude-code");
        assert_eq!(asked.decision().0, "ask", "{name}");
        insta::assert_json_snapshot!(format!("unjudged_{name}"), asked.json());
        assert_eq!(run("codex").decision().0, "deny", "{name}");
    }
    // A registry named on the command line that is not there.
    let asked = hook(
        &sandbox,
        "claude-code",
        &["--registry", "/nonexistent/registry"],
        save_prod.to_string().as_bytes(),
    );
    let (decision, reason) = asked.decision();
    assert_eq!(decision, "ask");
    assert!(
        reason.contains("/nonexistent/registry does not exist"),
        "{reason}"
    );
    // An unreadable record file in the registry: the save is not judged on a guess.
    let env_dir = sandbox.registry().join("environments");
    std::fs::remove_file(env_dir.join("prod.yaml")).unwrap();
    std::fs::create_dir(env_dir.join("prod.yaml")).unwrap();
    let (decision, _) = named(&sandbox, "codex", save_prod.to_string().as_bytes()).decision();
    assert_eq!(
        decision, "deny",
        "a record that would become production is still gated"
    );
}

#[test]
fn the_registry_is_named_never_found_from_the_event_cwd() {
    let sandbox = Sandbox::with_example();
    let mut event = envelope(
        &sandbox,
        "claude-code",
        "env_save",
        json!({"kind": "environment", "record": staging_env()}),
    );
    // The event's cwd is the registry, but nothing names it: the hook cannot tell which
    // registry its server writes to, so even a staging save is asked.
    let (decision, reason) =
        hook(&sandbox, "claude-code", &[], event.to_string().as_bytes()).decision();
    assert_eq!(decision, "ask");
    assert!(reason.contains("ENVREG_REGISTRY"), "{reason}");
    // Named by the flag or by ENVREG_REGISTRY: judged there (a staging save: no opinion).
    event["cwd"] = json!("/");
    named(&sandbox, "claude-code", event.to_string().as_bytes())
        .assert_no_opinion("staging save, flag");
    let output = sandbox
        .bare()
        .current_dir(sandbox.home())
        .env("ENVREG_REGISTRY", sandbox.registry())
        .args(["hook"])
        .write_stdin(event.to_string())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "",
        "staging save, variable"
    );
}

/// `envreg serve` over stdio as a host starts it (from the registry folder, no
/// `--registry`), initialized: by then it has recorded the registry it serves.
struct Server(std::process::Child);

impl Server {
    fn start(sandbox: &Sandbox) -> Server {
        use std::io::{BufRead as _, Write as _};
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_envreg"))
            .arg("serve")
            .current_dir(sandbox.registry())
            .env_remove("ENVREG_REGISTRY")
            .env("HOME", sandbox.home())
            .env("TMPDIR", sandbox.home())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.as_mut().unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "hook-test", "version": "0"}}})
        )
        .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("serverInfo"), "{line}");
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// Issue 19, finding 5: with the plugin's setup (no `--registry` anywhere) an agent
/// writes a decoy `envreg.yaml` with approvals off into its own folder. The hook judges
/// against the registry the server serves, so a production save is still asked.
#[test]
fn a_decoy_registry_in_the_agents_folder_does_not_switch_approvals_off() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "envreg.yaml",
        "defaults: { environmentId: staging }\nwritePolicy: { approvalChannel: host }\nskills: { dirs: [skills] }\n",
    );
    let _server = Server::start(&sandbox);
    let decoy = sandbox.tmp.path().join("agent-work");
    std::fs::create_dir_all(&decoy).unwrap();
    std::fs::write(
        decoy.join("envreg.yaml"),
        "writePolicy: { requireApprovalForDelete: false, requireApprovalForProductionSave: false, approvalChannel: host }\n",
    )
    .unwrap();
    let mut event = envelope(
        &sandbox,
        "claude-code",
        "mcp__plugin_envreg-facet_envreg__env_save",
        json!({"kind": "environment", "record": production_env()}),
    );
    event["cwd"] = json!(decoy);
    for dialect in ["claude-code", "codex"] {
        let (decision, reason) =
            hook(&sandbox, dialect, &[], event.to_string().as_bytes()).decision();
        assert_eq!(decision, if dialect == "codex" { "deny" } else { "ask" });
        assert!(reason.contains("production"), "{reason}");
    }
    // The server's record is what the hook reads: a staging save there needs nobody.
    event["tool_input"]["record"] = staging_env();
    hook(&sandbox, "claude-code", &[], event.to_string().as_bytes())
        .assert_no_opinion("staging save, registry from the server's record");
    // Naming the decoy to the hook does not help either: it disagrees with the server.
    let decoy_flag = decoy.display().to_string();
    let (decision, reason) = hook(
        &sandbox,
        "claude-code",
        &["--registry", &decoy_flag],
        event.to_string().as_bytes(),
    )
    .decision();
    assert_eq!(decision, "ask");
    assert!(reason.contains("serves"), "{reason}");
}

#[test]
fn validate_warns_that_the_host_channel_needs_the_hook() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "envreg.yaml",
        "defaults: { environmentId: staging }\nwritePolicy: { approvalChannel: host }\nskills: { dirs: [skills] }\n",
    );
    let output = sandbox
        .configured()
        .args(["--json", "validate"])
        .output()
        .unwrap();
    let value = common::json_of(&sandbox, &output);
    let warning: Vec<_> = value["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "APPROVAL_DELEGATED_TO_HOST")
        .collect();
    assert_eq!(warning.len(), 1, "{value:#}");
    insta::assert_json_snapshot!("validate_host_channel_warning", warning[0]);
    assert_eq!(value["ok"], true, "a warning, not an error");
    // Nothing to warn about when nothing needs approval.
    sandbox.write(
        "envreg.yaml",
        "defaults: { environmentId: staging }\nwritePolicy: { approvalChannel: host, requireApprovalForDelete: false, requireApprovalForProductionSave: false }\nskills: { dirs: [skills] }\n",
    );
    let output = sandbox
        .configured()
        .args(["--json", "validate"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&output.stdout).contains("APPROVAL_DELEGATED_TO_HOST"));
}
