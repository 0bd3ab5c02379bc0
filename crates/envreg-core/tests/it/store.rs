//! Registry behaviour end to end through the public API, on temporary registries:
//! loading rules, bad input (issue 2 §5), refresh, reads, sessions, writes.
#![allow(clippy::unwrap_used)] // test-support helpers outside #[test] fns

use std::path::{Path, PathBuf};
use std::sync::Arc;

use envreg_core::{ErrorCode, RecordKind, Registry, SessionId, Severity};
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        Fixture { _dir: dir, root }
    }

    /// A small valid registry: test-a and prod environments, one service, two
    /// deployments, a profile, a binding.
    fn standard() -> Fixture {
        let f = Fixture::new();
        f.write("environments/test-a.yaml", "id: test-a\nschemaVersion: 1\nname: Test A\ntier: test\nplatform: kubernetes\nhosts:\n  - { id: node-1, address: 10.0.0.1, roles: [worker] }\nvariables: { logRoot: /data/logs }\n");
        f.write(
            "environments/prod.yaml",
            "id: prod\nschemaVersion: 1\nname: Production\ntier: production\nplatform: vm\n",
        );
        f.write("services/aicoservice.yaml", "id: aicoservice\nschemaVersion: 1\nname: Aico Service\naliases: [aico]\ncategory: backend\nruleProfileRefs: [java-common]\nvariables: { appName: aicoservice }\n");
        f.write("deployments/deploy-001.yaml", "id: deploy-001\nschemaVersion: 1\nname: aico on test-a\nenvironmentRef: test-a\nserviceRef: aicoservice\n");
        f.write("deployments/deploy-prod.yaml", "id: deploy-prod\nschemaVersion: 1\nname: aico on prod\nenvironmentRef: prod\nserviceRef: aicoservice\n");
        f.write("rule-profiles/java-common.yaml", "id: java-common\nschemaVersion: 1\nname: Java\npaths: { home: \"/opt/{{appName}}\" }\n");
        f.write("operation-bindings/binding-001.yaml", "id: binding-001\nschemaVersion: 1\nname: redeploy\noperation: redeploy\nmatch: { environmentRef: test-a, serviceRef: aicoservice }\nskill: { name: redeploy-k8s-service }\n");
        f
    }

    fn write(&self, rel: &str, text: &str) {
        self.write_bytes(rel, text.as_bytes());
    }

    fn write_bytes(&self, rel: &str, bytes: &[u8]) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn open(&self) -> Registry {
        Registry::open(&self.root).unwrap()
    }
}

fn codes_for(registry: &Registry, file: &str) -> Vec<String> {
    registry
        .validate()
        .diagnostics
        .into_iter()
        .filter(|d| d.file.as_deref() == Some(file))
        .map(|d| d.code)
        .collect()
}

fn session(id: &str) -> SessionId {
    SessionId::new(id).unwrap()
}

// ---------------------------------------------------------------- loading rules

#[test]
fn standard_fixture_is_clean() {
    let f = Fixture::standard();
    let report = f.open().validate();
    assert!(report.ok, "{:#?}", report.diagnostics);
    assert_eq!(report.counts.deployment, 2);
}

#[test]
fn yml_and_yaml_both_load_and_leftovers_are_ignored_silently() {
    let f = Fixture::standard();
    f.write(
        "services/other.yml",
        "id: other\nschemaVersion: 1\nname: Other\n",
    );
    f.write("services/.hidden.yaml", "not: [valid");
    f.write("services/backup.yaml~", "not: [valid");
    f.write("services/.#lock.yaml", "x");
    f.write("services/edit.yaml.swp", "x");
    f.write("services/README.md", "# notes");
    let r = f.open();
    assert!(r.snapshot().service("other").is_some());
    let report = r.validate();
    assert!(report.ok, "{:#?}", report.diagnostics);
    assert_eq!(report.counts.service, 2);
}

#[test]
fn malformed_yaml_is_a_diagnostic_with_line_and_column_and_the_rest_loads() {
    let f = Fixture::standard();
    f.write(
        "services/broken.yaml",
        "id: broken\nschemaVersion: 1\nname: ok\naliases: [unclosed, {a: 1}\nnext: 2\n",
    );
    let r = f.open();
    let d = r
        .validate()
        .diagnostics
        .into_iter()
        .find(|d| d.file.as_deref() == Some("services/broken.yaml"))
        .unwrap();
    assert_eq!(d.code, "YAML_INVALID");
    assert_eq!(d.severity, Severity::Error);
    assert!(d.line.is_some() && d.column.is_some(), "{d:?}");
    assert!(d.message.contains("line"), "{}", d.message);
    assert!(r.snapshot().service("aicoservice").is_some());
}

#[test]
fn wrong_field_type_is_record_invalid_with_position() {
    let f = Fixture::standard();
    f.write(
        "environments/bad.yaml",
        "id: bad\nschemaVersion: 1\nname: Bad\ntier: nope\nplatform: vm\n",
    );
    let r = f.open();
    let d = r
        .validate()
        .diagnostics
        .into_iter()
        .find(|d| d.file.as_deref() == Some("environments/bad.yaml"))
        .unwrap();
    assert_eq!(d.code, "RECORD_INVALID");
    assert_eq!(d.line, Some(4), "{d:?}");
}

#[test]
fn alias_bomb_is_refused_quickly() {
    let f = Fixture::standard();
    let mut bomb = String::from(
        "id: bomb\nschemaVersion: 1\nname: Bomb\nvariables:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..12 {
        let prev = i - 1;
        bomb.push_str(&format!("  a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
    }
    f.write("services/bomb.yaml", &bomb);
    let r = f.open();
    let codes = codes_for(&r, "services/bomb.yaml");
    assert!(!codes.is_empty(), "the bomb must not load");
    assert!(r.snapshot().service("bomb").is_none());
    assert!(r.snapshot().service("aicoservice").is_some());
}

#[test]
fn oversize_file_is_rejected_before_parsing() {
    let f = Fixture::standard();
    f.write("envreg.yaml", "limits: { maxRecordBytes: 64 }\n");
    // Invalid YAML *and* too large: only the size finding may appear, which proves the
    // parser never saw it.
    f.write(
        "services/huge.yaml",
        &format!("id: huge\nname: [{}\n", "x".repeat(200)),
    );
    let r = f.open();
    let codes = codes_for(&r, "services/huge.yaml");
    assert_eq!(codes, vec!["RECORD_TOO_LARGE".to_owned()]);
}

#[test]
fn non_utf8_file_is_a_diagnostic() {
    let f = Fixture::standard();
    f.write_bytes(
        "services/latin1.yaml",
        b"id: latin1\nschemaVersion: 1\nname: Caf\xe9\n",
    );
    let r = f.open();
    let d = r
        .validate()
        .diagnostics
        .into_iter()
        .find(|d| d.file.as_deref() == Some("services/latin1.yaml"))
        .unwrap();
    assert_eq!(d.code, "YAML_INVALID");
    assert!(d.message.contains("UTF-8"));
    assert_eq!(d.line, Some(3));
}

#[test]
fn id_file_mismatch_is_reported_and_not_loaded() {
    let f = Fixture::standard();
    f.write(
        "services/svc-a.yaml",
        "id: svc-b\nschemaVersion: 1\nname: B\n",
    );
    let r = f.open();
    assert_eq!(
        codes_for(&r, "services/svc-a.yaml"),
        vec!["ID_MISMATCH".to_owned()]
    );
    assert!(r.snapshot().service("svc-a").is_none() && r.snapshot().service("svc-b").is_none());
}

#[test]
fn duplicate_id_via_yml_and_yaml_names_both() {
    let f = Fixture::standard();
    f.write(
        "services/twin.yaml",
        "id: twin\nschemaVersion: 1\nname: Twin\n",
    );
    f.write(
        "services/twin.yml",
        "id: twin\nschemaVersion: 1\nname: Twin too\n",
    );
    let r = f.open();
    let dups: Vec<_> = r
        .validate()
        .diagnostics
        .into_iter()
        .filter(|d| d.code == "DUPLICATE_ID")
        .collect();
    assert_eq!(dups.len(), 2);
    assert!(
        dups[0].message.contains("services/twin.yaml")
            && dups[0].message.contains("services/twin.yml")
    );
    assert!(
        r.snapshot().service("twin").is_none(),
        "fail closed: neither loads"
    );
}

#[test]
fn schema_version_and_name_rules() {
    let f = Fixture::standard();
    f.write("services/v2.yaml", "id: v2\nschemaVersion: 2\nname: V2\n");
    f.write(
        "services/noname.yaml",
        "id: noname\nschemaVersion: 1\nname: \"\"\n",
    );
    let r = f.open();
    assert_eq!(
        codes_for(&r, "services/v2.yaml"),
        vec!["SCHEMA_VERSION_UNSUPPORTED".to_owned()]
    );
    assert_eq!(
        codes_for(&r, "services/noname.yaml"),
        vec!["RECORD_INVALID".to_owned()]
    );
}

#[test]
fn extends_cycle_is_rule_profile_cycle() {
    let f = Fixture::standard();
    f.write(
        "rule-profiles/p-a.yaml",
        "id: p-a\nschemaVersion: 1\nname: A\nextends: [p-b]\n",
    );
    f.write(
        "rule-profiles/p-b.yaml",
        "id: p-b\nschemaVersion: 1\nname: B\nextends: [p-a]\n",
    );
    let r = f.open();
    let cycles: Vec<_> = r
        .validate()
        .diagnostics
        .into_iter()
        .filter(|d| d.code == "RULE_PROFILE_CYCLE")
        .collect();
    assert_eq!(cycles.len(), 1, "one report per cycle: {cycles:#?}");
    assert!(cycles[0].message.contains("p-a") && cycles[0].message.contains("p-b"));
    assert_eq!(cycles[0].path.as_deref(), Some("extends"));
}

#[test]
fn template_with_unbalanced_braces_is_template_invalid() {
    let f = Fixture::standard();
    f.write(
        "rule-profiles/bad-t.yaml",
        "id: bad-t\nschemaVersion: 1\nname: T\npaths: { home: \"/opt/{{appName\" }\n",
    );
    let r = f.open();
    let d = r
        .validate()
        .diagnostics
        .into_iter()
        .find(|d| d.code == "TEMPLATE_INVALID")
        .unwrap();
    assert_eq!(d.path.as_deref(), Some("paths.home"));
    assert_eq!(d.file.as_deref(), Some("rule-profiles/bad-t.yaml"));
}

/// We run as root, so `chmod 000` would not stop a read. Two things that fail for root
/// too: a folder named like a record file, and a FIFO (which would also block a naive
/// `open`; the loader checks the file type first).
#[test]
fn unreadable_files_are_diagnostics_and_never_block() {
    let f = Fixture::standard();
    std::fs::create_dir_all(f.root.join("services/dir.yaml")).unwrap();
    let fifo = f.root.join("services/fifo.yaml");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let r = f.open();
    assert_eq!(
        codes_for(&r, "services/dir.yaml"),
        vec!["FILE_UNREADABLE".to_owned()]
    );
    assert_eq!(
        codes_for(&r, "services/fifo.yaml"),
        vec!["FILE_UNREADABLE".to_owned()]
    );
    assert!(r.snapshot().service("aicoservice").is_some());
}

#[test]
fn broken_references_and_binding_conflicts_are_reported_with_paths() {
    let f = Fixture::standard();
    f.write(
        "services/lonely.yaml",
        "id: lonely\nschemaVersion: 1\nname: L\nruleProfileRefs: [java-commn]\n",
    );
    f.write(
        "deployments/d-x.yaml",
        "id: d-x\nschemaVersion: 1\nname: X\nenvironmentRef: nowhere\nserviceRef: nothing\n",
    );
    f.write("operation-bindings/binding-002.yaml", "id: binding-002\nschemaVersion: 1\nname: dup\noperation: redeploy\nmatch: { environmentRef: test-a, serviceRef: aicoservice }\nskill: { name: other }\n");
    f.write("operation-bindings/binding-003.yaml", "id: binding-003\nschemaVersion: 1\nname: d\noperation: restart\nmatch: { deploymentRef: gone }\nskill: { name: other }\n");
    let r = f.open();
    let diags = r.validate().diagnostics;
    let find = |code: &str, file: &str| {
        diags
            .iter()
            .find(|d| d.code == code && d.file.as_deref() == Some(file))
            .cloned()
    };
    assert_eq!(
        find("RULE_PROFILE_NOT_FOUND", "services/lonely.yaml")
            .unwrap()
            .path
            .as_deref(),
        Some("ruleProfileRefs[0]")
    );
    assert_eq!(
        find("ENV_NOT_FOUND", "deployments/d-x.yaml")
            .unwrap()
            .path
            .as_deref(),
        Some("environmentRef")
    );
    assert_eq!(
        find("SERVICE_NOT_FOUND", "deployments/d-x.yaml")
            .unwrap()
            .path
            .as_deref(),
        Some("serviceRef")
    );
    assert_eq!(
        find(
            "DEPLOYMENT_NOT_FOUND",
            "operation-bindings/binding-003.yaml"
        )
        .unwrap()
        .path
        .as_deref(),
        Some("match.deploymentRef")
    );
    assert!(find("BINDING_CONFLICT", "operation-bindings/binding-001.yaml").is_some());
    assert!(find("BINDING_CONFLICT", "operation-bindings/binding-002.yaml").is_some());
    assert!(!r.validate().ok);
}

#[test]
fn credential_missing_is_a_warning_and_never_reads_the_value() {
    let var = "ENVREG_CORE_TEST_CREDENTIAL_CANARY";
    // The variable is set only in a child process running this test alone:
    // `std::env::set_var` is unsafe while other tests of this binary read the
    // environment (they spawn processes).
    if std::env::var_os(var).is_none() {
        let name = test_support::test_name(
            module_path!(),
            "credential_missing_is_a_warning_and_never_reads_the_value",
        );
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &name, "--test-threads=1"])
            .env(var, "canary-secret-value-123")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && shown.contains("1 passed"),
            "{shown}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let f = Fixture::standard();
    f.write("environments/cred.yaml", &format!("id: cred\nschemaVersion: 1\nname: C\ntier: dev\nplatform: vm\ncredentials:\n  - {{ ref: k, source: \"env:{var}_UNSET\" }}\n  - {{ ref: set, source: \"env:{var}\" }}\n"));
    let r = f.open();
    let diags = r.validate().diagnostics;
    let missing: Vec<_> = diags
        .iter()
        .filter(|d| d.code == "CREDENTIAL_MISSING")
        .collect();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].severity, Severity::Warning);
    assert_eq!(missing[0].path.as_deref(), Some("credentials[0]"));
    let everything = serde_json::to_string(&(
        r.validate(),
        r.list(None, None).unwrap(),
        r.get(RecordKind::Environment, "cred").unwrap(),
    ))
    .unwrap();
    assert!(!everything.contains("canary-secret-value-123"));
}

#[test]
fn strict_scalars_are_kept_as_written() {
    let f = Fixture::standard();
    f.write("services/scal.yaml", "id: scal\nschemaVersion: 1\nname: no\nvariables: { flag: no, mode: 0755, port: 8080, on: yes }\n");
    let r = f.open();
    let snap = r.snapshot();
    let s = snap.service("scal").unwrap();
    assert_eq!(s.name, "no");
    assert_eq!(s.variables["flag"], "no");
    assert_eq!(s.variables["mode"], "0755");
    assert_eq!(s.variables["port"], "8080");
    assert_eq!(s.variables["on"], "yes");
}

// ---------------------------------------------------------------- ids before I/O

#[test]
fn bad_ids_are_invalid_argument_before_any_io() {
    let f = Fixture::standard();
    let r = f.open();
    // Remove the whole registry: any I/O would now fail with something else.
    std::fs::remove_dir_all(&f.root).unwrap();
    let long = "a".repeat(200);
    for id in ["../etc/passwd", "a/b", "Test-A", long.as_str()] {
        assert_eq!(
            r.get(RecordKind::Service, id).unwrap_err().code,
            ErrorCode::InvalidArgument,
            "{id}"
        );
        assert_eq!(
            r.plan_delete(RecordKind::Service, id, true)
                .unwrap_err()
                .code,
            ErrorCode::InvalidArgument
        );
        let rec = json!({ "id": id, "schemaVersion": 1, "name": "x" });
        assert_eq!(
            r.plan_save(RecordKind::Service, rec, false)
                .unwrap_err()
                .code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            r.set_context(&session("s1"), Some(id)).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            r.default_environment(None, Some(id)).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }
    assert!(!f.root.exists(), "nothing was created");
}

// ---------------------------------------------------------------- reads

#[test]
fn get_returns_the_document_with_unknown_fields_and_the_text() {
    let f = Fixture::standard();
    f.write(
        "services/extra.yaml",
        "id: extra\nschemaVersion: 1\nname: Extra\nowner: { team: payments }\nx-notes: keep me\n",
    );
    let r = f.open();
    let got = r.get(RecordKind::Service, "extra").unwrap();
    assert_eq!(got.record["owner"]["team"], "payments");
    assert_eq!(got.record["x-notes"], "keep me");
    assert!(got.yaml.starts_with("id: extra\n"));
    let err = r.get(RecordKind::Service, "missing").unwrap_err();
    assert_eq!(err.code, ErrorCode::ServiceNotFound);
}

#[test]
fn get_of_each_kind_uses_the_kind_not_found_code() {
    let r = Fixture::standard().open();
    let expected = [
        (RecordKind::Environment, ErrorCode::EnvNotFound),
        (RecordKind::Service, ErrorCode::ServiceNotFound),
        (RecordKind::Deployment, ErrorCode::DeploymentNotFound),
        (RecordKind::RuleProfile, ErrorCode::RuleProfileNotFound),
        (RecordKind::OperationBinding, ErrorCode::BindingNotFound),
    ];
    for (kind, code) in expected {
        let err = r.get(kind, "nope").unwrap_err();
        assert_eq!(err.code, code);
        assert!(err.to_string().starts_with(code.as_str()));
    }
}

#[test]
fn list_sorts_by_kind_then_id_filters_and_summarizes() {
    let f = Fixture::standard();
    let r = f.open();
    let all = r.list(None, None).unwrap();
    let keys: Vec<(RecordKind, String)> =
        all.items.iter().map(|i| (i.kind, i.id.clone())).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let env = all.items.iter().find(|i| i.id == "test-a").unwrap();
    assert_eq!(env.summary.as_deref(), Some("test · 1 host"));
    let q = r.list(None, Some("AICO")).unwrap();
    assert!(q.items.iter().any(|i| i.id == "aicoservice"));
    assert!(
        q.items
            .iter()
            .all(|i| i.id.contains("aico") || i.name.to_lowercase().contains("aico"))
    );
    // An empty (but existing) folder is an empty registry.
    let fx = Fixture::new();
    let e = Registry::open(&fx.root).unwrap().list(None, None).unwrap();
    assert!(e.items.is_empty() && e.warnings.is_empty());
}

#[test]
fn list_warnings_are_capped_at_20_with_a_count_of_the_rest() {
    let f = Fixture::standard();
    for i in 0..25 {
        f.write(&format!("services/broken-{i:02}.yaml"), "id: [\n");
    }
    let out = f.open().list(None, None).unwrap();
    assert_eq!(out.warnings.len(), 20);
    assert_eq!(out.omitted_warnings, 5);
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["omittedWarnings"], 5);
}

#[test]
fn find_ranks_exact_prefix_name_alias_category() {
    let f = Fixture::new();
    let svc = |id: &str, name: &str, alias: &str, cat: &str| {
        f.write(
            &format!("services/{id}.yaml"),
            &format!(
                "id: {id}\nschemaVersion: 1\nname: {name}\naliases: [{alias}]\ncategory: {cat}\n"
            ),
        );
    };
    svc("pay", "Zed", "zz", "misc");
    svc("payments", "Zed", "zz", "misc");
    svc("billing", "Pay Desk", "zz", "misc");
    svc("ledger", "Zed", "paybook", "misc");
    svc("audit", "Zed", "zz", "payroll");
    svc("xpay", "Zed", "zz", "misc");
    let r = f.open();
    let hits = r.find("PAY").unwrap().hits;
    let order: Vec<(&str, String)> = hits
        .iter()
        .map(|h| {
            (
                h.id.as_str(),
                serde_json::to_value(h.field)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("pay", "id".to_owned()),
            ("payments", "id".to_owned()),
            ("billing", "name".to_owned()),
            ("ledger", "alias".to_owned()),
            ("audit", "category".to_owned()),
            ("xpay", "id".to_owned()),
        ]
    );
    assert_eq!(r.find("p").unwrap_err().code, ErrorCode::InvalidArgument);
    assert!(r.find("nothing-like-this").unwrap().hits.is_empty());
}

#[test]
fn find_returns_at_most_25_hits() {
    let f = Fixture::new();
    for i in 0..40 {
        f.write(
            &format!("services/svc-{i:02}.yaml"),
            &format!("id: svc-{i:02}\nschemaVersion: 1\nname: S\n"),
        );
    }
    let hits = f.open().find("svc").unwrap().hits;
    assert_eq!(hits.len(), 25);
    assert_eq!(hits[0].id, "svc-00");
}

// ---------------------------------------------------------------- refresh

#[test]
fn hand_edits_are_seen_and_unchanged_files_are_not_reparsed() {
    let f = Fixture::standard();
    let r = f.open();
    let before = r.snapshot();
    f.write(
        "services/aicoservice.yaml",
        "id: aicoservice\nschemaVersion: 1\nname: Renamed\n",
    );
    f.write(
        "services/new-one.yaml",
        "id: new-one\nschemaVersion: 1\nname: New\n",
    );
    std::fs::remove_file(f.root.join("operation-bindings/binding-001.yaml")).unwrap();
    let after = r.snapshot();
    assert_eq!(after.service("aicoservice").unwrap().name, "Renamed");
    assert!(after.service("new-one").is_some());
    assert!(after.operation_binding("binding-001").is_none());
    // Untouched records are the very same allocations: they were not re-parsed.
    let same = |kind, id| Arc::ptr_eq(before.get(kind, id).unwrap(), after.get(kind, id).unwrap());
    assert!(same(RecordKind::Environment, "test-a"));
    assert!(same(RecordKind::Deployment, "deploy-001"));
    assert!(same(RecordKind::RuleProfile, "java-common"));
    // Nothing changed: the same snapshot comes back.
    assert!(Arc::ptr_eq(&after, &r.snapshot()));
}

#[test]
fn a_kind_folder_created_later_and_config_edits_are_seen() {
    let f = Fixture::new();
    let r = f.open();
    assert_eq!(r.snapshot().total(), 0);
    f.write(
        "environments/late.yaml",
        "id: late\nschemaVersion: 1\nname: Late\ntier: dev\nplatform: vm\n",
    );
    assert!(r.snapshot().environment("late").is_some());
    f.write("envreg.yaml", "defaults: { environmentId: late }\n");
    assert_eq!(r.config().defaults.environment_id.as_deref(), Some("late"));
    f.write("envreg.yaml", "limits: [broken\n");
    let d = r.validate().diagnostics;
    assert!(d.iter().any(|d| d.code == "CONFIG_INVALID"));
    assert_eq!(r.config().limits.max_records, 10_000, "defaults apply");
}

/// A `defaults.environmentId` naming no environment is reported by validate, with the
/// code resolve then fails with, on envreg.yaml at that field; it clears once the
/// environment exists.
#[test]
fn an_unknown_default_environment_is_env_not_found() {
    let f = Fixture::standard();
    f.write("envreg.yaml", "defaults: { environmentId: staging }\n");
    let r = f.open();
    let report = r.validate();
    assert!(!report.ok);
    let found: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| d.file.as_deref() == Some("envreg.yaml"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, "ENV_NOT_FOUND");
    assert_eq!(found[0].severity, Severity::Error);
    assert_eq!(found[0].path.as_deref(), Some("defaults.environmentId"));
    assert!(found[0].message.contains("staging"), "{}", found[0].message);
    // What validate warns about is what resolve does.
    let err = r.resolve(None, None, "aicoservice", None).unwrap_err();
    assert_eq!(err.code, ErrorCode::EnvNotFound);
    f.write(
        "environments/staging.yaml",
        "id: staging\nschemaVersion: 1\nname: Staging\ntier: staging\nplatform: vm\n",
    );
    assert!(codes_for(&r, "envreg.yaml").is_empty());
    f.write("envreg.yaml", "defaults: { environmentId: test-a }\n");
    assert!(codes_for(&r, "envreg.yaml").is_empty());
}

// ---------------------------------------------------------------- sessions

#[test]
fn session_defaults_follow_the_contract_order_and_persist() {
    let f = Fixture::standard();
    let r = f.open();
    let s = session("01JSESSION");
    let err = r.default_environment(Some(&s), None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("environmentId") && err.message.contains("env_set_context"));
    f.write("envreg.yaml", "defaults: { environmentId: prod }\n");
    assert_eq!(r.default_environment(Some(&s), None).unwrap(), "prod");
    let out = r.set_context(&s, Some("test-a")).unwrap();
    assert!(out.persisted && out.warnings.is_empty());
    assert_eq!(r.default_environment(Some(&s), None).unwrap(), "test-a");
    assert_eq!(
        r.default_environment(Some(&s), Some("prod")).unwrap(),
        "prod"
    );
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.root.join("sessions/01JSESSION.json")).unwrap())
            .unwrap();
    assert_eq!(
        file,
        json!({ "sessionId": "01JSESSION", "defaultEnvironmentId": "test-a" })
    );
    // Another process (a fresh handle) reads it from disk.
    let r2 = f.open();
    assert_eq!(
        r2.get_context(&s).default_environment_id.as_deref(),
        Some("test-a")
    );
    // Sessions do not see each other.
    assert_eq!(
        r2.get_context(&session("other")).default_environment_id,
        None
    );
    let cleared = r.set_context(&s, None).unwrap();
    assert_eq!(cleared.default_environment_id, None);
    assert_eq!(r.default_environment(Some(&s), None).unwrap(), "prod");
    assert_eq!(
        r.set_context(&s, Some("nope")).unwrap_err().code,
        ErrorCode::EnvNotFound
    );
}

#[test]
fn unwritable_session_store_keeps_the_choice_in_memory() {
    let f = Fixture::standard();
    f.write("sessions", "a file where the folder should be");
    let r = f.open();
    let s = session("s-1");
    let out = r.set_context(&s, Some("test-a")).unwrap();
    assert!(!out.persisted);
    assert_eq!(out.warnings[0].code, "SESSION_CONTEXT_UNPERSISTED");
    assert_eq!(
        r.get_context(&s).default_environment_id.as_deref(),
        Some("test-a")
    );
    assert!(!r.get_context(&s).persisted);
}

#[test]
fn session_ids_are_checked() {
    for bad in ["", "../x", "a/b", ".hidden", &"x".repeat(129)] {
        assert_eq!(
            SessionId::new(bad).unwrap_err().code,
            ErrorCode::InvalidArgument,
            "{bad:?}"
        );
    }
    assert!(SessionId::new("9f1c2d3e-AB12-4c5d-8e9f-0123456789ab").is_ok());
}

// ---------------------------------------------------------------- writes

fn service_json(id: &str, name: &str) -> serde_json::Value {
    json!({ "id": id, "schemaVersion": 1, "name": name, "ruleProfileRefs": ["java-common"] })
}

#[test]
fn save_creates_then_replaces_with_backup_and_host_timestamps() {
    let f = Fixture::standard();
    let r = f.open();
    let plan = r
        .plan_save(RecordKind::Service, service_json("fresh", "Fresh"), false)
        .unwrap();
    assert!(plan.approval().is_none());
    let out = r.commit_save(plan).unwrap();
    assert!(out.created && !out.dry_run);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let first = r.get(RecordKind::Service, "fresh").unwrap();
    let created_at = first.record["createdAt"].as_str().unwrap().to_owned();
    assert!(
        time::OffsetDateTime::parse(&created_at, &time::format_description::well_known::Rfc3339)
            .is_ok()
    );

    let mut second = service_json("fresh", "Fresh 2");
    second["createdAt"] = json!("1999-01-01T00:00:00Z");
    second["updatedAt"] = json!("1999-01-01T00:00:00Z");
    let out = r
        .commit_save(r.plan_save(RecordKind::Service, second, false).unwrap())
        .unwrap();
    assert!(!out.created);
    let got = r.get(RecordKind::Service, "fresh").unwrap();
    assert_eq!(got.record["name"], "Fresh 2");
    assert_eq!(
        got.record["createdAt"],
        created_at.as_str(),
        "createdAt survives a replace"
    );
    assert_ne!(got.record["updatedAt"], "1999-01-01T00:00:00Z");
    let backups: Vec<_> = std::fs::read_dir(f.root.join(".backups/services"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    assert_eq!(backups.len(), 1);
    assert!(
        backups[0].starts_with("fresh.") && backups[0].ends_with("Z.yaml"),
        "{backups:?}"
    );
    // No temp file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(f.root.join("services"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn unknown_fields_survive_load_get_save_get() {
    let f = Fixture::standard();
    f.write("services/keep.yaml", "id: keep\nschemaVersion: 1\nname: Keep\nowner: { team: payments, pager: [a, b] }\nx-extra: 42\n");
    let r = f.open();
    let got = r.get(RecordKind::Service, "keep").unwrap();
    r.commit_save(
        r.plan_save(RecordKind::Service, got.record.clone(), false)
            .unwrap(),
    )
    .unwrap();
    let again = r.get(RecordKind::Service, "keep").unwrap();
    assert_eq!(
        again.record["owner"],
        json!({ "team": "payments", "pager": ["a", "b"] })
    );
    assert_eq!(again.record["x-extra"], 42);
}

#[test]
fn tricky_strings_round_trip_through_save() {
    let f = Fixture::standard();
    let r = f.open();
    let rec = json!({ "id": "tricky", "schemaVersion": 1, "name": "no",
        "variables": { "a": "0755", "b": "true", "c": "null", "d": "", "e": "x: y", "f": "- z", "g": "#c", "h": "line1\nline2", "i": "~" } });
    r.commit_save(
        r.plan_save(RecordKind::Service, rec.clone(), false)
            .unwrap(),
    )
    .unwrap();
    let got = r.get(RecordKind::Service, "tricky").unwrap();
    assert_eq!(got.record["variables"], rec["variables"]);
    assert_eq!(got.record["name"], "no");
}

#[test]
fn dry_run_writes_nothing() {
    let f = Fixture::standard();
    let r = f.open();
    let out = r
        .commit_save(
            r.plan_save(RecordKind::Service, service_json("dry", "Dry"), true)
                .unwrap(),
        )
        .unwrap();
    assert!(out.dry_run && out.created);
    assert!(!f.root.join("services/dry.yaml").exists());
}

#[test]
fn save_reports_broken_references_as_warnings_and_still_writes() {
    let f = Fixture::standard();
    let r = f.open();
    let rec = json!({ "id": "d-new", "schemaVersion": 1, "name": "D", "environmentRef": "test-a", "serviceRef": "ghost" });
    let out = r
        .commit_save(r.plan_save(RecordKind::Deployment, rec, false).unwrap())
        .unwrap();
    assert_eq!(out.warnings.len(), 1);
    assert_eq!(out.warnings[0].code, "SERVICE_NOT_FOUND");
    assert_eq!(out.warnings[0].severity, Severity::Warning);
    assert!(f.root.join("deployments/d-new.yaml").exists());
}

#[test]
fn invalid_records_are_record_invalid_with_issues() {
    let r = Fixture::standard().open();
    let cases = [
        json!({ "schemaVersion": 1, "name": "x" }),
        json!({ "id": "x", "schemaVersion": 1 }),
        json!({ "id": "x", "schemaVersion": 2, "name": "x" }),
        json!({ "id": "x", "schemaVersion": 1, "name": "x", "ruleProfileRefs": "java-common" }),
        json!({ "id": "x", "schemaVersion": 1, "name": "x", "variables": { "a": "{{broken" } }),
        json!("not an object"),
    ];
    for rec in cases {
        let err = r
            .plan_save(RecordKind::Service, rec.clone(), false)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::RecordInvalid, "{rec}");
        assert!(
            err.details.as_ref().unwrap()["issues"]
                .as_array()
                .is_some_and(|i| !i.is_empty())
        );
    }
}

#[test]
fn record_limits_are_enforced() {
    let f = Fixture::standard();
    f.write(
        "envreg.yaml",
        "limits: { maxRecords: 7, maxRecordBytes: 300 }\n",
    );
    let r = f.open();
    assert_eq!(r.snapshot().total(), 7);
    let err = r
        .plan_save(RecordKind::Service, service_json("one-more", "x"), false)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RecordLimitExceeded);
    // Replacing an existing record is not growth.
    let replace = json!({ "id": "aicoservice", "schemaVersion": 1, "name": "Aico" });
    assert!(r.plan_save(RecordKind::Service, replace, false).is_ok());
    let big = json!({ "id": "aicoservice", "schemaVersion": 1, "name": "x", "description": "y".repeat(400) });
    assert_eq!(
        r.plan_save(RecordKind::Service, big, false)
            .unwrap_err()
            .code,
        ErrorCode::RecordTooLarge
    );
}

#[test]
fn production_saves_and_deletes_need_approval_whatever_the_channel() {
    let f = Fixture::standard();
    let r = f.open();
    let prod_env = json!({ "id": "prod", "schemaVersion": 1, "name": "P", "tier": "production", "platform": "vm" });
    let plan = r
        .plan_save(RecordKind::Environment, prod_env.clone(), false)
        .unwrap();
    let req = plan.approval().unwrap();
    assert_eq!(req.tool, "env_save");
    let prod_dep = json!({ "id": "deploy-prod", "schemaVersion": 1, "name": "x", "environmentRef": "prod", "serviceRef": "aicoservice" });
    assert!(
        r.plan_save(RecordKind::Deployment, prod_dep, false)
            .unwrap()
            .approval()
            .is_some()
    );
    let test_dep = json!({ "id": "deploy-001", "schemaVersion": 1, "name": "x", "environmentRef": "test-a", "serviceRef": "aicoservice" });
    assert!(
        r.plan_save(RecordKind::Deployment, test_dep, false)
            .unwrap()
            .approval()
            .is_none()
    );
    assert!(
        r.plan_delete(RecordKind::OperationBinding, "binding-001", true)
            .unwrap()
            .approval()
            .is_some()
    );
    assert!(
        r.plan_delete(RecordKind::OperationBinding, "binding-001", false)
            .unwrap()
            .approval()
            .is_none()
    );
    // A dry run writes nothing, so it asks nobody.
    assert!(
        r.plan_save(RecordKind::Environment, prod_env.clone(), true)
            .unwrap()
            .approval()
            .is_none()
    );
    // `approvalChannel: host` names who approves (the MCP host), not whether approval is
    // needed: the plan still carries the request and the approver decides what it means.
    f.write("envreg.yaml", "writePolicy: { approvalChannel: host }\n");
    assert!(
        r.plan_save(RecordKind::Environment, prod_env.clone(), false)
            .unwrap()
            .approval()
            .is_some()
    );
    assert!(
        r.plan_delete(RecordKind::OperationBinding, "binding-001", true)
            .unwrap()
            .approval()
            .is_some()
    );
    f.write("envreg.yaml", "writePolicy: { requireApprovalForProductionSave: false, requireApprovalForDelete: false }\n");
    assert!(
        r.plan_save(RecordKind::Environment, prod_env, false)
            .unwrap()
            .approval()
            .is_none()
    );
    assert!(
        r.plan_delete(RecordKind::OperationBinding, "binding-001", true)
            .unwrap()
            .approval()
            .is_none()
    );
}

#[test]
fn delete_reports_blockers_refuses_in_use_and_backs_up() {
    let f = Fixture::standard();
    let r = f.open();
    let check = r
        .commit_delete(
            r.plan_delete(RecordKind::Environment, "test-a", false)
                .unwrap(),
        )
        .unwrap();
    assert!(!check.deleted);
    let paths: Vec<(String, String)> = check
        .blockers
        .iter()
        .map(|b| (b.id.clone(), b.path.clone()))
        .collect();
    assert_eq!(
        paths,
        vec![
            ("deploy-001".to_owned(), "environmentRef".to_owned()),
            ("binding-001".to_owned(), "match.environmentRef".to_owned())
        ]
    );
    assert!(f.root.join("environments/test-a.yaml").exists());
    let err = r
        .commit_delete(
            r.plan_delete(RecordKind::Environment, "test-a", true)
                .unwrap(),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RecordInUse);
    assert_eq!(
        err.details.unwrap()["blockers"].as_array().unwrap().len(),
        2
    );
    assert!(f.root.join("environments/test-a.yaml").exists());

    let done = r
        .commit_delete(
            r.plan_delete(RecordKind::OperationBinding, "binding-001", true)
                .unwrap(),
        )
        .unwrap();
    assert!(done.deleted && done.blockers.is_empty());
    assert!(!f.root.join("operation-bindings/binding-001.yaml").exists());
    assert_eq!(
        std::fs::read_dir(f.root.join(".backups/operation-bindings"))
            .unwrap()
            .count(),
        1
    );
    assert_eq!(
        r.get(RecordKind::OperationBinding, "binding-001")
            .unwrap_err()
            .code,
        ErrorCode::BindingNotFound
    );
    assert_eq!(
        r.plan_delete(RecordKind::OperationBinding, "binding-001", true)
            .unwrap_err()
            .code,
        ErrorCode::BindingNotFound
    );
}

#[test]
fn a_broken_file_can_still_be_deleted_or_replaced() {
    let f = Fixture::standard();
    f.write("services/wreck.yaml", "id: [\n");
    let r = f.open();
    assert!(
        r.get(RecordKind::Service, "wreck")
            .unwrap_err()
            .message
            .contains("has errors")
    );
    let out = r
        .commit_save(
            r.plan_save(RecordKind::Service, service_json("wreck", "Fixed"), false)
                .unwrap(),
        )
        .unwrap();
    assert!(!out.created, "a file existed");
    assert_eq!(
        r.get(RecordKind::Service, "wreck").unwrap().record["name"],
        "Fixed"
    );
}

#[test]
fn saving_over_a_yml_file_replaces_it_with_yaml() {
    let f = Fixture::standard();
    f.write("services/old.yml", "id: old\nschemaVersion: 1\nname: Old\n");
    let r = f.open();
    r.commit_save(
        r.plan_save(RecordKind::Service, service_json("old", "New"), false)
            .unwrap(),
    )
    .unwrap();
    assert!(!f.root.join("services/old.yml").exists());
    assert_eq!(
        r.get(RecordKind::Service, "old").unwrap().record["name"],
        "New"
    );
    assert!(
        r.validate()
            .diagnostics
            .iter()
            .all(|d| d.code != "DUPLICATE_ID")
    );
}

/// Root ignores permission bits, so unwritability is made structural: the kind folder
/// path is a regular file, and (second case) the lock file path is a folder.
#[test]
fn unwritable_registry_is_storage_unwritable() {
    let f = Fixture::standard();
    std::fs::remove_dir_all(f.root.join("services")).unwrap();
    f.write("services", "not a folder");
    let r = f.open();
    let err = r
        .commit_save(
            r.plan_save(RecordKind::Service, service_json("x", "X"), false)
                .unwrap(),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::StorageUnwritable);
    assert!(err.message.starts_with("cannot"), "{}", err.message);

    let g = Fixture::standard();
    std::fs::create_dir_all(g.root.join(".envreg.lock")).unwrap();
    let r = g.open();
    let err = r
        .commit_save(
            r.plan_save(RecordKind::Service, service_json("y", "Y"), false)
                .unwrap(),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::StorageUnwritable);
    let err = r
        .commit_delete(
            r.plan_delete(RecordKind::OperationBinding, "binding-001", true)
                .unwrap(),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::StorageUnwritable);
}

#[test]
fn open_requires_a_folder() {
    let f = Fixture::new();
    assert_eq!(
        Registry::open(f.root.join("missing")).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    f.write("file", "x");
    assert_eq!(
        Registry::open(f.root.join("file")).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn registry_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Registry>();
    let _ = Path::new("");
}

/// Two handles (as two processes would) saving the same record concurrently: every
/// save succeeds, the file is always one whole version, no temp file survives.
#[test]
fn concurrent_saves_of_one_record_serialize_cleanly() {
    let f = Fixture::standard();
    let root = f.root.clone();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let root = root.clone();
            std::thread::spawn(move || {
                let r = Registry::open(&root).unwrap();
                for i in 0..40 {
                    let rec = json!({ "id": "race", "schemaVersion": 1, "name": format!("writer {w} round {i}") });
                    r.commit_save(r.plan_save(RecordKind::Service, rec, false).unwrap()).unwrap();
                }
            })
        })
        .collect();
    let reader = Registry::open(&root).unwrap();
    for _ in 0..40 {
        // Readers never see a torn file: either no record yet, or a whole one.
        if let Ok(got) = reader.get(RecordKind::Service, "race") {
            assert!(got.record["name"].as_str().unwrap().starts_with("writer "));
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    let r = Registry::open(&root).unwrap();
    let name = r.get(RecordKind::Service, "race").unwrap().record["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        name == "writer 0 round 39" || name == "writer 1 round 39",
        "{name}"
    );
    assert!(r.validate().ok);
    let temps = std::fs::read_dir(root.join("services"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(temps, 0);
    // 79 replacements, each backed up.
    assert_eq!(
        std::fs::read_dir(root.join(".backups/services"))
            .unwrap()
            .count(),
        79
    );
}

// ---------------------------------------------------------------- what users see

#[test]
fn snapshot_of_a_validate_report() {
    let f = Fixture::standard();
    f.write(
        "services/broken.yaml",
        "id: broken\nschemaVersion: 1\nname: ok\naliases: [unclosed, {a: 1}\nnext: 2\n",
    );
    f.write(
        "services/svc-a.yaml",
        "id: svc-b\nschemaVersion: 1\nname: B\n",
    );
    f.write(
        "services/lonely.yaml",
        "id: lonely\nschemaVersion: 1\nname: L\nruleProfileRefs: [java-commn]\n",
    );
    f.write(
        "rule-profiles/p-a.yaml",
        "id: p-a\nschemaVersion: 1\nname: A\nextends: [p-a]\npaths: { x: \"{{open\" }\n",
    );
    f.write("deployments/d-x.yaml", "id: d-x\nschemaVersion: 1\nname: X\nenvironmentRef: test-a\nserviceRef: aicoservice\nvariables: { appName: other }\n");
    f.write(
        "services/typed.yaml",
        "id: typed\nschemaVersion: 1\nname: [not, a, string]\n",
    );
    insta::assert_json_snapshot!("validate_report", f.open().validate());
}

#[test]
fn snapshot_of_a_saved_file() {
    let f = Fixture::standard();
    let r = f.open();
    let rec = json!({ "id": "shop", "schemaVersion": 1, "name": "Shop", "aliases": ["store"],
        "variables": { "port": 8080, "mode": "0755", "flag": "no" }, "owner": { "team": "web" } });
    r.commit_save(r.plan_save(RecordKind::Service, rec, false).unwrap())
        .unwrap();
    let text = std::fs::read_to_string(f.root.join("services/shop.yaml")).unwrap();
    let stamp = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    insta::assert_snapshot!(
        "saved_service_yaml",
        stamp.replace_all(&text, "<timestamp>")
    );
}

/// A writer killed mid-save leaves `.<id>.yaml.tmp`; it is never loaded, and the next
/// save of that record reuses and consumes it.
#[test]
fn a_stale_temp_file_from_a_killed_writer_is_ignored_and_reused() {
    let f = Fixture::standard();
    f.write(
        "services/.stale.yaml.tmp",
        "id: stale\nschemaVersion: 1\nname: torn half-writ",
    );
    let r = f.open();
    assert!(r.snapshot().service("stale").is_none());
    assert!(r.validate().ok);
    r.commit_save(
        r.plan_save(RecordKind::Service, service_json("stale", "Whole"), false)
            .unwrap(),
    )
    .unwrap();
    assert!(!f.root.join("services/.stale.yaml.tmp").exists());
    assert_eq!(
        r.get(RecordKind::Service, "stale").unwrap().record["name"],
        "Whole"
    );
}
