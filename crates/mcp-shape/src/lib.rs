//! MCP result shaping shared by every MCP server of the project.
//!
//! One concept, one place: how a tool's answer becomes an MCP `CallToolResult`.
//! envreg's server and facet's server both call these three functions and nothing
//! else builds a `CallToolResult` by hand.
//!
//! # The shapes
//!
//! **Success** ([`success`]):
//! ```json
//! { "structuredContent": <the declared value>,
//!   "content": [
//!     { "type": "text", "text": "<render line>", "annotations": { "audience": ["user"] } },
//!     { "type": "text", "text": "<the value as JSON>", "annotations": { "audience": ["assistant"] } } ],
//!   "isError": false }
//! ```
//! The JSON text block exists because some hosts (DeepSeek Harness) hand the model only
//! the joined `content` text and never `structuredContent`; the render line is for the
//! person watching.
//!
//! **Expected failure** ([`failure`], [`invalid_argument`]):
//! ```json
//! { "content": [
//!     { "type": "text", "text": "ENV_NOT_FOUND: …" },
//!     { "type": "text", "text": "{\"code\":\"ENV_NOT_FOUND\",…}", "annotations": { "audience": ["assistant"] } } ],
//!   "isError": true }
//! ```
//! The first block has no audience annotation: both the person and the model must see
//! the code, and the text always *begins* with it so a model or a script can branch on
//! it without parsing JSON. `{code, message, details}` is machine-readable as the JSON
//! text block, and deliberately **not** as `structuredContent`: a client checks
//! `structuredContent` against the tool's `outputSchema` whenever it is present, error
//! or not (the TypeScript SDK does, hence the MCP Inspector; Claude Code carries the
//! same check), and an error object never matches a success schema — the call would
//! surface as a schema mismatch instead of its code. The MCP spec ties
//! `structuredContent` to the output schema; an error result carries none.
//!
//! # Invariants
//! - A success result's `structuredContent` is exactly the value passed in (the caller
//!   guarantees it matches the tool's `outputSchema`; the Python MCP client checks it).
//! - A failure result always has `isError: true`, a first text block that starts with
//!   `"<CODE>: "`, `{code, message}` (plus `details` when there are any) as JSON text,
//!   and no `structuredContent`.
//! - Nothing here panics, whatever the input.
//!
//! # Deliberately not done
//! - No protocol errors (`Err(ErrorData)`): an expected failure is a *tool result* so the
//!   model sees it and can correct itself. Protocol errors are for requests the server
//!   cannot route at all, and belong to the server.
//! - No redaction: the caller never puts a credential value into a message in the first
//!   place (the registry core's rule); re-scanning text here would only hide bugs.
//! - No validation against a schema: this crate depends only on rmcp's model types and
//!   serde_json. Callers validate arguments and turn each problem into an
//!   [`ArgumentIssue`].

use rmcp::model::{Annotations, CallToolResult, ContentBlock, Role, TextContent};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The error code used for arguments that fail the tool's input schema.
pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";

/// A text block shown to one audience only.
fn text_for(text: String, audience: Role) -> ContentBlock {
    ContentBlock::Text(
        TextContent::new(text)
            .with_annotations(Annotations::default().with_audience(vec![audience])),
    )
}

/// `value` as compact JSON text: the same bytes as `value.to_string()`, written through
/// serde_json's byte serializer rather than `Display`.
///
/// Why: `Display` for `Value` pushes every fragment through a `fmt::Formatter` adapter,
/// about 2.5× slower than `serde_json::to_string` on a large result (an `env_resolve`
/// Service Context: 12 KB, ~600 nodes, ~50 µs against ~20 µs). Both use serde_json's
/// compact formatter, so the text is byte-identical; a unit test holds them together.
pub fn compact_json(value: &Value) -> String {
    // Serializing a `Value` into memory cannot fail (its keys are strings and the
    // writer is a Vec); the fallback only exists so that this never panics.
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

/// A successful tool result: `structuredContent` is `value`, `content` holds the render
/// line (audience user) and `value` as compact JSON text (audience assistant).
pub fn success(value: Value, render: &str) -> CallToolResult {
    let json_text = compact_json(&value);
    let mut result = CallToolResult::success(vec![
        text_for(render.to_owned(), Role::User),
        text_for(json_text, Role::Assistant),
    ]);
    result.structured_content = Some(value);
    result
}

/// An expected failure as a tool result: `isError: true`, text `"CODE: message"`, and
/// `{code, message, details}` as JSON text (never as `structuredContent`: see the module
/// doc).
///
/// `details` is omitted from the object when `None` (never `"details": null`), so a
/// client can test for its presence.
pub fn failure(code: &str, message: &str, details: Option<&Value>) -> CallToolResult {
    let mut object = Map::new();
    object.insert("code".to_owned(), Value::String(code.to_owned()));
    object.insert("message".to_owned(), Value::String(message.to_owned()));
    if let Some(details) = details {
        object.insert("details".to_owned(), details.clone());
    }
    let value = Value::Object(object);
    CallToolResult::error(vec![
        ContentBlock::text(format!("{code}: {message}")),
        text_for(compact_json(&value), Role::Assistant),
    ])
}

/// One way an argument failed the input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgumentIssue {
    /// The argument's JSON path inside the arguments object, e.g. `"kind"` or
    /// `"record.hosts[0]"`; empty for the arguments object itself.
    pub path: String,
    /// What is wrong, in words a model can act on.
    pub message: String,
}

impl ArgumentIssue {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// The message for a set of argument issues: each names its field, so the model can
/// correct the call. An empty list still yields a sensible sentence.
pub fn invalid_argument_message(tool: &str, issues: &[ArgumentIssue]) -> String {
    let parts: Vec<String> = issues
        .iter()
        .map(|issue| {
            if issue.path.is_empty() {
                issue.message.clone()
            } else {
                format!("`{}`: {}", issue.path, issue.message)
            }
        })
        .collect();
    if parts.is_empty() {
        format!("arguments of {tool} do not match its input schema")
    } else {
        format!("invalid arguments for {tool}: {}", parts.join("; "))
    }
}

/// Arguments that failed the input schema, shaped exactly like any other expected
/// failure with code `INVALID_ARGUMENT`; `details.issues` lists each `{path, message}`.
pub fn invalid_argument(tool: &str, issues: &[ArgumentIssue]) -> CallToolResult {
    let details = json!({ "issues": issues });
    failure(
        INVALID_ARGUMENT,
        &invalid_argument_message(tool, issues),
        Some(&details),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(result: &CallToolResult) -> Vec<String> {
        result
            .content
            .iter()
            .map(|block| block.as_text().map(|t| t.text.clone()).unwrap_or_default())
            .collect()
    }

    fn audience(block: &ContentBlock) -> Option<Vec<Role>> {
        match block {
            ContentBlock::Text(t) => t.annotations.as_ref().and_then(|a| a.audience.clone()),
            _ => None,
        }
    }

    #[test]
    fn success_carries_value_render_and_json_text() {
        let value = json!({"sessionId": "s1", "defaultEnvironmentId": "test-a", "persisted": true});
        let result = success(value.clone(), "Session default: test-a.");
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(value.clone()));
        assert_eq!(texts(&result)[0], "Session default: test-a.");
        let parsed: Value = serde_json::from_str(&texts(&result)[1]).expect("json text");
        assert_eq!(parsed, value);
        assert_eq!(audience(&result.content[0]), Some(vec![Role::User]));
        assert_eq!(audience(&result.content[1]), Some(vec![Role::Assistant]));
    }

    #[test]
    fn success_serializes_with_wire_names() {
        let result = success(json!({"a": 1}), "ok.");
        let wire = serde_json::to_value(&result).expect("serialize");
        assert_eq!(wire["structuredContent"], json!({"a": 1}));
        assert_eq!(wire["isError"], json!(false));
        assert_eq!(
            wire["content"][0]["annotations"]["audience"],
            json!(["user"])
        );
        assert_eq!(
            wire["content"][1]["annotations"]["audience"],
            json!(["assistant"])
        );
        assert_eq!(wire["content"][1]["type"], json!("text"));
    }

    #[test]
    fn compact_json_is_display_byte_for_byte() {
        let tricky = json!({
            "zeta": 1, "alpha": [1.5, -0.0, 1e300, 12345678901234567890u64, -7, null, true],
            "text": "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} del \u{7f} é 😀 \u{2028}",
            "nested": {"": {}, "empty": [], "k": {"x": "y"}},
        });
        assert_eq!(compact_json(&tricky), tricky.to_string());
        for scalar in [json!(null), json!("s"), json!(0), json!(-1.25), json!([])] {
            assert_eq!(compact_json(&scalar), scalar.to_string());
        }
    }

    fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::from),
                proptest::collection::vec((any::<String>(), inner), 0..8)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn compact_json_matches_display_on_any_value(value in arbitrary_json()) {
            proptest::prop_assert_eq!(compact_json(&value), value.to_string());
        }
    }

    #[test]
    fn failure_starts_with_code_and_is_machine_readable() {
        let details = json!({"candidates": ["d1", "d2"]});
        let result = failure("DEPLOYMENT_AMBIGUOUS", "pick one of d1, d2", Some(&details));
        assert_eq!(result.is_error, Some(true));
        let t = texts(&result);
        assert!(t[0].starts_with("DEPLOYMENT_AMBIGUOUS: "), "{}", t[0]);
        let expected = json!({"code": "DEPLOYMENT_AMBIGUOUS", "message": "pick one of d1, d2", "details": details});
        // No structuredContent: clients would check it against the success schema.
        assert_eq!(result.structured_content, None);
        assert_eq!(
            serde_json::from_str::<Value>(&t[1]).expect("json"),
            expected
        );
        // The code line is for both audiences.
        assert_eq!(audience(&result.content[0]), None);
    }

    #[test]
    fn failure_without_details_omits_the_key() {
        let result = failure("ENV_NOT_FOUND", "no environment prod-x", None);
        let value: Value = serde_json::from_str(&texts(&result)[1]).expect("json text");
        assert!(value.get("details").is_none());
        assert_eq!(value["code"], "ENV_NOT_FOUND");
    }

    #[test]
    fn invalid_argument_names_every_field() {
        let issues = [
            ArgumentIssue::new("kind", "must be one of environment, service"),
            ArgumentIssue::new("confirm", "is required"),
        ];
        let result = invalid_argument("env_delete", &issues);
        let t = texts(&result);
        assert!(t[0].starts_with("INVALID_ARGUMENT: "));
        assert!(
            t[0].contains("`kind`") && t[0].contains("`confirm`"),
            "{}",
            t[0]
        );
        let value: Value = serde_json::from_str(&t[1]).expect("json text");
        assert_eq!(value["details"]["issues"][1]["path"], "confirm");
        assert_eq!(value["code"], INVALID_ARGUMENT);
    }

    #[test]
    fn invalid_argument_with_no_issues_still_reads() {
        let message = invalid_argument_message("env_list", &[]);
        assert!(message.contains("env_list"));
        let root =
            invalid_argument_message("env_list", &[ArgumentIssue::new("", "must be an object")]);
        assert_eq!(root, "invalid arguments for env_list: must be an object");
    }
}
