//! Read outputs: `env_list`, `env_get`, `env_find` (contract §2.1–§2.3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::kind::RecordKind;

/// Registry warnings shown by `env_list`: at most this many, plus a count of the rest.
pub const MAX_LIST_WARNINGS: usize = 20;
/// `env_find` returns at most this many hits.
pub const MAX_FIND_HITS: usize = 25;
/// `env_find` queries shorter than this are `INVALID_ARGUMENT`.
pub const MIN_FIND_QUERY_CHARS: usize = 2;

/// One line of an inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordSummary {
    pub kind: RecordKind,
    pub id: String,
    pub name: String,
    /// Kind-specific one-liner, e.g. `test · 2 hosts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// `env_list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListOutput {
    /// Sorted by kind (contract order), then id.
    pub items: Vec<RecordSummary>,
    /// Registry diagnostics of severity warning or error, at most 20.
    pub warnings: Vec<Diagnostic>,
    /// How many further warnings were left out of `warnings`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted_warnings: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `env_get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetOutput {
    /// The parsed document, unknown fields included.
    pub record: serde_json::Value,
    /// The on-disk text.
    pub yaml: String,
}

/// Which field an `env_find` hit matched, in rank order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum MatchField {
    /// Exact or prefix id match.
    Id,
    Name,
    Alias,
    Category,
}

/// One `env_find` candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindHit {
    pub kind: RecordKind,
    pub id: String,
    pub name: String,
    pub field: MatchField,
}

/// `env_find` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindOutput {
    /// Ranked: exact id, prefix id, name, alias, category; ties by kind then id. ≤ 25.
    pub hits: Vec<FindHit>,
}
