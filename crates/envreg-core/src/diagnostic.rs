//! Diagnostics: what loading and validation say about the registry without failing.
//!
//! Loading never fails (rust-analyzer's "parsing produces `(T, Vec<Error>)`"): a broken
//! file becomes a [`Diagnostic`] and the rest of the registry loads. The wire shape is the
//! contract's §1.5 `Diagnostic`, plus `line`/`column` where a YAML position is known.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `info` < `warning` < `error`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// One finding about the registry. `file` is registry-relative with `/` separators
/// (`services/aicoservice.yaml`); `path` is a field path (`ruleProfileRefs[0]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// 1-based line of a YAML error, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column of a YAML error, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            code: code.to_owned(),
            message: message.into(),
            file: None,
            path: None,
            line: None,
            column: None,
        }
    }

    pub fn error(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    pub fn warning(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    pub fn info(code: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Info, code, message)
    }

    pub fn in_file(mut self, file: impl Into<String>) -> Diagnostic {
        self.file = Some(file.into());
        self
    }

    pub fn at_path(mut self, path: impl Into<String>) -> Diagnostic {
        self.path = Some(path.into());
        self
    }

    pub fn at_position(mut self, line: u32, column: u32) -> Diagnostic {
        self.line = Some(line);
        self.column = Some(column);
        self
    }
}

/// The stable diagnostic codes (data model §4 and §11). Codes that are also error codes
/// use the same spelling as [`crate::ErrorCode::as_str`].
pub mod codes {
    pub const YAML_INVALID: &str = "YAML_INVALID";
    pub const RECORD_INVALID: &str = "RECORD_INVALID";
    pub const SCHEMA_VERSION_UNSUPPORTED: &str = "SCHEMA_VERSION_UNSUPPORTED";
    pub const ID_MISMATCH: &str = "ID_MISMATCH";
    pub const DUPLICATE_ID: &str = "DUPLICATE_ID";
    pub const RULE_PROFILE_CYCLE: &str = "RULE_PROFILE_CYCLE";
    pub const TEMPLATE_INVALID: &str = "TEMPLATE_INVALID";
    pub const BINDING_CONFLICT: &str = "BINDING_CONFLICT";
    /// A key the model does not know: a warning (kept, ignored), or an error where it
    /// could widen a binding or skip an approval (`record_checks::unknown_fields`).
    pub const UNKNOWN_FIELD: &str = "UNKNOWN_FIELD";
    pub const CREDENTIAL_MISSING: &str = "CREDENTIAL_MISSING";
    pub const VARIABLE_SHADOWED: &str = "VARIABLE_SHADOWED";
    pub const ENV_NOT_FOUND: &str = "ENV_NOT_FOUND";
    pub const SERVICE_NOT_FOUND: &str = "SERVICE_NOT_FOUND";
    pub const DEPLOYMENT_NOT_FOUND: &str = "DEPLOYMENT_NOT_FOUND";
    pub const RULE_PROFILE_NOT_FOUND: &str = "RULE_PROFILE_NOT_FOUND";
    pub const RECORD_TOO_LARGE: &str = "RECORD_TOO_LARGE";
    pub const RECORD_LIMIT_EXCEEDED: &str = "RECORD_LIMIT_EXCEEDED";
    /// A file that exists but cannot be read (a FIFO, a directory named `x.yaml`, EACCES).
    pub const FILE_UNREADABLE: &str = "FILE_UNREADABLE";
    /// `envreg.yaml` is present but invalid; defaults were used.
    pub const CONFIG_INVALID: &str = "CONFIG_INVALID";
    /// `writePolicy.approvalChannel: host`: only the host's hook asks (a warning).
    pub const APPROVAL_DELEGATED_TO_HOST: &str = "APPROVAL_DELEGATED_TO_HOST";
    pub const SKILL_REGISTRY_UNAVAILABLE: &str = "SKILL_REGISTRY_UNAVAILABLE";
    pub const SESSION_CONTEXT_UNPERSISTED: &str = "SESSION_CONTEXT_UNPERSISTED";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shape_omits_unknown_position() {
        let d = Diagnostic::error(codes::RULE_PROFILE_NOT_FOUND, "x")
            .in_file("services/a.yaml")
            .at_path("ruleProfileRefs[0]");
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["severity"], "error");
        assert_eq!(json["path"], "ruleProfileRefs[0]");
        assert!(json.get("line").is_none());
        assert!(Severity::Error > Severity::Warning && Severity::Warning > Severity::Info);
    }
}
