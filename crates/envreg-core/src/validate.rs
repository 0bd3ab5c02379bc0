//! Cross-record validation (data model §4) and the `env_validate` output.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::snapshot::Snapshot;

/// Record counts per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub environment: usize,
    pub service: usize,
    pub deployment: usize,
    pub rule_profile: usize,
    pub operation_binding: usize,
}

/// `env_validate` result: a report, never a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateOutput {
    /// `true` when no diagnostic has severity `error`.
    pub ok: bool,
    pub counts: Counts,
    pub diagnostics: Vec<Diagnostic>,
}

/// Load diagnostics plus every cross-record check.
pub(crate) fn validate_snapshot(snapshot: &Snapshot) -> Vec<Diagnostic> {
    snapshot.load_diagnostics.clone()
}
