//! Session defaults (data model §8, contract §1.4, §2.6, §2.7).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::error::EnvError;

/// The caller's session id. It becomes a file name (`sessions/<id>.json`), so it is
/// checked like a record id, but with upper case allowed (MCP session ids are often
/// mixed-case UUIDs or ULIDs): 1–128 of `[A-Za-z0-9._-]`, not starting with `.`.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    pub fn new(id: impl Into<String>) -> Result<SessionId, EnvError> {
        let id = id.into();
        let ok = !id.is_empty()
            && id.len() <= 128
            && !id.starts_with('.')
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(SessionId(id))
        } else {
            Err(EnvError::invalid_argument(
                "session id must be 1-128 characters of letters, digits, '.', '_' or '-', not starting with '.'",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SessionId {
    type Error = EnvError;
    fn try_from(s: String) -> Result<SessionId, EnvError> {
        SessionId::new(s)
    }
}

impl From<SessionId> for String {
    fn from(s: SessionId) -> String {
        s.0
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `env_get_context` / `env_set_context` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextOutput {
    pub session_id: String,
    /// `null` when the session has no default.
    pub default_environment_id: Option<String>,
    /// Whether the choice is on disk (`false` only after a failed write).
    pub persisted: bool,
    /// `SESSION_CONTEXT_UNPERSISTED` when the write failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Diagnostic>,
}
