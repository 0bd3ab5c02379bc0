//! `decode_request` on requests written by hand exactly as Go's `encoding/json` prints
//! a `ContractRequest` of the seed's types (`json.Marshal`, no indentation, fields in
//! declaration order, a zero `time.Time` written as `0001-01-01T00:00:00Z`), and on the
//! mistakes a caller makes: each refusal names the field.
#![allow(clippy::unwrap_used)]

use agent_exec_contract::*;
use time::macros::datetime;

/// `json.Marshal(exec.ContractRequest{ExecutionID: "exec-7", Prompt: "say hi",
/// Workspace: exec.WorkspaceHandle{Root: "/srv/w"}})`: the zero deadline, empty
/// structs and omitted slices as Go writes them.
const GO_MINIMAL: &str = r#"{"execution_id":"exec-7","session_scope":{},"prompt":"say hi","workspace":{"root":"/srv/w"},"tool_policy":{"profile":""},"budget":{"deadline":"0001-01-01T00:00:00Z"}}"#;

/// Every field set, a deadline in a non-UTC zone with nanoseconds (Go's RFC3339Nano of
/// a `time.Date(2026, 12, 1, 23, 30, 0, 123456789, time.FixedZone("", 8*3600))`), and
/// the `output_schema` extension (a `json.RawMessage`).
const GO_FULL: &str = r#"{"execution_id":"exec-8","session_scope":{"tenant":"t1","project":"p1","session":"s1"},"prompt":"fill it in","instructions":"be exact","context":[{"role":"user","content":"before"},{"role":"assistant","content":"ok"}],"targets":["out/a.json"],"workspace":{"root":"/srv/w","writable":["out"]},"tool_policy":{"profile":"workspace","allowlist":["Write"]},"budget":{"max_prompt_tokens":5000,"max_completion_tokens":300,"deadline":"2026-12-01T23:30:00.123456789+08:00"},"required":["text","structured-output"],"output_schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}"#;

#[test]
fn go_minimal_request_with_the_zero_deadline_is_no_deadline() {
    let request = decode_request(GO_MINIMAL.as_bytes()).unwrap();
    assert_eq!(request.execution_id, "exec-7");
    assert_eq!(request.prompt, "say hi");
    assert_eq!(request.workspace.root, "/srv/w");
    assert_eq!(request.budget.deadline, None);
    assert_eq!(request.output_schema, None);
    // And we write it back as Go would have.
    assert_eq!(serde_json::to_string(&request).unwrap(), GO_MINIMAL);
}

#[test]
fn go_full_request_keeps_every_field() {
    let request = decode_request(GO_FULL.as_bytes()).unwrap();
    assert_eq!(request.session_scope.project, "p1");
    assert_eq!(request.context.len(), 2);
    assert_eq!(request.context[1].role, "assistant");
    assert_eq!(request.targets, ["out/a.json"]);
    assert_eq!(request.workspace.writable, ["out"]);
    assert_eq!(request.tool_policy.allowlist, ["Write"]);
    assert_eq!(request.budget.max_prompt_tokens, 5000);
    assert_eq!(
        request.budget.deadline,
        Some(datetime!(2026-12-01 23:30:00.123456789 +08:00))
    );
    assert_eq!(
        request.required,
        [Capability::Text, Capability::StructuredOutput]
    );
    let schema = request.output_schema.as_ref().unwrap();
    assert_eq!(schema["required"][0], "n");
    assert_eq!(serde_json::to_string(&request).unwrap(), GO_FULL);
}

#[test]
fn go_nil_slices_and_a_null_schema_decode_as_empty() {
    let text = r#"{"execution_id":"e","session_scope":{},"prompt":"p","context":null,"targets":null,"workspace":{"root":"/w","writable":null},"tool_policy":{"profile":"","allowlist":null},"budget":{"deadline":"0001-01-01T00:00:00Z"},"required":null,"output_schema":null}"#;
    let request = decode_request(text.as_bytes()).unwrap();
    assert!(request.context.is_empty() && request.required.is_empty());
    assert_eq!(request.output_schema, None);
}

#[test]
fn unknown_fields_are_ignored_as_go_ignores_them() {
    let text = GO_MINIMAL.replacen('{', r#"{"on_event_hint":1,"#, 1);
    assert_eq!(
        decode_request(text.as_bytes()).unwrap(),
        decode_request(GO_MINIMAL.as_bytes()).unwrap()
    );
}

fn refusal(text: &str) -> RequestJsonError {
    decode_request(text.as_bytes()).unwrap_err()
}

#[test]
fn a_bad_deadline_names_budget_deadline() {
    let e = refusal(&GO_MINIMAL.replace("0001-01-01T00:00:00Z", "tomorrow"));
    assert_eq!(e.field, "budget.deadline");
    assert!(e.message.contains("RFC 3339"), "{e}");
    assert!(e.to_string().starts_with("budget.deadline: "), "{e}");
    // A Go `time.Duration` (nanoseconds) where a time belongs is refused too.
    let e = refusal(&GO_MINIMAL.replace("\"0001-01-01T00:00:00Z\"", "90000000000"));
    assert_eq!(e.field, "budget.deadline");
}

#[test]
fn wrong_types_name_their_field_nested_ones_included() {
    let e = refusal(&GO_MINIMAL.replace(r#""budget":{"#, r#""budget":{"max_prompt_tokens":-1,"#));
    assert_eq!(e.field, "budget.max_prompt_tokens");
    let e = refusal(&GO_MINIMAL.replace(r#""prompt":"say hi""#, r#""prompt":["say","hi"]"#));
    assert_eq!(e.field, "prompt");
    let e = refusal(&GO_MINIMAL.replace(
        r#""session_scope":{}"#,
        r#""session_scope":{},"context":[{"role":"user","content":"a"},{"role":7}]"#,
    ));
    assert_eq!(e.field, "context[1].role");
}

#[test]
fn a_schema_that_is_not_an_object_names_output_schema() {
    let e = refusal(&GO_MINIMAL.replacen('{', r#"{"output_schema":"{\"type\":\"object\"}","#, 1));
    assert_eq!(e.field, "output_schema");
    assert!(e.message.contains("a string"), "{e}");
}

#[test]
fn not_an_object_trailing_bytes_and_oversize_are_refused_whole() {
    let e = refusal("[1,2]");
    assert_eq!(e.field, "");
    let e = refusal(&format!("{GO_MINIMAL} {{}}"));
    assert!(e.message.contains("follows the request"), "{e}");
    let e = refusal("");
    assert!(e.message.contains("EOF"), "{e}");
    let big = vec![b' '; MAX_REQUEST_BYTES + 1];
    let e = decode_request(&big).unwrap_err();
    assert!(e.message.contains("at most"), "{e}");
}
