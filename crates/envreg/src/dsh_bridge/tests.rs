#![allow(clippy::unwrap_used)]

use envreg_core::ApprovalDecision;
use proptest::prelude::*;
use serde_json::json;

use super::{Method, decision_of, in_dsh_terms, parse_line, tool_list};

#[test]
fn requests_parse() {
    assert_eq!(
        parse_line(r#"{"id":1,"method":"hello","protocol":1}"#)
            .unwrap()
            .method,
        Method::Hello { protocol: 1 }
    );
    let call = parse_line(
        r#"{"id":7,"method":"call","params":{"tool":"env_get","arguments":{"kind":"service","id":"a"},"session":"s-1"}}"#,
    )
    .unwrap();
    assert_eq!(call.id, 7);
    assert_eq!(
        call.method,
        Method::Call {
            tool: "env_get".into(),
            arguments: json!({"kind": "service", "id": "a"}),
            session: Some("s-1".into()),
        }
    );
    let no_session =
        parse_line(r#"{"id":8,"method":"call","params":{"tool":"env_list","session":null}}"#)
            .unwrap();
    assert!(
        matches!(no_session.method, Method::Call { session: None, arguments, .. } if arguments.is_null())
    );
    assert_eq!(
        parse_line(r#"{"id":2,"method":"approval_answer","params":{"decision":"allowed-once"}}"#)
            .unwrap()
            .method,
        Method::ApprovalAnswer {
            decision: ApprovalDecision::AllowedOnce
        }
    );
}

#[test]
fn bad_lines_say_what_is_wrong_and_keep_the_id_when_they_can() {
    let cases = [
        ("not json", None, "not JSON"),
        ("[1]", None, "JSON object"),
        (r#"{"method":"hello"}"#, None, "`id`"),
        (r#"{"id":-1,"method":"hello"}"#, None, "`id`"),
        (r#"{"id":3,"method":"hello"}"#, Some(3), "`protocol`"),
        (
            r#"{"id":4,"method":"nope"}"#,
            Some(4),
            "unknown method \"nope\"",
        ),
        (r#"{"id":5}"#, Some(5), "`method`"),
        (
            r#"{"id":6,"method":"call","params":[]}"#,
            Some(6),
            "`params`",
        ),
        (
            r#"{"id":6,"method":"call","params":{}}"#,
            Some(6),
            "`params.tool`",
        ),
    ];
    for (line, id, needle) in cases {
        let bad = parse_line(line).unwrap_err();
        assert_eq!(bad.id, id, "{line}");
        assert!(
            bad.error.message.contains(needle),
            "{line}: {}",
            bad.error.message
        );
        assert_eq!(bad.error.code.as_str(), "INVALID_ARGUMENT");
    }
}

#[test]
fn only_allowed_once_grants() {
    assert_eq!(
        decision_of(Some("allowed-once")),
        ApprovalDecision::AllowedOnce
    );
    assert_eq!(decision_of(Some("rejected")), ApprovalDecision::Rejected);
    assert_eq!(decision_of(Some("cancelled")), ApprovalDecision::Cancelled);
    assert_eq!(
        decision_of(Some("unavailable")),
        ApprovalDecision::Unavailable
    );
    assert_eq!(
        decision_of(Some("allowed-always")),
        ApprovalDecision::Unavailable
    );
    assert_eq!(decision_of(None), ApprovalDecision::Unavailable);
}

#[test]
fn no_session_is_said_in_dsh_terms() {
    let core = envreg_core::EnvError::new(
        envreg_core::ErrorCode::SessionContextUnavailable,
        "env_set_context needs the caller's session; over stdio start the server with --session ID",
    );
    let said = in_dsh_terms(core, "env_set_context");
    assert_eq!(said.code.as_str(), "SESSION_CONTEXT_UNAVAILABLE");
    assert!(
        said.message.contains("without an agent"),
        "{}",
        said.message
    );
    assert!(!said.message.contains("--session"), "{}", said.message);
    let other = envreg_core::EnvError::invalid_argument("x");
    assert_eq!(in_dsh_terms(other.clone(), "env_list"), other);
}

/// What the plugin registers: the ten tools with their schemas in dsh's DSL. A change
/// here is a change of what dsh's model sees.
#[test]
fn the_tool_list_in_dsh_dsl() {
    insta::assert_json_snapshot!("dsh_tool_list", tool_list());
}

proptest! {
    /// Any line: a request or an error, never a panic.
    #[test]
    fn any_line_parses_or_is_refused(line in "\\PC{0,200}") {
        let _ = parse_line(&line);
    }

    #[test]
    fn any_json_object_parses_or_is_refused(
        id in proptest::option::of(any::<i64>()),
        method in proptest::option::of(prop_oneof![Just("hello"), Just("call"), Just("approval_answer"), Just("x")]),
        params in proptest::option::of(prop_oneof![Just(json!({})), Just(json!([])), Just(json!({"tool": 1})), Just(json!({"tool": "env_list", "arguments": 3, "session": 4})), Just(json!({"decision": null}))]),
        protocol in proptest::option::of(any::<i64>()),
    ) {
        let mut object = serde_json::Map::new();
        if let Some(id) = id { object.insert("id".into(), json!(id)); }
        if let Some(m) = method { object.insert("method".into(), json!(m)); }
        if let Some(p) = params { object.insert("params".into(), p); }
        if let Some(p) = protocol { object.insert("protocol".into(), json!(p)); }
        let _ = parse_line(&serde_json::Value::Object(object).to_string());
    }
}
