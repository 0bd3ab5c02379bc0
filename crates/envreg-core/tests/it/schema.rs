//! The JSON Schema of each record kind agrees with the loader: every record the loader
//! accepts validates against its schema, and documents the loader rejects for a typed
//! reason are rejected by the schema too.
#![allow(clippy::unwrap_used)] // test-support helpers outside #[test] fns

use std::path::PathBuf;

use envreg_core::RecordKind;
use envreg_core::schema::record_schema;
use serde_json::json;

fn validator(kind: RecordKind) -> jsonschema::Validator {
    jsonschema::validator_for(&record_schema(kind)).unwrap()
}

#[test]
fn every_kind_requires_the_common_fields() {
    for kind in RecordKind::ALL {
        let schema = record_schema(kind);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for field in ["id", "schemaVersion", "name"] {
            assert!(required.contains(&field), "{kind}: {required:?}");
        }
        // Unknown fields are flagged so editors show them (the loader keeps them and
        // reports UNKNOWN_FIELD).
        assert_eq!(
            schema.get("additionalProperties"),
            Some(&json!(false)),
            "{kind}"
        );
    }
}

/// Issue 19 finding 2: the schemas accepted unknown keys, so editors did not flag a
/// typo. Now they reject each one the loader reports, at any depth, and still accept
/// free maps (`variables`, `parameters`).
#[test]
fn the_schema_flags_every_unknown_key_the_loader_reports() {
    let cases = [
        (
            RecordKind::OperationBinding,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "operation": "restart",
                    "match": { "environment": "prod" }, "skill": { "name": "k" } }),
        ),
        (
            RecordKind::OperationBinding,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "operation": "restart",
                    "skill": { "name": "k" }, "policy": { "requireApproval": false } }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "logSources": [] }),
        ),
        (
            RecordKind::Environment,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "tier": "dev", "platform": "vm",
                    "hosts": [{ "id": "h", "address": "10.0.0.1", "role": ["web"] }] }),
        ),
    ];
    for (kind, doc) in cases {
        assert!(
            !validator(kind).is_valid(&doc),
            "schema accepted {kind} {doc}"
        );
        let yaml = serde_json::to_string(&doc).unwrap();
        let (_, diagnostics) = envreg_core::load::parse_record_text(kind, "a", "x/a.yaml", yaml);
        assert!(
            diagnostics.iter().any(|d| d.code == "UNKNOWN_FIELD"),
            "{kind} {doc}: {diagnostics:?}"
        );
    }
    let free_maps = json!({ "id": "a", "schemaVersion": 1, "name": "A", "operation": "restart",
        "skill": { "name": "k" }, "parameters": { "anything": "{{x}}" }, "labels": { "team": "x" } });
    assert!(validator(RecordKind::OperationBinding).is_valid(&free_maps));
    let config = jsonschema::validator_for(&envreg_core::schema::config_schema()).unwrap();
    assert!(!config.is_valid(&json!({ "writePolicy": { "approvalChanel": "host" } })));
    assert!(config.is_valid(&json!({ "writePolicy": { "approvalChannel": "host" } })));
}

#[test]
fn loaded_records_of_the_example_and_a_synthetic_registry_validate_against_their_schema() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/registry");
    let synthetic = tempfile::tempdir().unwrap();
    envreg_core::synth::generate(
        synthetic.path(),
        &envreg_core::synth::SynthSpec::scaled_down(100),
    )
    .unwrap();
    for root in [example, synthetic.path().to_path_buf()] {
        let registry = envreg_core::Registry::open(&root).unwrap();
        let snapshot = registry.snapshot();
        let mut checked = 0;
        for kind in RecordKind::ALL {
            let v = validator(kind);
            for record in snapshot.records(kind) {
                let doc = record.document().unwrap();
                let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{}: {errors:?}", record.file);
                checked += 1;
            }
        }
        assert!(checked > 10);
    }
}

#[test]
fn documents_the_loader_rejects_the_schema_rejects() {
    let cases = [
        (
            RecordKind::Environment,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "tier": "nope", "platform": "vm" }),
        ),
        (
            RecordKind::Environment,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "platform": "vm" }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "a", "schemaVersion": 1 }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "ruleProfileRefs": "x" }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "variables": { "x": [1] } }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "Bad/Id", "schemaVersion": 1, "name": "A" }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "a", "schemaVersion": 2, "name": "A" }),
        ),
        (
            RecordKind::Service,
            json!({ "id": "a", "schemaVersion": 1, "name": "" }),
        ),
        (
            RecordKind::Deployment,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "environmentRef": "e" }),
        ),
        (
            RecordKind::OperationBinding,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "operation": "x", "skill": {} }),
        ),
        (
            RecordKind::RuleProfile,
            json!({ "id": "a", "schemaVersion": 1, "name": "A", "logSources": [{ "id": "x" }] }),
        ),
    ];
    for (kind, doc) in cases {
        assert!(
            !validator(kind).is_valid(&doc),
            "schema accepted {kind} {doc}"
        );
        let yaml = serde_json::to_string(&doc).unwrap(); // JSON is YAML
        let (record, diagnostics) =
            envreg_core::load::parse_record_text(kind, "a", "x/a.yaml", yaml);
        assert!(
            record.is_none(),
            "loader accepted {kind} {doc}: {diagnostics:?}"
        );
    }
}
