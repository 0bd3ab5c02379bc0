//! The five record kinds and everything that differs between them by kind alone:
//! wire name, folder on disk, not-found error code, plural for render lines.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{EnvError, ErrorCode};

/// A record kind. `Ord` is the contract's `RecordKind` order, which is the order of
/// every "sorted by kind" result.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum RecordKind {
    Environment,
    Service,
    Deployment,
    RuleProfile,
    OperationBinding,
}

impl RecordKind {
    /// Contract order.
    pub const ALL: [RecordKind; 5] = [
        RecordKind::Environment,
        RecordKind::Service,
        RecordKind::Deployment,
        RecordKind::RuleProfile,
        RecordKind::OperationBinding,
    ];

    /// The wire name: `environment`, `service`, `deployment`, `ruleProfile`, `operationBinding`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Environment => "environment",
            RecordKind::Service => "service",
            RecordKind::Deployment => "deployment",
            RecordKind::RuleProfile => "ruleProfile",
            RecordKind::OperationBinding => "operationBinding",
        }
    }

    /// The folder under the registry root (data model §1).
    pub fn dir_name(self) -> &'static str {
        match self {
            RecordKind::Environment => "environments",
            RecordKind::Service => "services",
            RecordKind::Deployment => "deployments",
            RecordKind::RuleProfile => "rule-profiles",
            RecordKind::OperationBinding => "operation-bindings",
        }
    }

    /// Human words for render lines: `("environment", "environments")`.
    pub fn noun(self) -> (&'static str, &'static str) {
        match self {
            RecordKind::Environment => ("environment", "environments"),
            RecordKind::Service => ("service", "services"),
            RecordKind::Deployment => ("deployment", "deployments"),
            RecordKind::RuleProfile => ("rule profile", "rule profiles"),
            RecordKind::OperationBinding => ("operation binding", "operation bindings"),
        }
    }

    /// The error a missing record of this kind is reported with.
    pub fn not_found_code(self) -> ErrorCode {
        match self {
            RecordKind::Environment => ErrorCode::EnvNotFound,
            RecordKind::Service => ErrorCode::ServiceNotFound,
            RecordKind::Deployment => ErrorCode::DeploymentNotFound,
            RecordKind::RuleProfile => ErrorCode::RuleProfileNotFound,
            RecordKind::OperationBinding => ErrorCode::BindingNotFound,
        }
    }

    /// Position in contract order, for arrays indexed by kind.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kind whose folder is `dir` (`"rule-profiles"` → `RuleProfile`).
    pub fn from_dir_name(dir: &str) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| k.dir_name() == dir)
    }
}

impl std::fmt::Display for RecordKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RecordKind {
    type Err = EnvError;

    fn from_str(s: &str) -> Result<RecordKind, EnvError> {
        RecordKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            EnvError::invalid_argument(format!(
                "unknown record kind {s:?}; expected one of environment, service, deployment, ruleProfile, operationBinding"
            ))
        })
    }
}

/// Here rather than in `error`, which knows no record kinds: the vocabulary of kinds
/// builds on the vocabulary of errors, not the other way round.
impl EnvError {
    /// The kind-specific not-found error, e.g. `ENV_NOT_FOUND: environment test-z not found`.
    pub fn not_found(kind: RecordKind, id: &str) -> EnvError {
        EnvError::new(kind.not_found_code(), format!("{kind} {id} not found"))
            .with_details(serde_json::json!({ "kind": kind, "id": id }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_order_is_contract_order() {
        let mut sorted = RecordKind::ALL;
        sorted.sort();
        assert_eq!(sorted, RecordKind::ALL);
        for kind in RecordKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            assert_eq!(kind.as_str().parse::<RecordKind>().unwrap(), kind);
            assert_eq!(RecordKind::from_dir_name(kind.dir_name()), Some(kind));
            assert_eq!(RecordKind::ALL[kind.index()], kind);
        }
    }

    #[test]
    fn unknown_kind_is_invalid_argument() {
        let err = "rule_profile".parse::<RecordKind>().unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
    }
}
