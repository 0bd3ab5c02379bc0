//! envreg inside the real DeepSeek Harness (dsh 0.1.0-rc.8, headless), through the
//! native plugin `dsh-envreg` installed by `scripts/install-dsh-plugins.sh`, with
//! model-script's Chat Completions server scripting the model's tool calls. dsh builds
//! every request, runs every tool through its own registry, and sends the results back
//! to the "model", which is where these tests read them (issue 10 §5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dsh_live::{Dsh, DshHome, DshRun, tool_def, tool_results, turn_requests};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};

fn envreg_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_envreg"))
}

/// One dsh home with the plugin installed, shared by the tests of this binary.
fn home() -> &'static DshHome {
    static HOME: OnceLock<DshHome> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = DshHome::new(&Dsh::find());
        home.install_plugins(&["dsh-envreg"]);
        home
    })
}

/// A git project holding the example registry, with the redeploy skill moved to
/// `<project>/.dsh/skills`: the one place both envreg's catalog and dsh look.
fn project(name: &str) -> (PathBuf, PathBuf) {
    let project = home().scratch(name);
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let registry = project.join("registry");
    test_support::copy_example("registry", &registry);
    let skills = project.join(".dsh/skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::rename(
        registry.join("skills/redeploy-k8s-service"),
        skills.join("redeploy-k8s-service"),
    )
    .unwrap();
    (project, registry)
}

fn envreg_row(registry: &Path) -> Value {
    json!({"registry": registry, "binary": envreg_bin()})
}

/// Runs one task in `project` with the plugin row (plus `extra` rows).
fn run(
    server: &ScriptedServer,
    project: &Path,
    config: Value,
    extra: &[(&str, &str, Value)],
) -> DshRun {
    let mut session = home()
        .session(server)
        .cwd(project)
        .row("envreg", "dsh-envreg", config);
    for (id, name, config) in extra {
        session = session.row(id, name, config.clone());
    }
    session.run("work on checkout-api")
}

/// What the model read back for each of its tool calls, in order.
fn results(server: &ScriptedServer) -> Vec<String> {
    let turns = turn_requests(server);
    let last = turns.last().expect("dsh sent at least one request");
    tool_results(last)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

#[test]
fn the_seed_flow_resolve_then_operation_then_dsh_loads_the_skill() {
    let (project, registry) = project("seed-flow");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "c1",
            "env_resolve",
            json!({"serviceId": "checkout-api", "environmentId": "staging"}),
        ),
        Turn::tool_call(
            "c2",
            "env_resolve_operation",
            json!({"operation": "redeploy", "serviceId": "checkout-api", "environmentId": "staging"}),
        ),
        Turn::tool_call("c3", "skill", json!({"name": "redeploy-k8s-service"})),
        Turn::text("redeploy planned"),
    ]));
    let run = run(&server, &project, envreg_row(&registry), &[]);
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "redeploy planned");
    assert!(!run.survivors, "envreg dsh-bridge outlived dsh: {run:#?}");

    // The ten tools, registered with dsh's own DSL (dsh compiled them to JSON Schema).
    let first = &turn_requests(&server)[0];
    let resolve = tool_def(first, "env_resolve").expect("env_resolve offered");
    assert!(
        resolve["function"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Use when the caller needs concrete paths")
    );
    assert_eq!(
        resolve["function"]["parameters"]["required"],
        json!(["serviceId"])
    );
    for name in envreg_core::tools::TOOL_NAMES {
        assert!(tool_def(first, name).is_some(), "{name} not offered");
    }

    let results = results(&server);
    assert_eq!(results.len(), 3, "{results:#?}");
    // env_resolve: the render line, then the resolved paths.
    let (line, value) = results[0].split_once('\n').unwrap();
    assert!(
        line.starts_with("Resolved checkout-api in staging"),
        "{line}"
    );
    let value: Value = serde_json::from_str(value).unwrap();
    assert_eq!(value["environment"]["id"], "staging");
    assert!(
        value["paths"].as_object().is_some_and(|p| !p.is_empty()),
        "{value}"
    );
    // env_resolve_operation: the bound skill, found where dsh looks too.
    let (_, op) = results[1].split_once('\n').unwrap();
    let op: Value = serde_json::from_str(op).unwrap();
    assert_eq!(op["skill"]["name"], "redeploy-k8s-service");
    assert_eq!(op["skill"]["available"], true);
    assert_eq!(op["skill"]["source"], "project-dsh");
    // dsh's own skill tool loaded that SKILL.md.
    assert!(
        results[2].contains("Parameters: `cluster`, `namespace`, `workload`, `healthUrl`."),
        "{}",
        results[2]
    );
}

fn prod_record(registry: &Path) -> (PathBuf, Value) {
    let file = registry.join("environments/prod.yaml");
    let out = std::process::Command::new(envreg_bin())
        .arg("--registry")
        .arg(registry)
        .args(["--json", "get", "environment", "prod"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut record = got["record"].clone();
    record["description"] = json!("Changed through dsh.");
    (file, record)
}

#[test]
fn a_production_save_allowed_once_by_the_user_is_saved() {
    let (project, registry) = project("save-allowed");
    let (file, record) = prod_record(&registry);
    let log = project.join("approvals.jsonl");
    let answerer = test_support::repo_path("crates/envreg/tests/dsh/approval-answerer.mjs");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "save_1",
            "env_save",
            json!({"kind": "environment", "record": record}),
        ),
        Turn::text("saved"),
    ]));
    let run = run(
        &server,
        &project,
        envreg_row(&registry),
        &[(
            "answerer",
            answerer.to_str().unwrap(),
            json!({"decision": "allowed-once", "log": log}),
        )],
    );
    run.assert_ok();
    let results = results(&server);
    assert!(
        results[0].starts_with("Saved environment prod"),
        "{results:#?}"
    );
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("Changed through dsh."),
        "the file was not written"
    );
    // The question dsh's approval service put to the answerer.
    let asked: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["toolName"], "env_save");
    assert_eq!(asked[0]["callId"], "save_1");
    assert_eq!(asked[0]["agent"], true);
    assert!(
        asked[0]["reason"].as_str().unwrap().contains("prod"),
        "{asked:#?}"
    );
    assert!(!asked[0]["displayReason"].as_str().unwrap().is_empty());
}

#[test]
fn a_cancelled_call_ends_with_dsh_own_error_writes_nothing_and_the_bridge_goes_on() {
    let (project, registry) = project("save-cancelled");
    let (file, record) = prod_record(&registry);
    let before = std::fs::read(&file).unwrap();
    let log = project.join("approvals.jsonl");
    let answerer = test_support::repo_path("crates/envreg/tests/dsh/approval-answerer.mjs");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "save_3",
            "env_save",
            json!({"kind": "environment", "record": record}),
        ),
        Turn::tool_call("find_1", "env_find", json!({"query": "checkout"})),
        Turn::text("gave up"),
    ]));
    // dsh's own timeout policy aborts the call while the question is unanswered (5 s:
    // long enough for the question to be asked first on a loaded machine).
    let mut config = envreg_row(&registry);
    config["timeoutMs"] = json!(5000);
    let run = run(
        &server,
        &project,
        config,
        &[(
            "answerer",
            answerer.to_str().unwrap(),
            json!({"decision": "hang", "log": log}),
        )],
    );
    run.assert_ok();
    let results = results(&server);
    assert_eq!(
        results[0], "Error: tool call timed out after 5000ms",
        "{results:#?}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before, "the file changed");
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
    // The same bridge answers the next call.
    assert!(results[1].contains("checkout"), "{results:#?}");
}

#[test]
fn a_row_with_a_bad_timeout_is_refused_at_apply_time() {
    let (_, registry) = project("bad-timeout");
    let mut config = envreg_row(&registry);
    config["timeoutMs"] = json!("soon");
    refused(
        "bad-timeout-run",
        config,
        &["config key `timeoutMs` must be a positive number"],
    );
}

#[test]
fn a_production_save_headless_without_a_channel_is_denied_and_nothing_changes() {
    let (project, registry) = project("save-denied");
    let (file, record) = prod_record(&registry);
    let before = std::fs::read(&file).unwrap();
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "save_2",
            "env_save",
            json!({"kind": "environment", "record": record}),
        ),
        Turn::text("not saved"),
    ]));
    let run = run(&server, &project, envreg_row(&registry), &[]);
    run.assert_ok();
    let results = results(&server);
    assert!(results[0].starts_with("POLICY_DENIED: "), "{results:#?}");
    assert_eq!(std::fs::read(&file).unwrap(), before, "the file changed");
}

#[test]
fn an_unknown_id_reads_as_its_code_first() {
    let (project, registry) = project("unknown-id");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "c1",
            "env_resolve",
            json!({"serviceId": "checkout-api", "environmentId": "no-such-env"}),
        ),
        Turn::text("no such environment"),
    ]));
    let run = run(&server, &project, envreg_row(&registry), &[]);
    run.assert_ok();
    let results = results(&server);
    assert!(results[0].starts_with("ENV_NOT_FOUND: "), "{results:#?}");
    assert!(results[0].contains("no-such-env"), "{results:#?}");
}

#[test]
fn envreg_through_dsh_mcp_client_answers_one_call() {
    let (project, registry) = project("mcp-client");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "m1",
            "mcp__envreg__env_resolve",
            json!({"serviceId": "checkout-api", "environmentId": "staging"}),
        ),
        Turn::text("resolved over MCP"),
    ]));
    let run = home()
        .session(&server)
        .cwd(&project)
        .row(
            "envreg-mcp",
            "@deepseek-ai/dsh-mcp-client",
            json!({"transport": "stdio", "serverName": "envreg", "command": envreg_bin(),
                   "args": ["--registry", registry, "serve"], "failOnStartupError": true}),
        )
        .run("work on checkout-api");
    run.assert_ok();
    let results = results(&server);
    assert!(
        results[0].contains("Resolved checkout-api in staging"),
        "{results:#?}"
    );
}

/// A plugin row dsh cannot apply: dsh exits non-zero before asking the model anything,
/// and its error says what to fix.
fn refused(name: &str, config: Value, needles: &[&str]) {
    let (project, _) = project(name);
    let server = ScriptedServer::start(Script::new(vec![Turn::text("unreachable")]));
    let run = run(&server, &project, config, &[]);
    assert_ne!(run.code, Some(0), "{run:#?}");
    assert!(!run.timed_out, "{run:#?}");
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "missing {needle:?} in: {run:#?}"
        );
    }
    assert_eq!(server.turns_served(), 0, "the model was asked");
    assert!(!run.survivors, "{run:#?}");
}

#[test]
fn a_row_without_registry_is_refused_at_apply_time() {
    refused(
        "no-registry",
        json!({"binary": envreg_bin()}),
        &[
            "failed to apply loader entry envreg (dsh-envreg)",
            "config key `registry` is missing",
        ],
    );
}

#[test]
fn a_row_with_a_wrong_registry_is_refused_at_apply_time() {
    refused(
        "wrong-registry",
        json!({"registry": "/nonexistent/registry", "binary": envreg_bin()}),
        &[
            "registry folder /nonexistent/registry does not exist",
            "fix config key `registry`",
        ],
    );
}

#[test]
fn a_missing_binary_is_refused_at_apply_time() {
    refused(
        "missing-binary",
        json!({"registry": "/tmp", "binary": "/nonexistent/bin/envreg"}),
        &[
            "cannot start envreg (/nonexistent/bin/envreg): not found",
            "set config key `binary`",
        ],
    );
}

#[test]
fn a_binary_of_another_version_is_refused_at_apply_time() {
    // Not envreg: a program that answers `hello` as an older envreg would.
    let dir = home().scratch("old-envreg");
    let old = dir.join("envreg");
    std::fs::write(
        &old,
        "#!/bin/sh\nread line\necho '{\"id\":1,\"result\":{\"name\":\"envreg\",\"version\":\"0.0.9\",\"protocol\":1,\"tools\":[]}}'\ncat >/dev/null\n",
    )
    .unwrap();
    std::fs::set_permissions(&old, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    refused(
        "old-binary",
        json!({"registry": "/tmp", "binary": old}),
        &[
            "is envreg 0.0.9 (protocol 1), this plugin is 0.1.0",
            "install envreg 0.1.0",
        ],
    );
}

#[test]
fn a_binary_that_never_answers_hello_is_refused_at_apply_time() {
    // Reads the hello and says nothing: dsh must not hang at startup.
    let dir = home().scratch("silent-envreg");
    let silent = dir.join("envreg");
    std::fs::write(&silent, "#!/bin/sh\nexec cat >/dev/null\n").unwrap();
    std::fs::set_permissions(&silent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    refused(
        "silent-binary",
        json!({"registry": "/tmp", "binary": silent}),
        &[
            "did not answer hello: no answer within 10 s",
            "install envreg 0.1.0",
        ],
    );
}

#[test]
fn the_session_is_the_dsh_agents_session() {
    let (project, registry) = project("session");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call("s1", "env_set_context", json!({"environmentId": "dev"})),
        Turn::tool_call("s2", "env_resolve", json!({"serviceId": "checkout-api"})),
        Turn::text("resolved in the session's environment"),
    ]));
    let run = run(&server, &project, envreg_row(&registry), &[]);
    run.assert_ok();
    let results = results(&server);
    let (_, context) = results[0].split_once('\n').unwrap();
    let context: Value = serde_json::from_str(context).unwrap();
    assert_eq!(context["defaultEnvironmentId"], "dev");
    let session = context["sessionId"].as_str().unwrap().to_owned();
    // The default is kept under the dsh session's id, and the next call used it.
    assert!(
        registry.join(format!("sessions/{session}.json")).is_file(),
        "{session}"
    );
    assert!(
        results[1].starts_with("Resolved checkout-api in dev"),
        "{results:#?}"
    );
}
