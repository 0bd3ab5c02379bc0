//! Record ids: data, never paths.
//!
//! An id matches `^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$` and contains no `..`
//! (data model §2). Every entry point that takes an id checks it here *before* any file
//! system access, so `../etc/passwd`, `a/b`, `Test-A` or a 200-character id is an
//! `INVALID_ARGUMENT` that never reaches `open(2)`. The check is a hand-written scan
//! rather than a regex: it runs on every call and is trivially auditable.

use crate::error::EnvError;

/// Longest id the pattern allows: 1 + 62 + 1.
pub const MAX_ID_LEN: usize = 64;

/// `true` when `id` is a well-formed record id.
pub fn is_valid_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_ID_LEN {
        return false;
    }
    let edge_ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let inner_ok = |b: u8| edge_ok(b) || matches!(b, b'.' | b'_' | b'-');
    edge_ok(bytes[0])
        && edge_ok(bytes[bytes.len() - 1])
        && bytes.iter().all(|&b| inner_ok(b))
        && !id.contains("..")
}

/// Check an id argument; the error names the field so a model can correct itself.
/// The offending value is echoed only when short, and always debug-escaped.
pub fn check_id(field: &str, id: &str) -> Result<(), EnvError> {
    if is_valid_id(id) {
        return Ok(());
    }
    let shown: String = id.chars().take(80).collect();
    let ellipsis = if id.chars().count() > 80 { "…" } else { "" };
    Err(EnvError::invalid_argument(format!(
        "{field} {shown:?}{ellipsis} is not a valid id: use 1-64 lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit, without '..' (ids are names, not paths)"
    ))
    .with_details(serde_json::json!({ "field": field })))
}

/// The caller's session id. It becomes a file name (`sessions/<id>.json`), so it is
/// checked like a record id, but with upper case allowed (MCP session ids are often
/// mixed-case UUIDs or ULIDs): 1–128 of `[A-Za-z0-9._-]`, not starting with `.`.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_contract_examples() {
        for id in [
            "test-a",
            "aicoservice",
            "deploy-001",
            "java-common",
            "binding-001",
            "a",
            "a.b_c-d",
            "0",
        ] {
            assert!(is_valid_id(id), "{id}");
        }
    }

    #[test]
    fn rejects_paths_case_and_length() {
        let long = "a".repeat(200);
        for id in [
            "",
            "../etc",
            "a/b",
            "/abs",
            "Test-A",
            "a..b",
            ".hidden",
            "trailing-",
            "-lead",
            "sp ace",
            "é",
            long.as_str(),
            "a\\b",
            "a\0b",
        ] {
            let err = check_id("id", id).unwrap_err();
            assert_eq!(err.code, crate::ErrorCode::InvalidArgument, "{id:?}");
        }
        assert!(is_valid_id(&"a".repeat(64)));
        assert!(!is_valid_id(&"a".repeat(65)));
    }

    proptest! {
        #[test]
        fn agrees_with_the_data_model_regex(id in "[a-zA-Z0-9._/-]{0,70}") {
            let re = regex::Regex::new(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$").unwrap();
            let expected = re.is_match(&id) && !id.contains("..");
            prop_assert_eq!(is_valid_id(&id), expected);
        }
    }
}
