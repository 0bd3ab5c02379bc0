//! JSON Schema of each record kind (`envreg schema KIND`) and of `envreg.yaml`, derived
//! from the typed model in [`crate::model`] / [`crate::config`] that loading uses, so
//! the schema an editor checks against and the checks the loader runs cannot disagree
//! (`tests/schema.rs` holds them to that in both directions).
//!
//! Unknown fields are allowed (no `additionalProperties: false`): the registry keeps
//! them (data model §2), so an editor must not flag them either.

use crate::kind::RecordKind;
use crate::model::{Deployment, Environment, OperationBinding, RuleProfile, Service};

/// The JSON Schema (draft 2020-12) of one record kind.
pub fn record_schema(kind: RecordKind) -> serde_json::Value {
    let schema = match kind {
        RecordKind::Environment => schemars::schema_for!(Environment),
        RecordKind::Service => schemars::schema_for!(Service),
        RecordKind::Deployment => schemars::schema_for!(Deployment),
        RecordKind::RuleProfile => schemars::schema_for!(RuleProfile),
        RecordKind::OperationBinding => schemars::schema_for!(OperationBinding),
    };
    schema.to_value()
}

/// The JSON Schema of `envreg.yaml` (every key optional; defaults as data model §9).
pub fn config_schema() -> serde_json::Value {
    schemars::schema_for!(crate::config::Config).to_value()
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
}
