//! The one error type every fallible registry operation returns.
//!
//! An [`EnvError`] is what the contract calls an expected failure: a stable
//! [`ErrorCode`], an English message and optional machine-readable `details`. It
//! serializes as `{"code": "ENV_NOT_FOUND", "message": "…", "details": …}` and displays
//! as `CODE: message`, which is also the first line an MCP host shows.
//!
//! Invariant: a message never holds a credential value, a file body or a stack trace.
//! Constructors take ids, paths and counts, never record contents; I/O errors are
//! reduced to their [`std::io::ErrorKind`] text (an OS message never includes file
//! contents, but we still avoid echoing arbitrary strings we did not build).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The error codes of data model §11, in that order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidArgument,
    EnvNotFound,
    ServiceNotFound,
    DeploymentNotFound,
    RuleProfileNotFound,
    BindingNotFound,
    DeploymentAmbiguous,
    BindingConflict,
    RuleProfileCycle,
    SkillUnavailable,
    PolicyDenied,
    OperationUnknown,
    ParameterResolutionFailed,
    RecordInvalid,
    RecordLimitExceeded,
    RecordTooLarge,
    RecordInUse,
    StorageUnwritable,
    SessionContextUnavailable,
    InternalError,
}

impl ErrorCode {
    /// Every code, in data model §11 order (tests iterate this to prove each is reachable).
    pub const ALL: [ErrorCode; 20] = [
        ErrorCode::InvalidArgument,
        ErrorCode::EnvNotFound,
        ErrorCode::ServiceNotFound,
        ErrorCode::DeploymentNotFound,
        ErrorCode::RuleProfileNotFound,
        ErrorCode::BindingNotFound,
        ErrorCode::DeploymentAmbiguous,
        ErrorCode::BindingConflict,
        ErrorCode::RuleProfileCycle,
        ErrorCode::SkillUnavailable,
        ErrorCode::PolicyDenied,
        ErrorCode::OperationUnknown,
        ErrorCode::ParameterResolutionFailed,
        ErrorCode::RecordInvalid,
        ErrorCode::RecordLimitExceeded,
        ErrorCode::RecordTooLarge,
        ErrorCode::RecordInUse,
        ErrorCode::StorageUnwritable,
        ErrorCode::SessionContextUnavailable,
        ErrorCode::InternalError,
    ];

    /// The wire spelling, e.g. `"ENV_NOT_FOUND"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::EnvNotFound => "ENV_NOT_FOUND",
            ErrorCode::ServiceNotFound => "SERVICE_NOT_FOUND",
            ErrorCode::DeploymentNotFound => "DEPLOYMENT_NOT_FOUND",
            ErrorCode::RuleProfileNotFound => "RULE_PROFILE_NOT_FOUND",
            ErrorCode::BindingNotFound => "BINDING_NOT_FOUND",
            ErrorCode::DeploymentAmbiguous => "DEPLOYMENT_AMBIGUOUS",
            ErrorCode::BindingConflict => "BINDING_CONFLICT",
            ErrorCode::RuleProfileCycle => "RULE_PROFILE_CYCLE",
            ErrorCode::SkillUnavailable => "SKILL_UNAVAILABLE",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::OperationUnknown => "OPERATION_UNKNOWN",
            ErrorCode::ParameterResolutionFailed => "PARAMETER_RESOLUTION_FAILED",
            ErrorCode::RecordInvalid => "RECORD_INVALID",
            ErrorCode::RecordLimitExceeded => "RECORD_LIMIT_EXCEEDED",
            ErrorCode::RecordTooLarge => "RECORD_TOO_LARGE",
            ErrorCode::RecordInUse => "RECORD_IN_USE",
            ErrorCode::StorageUnwritable => "STORAGE_UNWRITABLE",
            ErrorCode::SessionContextUnavailable => "SESSION_CONTEXT_UNAVAILABLE",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An expected failure: `{code, message, details}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct EnvError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl EnvError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> EnvError {
        EnvError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Attach machine-readable details (candidate ids, issues, blockers…).
    pub fn with_details(mut self, details: Value) -> EnvError {
        self.details = Some(details);
        self
    }

    pub fn invalid_argument(message: impl Into<String>) -> EnvError {
        EnvError::new(ErrorCode::InvalidArgument, message)
    }

    /// An unexpected failure, with a message we wrote ourselves (never a foreign string
    /// that could carry file contents).
    pub fn internal(message: impl Into<String>) -> EnvError {
        EnvError::new(ErrorCode::InternalError, message)
    }

    /// A write that failed at the storage layer. Only the [`std::io::ErrorKind`] of the
    /// cause is kept, plus the registry-relative path we were writing.
    pub fn storage(action: &str, rel_path: &str, err: &std::io::Error) -> EnvError {
        EnvError::new(
            ErrorCode::StorageUnwritable,
            format!("cannot {action} {rel_path}: {}", err.kind()),
        )
        .with_details(serde_json::json!({ "path": rel_path, "ioError": err.kind().to_string() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::RecordKind;

    #[test]
    fn codes_serialize_as_their_wire_spelling() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, Value::String(code.as_str().to_owned()));
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn error_displays_code_first_and_serializes_three_fields() {
        let err = EnvError::not_found(RecordKind::Environment, "test-z");
        assert_eq!(
            err.to_string(),
            "ENV_NOT_FOUND: environment test-z not found"
        );
        let json = serde_json::to_value(&err).unwrap();
        assert_eq!(json["code"], "ENV_NOT_FOUND");
        assert_eq!(json["details"]["id"], "test-z");
        let plain = EnvError::invalid_argument("x");
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json.get("details").is_none());
    }

    #[test]
    fn storage_and_internal_errors_carry_only_what_we_wrote() {
        let io = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "secret-bearing OS text",
        );
        let err = EnvError::storage("write", "services/a.yaml", &io);
        assert_eq!(err.code, ErrorCode::StorageUnwritable);
        assert_eq!(
            err.to_string(),
            "STORAGE_UNWRITABLE: cannot write services/a.yaml: permission denied"
        );
        assert!(
            !serde_json::to_string(&err)
                .unwrap()
                .contains("secret-bearing")
        );
        let internal = EnvError::internal("x");
        assert_eq!(internal.code, ErrorCode::InternalError);
        assert!(internal.to_string().starts_with("INTERNAL_ERROR: "));
    }
}
