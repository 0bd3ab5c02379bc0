//! What counts as a credential, for every place that keeps credential values out of
//! output (results, logs, errors, journal locations): one rule, here.
//!
//! Decision: judge by the *name* a value is given (an environment variable, a URL
//! query parameter), not by the value's shape — names are what a config states, while
//! key formats vary by provider. Not done: finding credentials nobody named.

/// Replaces a credential value wherever it is removed.
pub const REDACTED: &str = "[redacted]";

/// Whether a variable or parameter called `name` holds a credential: its name
/// contains `KEY`, `TOKEN`, `SECRET`, `PASSWORD` or `PASSWD` (any case).
pub fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"]
        .iter()
        .any(|needle| upper.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names() {
        for name in [
            "OPENAI_API_KEY",
            "password",
            "sslpassword",
            "GH_TOKEN",
            "client_secret",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "user", "dbname", "sslmode"] {
            assert!(!is_credential_name(name), "{name}");
        }
    }
}
