//! What counts as a credential, for every place that keeps credential values out of
//! output (results, logs, errors, journal locations): one rule, here.
//!
//! Decision: judge by the *name* a value is given (an environment variable, a URL
//! query parameter), not by the value's shape — names are what a config states, while
//! key formats vary by provider. The one shape judged is a URL's user-info
//! (`scheme://user:password@host`), which is a credential whatever it is called. Not
//! done: finding credentials nobody named.

/// Replaces a credential value wherever it is removed.
pub const REDACTED: &str = "[redacted]";

/// Whether a variable or parameter called `name` holds a credential (any case): its
/// name contains `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE` or
/// `CREDENTIAL`, or it is `PASS` or ends in `_PASS` (`DB_PASS`, `SMTP_PASS`).
/// Decision: `PASS` only as a whole word at the end — `contains` would take
/// `PASSPORT_DIR` or `COMPASS_HOME`, and every value of those would be cut from output.
pub fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
    ]
    .iter()
    .any(|needle| upper.contains(needle))
        || upper == "PASS"
        || upper.ends_with("_PASS")
}

/// Where the authority of a URL (`scheme://` up to the first of these) ends.
fn ends_authority(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '/' | '?' | '#' | ')' | '(' | '"' | '\'' | '<' | '>' | '`'
        )
}

/// `text` with the credentials inside every URL replaced: `scheme://user:pw@host` →
/// `scheme://user:[redacted]@host`, and a bare `scheme://token@host` →
/// `scheme://[redacted]@host` (a user without password is often a token: fail closed).
pub fn redact_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        let end = rest.find(ends_authority).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            if let Some((user, _)) = rest[..at].split_once(':') {
                out.push_str(user);
                out.push(':');
            }
            out.push_str(REDACTED);
            rest = &rest[at..];
        }
    }
    out.push_str(rest);
    out
}

/// For text that arrives in pieces: where the unfinished end of `text` begins that a
/// later piece could turn into URL credentials — a `://` whose authority has not
/// ended yet, or a trailing `:` or `:/` — so it can be held back until it has.
pub fn open_url_authority(text: &str) -> Option<usize> {
    if let Some(i) = text.rfind("://")
        && !text[i + 3..].contains(ends_authority)
    {
        return Some(i);
    }
    ["://", ":/", ":"]
        .iter()
        .find(|end| text.ends_with(**end))
        .map(|end| text.len() - end.len())
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
            "MY_TOKEN",
            "client_secret",
            // Before: not credentials.
            "DB_PASS",
            "smtp_pass",
            "pass",
            "GPG_PASSPHRASE",
            "AWS_CREDENTIALS",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "user",
            "dbname",
            "sslmode",
            "PASSPORT_DIR",
            "COMPASS_HOME",
            "BYPASS_PROXY",
        ] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn url_credentials() {
        for (text, want) in [
            (
                "HTTP 500 from https://u:secret@api.example/v1: boom",
                "HTTP 500 from https://u:[redacted]@api.example/v1: boom",
            ),
            (
                "clone https://ghp_abc123@github.com/o/r.git failed",
                "clone https://[redacted]@github.com/o/r.git failed",
            ),
            ("p://a:b:c@d@h?x", "p://a:[redacted]@h?x"),
            ("(postgres://bob:pw@db)", "(postgres://bob:[redacted]@db)"),
            ("no url here", "no url here"),
            ("http://h/x@y", "http://h/x@y"),
            ("http://h?u=a@b", "http://h?u=a@b"),
            ("://@", "://[redacted]@"),
            ("", ""),
        ] {
            assert_eq!(redact_url_credentials(text), want, "{text}");
        }
    }

    #[test]
    fn an_unfinished_authority_is_found() {
        assert_eq!(open_url_authority("see https://us"), Some(9));
        assert_eq!(open_url_authority("see https://u:p@h/x"), None);
        assert_eq!(open_url_authority("see https:/"), Some(9));
        assert_eq!(open_url_authority("see https:"), Some(9));
        assert_eq!(open_url_authority("plain"), None);
    }
}
