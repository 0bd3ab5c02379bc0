//! Issue 19, run as the user ran it: the real `envreg` binary on registries written by
//! hand — typos caught (unknown fields), bindings proven by `validate`, mixed estates,
//! bounded output.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Sandbox, json_of, transcript};
use serde_json::Value;

/// A registry written file by file into a fresh sandbox.
fn registry(files: &[(&str, &str)]) -> Sandbox {
    let sandbox = Sandbox::empty();
    for (rel, text) in files {
        sandbox.write(rel, text);
    }
    sandbox
}

/// `envreg --json ARGS` on the sandbox: exit code and parsed stdout.
fn run_json(sandbox: &Sandbox, args: &[&str]) -> (i32, Value) {
    let output = sandbox.envreg().arg("--json").args(args).output().unwrap();
    let code = output.status.code().unwrap();
    let text = transcript(sandbox, &output);
    let value = if output.stdout.is_empty() {
        Value::Null
    } else {
        json_of(sandbox, &output)
    };
    assert!(code != 101, "envreg panicked: {text}");
    (code, value)
}

/// The diagnostics of `validate --json` with this code, as (severity, file, path, line).
fn diagnostics_with<'v>(report: &'v Value, code: &str) -> Vec<&'v Value> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == code)
        .collect()
}

const ORDERS_ENVS: [(&str, &str); 2] = [
    (
        "environments/prod.yaml",
        "id: prod\nschemaVersion: 1\nname: Production\ntier: production\nplatform: vm\nhosts:\n  - { id: app-1, address: 10.0.0.1 }\n",
    ),
    (
        "environments/staging.yaml",
        "id: staging\nschemaVersion: 1\nname: Staging\ntier: staging\nplatform: vm\nhosts:\n  - { id: stage-1, address: 10.1.0.1 }\n",
    ),
];

/// Finding 2: `match: { environment: prod, service: orders-api }` (for `environmentRef`
/// / `serviceRef`), gated by approval, validated clean and was then picked at level
/// `global` for staging. Now `validate` fails on it, naming each key, its line and the
/// field meant, and `resolve-operation` does not use it.
#[test]
fn a_misspelt_binding_match_is_an_error_and_the_binding_is_never_picked() {
    let mut files = ORDERS_ENVS.to_vec();
    files.extend([
        (
            "services/orders-api.yaml",
            "id: orders-api\nschemaVersion: 1\nname: Orders API\nlogSources:\n  - { id: app, path: /var/log/orders/app.log }\n",
        ),
        (
            "deployments/orders-api-prod.yaml",
            "id: orders-api-prod\nschemaVersion: 1\nname: orders-api on prod\nenvironmentRef: prod\nserviceRef: orders-api\n",
        ),
        (
            "deployments/orders-api-staging.yaml",
            "id: orders-api-staging\nschemaVersion: 1\nname: orders-api on staging\nenvironmentRef: staging\nserviceRef: orders-api\n",
        ),
        (
            "operation-bindings/restart-orders-prod.yaml",
            "id: restart-orders-prod\nschemaVersion: 1\nname: Restart orders-api in prod\noperation: restart\nmatch: { environment: prod, service: orders-api }\nskill: { name: systemd-restart }\npolicy: { requiresApproval: true, allowProduction: true }\n",
        ),
        (
            "skills/systemd-restart/SKILL.md",
            "---\nname: systemd-restart\ndescription: restart a unit\n---\n",
        ),
        ("envreg.yaml", "skills: { dirs: [skills] }\n"),
    ]);
    let sandbox = registry(&files);

    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["ok"], false);
    let unknown = diagnostics_with(&report, "UNKNOWN_FIELD");
    let binding: Vec<(&Value, &Value, &Value)> = unknown
        .iter()
        .filter(|d| d["file"] == "operation-bindings/restart-orders-prod.yaml")
        .map(|d| (&d["severity"], &d["path"], &d["line"]))
        .collect();
    assert_eq!(
        binding,
        [
            (
                &Value::from("error"),
                &Value::from("match.environment"),
                &Value::from(5)
            ),
            (
                &Value::from("error"),
                &Value::from("match.service"),
                &Value::from(5)
            ),
        ],
        "{report:#}"
    );
    assert!(
        unknown[0]["message"]
            .as_str()
            .unwrap()
            .contains("environmentRef"),
        "{report:#}"
    );
    // `logSources:` on a service was dropped without a word; now it is a warning that
    // says where the field belongs.
    let svc: Vec<&&Value> = unknown
        .iter()
        .filter(|d| d["file"] == "services/orders-api.yaml")
        .collect();
    assert_eq!(svc.len(), 1, "{report:#}");
    assert_eq!(svc[0]["severity"], "warning");
    assert_eq!(svc[0]["path"], "logSources");
    assert_eq!(svc[0]["line"], 4);
    assert!(svc[0]["message"].as_str().unwrap().contains("rule profile"));

    // The binding is not used: there is no restart binding for staging (or for prod).
    for env in ["staging", "prod"] {
        let (code, value) = run_json(
            &sandbox,
            &[
                "resolve-operation",
                "restart",
                "--env",
                env,
                "--service",
                "orders-api",
            ],
        );
        assert_eq!(code, 1, "{value:#}");
        assert_eq!(value["error"]["code"], "BINDING_NOT_FOUND", "{value:#}");
    }

    // Unknown fields survive `get`, in `record` and in `yaml` (contract §2.2).
    let (code, got) = run_json(&sandbox, &["get", "service", "orders-api"]);
    assert_eq!(code, 0, "{got:#}");
    assert_eq!(got["record"]["logSources"][0]["id"], "app");
    assert!(got["yaml"].as_str().unwrap().contains("logSources:"));
}

/// A misspelt key in `envreg.yaml`'s `writePolicy` switches nothing off: the whole
/// config falls back to its defaults (approvals on) and `validate` fails on it.
#[test]
fn a_misspelt_write_policy_key_is_an_error_and_the_defaults_apply() {
    let mut files = ORDERS_ENVS.to_vec();
    files.push((
        "envreg.yaml",
        "defaults: { environmentId: staging }\nwritePolicy:\n  requireApprovalForDelete: false\n  aprovalChannel: host\n",
    ));
    let sandbox = registry(&files);
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!(code, 3, "{report:#}");
    let unknown = diagnostics_with(&report, "UNKNOWN_FIELD");
    assert_eq!(unknown.len(), 1, "{report:#}");
    assert_eq!(unknown[0]["severity"], "error");
    assert_eq!(unknown[0]["file"], "envreg.yaml");
    assert_eq!(unknown[0]["path"], "writePolicy.aprovalChannel");
    assert_eq!(unknown[0]["line"], 4);
    assert!(
        unknown[0]["message"]
            .as_str()
            .unwrap()
            .contains("approvalChannel")
    );
}

const SHOP_SKILLS: [(&str, &str); 3] = [
    ("envreg.yaml", "skills: { dirs: [skills] }\n"),
    (
        "skills/helm-rollback/SKILL.md",
        "---\nname: helm-rollback\ndescription: roll back a release\n---\n",
    ),
    (
        "skills/http-health-check/SKILL.md",
        "---\nname: http-health-check\ndescription: probe a URL\n---\n",
    ),
];

/// Finding 3: `validate` passed a skill name typo (`helm-rollbak`) and a parameter
/// template using a variable defined nowhere (`{{releaseName}}`), and a global binding
/// whose template fails for every service without a `port`; `resolve-operation` then
/// failed. Now `validate` resolves every binding against every deployment it picks
/// and every deployment's Service Context, and fails on each, naming the binding (or
/// record), the deployment and the field.
#[test]
fn validate_fails_on_every_binding_and_context_that_cannot_resolve() {
    let mut files = ORDERS_ENVS.to_vec();
    files.extend(SHOP_SKILLS);
    files.extend([
        (
            "services/orders-api.yaml",
            "id: orders-api\nschemaVersion: 1\nname: Orders API\nruleProfileRefs: [layout]\nvariables: { port: \"8080\" }\n",
        ),
        (
            "services/billing.yaml",
            "id: billing\nschemaVersion: 1\nname: Billing\n",
        ),
        (
            "rule-profiles/layout.yaml",
            "id: layout\nschemaVersion: 1\nname: Layout\npaths:\n  home: /opt/{{appName}}\n",
        ),
        (
            "deployments/orders-api-staging.yaml",
            "id: orders-api-staging\nschemaVersion: 1\nname: orders-api on staging\nenvironmentRef: staging\nserviceRef: orders-api\nvariables: { appName: orders }\n",
        ),
        (
            "deployments/orders-api-prod.yaml",
            "id: orders-api-prod\nschemaVersion: 1\nname: orders-api on prod\nenvironmentRef: prod\nserviceRef: orders-api\n",
        ),
        (
            "deployments/billing-staging.yaml",
            "id: billing-staging\nschemaVersion: 1\nname: billing on staging\nenvironmentRef: staging\nserviceRef: billing\n",
        ),
        (
            "operation-bindings/rollback-orders.yaml",
            "id: rollback-orders\nschemaVersion: 1\nname: Roll back orders-api\noperation: rollback\nmatch: { serviceRef: orders-api }\nskill: { name: helm-rollbak }\nparameters: { release: \"{{releaseName}}\" }\npolicy: { allowProduction: true }\n",
        ),
        (
            "operation-bindings/health-check.yaml",
            "id: health-check\nschemaVersion: 1\nname: Health check\noperation: health-check\nmatch: {}\nskill: { name: http-health-check }\nparameters: { url: \"http://127.0.0.1:{{port}}/health\" }\npolicy: { requiresApproval: false, allowProduction: true }\n",
        ),
    ]);
    let sandbox = registry(&files);
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!(code, 3, "{report:#}");
    let found = |code: &str| -> Vec<(String, String, String)> {
        diagnostics_with(&report, code)
            .into_iter()
            .map(|d| {
                assert_eq!(d["severity"], "error", "{d}");
                (
                    d["file"].as_str().unwrap().to_owned(),
                    d["path"].as_str().unwrap().to_owned(),
                    d["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };

    let skills = found("SKILL_UNAVAILABLE");
    assert_eq!(skills.len(), 1, "{report:#}");
    assert_eq!(skills[0].0, "operation-bindings/rollback-orders.yaml");
    assert_eq!(skills[0].1, "skill.name");
    assert!(skills[0].2.contains("helm-rollbak"));

    let params = found("PARAMETER_RESOLUTION_FAILED");
    let at = |file: &str, path: &str| -> Vec<&String> {
        params
            .iter()
            .filter(|(f, p, _)| f == file && p == path)
            .map(|(_, _, m)| m)
            .collect()
    };
    // `{{releaseName}}`: both orders-api deployments, in one diagnostic naming them.
    let release = at(
        "operation-bindings/rollback-orders.yaml",
        "parameters.release",
    );
    assert_eq!(release.len(), 1, "{report:#}");
    for needle in [
        "rollback-orders",
        "releaseName",
        "orders-api-prod",
        "orders-api-staging",
    ] {
        assert!(release[0].contains(needle), "{needle}: {}", release[0]);
    }
    // The global health check fails for billing (no port) only.
    let health = at("operation-bindings/health-check.yaml", "parameters.url");
    assert_eq!(health.len(), 1, "{report:#}");
    assert!(health[0].contains("billing-staging") && health[0].contains("port"));
    assert!(!health[0].contains("orders-api"), "{}", health[0]);
    // The rule profile's path needs `appName`, which only staging's deployment sets:
    // the Service Context of orders-api-prod fails, at the profile's field.
    let home = at("rule-profiles/layout.yaml", "paths.home");
    assert_eq!(home.len(), 1, "{report:#}");
    assert!(home[0].contains("orders-api-prod") && home[0].contains("appName"));
    assert!(!home[0].contains("orders-api-staging"), "{}", home[0]);

    // What validate reports is what resolve-operation answers.
    let (code, value) = run_json(
        &sandbox,
        &[
            "resolve-operation",
            "health-check",
            "--env",
            "staging",
            "--service",
            "billing",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(value["error"]["code"], "PARAMETER_RESOLUTION_FAILED");
}

/// `envreg init`'s registry validates clean, and its global health-check binding still
/// resolves for a service added without a `port` (its rule profile has a default).
#[test]
fn the_init_registry_validates_clean_and_its_health_check_fits_a_new_service() {
    let sandbox = Sandbox::empty();
    let output = sandbox
        .bare()
        .arg("init")
        .arg(sandbox.registry())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", transcript(&sandbox, &output));
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!((code, &report["ok"]), (0, &Value::Bool(true)), "{report:#}");
    sandbox.write(
        "services/worker.yaml",
        "id: worker\nschemaVersion: 1\nname: Worker\nruleProfileRefs: [basic-service]\nvariables: { appName: worker }\n",
    );
    sandbox.write(
        "deployments/worker-local.yaml",
        "id: worker-local\nschemaVersion: 1\nname: worker on local\nenvironmentRef: local\nserviceRef: worker\n",
    );
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!((code, &report["ok"]), (0, &Value::Bool(true)), "{report:#}");
    let (code, value) = run_json(
        &sandbox,
        &[
            "resolve-operation",
            "health-check",
            "--env",
            "local",
            "--service",
            "worker",
        ],
    );
    assert_eq!(code, 0, "{value:#}");
    assert_eq!(value["parameters"]["url"], "http://127.0.0.1:8080/health");
}

/// The example registry validates clean with operations proven.
#[test]
fn the_example_registry_validates_clean_with_operations_proven() {
    let sandbox = Sandbox::with_example();
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!((code, &report["ok"]), (0, &Value::Bool(true)), "{report:#}");
}

/// Finding 7's registry: a 54 KB rule profile with 3,000 paths each `{{v1}}`, `v1` a
/// 64 KiB value (the per-value cap). One Service Context used to be 193 MB.
fn amplifier() -> Sandbox {
    let mut profile = String::from(
        "id: big\nschemaVersion: 1\nname: Big\nvariables:\n  v1: \"{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}\"\n  v0: \"",
    );
    profile.push_str(&"x".repeat(8 * 1024));
    profile.push_str("\"\npaths:\n");
    for i in 0..3000 {
        profile.push_str(&format!("  p{i}: \"{{{{v1}}}}\"\n"));
    }
    assert!(profile.len() < 64 * 1024, "{}", profile.len());
    registry(&[
        (
            "environments/dev.yaml",
            "id: dev\nschemaVersion: 1\nname: Dev\ntier: dev\nplatform: docker\n",
        ),
        (
            "services/amp.yaml",
            "id: amp\nschemaVersion: 1\nname: Amp\nruleProfileRefs: [big]\n",
        ),
        (
            "deployments/amp-dev.yaml",
            "id: amp-dev\nschemaVersion: 1\nname: amp on dev\nenvironmentRef: dev\nserviceRef: amp\n",
        ),
        ("rule-profiles/big.yaml", &profile),
    ])
}

fn assert_output_cap_error(error: &Value) {
    assert_eq!(error["code"], "PARAMETER_RESOLUTION_FAILED", "{error:#}");
    assert_eq!(error["details"]["reason"], "output-too-large", "{error:#}");
    assert_eq!(
        error["details"]["definedBy"]["file"],
        "rule-profiles/big.yaml"
    );
    assert_eq!(error["details"]["largestVariable"]["name"], "v1");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("1 MiB") && message.contains("rule profile big"),
        "{message}"
    );
}

/// Finding 7, CLI: `resolve` printed 193 MB in 4.5 s at 874 MB RSS. Now it fails with
/// the cap's error naming the record and field, and prints a few hundred bytes.
#[test]
fn an_amplifying_profile_fails_resolve_with_the_output_cap() {
    let sandbox = amplifier();
    let output = sandbox
        .envreg()
        .args(["--json", "resolve", "amp", "--env", "dev"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        transcript(&sandbox, &output)
    );
    assert!(
        output.stdout.len() < 64 * 1024,
        "{} bytes",
        output.stdout.len()
    );
    assert_output_cap_error(&json_of(&sandbox, &output)["error"]);
    // validate proves the same Service Context, so it reports the same failure.
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!(code, 3);
    let found = diagnostics_with(&report, "PARAMETER_RESOLUTION_FAILED");
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["file"], "rule-profiles/big.yaml");
}

/// Finding 7, MCP: `env_resolve` over `envreg serve` (stdio) sent one 386 MB line. Now
/// the tool answers the cap's error, and the reply line stays small.
#[test]
fn an_amplifying_profile_fails_env_resolve_over_stdio_with_the_output_cap() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let sandbox = amplifier();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("envreg"))
        .arg("--registry")
        .arg(sandbox.registry())
        .arg("serve")
        .current_dir(sandbox.tmp.path())
        .env("HOME", sandbox.home())
        .env_remove("ENVREG_REGISTRY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "registry-model-test", "version": "0"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "env_resolve", "arguments": {"environmentId": "dev", "serviceId": "amp"}}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    drop(stdin);
    let _ = child.wait();
    assert!(line.len() < 64 * 1024, "{} bytes", line.len());
    let reply: Value = serde_json::from_str(&line).unwrap();
    let result = &reply["result"];
    assert_eq!(result["isError"], true, "{reply:#}");
    let text = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .find_map(|t| serde_json::from_str::<Value>(t).ok())
        .expect("an error JSON text block");
    assert_output_cap_error(&text);
}

/// The mixed estate of examples/mixed-estate in a fresh sandbox.
fn mixed_estate() -> Sandbox {
    let sandbox = Sandbox::empty();
    test_support::copy_example("mixed-estate", &sandbox.registry());
    sandbox
}

/// Replace `from` (which must occur once) by `to` in a registry file.
fn edit(sandbox: &Sandbox, rel: &str, from: &str, to: &str) {
    let path = sandbox.registry().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{rel}: {from:?}");
    std::fs::write(path, text.replace(from, to)).unwrap();
}

/// Issue 19's acceptance scenario: a three-environment mixed estate (compose dev;
/// Kubernetes staging and prod with two VM services inside prod), written with the docs
/// and schemas only. It validates clean and resolves each service on its own platform
/// and hosts.
#[test]
fn the_mixed_estate_validates_clean_and_resolves_vm_services_on_their_own_hosts() {
    let sandbox = mixed_estate();
    let (code, report) = run_json(&sandbox, &["validate"]);
    assert_eq!((code, &report["ok"]), (0, &Value::Bool(true)), "{report:#}");
    assert_eq!(report["diagnostics"], Value::Array(vec![]), "{report:#}");

    let (code, ledger) = run_json(&sandbox, &["resolve", "ledger", "--env", "prod"]);
    assert_eq!(code, 0, "{ledger:#}");
    assert_eq!(ledger["environment"]["platform"], "kubernetes");
    assert_eq!(ledger["deployment"]["platform"], "vm");
    let hosts: Vec<&str> = ledger["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["ledger-vm-1", "ledger-vm-2"]);

    let (code, storefront) = run_json(&sandbox, &["resolve", "storefront", "--env", "prod"]);
    assert_eq!(code, 0);
    assert!(storefront["deployment"].get("platform").is_none());
    assert_eq!(storefront["hosts"].as_array().unwrap().len(), 3);

    for (service, skill, platform) in [
        ("ledger", "systemd-restart", Some("vm")),
        ("reports", "systemd-restart", Some("vm")),
        ("storefront", "k8s-rolling-restart", None),
    ] {
        let (code, op) = run_json(
            &sandbox,
            &[
                "resolve-operation",
                "restart",
                "--env",
                "prod",
                "--service",
                service,
            ],
        );
        assert_eq!(code, 0, "{op:#}");
        assert_eq!(op["skill"]["name"], skill, "{op:#}");
        if let Some(p) = platform {
            assert_eq!(op["parameters"]["platform"], p);
        }
    }
    let (code, list) = run_json(&sandbox, &["list", "--kind", "deployment"]);
    assert_eq!(code, 0);
    let summary = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "ledger-prod")
        .unwrap()["summary"]
        .clone();
    assert_eq!(summary, "ledger in prod · vm · 2 hosts");
}

/// Every typo a person modelling that estate could make gets a diagnostic at its file
/// and field; the ones that could widen a binding or skip an approval fail `validate`.
#[test]
fn every_typo_in_the_mixed_estate_gets_a_diagnostic_at_its_field() {
    // (file, original, typo, code, severity, path)
    let cases = [
        (
            "operation-bindings/restart-prod.yaml",
            "environmentRef: prod",
            "environment: prod",
            "UNKNOWN_FIELD",
            "error",
            "match.environment",
        ),
        (
            "operation-bindings/restart-prod.yaml",
            "allowProduction: true",
            "allowProd: true",
            "UNKNOWN_FIELD",
            "error",
            "policy.allowProd",
        ),
        (
            "operation-bindings/restart-dev.yaml",
            "match: {",
            "matches: {",
            "UNKNOWN_FIELD",
            "error",
            "matches",
        ),
        (
            "envreg.yaml",
            "  requireApprovalForDelete: true",
            "  requireApprovalForDeletes: true",
            "UNKNOWN_FIELD",
            "error",
            "writePolicy.requireApprovalForDeletes",
        ),
        (
            "envreg.yaml",
            "  environmentId: staging",
            "  environment: staging",
            "UNKNOWN_FIELD",
            "error",
            "defaults.environment",
        ),
        (
            "deployments/ledger-prod.yaml",
            "platform: vm",
            "platfrom: vm",
            "UNKNOWN_FIELD",
            "warning",
            "platfrom",
        ),
        (
            "deployments/reports-prod.yaml",
            "roles: [app]",
            "role: [app]",
            "UNKNOWN_FIELD",
            "warning",
            "hosts[0].role",
        ),
        (
            "services/ledger.yaml",
            "ruleProfileRefs:",
            "ruleProfiles:",
            "UNKNOWN_FIELD",
            "warning",
            "ruleProfiles",
        ),
        (
            "rule-profiles/app-layout.yaml",
            "logSources:",
            "logSource:",
            "UNKNOWN_FIELD",
            "warning",
            "logSource",
        ),
        (
            "environments/staging.yaml",
            "variables:",
            "vars:",
            "UNKNOWN_FIELD",
            "warning",
            "vars",
        ),
        (
            "deployments/ledger-prod.yaml",
            "platform: vm",
            "platform: vms",
            "RECORD_INVALID",
            "error",
            "",
        ),
        (
            "deployments/reports-prod.yaml",
            "serviceRef: reports",
            "serviceRef: report",
            "SERVICE_NOT_FOUND",
            "error",
            "serviceRef",
        ),
        (
            "services/reports.yaml",
            "[app-layout]",
            "[app-layuot]",
            "RULE_PROFILE_NOT_FOUND",
            "error",
            "ruleProfileRefs[0]",
        ),
        // Bindings that cannot resolve.
        (
            "operation-bindings/restart-prod.yaml",
            "{{namespace}}",
            "{{namepsace}}",
            "PARAMETER_RESOLUTION_FAILED",
            "error",
            "parameters.namespace",
        ),
        (
            "operation-bindings/restart-ledger-prod.yaml",
            "systemd-restart",
            "systemd-restrat",
            "SKILL_UNAVAILABLE",
            "error",
            "skill.name",
        ),
        (
            "operation-bindings/health-check.yaml",
            "{{port}}",
            "{{prot}}",
            "PARAMETER_RESOLUTION_FAILED",
            "error",
            "parameters.url",
        ),
        (
            "rule-profiles/app-layout.yaml",
            "/opt/{{appName}}",
            "/opt/{{appname}}",
            "PARAMETER_RESOLUTION_FAILED",
            "error",
            "paths.home",
        ),
        (
            "operation-bindings/restart-reports-prod.yaml",
            "deploymentRef: reports-prod",
            "deploymentRef: ledger-prod",
            "BINDING_CONFLICT",
            "error",
            "match",
        ),
    ];
    for (file, from, to, code, severity, path) in cases {
        let sandbox = mixed_estate();
        edit(&sandbox, file, from, to);
        let (exit, report) = run_json(&sandbox, &["validate"]);
        let found = diagnostics_with(&report, code);
        let at: Vec<&&Value> = found
            .iter()
            .filter(|d| d["file"] == file && (path.is_empty() || d["path"] == path))
            .collect();
        assert!(
            !at.is_empty(),
            "{file}: {from:?} → {to:?}: no {code} at {path}: {report:#}"
        );
        assert_eq!(at[0]["severity"], severity, "{file} {to}: {report:#}");
        if code == "UNKNOWN_FIELD" {
            assert!(at[0]["line"].is_number(), "{file} {to}: {report:#}");
        }
        // A warning alone does not fail validate, but what it breaks may (`vars:` leaves
        // every template of staging without its variables).
        if severity == "error" {
            assert_eq!(exit, 3, "{file} {to}: {report:#}");
        }
    }
}

/// A save cannot write what the loader would refuse: a binding whose `match` or
/// `policy` holds an unknown key is `RECORD_INVALID` naming the field, and nothing is
/// written; other unknown keys are saved and returned as warnings.
#[test]
fn save_refuses_an_unknown_key_in_a_binding_match_and_warns_about_others() {
    let sandbox = Sandbox::with_example();
    let file = sandbox.tmp.path().join("restart-typo.yaml");
    std::fs::write(
        &file,
        "id: restart-typo\nschemaVersion: 1\nname: typo\noperation: restart\nmatch: { environment: prod }\nskill: { name: k8s-rolling-restart }\n",
    )
    .unwrap();
    let (code, value) = run_json(
        &sandbox,
        &["save", "operationBinding", file.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{value:#}");
    assert_eq!(value["error"]["code"], "RECORD_INVALID", "{value:#}");
    assert!(value.to_string().contains("match.environment"), "{value:#}");
    assert!(
        !sandbox
            .registry()
            .join("operation-bindings/restart-typo.yaml")
            .exists()
    );
    std::fs::write(
        &file,
        "id: restart-typo\nschemaVersion: 1\nname: typo\noperation: restart\nmatch: { environmentRef: dev, serviceRef: storefront }\nskill: { name: k8s-rolling-restart }\nnotes: kept\n",
    )
    .unwrap();
    let (code, value) = run_json(
        &sandbox,
        &[
            "save",
            "operationBinding",
            file.to_str().unwrap(),
            "--dry-run",
        ],
    );
    assert_eq!(code, 0, "{value:#}");
    assert_eq!(value["warnings"][0]["code"], "UNKNOWN_FIELD", "{value:#}");
    assert_eq!(value["warnings"][0]["path"], "notes");
}
