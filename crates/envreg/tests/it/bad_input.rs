//! Issue 2 §5's bad-input list, one test each, driven through the real `envreg` binary:
//! each gets a clear error (or a diagnostic while the rest of the registry keeps
//! loading) and nothing is lost.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Sandbox, json_of, transcript};
use serde_json::Value;

fn validate_json(sandbox: &Sandbox) -> Value {
    let output = sandbox
        .envreg()
        .args(["--json", "validate"])
        .output()
        .unwrap();
    let value = json_of(sandbox, &output);
    // The report is printed either way; the status says whether the registry has errors.
    let expected = if value["ok"] == true { 0 } else { 3 };
    assert_eq!(output.status.code(), Some(expected), "{value:#}");
    value
}

/// The diagnostics about one file.
fn diagnostics_for(value: &Value, file: &str) -> Vec<Value> {
    value["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"] == file)
        .cloned()
        .collect()
}

/// The rest of the example registry still loads around a broken file.
fn assert_rest_loads(value: &Value) {
    assert_eq!(value["counts"]["environment"], 3, "{value:#}");
    assert!(
        value["counts"]["service"].as_u64().unwrap() >= 4,
        "{value:#}"
    );
}

fn run(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, Value, String) {
    let output = sandbox.envreg().arg("--json").args(args).output().unwrap();
    let text = transcript(sandbox, &output);
    (output.status.code(), json_of(sandbox, &output), text)
}

#[test]
fn malformed_yaml_names_line_and_column() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "services/broken.yaml",
        "id: broken\nschemaVersion: 1\nname: Broken\nvariables: {appName: broken\ncategory: x\n",
    );
    let value = validate_json(&sandbox);
    let found = diagnostics_for(&value, "services/broken.yaml");
    assert_eq!(found.len(), 1, "{value:#}");
    assert_eq!(found[0]["code"], "YAML_INVALID");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("line") && message.contains("column"),
        "{message}"
    );
    assert_rest_loads(&value);
    // Human view: like a compiler, with the offending line.
    let output = sandbox.configured().arg("validate").output().unwrap();
    let text = transcript(&sandbox, &output);
    insta::assert_snapshot!("malformed_yaml_validate", text);

    // The same file given to `save`: refused with the position, nothing written.
    let file = sandbox.registry().join("services/broken.yaml");
    let (code, value, text) = run(&sandbox, &["save", "service", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "RECORD_INVALID");
    assert!(
        value["error"]["message"].as_str().unwrap().contains("line"),
        "{text}"
    );
}

#[test]
fn alias_bomb_is_refused_and_the_rest_loads() {
    let sandbox = Sandbox::with_example();
    let mut bomb = String::from(
        "id: bomb\nschemaVersion: 1\nname: bomb\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for c in 'b'..='i' {
        let refs = vec![format!("*{prev}"); 9].join(",");
        bomb.push_str(&format!("{c}: &{c} [{refs}]\n"));
        prev = c;
    }
    sandbox.write("services/bomb.yaml", &bomb);
    let value = validate_json(&sandbox);
    let found = diagnostics_for(&value, "services/bomb.yaml");
    assert!(!found.is_empty(), "{value:#}");
    assert_eq!(found[0]["severity"], "error");
    assert_rest_loads(&value);
    let (code, value, text) = run(&sandbox, &["get", "service", "bomb"]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "SERVICE_NOT_FOUND");
    // Given to save, the bomb is refused as well.
    let file = sandbox.registry().join("services/bomb.yaml");
    let (code, value, text) = run(&sandbox, &["save", "service", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "RECORD_INVALID");
}

#[test]
fn file_over_max_record_bytes_is_rejected_before_parsing() {
    let sandbox = Sandbox::with_example();
    let config = std::fs::read_to_string(sandbox.registry().join("envreg.yaml")).unwrap();
    sandbox.write(
        "envreg.yaml",
        &config.replace("maxRecordBytes: 262144", "maxRecordBytes: 4096"),
    );
    // Over the cap *and* broken YAML: a parser would say YAML_INVALID; the cap comes first.
    let big = format!("id: huge\nschemaVersion: 1\nname: [{}\n", "x".repeat(5000));
    sandbox.write("services/huge.yaml", &big);
    let value = validate_json(&sandbox);
    let found = diagnostics_for(&value, "services/huge.yaml");
    assert_eq!(found.len(), 1, "{value:#}");
    assert_ne!(
        found[0]["code"], "YAML_INVALID",
        "the file was parsed: {value:#}"
    );
    assert!(
        found[0]["message"].as_str().unwrap().contains("4096"),
        "{value:#}"
    );
    assert_rest_loads(&value);
    let file = sandbox.registry().join("services/huge.yaml");
    let (code, value, text) = run(&sandbox, &["save", "service", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "RECORD_TOO_LARGE", "{text}");
}

#[test]
fn non_utf8_file_is_a_diagnostic() {
    let sandbox = Sandbox::with_example();
    let path = sandbox.registry().join("services/latin1.yaml");
    std::fs::write(&path, b"id: latin1\nschemaVersion: 1\nname: caf\xe9\n").unwrap();
    let value = validate_json(&sandbox);
    let found = diagnostics_for(&value, "services/latin1.yaml");
    assert_eq!(found.len(), 1, "{value:#}");
    assert_eq!(found[0]["severity"], "error");
    assert_rest_loads(&value);
    let (code, value, text) = run(&sandbox, &["save", "service", path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "RECORD_INVALID", "{text}");
}

#[test]
fn bad_ids_are_invalid_arguments() {
    let sandbox = Sandbox::with_example();
    let long = "a".repeat(200);
    for id in [
        "../etc/passwd",
        "..",
        "a/b",
        "/etc",
        "Checkout-API",
        long.as_str(),
        "a..b",
    ] {
        for args in [
            vec!["get", "service", id],
            vec!["delete", "service", id],
            vec!["resolve", id, "--env", "dev"],
        ] {
            let (code, value, text) = run(&sandbox, &args);
            assert_eq!(code, Some(1), "{args:?}: {text}");
            assert_eq!(
                value["error"]["code"], "INVALID_ARGUMENT",
                "{args:?}: {text}"
            );
            assert!(!text.contains("root:"), "{text}");
        }
    }
}

#[test]
fn id_must_equal_the_file_stem() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "services/foo.yaml",
        "id: bar\nschemaVersion: 1\nname: Foo\n",
    );
    let value = validate_json(&sandbox);
    let found = diagnostics_for(&value, "services/foo.yaml");
    assert!(
        found.iter().any(|d| d["code"] == "ID_MISMATCH"),
        "{value:#}"
    );
    let output = sandbox.configured().arg("validate").output().unwrap();
    insta::assert_snapshot!("id_mismatch_validate", transcript(&sandbox, &output));
}

#[test]
fn duplicate_id_via_yml_and_yaml() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "services/dup.yaml",
        "id: dup\nschemaVersion: 1\nname: Dup A\n",
    );
    sandbox.write(
        "services/dup.yml",
        "id: dup\nschemaVersion: 1\nname: Dup B\n",
    );
    let value = validate_json(&sandbox);
    let dups: Vec<&Value> = value["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "DUPLICATE_ID")
        .collect();
    assert!(!dups.is_empty(), "{value:#}");
    let message = dups[0]["message"].as_str().unwrap();
    assert!(
        message.contains("dup.yml") && message.contains("dup.yaml"),
        "{message}"
    );
    assert_eq!(value["ok"], false);
}

#[test]
fn extends_cycle() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "rule-profiles/loop-a.yaml",
        "id: loop-a\nschemaVersion: 1\nname: A\nextends: [loop-b]\n",
    );
    sandbox.write(
        "rule-profiles/loop-b.yaml",
        "id: loop-b\nschemaVersion: 1\nname: B\nextends: [loop-a]\n",
    );
    sandbox.write(
        "services/loopy.yaml",
        "id: loopy\nschemaVersion: 1\nname: Loopy\nruleProfileRefs: [loop-a]\n",
    );
    sandbox.write(
        "deployments/loopy-dev.yaml",
        "id: loopy-dev\nschemaVersion: 1\nname: loopy on dev\nenvironmentRef: dev\nserviceRef: loopy\n",
    );
    let value = validate_json(&sandbox);
    assert!(
        value["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "RULE_PROFILE_CYCLE"),
        "{value:#}"
    );
    let (code, value, text) = run(&sandbox, &["resolve", "loopy", "--env", "dev"]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "RULE_PROFILE_CYCLE", "{text}");
}

#[test]
fn template_cycle() {
    let sandbox = Sandbox::with_example();
    sandbox.write(
        "services/spin.yaml",
        "id: spin\nschemaVersion: 1\nname: Spin\nruleProfileRefs: [linux-base]\n\
         variables: { appName: \"{{alias}}\", alias: \"{{appName}}\" }\n",
    );
    sandbox.write(
        "deployments/spin-dev.yaml",
        "id: spin-dev\nschemaVersion: 1\nname: spin on dev\nenvironmentRef: dev\nserviceRef: spin\n",
    );
    let (code, value, text) = run(&sandbox, &["resolve", "spin", "--env", "dev"]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(
        value["error"]["code"], "PARAMETER_RESOLUTION_FAILED",
        "{text}"
    );
    let output = sandbox
        .envreg()
        .args(["resolve", "spin", "--env", "dev"])
        .output()
        .unwrap();
    insta::assert_snapshot!("template_cycle_human", transcript(&sandbox, &output));
}

#[test]
fn unreadable_file_is_a_diagnostic() {
    let sandbox = Sandbox::with_example();
    // A dangling symlink cannot be read by anyone, root included (file modes do not
    // stop root, so chmod 000 would prove nothing when the suite runs as root).
    std::os::unix::fs::symlink(
        sandbox.tmp.path().join("does-not-exist.yaml"),
        sandbox.registry().join("services/ghost.yaml"),
    )
    .unwrap();
    let value = validate_json(&sandbox);
    let found = diagnostics_for(&value, "services/ghost.yaml");
    assert_eq!(found.len(), 1, "{value:#}");
    assert_eq!(found[0]["severity"], "error");
    assert!(
        !found[0]["message"]
            .as_str()
            .unwrap()
            .contains(sandbox.tmp.path().to_str().unwrap())
    );
    assert_rest_loads(&value);
}

#[test]
fn unwritable_registry_is_storage_unwritable() {
    let sandbox = Sandbox::with_example();
    // The folder a new operation binding goes to is a plain file: no process, root
    // included, can create a record in it.
    let bindings = sandbox.registry().join("operation-bindings");
    std::fs::remove_dir_all(&bindings).unwrap();
    std::fs::write(&bindings, "not a folder\n").unwrap();
    let record = sandbox.tmp.path().join("b.yaml");
    std::fs::write(
        &record,
        "id: smoke\nschemaVersion: 1\nname: Smoke\noperation: health-check\nmatch: {}\n\
         skill: { name: http-health-check }\npolicy: { requiresApproval: false, allowProduction: true }\n",
    )
    .unwrap();
    let (code, value, text) = run(
        &sandbox,
        &["save", "operationBinding", record.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(value["error"]["code"], "STORAGE_UNWRITABLE", "{text}");
    assert_eq!(
        std::fs::read_to_string(&bindings).unwrap(),
        "not a folder\n"
    );
}

/// A credential's variable holds a canary secret; no command may print it.
#[test]
fn canary_secret_appears_in_no_output() {
    const CANARY: &str = "CANARY-7f3a9c-do-not-print-b2e41d";
    let sandbox = Sandbox::with_example();
    // A changed prod record to save (with --yes) and a file credential holding the canary too.
    let prod = std::fs::read_to_string(sandbox.registry().join("environments/prod.yaml")).unwrap();
    let prod_file = sandbox.tmp.path().join("prod.yaml");
    std::fs::write(&prod_file, prod.replace("Production (EU)", "Production EU")).unwrap();
    let token = sandbox.home().join(".config/acme/grafana-prod.token");
    std::fs::create_dir_all(token.parent().unwrap()).unwrap();
    std::fs::write(&token, CANARY).unwrap();
    let prod_file = prod_file.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["list", "--kind", "environment", "--query", "prod"],
        vec!["get", "environment", "prod"],
        vec!["get", "environment", "staging"],
        vec!["find", "prod"],
        vec![
            "resolve",
            "checkout-api",
            "--env",
            "prod",
            "--deployment",
            "checkout-api-prod-blue",
        ],
        vec!["resolve", "checkout-api", "--env", "staging"],
        vec!["resolve", "checkout-api", "--env", "prod"],
        vec![
            "resolve-operation",
            "restart",
            "--deployment",
            "checkout-api-prod-blue",
        ],
        vec![
            "resolve-operation",
            "deploy",
            "--env",
            "prod",
            "--service",
            "storefront",
        ],
        vec![
            "resolve-operation",
            "health-check",
            "--env",
            "prod",
            "--service",
            "storefront",
        ],
        vec!["context", "--set", "prod"],
        vec!["context"],
        vec!["context", "--clear"],
        vec!["save", "environment", prod_file, "--dry-run"],
        vec!["save", "environment", prod_file, "--yes"],
        vec!["delete", "environment", "prod"],
        vec!["delete", "environment", "prod", "--confirm", "--yes"],
        vec!["validate"],
        vec!["schema", "environment"],
    ];
    let mut configured_seen = false;
    for args in &commands {
        for json in [false, true] {
            let mut cmd = sandbox.envreg();
            cmd.env("KUBECONFIG_PROD", CANARY)
                .env("KUBECONFIG_STAGING", CANARY);
            if json {
                cmd.arg("--json");
            }
            let output = cmd.args(args).output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !stdout.contains(CANARY),
                "{args:?} printed the secret on stdout:\n{stdout}"
            );
            assert!(
                !stderr.contains(CANARY),
                "{args:?} printed the secret on stderr:\n{stderr}"
            );
            configured_seen |= stdout.contains("\"configured\": true");
        }
    }
    assert!(
        configured_seen,
        "the credential was seen as configured, so the test had teeth"
    );
}
