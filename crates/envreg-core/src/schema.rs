//! JSON Schema of each record kind (`envreg schema KIND`) and of `envreg.yaml`, derived
//! from the typed model in [`crate::model`] / [`crate::config`] that loading uses, so
//! the schema an editor checks against and the checks the registry runs cannot disagree
//! (`tests/it/schema.rs` holds them to that in both directions).
//!
//! Unknown fields are flagged (`additionalProperties: false` on every object with named
//! fields): the registry keeps them (data model §2) but reports each as `UNKNOWN_FIELD`,
//! so an editor shows the same typo the loader does. Free maps (`variables`, `paths`,
//! `parameters`, `labels`) stay open. The same schemas answer "which fields are known
//! here" for the loader's did-you-mean ([`known_fields`]).

use std::sync::OnceLock;

use serde_json::Value;

use crate::kind::RecordKind;
use crate::model::{Deployment, Environment, OperationBinding, RuleProfile, Service};

/// What a field path is in: a record of some kind, or `envreg.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOwner {
    Record(RecordKind),
    Config,
}

/// The JSON Schema (draft 2020-12) of one record kind.
pub fn record_schema(kind: RecordKind) -> serde_json::Value {
    let schema = match kind {
        RecordKind::Environment => schemars::schema_for!(Environment),
        RecordKind::Service => schemars::schema_for!(Service),
        RecordKind::Deployment => schemars::schema_for!(Deployment),
        RecordKind::RuleProfile => schemars::schema_for!(RuleProfile),
        RecordKind::OperationBinding => schemars::schema_for!(OperationBinding),
    };
    closed(schema.to_value())
}

/// The JSON Schema of `envreg.yaml` (every key optional; defaults as data model §9).
pub fn config_schema() -> serde_json::Value {
    closed(schemars::schema_for!(crate::config::Config).to_value())
}

/// Every object schema with named `properties` and no `additionalProperties` of its own
/// gets `additionalProperties: false`.
fn closed(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                    map.insert("additionalProperties".to_owned(), Value::Bool(false));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

/// The schemas, built once: the loader asks them only when a file has unknown keys.
fn cached(owner: FieldOwner) -> &'static Value {
    static SCHEMAS: OnceLock<Vec<Value>> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        let mut v: Vec<Value> = RecordKind::ALL.iter().map(|k| record_schema(*k)).collect();
        v.push(config_schema());
        v
    });
    match owner {
        FieldOwner::Record(kind) => &all[kind.index()],
        FieldOwner::Config => &all[RecordKind::ALL.len()],
    }
}

/// The field names known at `parent` (a field path such as `match`, `hosts[0]`, or ``
/// for the top level), in schema order; `None` when the path leads nowhere known.
pub fn known_fields(owner: FieldOwner, parent: &str) -> Option<Vec<String>> {
    let root = cached(owner);
    let mut node = object_of(root, root)?;
    for part in parent.split('.').filter(|p| !p.is_empty()) {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        if !key.is_empty() {
            node = object_of(root, node.get("properties")?.get(key)?)?;
        }
        for _ in 0..rest.matches(']').count() {
            node = object_of(root, node.get("items")?)?;
        }
    }
    let props = node.get("properties")?.as_object()?;
    Some(props.keys().cloned().collect())
}

/// Follows `$ref` and the first `anyOf`/`oneOf` alternative that is an object or an array.
fn object_of<'a>(root: &'a Value, mut node: &'a Value) -> Option<&'a Value> {
    for _ in 0..8 {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            node = root.get("$defs")?.get(r.strip_prefix("#/$defs/")?)?;
            continue;
        }
        if let Some(alts) = node
            .get("anyOf")
            .or_else(|| node.get("oneOf"))
            .and_then(Value::as_array)
        {
            node = alts
                .iter()
                .find(|a| a.get("type").and_then(Value::as_str) != Some("null"))?;
            continue;
        }
        return Some(node);
    }
    None
}

/// Another record kind with a top-level field `key` (`logSources` → rule profile), for
/// a hint on a field written in the wrong kind of record.
pub fn kind_with_field(kind: RecordKind, key: &str) -> Option<&'static str> {
    RecordKind::ALL
        .iter()
        .filter(|k| **k != kind)
        .find(|k| {
            cached(FieldOwner::Record(**k))
                .get("properties")
                .is_some_and(|p| p.get(key).is_some())
        })
        .map(|k| k.noun().0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_name_their_kind_and_the_config_defaults() {
        assert_eq!(
            record_schema(RecordKind::RuleProfile)["title"],
            "RuleProfile"
        );
        let tier = &record_schema(RecordKind::Environment)["$defs"]["Tier"]["enum"];
        assert_eq!(
            *tier,
            serde_json::json!(["dev", "test", "staging", "production"])
        );
        let config = config_schema();
        assert_eq!(config["title"], "Config");
        assert!(config.get("required").is_none());
    }

    #[test]
    fn known_fields_follow_refs_and_items() {
        let binding = FieldOwner::Record(RecordKind::OperationBinding);
        assert_eq!(
            known_fields(binding, "match").unwrap(),
            ["environmentRef", "serviceRef", "deploymentRef"]
        );
        let env = FieldOwner::Record(RecordKind::Environment);
        assert_eq!(
            known_fields(env, "hosts[0]").unwrap(),
            ["id", "address", "roles"]
        );
        assert!(known_fields(env, "").unwrap().contains(&"tier".to_owned()));
        assert_eq!(
            known_fields(FieldOwner::Config, "writePolicy").unwrap(),
            [
                "requireApprovalForDelete",
                "requireApprovalForProductionSave",
                "approvalChannel"
            ]
        );
        assert_eq!(
            kind_with_field(RecordKind::Service, "logSources"),
            Some("rule profile")
        );
    }
}
