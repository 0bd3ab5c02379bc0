//! Structured output (`structured-output`): a request's `output_schema` is a promise
//! the *runtime* checks. Backends ask their program for it (codex `--output-schema`,
//! Claude Code `--json-schema`, OpenAI `response_format`), but a backend's promise is
//! not a proof: the final text of a successful attempt must parse as JSON and match the
//! schema, or the attempt is `failed`.
//!
//! Decisions:
//! * The code of a mismatch is `agent.missing_deliverable`: the request named a
//!   deliverable (an answer of this shape) and it was not delivered. Not a new code —
//!   Go consumers read an unknown code as `unknown`, which would turn a clean failure
//!   into "side effects may have happened" — and not `agent.empty_output` (there *was*
//!   output) nor `agent.provider_rejected` (the provider accepted the request).
//! * Side effects are what was observed (a tool that ran is still `possible`); the
//!   validator's words go to `reason`, bounded, with the JSON pointer of the first
//!   mismatch; the rejected text is not returned (as for any failed run), only its size
//!   in `logs`.
//! * `jsonschema` is built without `resolve-http`/`resolve-file`: a `$ref` to a URL or
//!   a file is an invalid schema, never a fetch. The draft follows `$schema` (2020-12
//!   when absent); the schema itself is checked against its meta-schema, so a schema
//!   that is itself invalid is refused before anything runs ([`check_schema`]).
//! * A fenced answer (```` ```json … ``` ````) is not unwrapped: the contract's text is
//!   what the caller gets, and a caller asking for JSON must be able to parse it as is.

use serde_json::Value;

/// The longest validator message kept in a reason (the validator quotes the instance,
/// which may be the whole 100 KB answer).
const MAX_REASON: usize = 600;

/// A compiled schema, checked once per execution.
pub struct Schema(jsonschema::Validator);

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schema")
    }
}

/// Compiles `schema`. `Err` says why it is not a usable JSON Schema object (not an
/// object, fails its meta-schema, an unresolvable `$ref`).
pub fn check_schema(schema: &Value) -> Result<Schema, String> {
    if !schema.is_object() {
        return Err("output_schema must be a JSON Schema object".into());
    }
    jsonschema::validator_for(schema)
        .map(Schema)
        .map_err(|e| bounded(&format!("output_schema is not a valid JSON Schema: {e}")))
}

impl Schema {
    /// `Ok` when `text` is JSON matching the schema; else the first mismatch (or the
    /// parse error), bounded.
    pub fn check_text(&self, text: &str) -> Result<(), String> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!("the final text is not JSON ({e}), and output_schema asks for JSON")
        })?;
        // The common case (a match) on the fast path; errors are collected only for a
        // mismatch, to name it.
        if self.0.is_valid(&value) {
            return Ok(());
        }
        let mut errors = self.0.iter_errors(&value);
        let Some(first) = errors.next() else {
            return Ok(());
        };
        let more = errors.count();
        let at = first.instance_path().to_string();
        let at = if at.is_empty() { "/".to_owned() } else { at };
        let tail = if more > 0 {
            format!(" (+{more} more)")
        } else {
            String::new()
        };
        Err(bounded(&format!(
            "the final text does not match output_schema at {at}: {first}{tail}"
        )))
    }
}

fn bounded(text: &str) -> String {
    if text.len() <= MAX_REASON {
        return text.to_owned();
    }
    let end = (0..=MAX_REASON)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        check_schema(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["n"],
            "additionalProperties": false
        }))
        .expect("a valid schema")
    }

    #[test]
    fn matching_json_passes_and_mismatches_name_the_place() {
        let s = schema();
        assert_eq!(s.check_text(r#"{"n": 3, "tags": ["a"]}"#), Ok(()));
        let e = s.check_text(r#"{"n": "three"}"#).unwrap_err();
        assert!(e.contains("at /n") && e.contains("integer"), "{e}");
        let e = s.check_text(r#"{"tags": [1]}"#).unwrap_err();
        assert!(e.contains("(+1 more)"), "{e}");
        let e = s.check_text("Sure! Here it is: {\"n\": 3}").unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        let e = s.check_text("```json\n{\"n\": 3}\n```").unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
    }

    #[test]
    fn invalid_schemas_are_refused_and_refs_are_never_fetched() {
        for bad in [
            json!("object"),
            json!({"type": "no-such-type"}),
            json!({"properties": 3}),
            json!({"$ref": "https://example.invalid/schema.json"}),
            json!({"$ref": "file:///etc/passwd"}),
        ] {
            assert!(check_schema(&bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_huge_instance_is_not_copied_into_the_reason() {
        let s = check_schema(&json!({"type": "string"})).expect("valid");
        let big = format!("[{}]", vec!["1"; 50_000].join(","));
        let e = s.check_text(&big).unwrap_err();
        assert!(e.len() < MAX_REASON + 100, "{} bytes", e.len());
    }
}
