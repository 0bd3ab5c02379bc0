//! Credential redaction of everything a user reads from a backend: whole texts
//! (`text`, `logs`, an error's reason) and streamed pieces (`text_delta` events),
//! where a value split across two pieces must not slip through.
//!
//! Which variables count as credentials is the contract's rule
//! ([`agent_exec_contract::redact::is_credential_name`]); this module finds their
//! values (configured and inherited) and replaces them, and removes the credentials
//! inside URLs ([`agent_exec_contract::redact::redact_url_credentials`]) wherever
//! values are replaced.

use std::collections::BTreeMap;

use agent_exec_contract::ContractResult;

/// Values shorter than this are not credentials (`1`, `yes`), and replacing them would
/// mangle text.
pub const MIN_SECRET_LEN: usize = 8;

/// `text` with the value of every environment variable that looks like a credential
/// ([`agent_exec_contract::redact::is_credential_name`]) replaced by `[redacted]`:
/// the `configured` ones and the inherited ones, since agent programs read their keys
/// from variables we cannot always name, and providers echo keys back in errors.
/// Longest values first, so a secret containing another is not half-replaced.
/// Inherited variables that are not UTF-8 are skipped (never a panic).
pub fn redact_credentials(configured: &BTreeMap<String, String>, text: &str) -> String {
    redact_values(&credential_values(configured), text)
}

/// The credential values [`redact_credentials`] removes, longest first: configured and
/// inherited variables whose name is a credential's
/// ([`agent_exec_contract::redact::is_credential_name`]), at least
/// [`MIN_SECRET_LEN`] long.
pub fn credential_values(configured: &BTreeMap<String, String>) -> Vec<String> {
    let inherited = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)));
    let mut secrets: Vec<String> = configured
        .clone()
        .into_iter()
        .chain(inherited)
        .filter(|(name, value)| {
            agent_exec_contract::redact::is_credential_name(name) && value.len() >= MIN_SECRET_LEN
        })
        .map(|(_, value)| value)
        .collect();
    secrets.sort_by_key(|value| std::cmp::Reverse(value.len()));
    secrets.dedup();
    secrets
}

/// `text` with each of `secrets` (longest first) replaced by `[redacted]`, then the
/// credentials inside URLs.
pub fn redact_values(secrets: &[String], text: &str) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), agent_exec_contract::redact::REDACTED);
        }
    }
    if out.contains("://") {
        out = agent_exec_contract::redact::redact_url_credentials(&out);
    }
    out
}

/// Redacts everything of `result` a user reads — `text`, `logs`, the error's reason —
/// with [`redact_credentials`]; the one place backends call before returning.
pub fn redact_result(configured: &BTreeMap<String, String>, result: &mut ContractResult) {
    let secrets = credential_values(configured);
    result.text = redact_values(&secrets, &result.text);
    result.logs = redact_values(&secrets, &result.logs);
    if let Some(err) = result.err.as_mut() {
        err.reason = redact_values(&secrets, &err.reason);
    }
}

/// Redacts a stream of text pieces (`text_delta` events) without letting a credential
/// split across two pieces through: the end of what is pushed that could begin a
/// credential is held back until the next piece (or [`StreamRedactor::finish`]).
#[derive(Debug, Default)]
pub struct StreamRedactor {
    secrets: Vec<String>,
    held: String,
}

impl StreamRedactor {
    /// A redactor of the credentials [`credential_values`] finds.
    pub fn new(configured: &BTreeMap<String, String>) -> Self {
        StreamRedactor {
            secrets: credential_values(configured),
            held: String::new(),
        }
    }

    /// A redactor of exactly these values (longest first, so a credential containing
    /// another is replaced whole); values shorter than the minimum secret length are
    /// ignored, as [`credential_values`] ignores them.
    pub fn of_values(mut secrets: Vec<String>) -> Self {
        secrets.retain(|value| value.len() >= MIN_SECRET_LEN);
        // Longest first; equal values end up adjacent, so `dedup` removes them all.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        StreamRedactor {
            secrets,
            held: String::new(),
        }
    }

    /// The same values redacted in one whole text (no holding back).
    pub fn redact_whole(&self, text: &str) -> String {
        redact_values(&self.secrets, text)
    }

    /// Takes the next piece; returns what may be emitted now (redacted).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        // Values first: a URL's credentials may be a configured value too.
        let mut redacted = self.held.clone();
        for secret in &self.secrets {
            if redacted.contains(secret.as_str()) {
                redacted = redacted.replace(secret.as_str(), agent_exec_contract::redact::REDACTED);
            }
        }
        // A URL whose authority has not ended may still gain credentials: held back
        // whole (from its `://`), and its credentials removed once it has ended.
        let url_open = agent_exec_contract::redact::open_url_authority(&redacted);
        let settled = url_open.unwrap_or(redacted.len());
        let mut clean = agent_exec_contract::redact::redact_url_credentials(&redacted[..settled]);
        let url_hold = url_open.map(|_| clean.len());
        clean.push_str(&redacted[settled..]);
        let redacted = clean;
        // The earliest char boundary from which the rest is a proper prefix of a
        // credential: held back, since the next piece may complete it.
        let value_hold = redacted
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = redacted.get(i..).unwrap_or_default();
                self.secrets
                    .iter()
                    .any(|s| s.len() > tail.len() && s.starts_with(tail))
            })
            .unwrap_or(redacted.len());
        let hold_from = url_hold.map_or(value_hold, |u| u.min(value_hold));
        let (now, later) = redacted.split_at(hold_from);
        let now = now.to_owned();
        self.held = later.to_owned();
        now
    }

    /// What is still held back, at the end of the stream.
    pub fn finish(&mut self) -> String {
        redact_values(&self.secrets, &std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_longest_first_and_short_values_kept() {
        let configured: BTreeMap<String, String> = [
            ("PROVIDER_KEY".to_owned(), "sk-abcdef12".to_owned()),
            ("LONGER_TOKEN".to_owned(), "sk-abcdef12-and-more".to_owned()),
            ("SHORT_SECRET".to_owned(), "1".to_owned()),
            ("CODEX_HOME".to_owned(), "/home/me/.codex".to_owned()),
        ]
        .into();
        assert_eq!(
            redact_credentials(
                &configured,
                "a sk-abcdef12-and-more b sk-abcdef12 c 1 /home/me/.codex"
            ),
            "a [redacted] b [redacted] c 1 /home/me/.codex"
        );
    }

    /// Before: only names containing KEY, TOKEN, SECRET or PASSWORD counted, so a
    /// `DB_PASS` value was printed as it was; URL credentials were removed only by the
    /// openai backend.
    #[test]
    fn pass_variables_and_url_credentials_are_redacted() {
        let configured: BTreeMap<String, String> = [
            ("DB_PASS".to_owned(), "hunter2-db-pass".to_owned()),
            ("SMTP_PASSWORD".to_owned(), "mail-pass-123".to_owned()),
        ]
        .into();
        assert_eq!(
            redact_credentials(
                &configured,
                "db hunter2-db-pass smtp mail-pass-123 at https://me:pw1@mail.example/x"
            ),
            "db [redacted] smtp [redacted] at https://me:[redacted]@mail.example/x"
        );
        let mut result = ContractResult::succeeded("via https://tok@github.com/o/r");
        result.logs = "git: https://x:y@h failed".into();
        redact_result(&BTreeMap::new(), &mut result);
        assert_eq!(result.text, "via https://[redacted]@github.com/o/r");
        assert_eq!(result.logs, "git: https://x:[redacted]@h failed");
    }

    #[test]
    fn url_credentials_split_across_stream_pieces_are_redacted() {
        let mut redactor = StreamRedactor::default();
        let mut out = String::new();
        let mut emitted = Vec::new();
        for piece in ["fetch https:", "//bo", "b:s3cr", "et@host", "/path done"] {
            let now = redactor.push(piece);
            emitted.push(now.clone());
            out.push_str(&now);
        }
        out.push_str(&redactor.finish());
        assert_eq!(out, "fetch https://bob:[redacted]@host/path done");
        assert!(emitted.iter().all(|e| !e.contains("s3cr")), "{emitted:?}");
        // An unfinished URL at the end is flushed (redacted) by `finish`.
        let mut redactor = StreamRedactor::default();
        let mut out = redactor.push("at https://u:p@h");
        assert_eq!(out, "at https", "held from the `://`");
        out.push_str(&redactor.finish());
        assert_eq!(out, "at https://u:[redacted]@h");
    }

    #[test]
    fn a_credential_split_across_stream_pieces_is_still_redacted() {
        let mut configured = BTreeMap::new();
        configured.insert("MY_API_KEY".to_owned(), "sk-supersecret-12345".to_owned());
        let mut redactor = StreamRedactor::new(&configured);
        let mut out = String::new();
        for piece in ["key: sk-super", "secret-1", "2345 done; sk-", "x ok"] {
            out.push_str(&redactor.push(piece));
        }
        out.push_str(&redactor.finish());
        assert_eq!(out, "key: [redacted] done; sk-x ok");
        // A prefix left at the end of the stream is flushed as it is.
        let mut redactor = StreamRedactor::new(&configured);
        let mut out = redactor.push("tail sk-sup");
        assert_eq!(out, "tail ");
        out.push_str(&redactor.finish());
        assert_eq!(out, "tail sk-sup");
    }
}
