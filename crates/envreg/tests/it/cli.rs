//! Every subcommand on (a copy of) the example registry, human and JSON output as insta
//! snapshots, plus registry discovery, exit codes and the `--json` error shape.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Sandbox, json_of, transcript};
use serde_json::Value;

/// Run `envreg --registry <copy> ARGS`, assert the exit code, snapshot the transcript.
fn human(sandbox: &Sandbox, name: &str, args: &[&str], code: i32) -> String {
    let output = sandbox.envreg().args(args).output().unwrap();
    let text = transcript(sandbox, &output);
    assert_eq!(output.status.code(), Some(code), "{text}");
    insta::assert_snapshot!(name, text);
    text
}

/// Same with `--json`: snapshot the parsed value and return it.
fn json(sandbox: &Sandbox, name: &str, args: &[&str], code: i32) -> Value {
    let output = sandbox.envreg().arg("--json").args(args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        transcript(sandbox, &output)
    );
    let value = json_of(sandbox, &output);
    insta::assert_json_snapshot!(name, value);
    value
}

#[test]
fn example_registry_validates_clean() {
    let sandbox = Sandbox::with_example();
    // Unconfigured credentials are warnings (the truth on a fresh machine), not errors.
    let value = json(&sandbox, "validate_json", &["validate"], 0);
    assert_eq!(value["ok"], true);
    for d in value["diagnostics"].as_array().unwrap() {
        assert!(
            d["severity"] == "info" || d["code"] == "CREDENTIAL_MISSING",
            "unexpected diagnostic {d:#}"
        );
    }
    assert_eq!(value["counts"]["environment"], 3);
    assert_eq!(value["counts"]["service"], 4);
    human(&sandbox, "validate_human", &["validate"], 0);
    // With its credentials configured, not a single warning.
    let output = sandbox
        .configured()
        .args(["--json", "validate"])
        .output()
        .unwrap();
    let value = json_of(&sandbox, &output);
    let warnings: Vec<_> = value["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] != "info")
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
    let output = sandbox.configured().arg("validate").output().unwrap();
    insta::assert_snapshot!("validate_clean_human", transcript(&sandbox, &output));
}

#[test]
fn list() {
    let sandbox = Sandbox::with_example();
    let value = json(&sandbox, "list_json", &["list"], 0);
    let kinds: Vec<&str> = value["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    let mut sorted = kinds.clone();
    let order = |k: &str| {
        [
            "environment",
            "service",
            "deployment",
            "ruleProfile",
            "operationBinding",
        ]
        .iter()
        .position(|x| *x == k)
    };
    sorted.sort_by_key(|k| order(k));
    assert_eq!(kinds, sorted, "items are sorted by kind");
    human(&sandbox, "list_human", &["list"], 0);
    human(
        &sandbox,
        "list_kind_service",
        &["list", "--kind", "service"],
        0,
    );
    let prod = json(
        &sandbox,
        "list_query_prod_json",
        &["list", "--query", "prod"],
        0,
    );
    assert!(
        prod["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == "prod")
    );
}

#[test]
fn get() {
    let sandbox = Sandbox::with_example();
    let value = json(
        &sandbox,
        "get_environment_prod_json",
        &["get", "environment", "prod"],
        0,
    );
    assert_eq!(value["record"]["tier"], "production");
    let on_disk =
        std::fs::read_to_string(sandbox.registry().join("environments/prod.yaml")).unwrap();
    assert_eq!(
        value["yaml"],
        sandbox.redact(&on_disk).as_str(),
        "yaml is the on-disk text"
    );
    human(
        &sandbox,
        "get_service_human",
        &["get", "service", "checkout-api"],
        0,
    );
    human(&sandbox, "get_missing", &["get", "service", "nope"], 1);
}

#[test]
fn find() {
    let sandbox = Sandbox::with_example();
    let value = json(&sandbox, "find_checkout_json", &["find", "checkout"], 0);
    assert_eq!(
        value["hits"][0]["id"], "checkout-api",
        "exact/prefix id ranks first"
    );
    human(&sandbox, "find_web_human", &["find", "web"], 0);
    human(&sandbox, "find_too_short", &["find", "x"], 1);
}

#[test]
fn resolve() {
    let sandbox = Sandbox::with_example();
    let value = json(
        &sandbox,
        "resolve_checkout_staging_json",
        &["resolve", "checkout-api", "--env", "staging"],
        0,
    );
    assert_eq!(value["paths"]["logs"], "/data/logs/checkout-api");
    assert_eq!(value["deployment"]["id"], "checkout-api-staging");
    human(
        &sandbox,
        "resolve_checkout_staging_human",
        &["resolve", "checkout-api", "--env", "staging"],
        0,
    );
    // Deployed twice in prod: the caller must choose.
    let ambiguous = json(
        &sandbox,
        "resolve_checkout_prod_ambiguous_json",
        &["resolve", "checkout-api", "--env", "prod"],
        1,
    );
    assert_eq!(ambiguous["error"]["code"], "DEPLOYMENT_AMBIGUOUS");
    human(
        &sandbox,
        "resolve_checkout_prod_ambiguous_human",
        &["resolve", "checkout-api", "--env", "prod"],
        1,
    );
    human(
        &sandbox,
        "resolve_checkout_prod_green_human",
        &[
            "resolve",
            "checkout-api",
            "--env",
            "prod",
            "--deployment",
            "checkout-api-prod-green",
        ],
        0,
    );
    // No --env: the config default (staging) applies.
    let defaulted = json(
        &sandbox,
        "resolve_default_env_json",
        &["resolve", "storefront"],
        0,
    );
    assert_eq!(defaulted["environment"]["id"], "staging");
}

#[test]
fn resolve_operation_at_every_match_level() {
    let sandbox = Sandbox::with_example();
    let cases: [(&str, &[&str], &str, &str); 5] = [
        (
            "op_deployment",
            &["restart", "--deployment", "checkout-api-prod-blue"],
            "deployment",
            "restart-checkout-api-prod-blue",
        ),
        (
            "op_environment_service",
            &["redeploy", "--env", "staging", "--service", "checkout-api"],
            "environment-service",
            "redeploy-checkout-api-staging",
        ),
        (
            "op_service",
            &["rollback", "--env", "prod", "--service", "storefront"],
            "service",
            "rollback-storefront",
        ),
        (
            "op_environment",
            &["collect-logs", "--env", "dev", "--service", "checkout-api"],
            "environment",
            "collect-logs-dev",
        ),
        (
            "op_global",
            &[
                "health-check",
                "--env",
                "prod",
                "--service",
                "orders-worker",
            ],
            "global",
            "health-check",
        ),
    ];
    for (name, args, level, binding) in cases {
        let mut full = vec!["resolve-operation"];
        full.extend_from_slice(args);
        let value = json(&sandbox, &format!("{name}_json"), &full, 0);
        assert_eq!(value["matchLevel"], level, "{name}");
        assert_eq!(value["matchedBindingId"], binding, "{name}");
        assert_eq!(
            value["skill"]["available"], true,
            "{name}: skill found in skills/"
        );
        human(&sandbox, &format!("{name}_human"), &full, 0);
    }
}

#[test]
fn resolve_operation_failures() {
    let sandbox = Sandbox::with_example();
    let denied = json(
        &sandbox,
        "op_production_denied_json",
        &[
            "resolve-operation",
            "deploy",
            "--env",
            "prod",
            "--service",
            "orders-worker",
        ],
        1,
    );
    assert_eq!(denied["error"]["code"], "POLICY_DENIED");
    human(
        &sandbox,
        "op_production_denied_human",
        &[
            "resolve-operation",
            "deploy",
            "--env",
            "prod",
            "--service",
            "orders-worker",
        ],
        1,
    );
    let allowed = json(
        &sandbox,
        "op_deploy_staging_json",
        &[
            "resolve-operation",
            "deploy",
            "--env",
            "staging",
            "--service",
            "orders-worker",
        ],
        0,
    );
    assert_eq!(allowed["matchedBindingId"], "deploy-helm");
    let unknown = json(
        &sandbox,
        "op_unknown_json",
        &[
            "resolve-operation",
            "teleport",
            "--env",
            "dev",
            "--service",
            "storefront",
        ],
        1,
    );
    assert_eq!(unknown["error"]["code"], "OPERATION_UNKNOWN");
    let unbound = json(
        &sandbox,
        "op_unbound_json",
        &[
            "resolve-operation",
            "collect-logs",
            "--env",
            "prod",
            "--service",
            "storefront",
        ],
        1,
    );
    assert_eq!(unbound["error"]["code"], "BINDING_NOT_FOUND");
}

#[test]
fn context_is_per_session_and_persists() {
    let sandbox = Sandbox::with_example();
    let fresh = json(&sandbox, "context_fresh_json", &["context"], 0);
    assert_eq!(fresh["sessionId"], "cli", "documented default session");
    assert_eq!(fresh["defaultEnvironmentId"], Value::Null);
    human(
        &sandbox,
        "context_set_human",
        &["context", "--set", "dev"],
        0,
    );
    let after = json(&sandbox, "context_after_set_json", &["context"], 0);
    assert_eq!(after["defaultEnvironmentId"], "dev");
    // The session default now decides resolve's environment.
    let resolved = json(
        &sandbox,
        "resolve_session_env_json",
        &["resolve", "storefront"],
        0,
    );
    assert_eq!(resolved["environment"]["id"], "dev");
    // Another session does not see it, whether named by flag or by variable.
    let other = sandbox
        .envreg()
        .args(["--json", "context", "--session", "agent-7"])
        .output()
        .unwrap();
    assert_eq!(
        json_of(&sandbox, &other)["defaultEnvironmentId"],
        Value::Null
    );
    let by_env = sandbox
        .envreg()
        .env("ENVREG_SESSION_ID", "agent-7")
        .args(["--json", "context", "--set", "prod"])
        .output()
        .unwrap();
    assert_eq!(json_of(&sandbox, &by_env)["sessionId"], "agent-7");
    let still = json(&sandbox, "context_still_dev_json", &["context"], 0);
    assert_eq!(still["defaultEnvironmentId"], "dev");
    human(&sandbox, "context_clear_human", &["context", "--clear"], 0);
    human(
        &sandbox,
        "context_set_unknown",
        &["context", "--set", "moon"],
        1,
    );
}

const NEW_SERVICE: &str = "\
id: billing-api
schemaVersion: 1
name: Billing API
category: backend
ruleProfileRefs: [java-common]
variables: { appName: billing-api }
futureField: kept as is
";

#[test]
fn save_dry_run_then_create_then_update() {
    let sandbox = Sandbox::with_example();
    let file = sandbox.tmp.path().join("billing-api.yaml");
    std::fs::write(&file, NEW_SERVICE).unwrap();
    let file = file.to_str().unwrap();
    let dry = json(
        &sandbox,
        "save_dry_run_json",
        &["save", "service", file, "--dry-run"],
        0,
    );
    assert_eq!(dry["dryRun"], true);
    assert!(
        !sandbox
            .registry()
            .join("services/billing-api.yaml")
            .exists()
    );
    let created = json(&sandbox, "save_created_json", &["save", "service", file], 0);
    assert_eq!(created["created"], true);
    let saved =
        std::fs::read_to_string(sandbox.registry().join("services/billing-api.yaml")).unwrap();
    assert!(
        saved.contains("futureField"),
        "unknown fields survive a save:\n{saved}"
    );
    human(
        &sandbox,
        "save_updated_human",
        &["save", "service", file],
        0,
    );
    let got = json_of(
        &sandbox,
        &sandbox
            .envreg()
            .args(["--json", "get", "service", "billing-api"])
            .output()
            .unwrap(),
    );
    assert_eq!(got["record"]["futureField"], "kept as is");
}

#[test]
fn save_from_stdin() {
    let sandbox = Sandbox::with_example();
    let output = sandbox
        .envreg()
        .args(["--json", "save", "service", "-"])
        .write_stdin(NEW_SERVICE)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        transcript(&sandbox, &output)
    );
    assert_eq!(json_of(&sandbox, &output)["id"], "billing-api");
}

#[test]
fn production_save_needs_approval() {
    let sandbox = Sandbox::with_example();
    let prod = std::fs::read_to_string(sandbox.registry().join("environments/prod.yaml")).unwrap();
    let file = sandbox.tmp.path().join("prod.yaml");
    std::fs::write(&file, prod.replace("Production (EU)", "Production EU")).unwrap();
    let file = file.to_str().unwrap();
    // No terminal (setsid: no controlling tty), no --yes: denied, with a hint.
    let output = std::process::Command::new("setsid")
        .arg(assert_cmd::cargo::cargo_bin("envreg"))
        .args([
            "--registry",
            sandbox.registry().to_str().unwrap(),
            "save",
            "environment",
            file,
        ])
        .env("NO_COLOR", "1")
        .env("HOME", sandbox.home())
        .output()
        .unwrap();
    let text = transcript(&sandbox, &output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("POLICY_DENIED"), "{text}");
    assert!(text.contains("--yes"), "{text}");
    // Issue 19, finding 8: the person reads words for a person, not the model's.
    assert!(!text.contains("elicitation"), "{text}");
    assert!(!text.contains("the user"), "{text}");
    insta::assert_snapshot!("save_production_denied", text);
    let unchanged =
        std::fs::read_to_string(sandbox.registry().join("environments/prod.yaml")).unwrap();
    assert_eq!(unchanged, prod, "a denied save writes nothing");
    // --yes approves.
    let value = json(
        &sandbox,
        "save_production_yes_json",
        &["save", "environment", file, "--yes"],
        0,
    );
    assert_eq!(value["created"], false);
}

/// `envreg ARGS` in a new session (`setsid`): no controlling terminal to ask on.
fn without_terminal(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    std::process::Command::new("setsid")
        .arg(assert_cmd::cargo::cargo_bin("envreg"))
        .arg("--registry")
        .arg(sandbox.registry())
        .args(args)
        .env("NO_COLOR", "1")
        .env("HOME", sandbox.home())
        .env_remove("ENVREG_SESSION_ID")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// Contract §3.1: a dry run validates and reports without writing, so it asks nobody,
/// even for a production deployment and with no terminal to ask on.
#[test]
fn a_dry_run_never_asks_for_approval() {
    let sandbox = Sandbox::with_example();
    let path = sandbox.registry().join("deployments/storefront-prod.yaml");
    let before = std::fs::read_to_string(&path).unwrap();
    let file = sandbox.tmp.path().join("rec.yaml");
    std::fs::write(
        &file,
        before.replace("name:", "description: renamed\nname:"),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let output = without_terminal(
        &sandbox,
        &["--json", "save", "deployment", file, "--dry-run"],
    );
    let text = transcript(&sandbox, &output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let value = json_of(&sandbox, &output);
    assert_eq!(value["dryRun"], true, "{text}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert!(!sandbox.registry().join(".backups").exists(), "{text}");
    // The same save for real still needs approval.
    let output = without_terminal(&sandbox, &["--json", "save", "deployment", file]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json_of(&sandbox, &output)["error"]["code"], "POLICY_DENIED");
}

/// `approvalChannel: host` lets an MCP host gate `envreg serve`; the CLI has no host in
/// front of it, so it still asks (here: no terminal, so denied) or takes `--yes`.
#[test]
fn the_host_approval_channel_does_not_turn_off_cli_approval() {
    let sandbox = Sandbox::with_example();
    let config = sandbox.registry().join("envreg.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("approvalChannel: elicitation", "approvalChannel: host"),
    )
    .unwrap();
    let binding = sandbox
        .registry()
        .join("operation-bindings/rollback-storefront.yaml");
    let args = [
        "delete",
        "operationBinding",
        "rollback-storefront",
        "--confirm",
    ];
    let output = without_terminal(&sandbox, &args);
    let text = transcript(&sandbox, &output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("POLICY_DENIED"), "{text}");
    assert!(text.contains("--yes"), "{text}");
    assert!(binding.exists(), "denied: nothing deleted");
    let output = without_terminal(&sandbox, &[&args[..], &["--yes"]].concat());
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        transcript(&sandbox, &output)
    );
    assert!(!binding.exists());
}

#[test]
fn delete_reports_blockers_then_refuses_then_deletes() {
    let sandbox = Sandbox::with_example();
    let check = json(
        &sandbox,
        "delete_check_json",
        &["delete", "ruleProfile", "java-common"],
        0,
    );
    assert_eq!(check["deleted"], false);
    assert!(!check["blockers"].as_array().unwrap().is_empty());
    human(
        &sandbox,
        "delete_check_human",
        &["delete", "ruleProfile", "java-common"],
        0,
    );
    let in_use = json(
        &sandbox,
        "delete_in_use_json",
        &["delete", "ruleProfile", "java-common", "--confirm", "--yes"],
        1,
    );
    assert_eq!(in_use["error"]["code"], "RECORD_IN_USE");
    assert!(
        sandbox
            .registry()
            .join("rule-profiles/java-common.yaml")
            .exists()
    );
    human(
        &sandbox,
        "delete_binding_human",
        &[
            "delete",
            "operationBinding",
            "collect-logs-dev",
            "--confirm",
            "--yes",
        ],
        0,
    );
    assert!(
        !sandbox
            .registry()
            .join("operation-bindings/collect-logs-dev.yaml")
            .exists()
    );
    let backups = sandbox.registry().join(".backups/operation-bindings");
    assert_eq!(
        std::fs::read_dir(backups).unwrap().count(),
        1,
        "backup kept"
    );
}

#[test]
fn schema_prints_json_schema_and_the_examples_use_it() {
    let sandbox = Sandbox::empty();
    for kind in [
        "environment",
        "service",
        "deployment",
        "ruleProfile",
        "operationBinding",
        "config",
    ] {
        let output = sandbox.bare().args(["schema", kind]).output().unwrap();
        assert!(output.status.success());
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(printed["type"], "object", "{kind}");
        // The example registry's .schemas/ are exactly what the command prints.
        let committed = std::fs::read_to_string(
            common::example_registry().join(format!(".schemas/{kind}.json")),
        )
        .unwrap();
        let committed: Value = serde_json::from_str(&committed).unwrap();
        assert_eq!(
            committed, printed,
            "examples/registry/.schemas/{kind}.json is stale: regenerate with `envreg schema {kind}`"
        );
    }
    let bad = sandbox.bare().args(["schema", "planet"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn every_example_file_points_at_its_schema() {
    let root = common::example_registry();
    for (dir, kind) in [
        ("environments", "environment"),
        ("services", "service"),
        ("deployments", "deployment"),
        ("rule-profiles", "ruleProfile"),
        ("operation-bindings", "operationBinding"),
    ] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let first = text.lines().next().unwrap();
            assert_eq!(
                first,
                format!("# yaml-language-server: $schema=../.schemas/{kind}.json")
            );
        }
    }
}

#[test]
fn init_scaffolds_a_working_registry() {
    let sandbox = Sandbox::empty();
    let dir = sandbox.tmp.path().join("new-reg");
    let output = sandbox.bare().arg("init").arg(&dir).output().unwrap();
    let text = transcript(&sandbox, &output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    insta::assert_snapshot!("init_human", text);
    let validate = sandbox
        .bare()
        .current_dir(dir.join("services"))
        .args(["--json", "validate"])
        .output()
        .unwrap();
    let value = json_of(&sandbox, &validate);
    assert_eq!(value["ok"], true, "{value:#}");
    let resolved = sandbox
        .bare()
        .current_dir(&dir)
        .args([
            "--json",
            "resolve-operation",
            "health-check",
            "--service",
            "hello-api",
        ])
        .output()
        .unwrap();
    let value = json_of(&sandbox, &resolved);
    assert_eq!(
        value["parameters"]["url"], "http://127.0.0.1:8080/health",
        "{value:#}"
    );
    // Never over an existing registry.
    let again = sandbox.bare().arg("init").arg(&dir).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
}

/// `init` writes atomically: a process stopped mid-write (here by the file-size limit,
/// `ulimit -f`, whose SIGXFSZ kills it at the first file over 1 KiB) leaves every file
/// under its final name whole — exactly what a full `init` writes — never torn.
#[test]
fn init_never_leaves_a_torn_file() {
    let sandbox = Sandbox::empty();
    let full = sandbox.tmp.path().join("full");
    let output = sandbox.bare().arg("init").arg(&full).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let cut = sandbox.tmp.path().join("cut");
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg("ulimit -c 0; ulimit -f 1; exec \"$0\" init \"$1\"")
        .arg(assert_cmd::cargo::cargo_bin("envreg"))
        .arg(&cut)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!output.status.success(), "the size limit must stop init");
    let mut whole = 0;
    let mut stack = vec![cut.clone()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".tmp-") {
                continue; // a hidden temp file: never loaded, never a record
            }
            let rel = path.strip_prefix(&cut).unwrap();
            assert_eq!(
                std::fs::read(&path).unwrap(),
                std::fs::read(full.join(rel)).unwrap(),
                "{} is torn",
                rel.display()
            );
            whole += 1;
        }
    }
    assert!(whole > 0, "init wrote some files before the limit");
}

#[test]
fn registry_is_found_from_a_subfolder_or_the_environment() {
    let sandbox = Sandbox::with_example();
    let from_subdir = sandbox
        .bare()
        .current_dir(sandbox.registry().join("services"))
        .args(["--json", "list", "--kind", "environment"])
        .output()
        .unwrap();
    assert_eq!(
        json_of(&sandbox, &from_subdir)["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let from_env = sandbox
        .bare()
        .env("ENVREG_REGISTRY", sandbox.registry())
        .args(["--json", "list", "--kind", "environment"])
        .output()
        .unwrap();
    assert_eq!(
        json_of(&sandbox, &from_env)["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn no_registry_says_how_to_make_one() {
    let sandbox = Sandbox::empty();
    let output = sandbox.bare().arg("list").output().unwrap();
    let text = transcript(&sandbox, &output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    insta::assert_snapshot!("no_registry", text);
    let json = sandbox.bare().args(["--json", "list"]).output().unwrap();
    let value = json_of(&sandbox, &json);
    assert_eq!(value["error"]["code"], "INVALID_ARGUMENT");
    assert!(json.stderr.is_empty() || !String::from_utf8_lossy(&json.stderr).contains('{'));
}

#[test]
fn usage_errors_exit_2() {
    let sandbox = Sandbox::with_example();
    for args in [
        vec![],
        vec!["get", "planet", "x"],
        vec!["list", "--kind", "services"],
        vec!["resolve"],
        vec!["context", "--set", "dev", "--clear"],
        vec!["frobnicate"],
    ] {
        let output = sandbox.envreg().args(&args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            transcript(&sandbox, &output)
        );
        assert!(
            output.stdout.is_empty(),
            "{args:?}: usage errors go to stderr"
        );
    }
}

/// Flag values clap cannot check are still usage errors: `INVALID_ARGUMENT`, exit 2,
/// never `INTERNAL_ERROR` (a server that refuses its configuration has not failed).
#[test]
fn bad_serve_and_session_flags_are_usage_errors() {
    let sandbox = Sandbox::with_example();
    let cases: [(&[&str], Option<&str>, &str); 4] = [
        (
            &["serve", "--http", "0.0.0.0:0"],
            None,
            "refusing to listen",
        ),
        (
            &["serve", "--http", "0.0.0.0:0", "--allow-remote"],
            None,
            "needs a bearer token",
        ),
        (&["serve"], Some("bad id!"), "ENVREG_SESSION_ID"),
        (&["context"], Some("../up"), "ENVREG_SESSION_ID"),
    ];
    for (args, session, says) in cases {
        for json_mode in [false, true] {
            let mut cmd = sandbox.envreg();
            if json_mode {
                cmd.arg("--json");
            }
            cmd.args(args)
                .env_remove("ENVREG_HTTP_TOKEN")
                .write_stdin("")
                .timeout(std::time::Duration::from_secs(30));
            if let Some(id) = session {
                cmd.env("ENVREG_SESSION_ID", id);
            }
            let output = cmd.output().unwrap();
            let text = transcript(&sandbox, &output);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
            assert!(text.contains(says), "{args:?}: {text}");
            assert!(!text.contains("INTERNAL_ERROR"), "{args:?}: {text}");
            if json_mode {
                let value = json_of(&sandbox, &output);
                assert_eq!(value["error"]["code"], "INVALID_ARGUMENT", "{text}");
            } else {
                assert!(text.contains("error[INVALID_ARGUMENT]:"), "{text}");
            }
        }
    }
}

/// `INTERNAL_ERROR` is reachable from the CLI through a real failure, not only through
/// invariant checks: a server that cannot bind its (valid, loopback) address.
#[test]
fn a_server_that_cannot_start_is_internal_error() {
    let sandbox = Sandbox::with_example();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let output = sandbox
        .envreg()
        .args(["--json", "serve", "--http", &addr])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    let text = transcript(&sandbox, &output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let value = json_of(&sandbox, &output);
    assert_eq!(value["error"]["code"], "INTERNAL_ERROR", "{text}");
    assert!(
        value["error"]["message"].as_str().unwrap().contains(&addr),
        "{text}"
    );
    drop(taken);
}

#[test]
fn json_errors_have_code_message_details() {
    let sandbox = Sandbox::with_example();
    let output = sandbox
        .envreg()
        .args(["--json", "get", "service", "nope"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let value = json_of(&sandbox, &output);
    let error = value["error"].as_object().unwrap();
    let keys: Vec<&str> = error.keys().map(String::as_str).collect();
    assert_eq!(keys, ["code", "message", "details"]);
    assert_eq!(error["code"], "SERVICE_NOT_FOUND");
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The approver asks on the controlling terminal. `script` gives the process a real
/// pseudo-terminal and types the answer into it.
#[test]
fn approval_is_asked_on_the_terminal() {
    let sandbox = Sandbox::with_example();
    let prod_path = sandbox.registry().join("environments/prod.yaml");
    let prod = std::fs::read_to_string(&prod_path).unwrap();
    let file = sandbox.tmp.path().join("prod.yaml");
    std::fs::write(&file, prod.replace("Production (EU)", "Production EU")).unwrap();
    let command_line = format!(
        "{} --registry {} save environment {}",
        assert_cmd::cargo::cargo_bin("envreg").display(),
        sandbox.registry().display(),
        file.display()
    );
    let answer = |typed: &str| {
        let output = assert_cmd::Command::new("script")
            .args(["-qec", &command_line, "/dev/null"])
            .env("NO_COLOR", "1")
            .env("HOME", sandbox.home())
            .write_stdin(typed)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (code, text) = answer("n\n");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("Approve env_save once? [y/N]"), "{text}");
    assert!(text.contains("POLICY_DENIED"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&prod_path).unwrap(),
        prod,
        "rejected: nothing written"
    );
    let (code, text) = answer("\n");
    assert_eq!(code, Some(1), "an empty answer is no: {text}");
    let (code, text) = answer("y\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Saved environment prod"), "{text}");
    assert!(
        std::fs::read_to_string(&prod_path)
            .unwrap()
            .contains("Production EU")
    );
}

/// The hidden `synth` subcommand the benchmark script uses: a registry that validates
/// and whose sample ids resolve.
#[test]
fn synth_writes_a_valid_registry_with_a_resolvable_sample() {
    let sandbox = Sandbox::empty();
    let dir = sandbox.tmp.path().join("synth");
    let output = sandbox
        .bare()
        .arg("--json")
        .arg("synth")
        .arg(&dir)
        .args(["--divisor", "100"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        transcript(&sandbox, &output)
    );
    let written = json_of(&sandbox, &output);
    let sample = &written["sample"];
    let run = |args: &[&str]| {
        let output = sandbox
            .bare()
            .arg("--registry")
            .arg(&dir)
            .arg("--json")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            transcript(&sandbox, &output)
        );
        json_of(&sandbox, &output)
    };
    let validated = run(&["validate"]);
    assert_eq!(validated["ok"], true);
    let total: u64 = validated["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(Some(total), written["records"].as_u64());
    let env = sample["environmentId"].as_str().unwrap();
    let service = sample["serviceId"].as_str().unwrap();
    let deployment = sample["deploymentId"].as_str().unwrap();
    let resolved = run(&["resolve", service, "--env", env, "--deployment", deployment]);
    assert_eq!(resolved["deployment"]["id"], deployment);
    let operation = sample["operation"].as_str().unwrap();
    let op = run(&[
        "resolve-operation",
        operation,
        "--env",
        env,
        "--service",
        service,
        "--deployment",
        deployment,
    ]);
    assert_eq!(op["operation"], operation);
}

/// Colour only on a terminal, and never with NO_COLOR.
#[test]
fn colour_only_on_a_terminal_without_no_color() {
    let sandbox = Sandbox::with_example();
    const ESC: char = '\u{1b}';
    let piped = sandbox
        .envreg()
        .env_remove("NO_COLOR")
        .arg("validate")
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&piped.stdout).contains(ESC),
        "piped output is plain"
    );
    let command_line = format!(
        "{} --registry {} list --kind environment",
        assert_cmd::cargo::cargo_bin("envreg").display(),
        sandbox.registry().display()
    );
    let on_tty = |no_color: Option<&str>| {
        let mut cmd = assert_cmd::Command::new("script");
        cmd.args(["-qec", &command_line, "/dev/null"])
            .env("HOME", sandbox.home())
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        String::from_utf8_lossy(&cmd.write_stdin("").output().unwrap().stdout).into_owned()
    };
    assert!(on_tty(None).contains(ESC), "a terminal gets colour");
    assert!(!on_tty(Some("1")).contains(ESC), "NO_COLOR turns it off");
}

/// A FIFO among the records is reported, never opened: `validate`'s text output quotes
/// files, and opening a FIFO blocks until a writer comes.
#[test]
fn validate_reports_a_fifo_without_opening_it() {
    let sandbox = Sandbox::with_example();
    let fifo = sandbox.registry().join("services/fifo.yaml");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) is needed for this test");
    assert!(status.success());
    let output = sandbox
        .envreg()
        .arg("validate")
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let text = transcript(&sandbox, &output);
    // The report, and exit 3: the registry has an error (docs/envreg-cli.md).
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(text.contains("error[FILE_UNREADABLE]"), "{text}");
    assert!(text.contains("services/fifo.yaml"), "{text}");
}

/// A reader that goes away (`envreg list | head -0`) ends the command quietly with
/// success, never with a panic: the read end is closed before `envreg` writes.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let sandbox = Sandbox::with_example();
    for args in [
        &["--json", "list"][..],
        &["schema", "deployment"][..],
        &["list"][..],
    ] {
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("envreg"));
        command
            .arg("--registry")
            .arg(sandbox.registry())
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
    }
}
