//! JSON Schema of each record kind (`envreg schema KIND`), derived from the typed model
//! in [`crate::model`] that loading uses, so the two cannot disagree.

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
