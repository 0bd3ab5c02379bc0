#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! Round trips against JSON written by hand from the Go struct tags of
//! `contract_spec.go`, as Go's `encoding/json` would print it.

use agent_exec_contract::*;
use serde_json::{Value, json};
use time::macros::datetime;

fn assert_round_trip<T>(value: &T, go_json: Value)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let ours = serde_json::to_value(value).unwrap();
    assert_eq!(ours, go_json, "Rust encoding differs from Go's");
    let back: T = serde_json::from_value(go_json).unwrap();
    assert_eq!(&back, value, "decoding Go's JSON lost something");
}

#[test]
fn full_request_matches_go_tags() {
    let request = ContractRequest {
        execution_id: "exec-1".into(),
        session_scope: SessionScope {
            tenant: "t".into(),
            project: "p".into(),
            session: "s".into(),
        },
        prompt: "write reply.md".into(),
        instructions: "be brief".into(),
        context: vec![Message {
            role: "user".into(),
            content: "earlier".into(),
        }],
        targets: vec!["reply.md".into()],
        workspace: WorkspaceHandle {
            root: "/w".into(),
            writable: vec!["out".into()],
        },
        tool_policy: ToolPolicy {
            profile: "workspace".into(),
            allowlist: vec!["read".into()],
        },
        budget: ContractBudget {
            max_prompt_tokens: 1000,
            max_completion_tokens: 200,
            deadline: Some(datetime!(2026-11-30 23:30:00.5 UTC)),
        },
        required: vec![Capability::Text, Capability::StructuredOutput],
        output_schema: None,
    };
    assert_round_trip(
        &request,
        json!({
            "execution_id": "exec-1",
            "session_scope": {"tenant": "t", "project": "p", "session": "s"},
            "prompt": "write reply.md",
            "instructions": "be brief",
            "context": [{"role": "user", "content": "earlier"}],
            "targets": ["reply.md"],
            "workspace": {"root": "/w", "writable": ["out"]},
            "tool_policy": {"profile": "workspace", "allowlist": ["read"]},
            "budget": {
                "max_prompt_tokens": 1000,
                "max_completion_tokens": 200,
                "deadline": "2026-11-30T23:30:00.5Z"
            },
            "required": ["text", "structured-output"]
        }),
    );
}

#[test]
fn minimal_request_keeps_go_non_omitempty_fields() {
    // Go writes session_scope, workspace, tool_policy and budget (structs) always,
    // and a zero time.Time as the zero instant even under omitempty.
    assert_round_trip(
        &ContractRequest {
            execution_id: "e".into(),
            prompt: "hi".into(),
            ..Default::default()
        },
        json!({
            "execution_id": "e",
            "session_scope": {},
            "prompt": "hi",
            "workspace": {"root": ""},
            "tool_policy": {"profile": ""},
            "budget": {"deadline": "0001-01-01T00:00:00Z"}
        }),
    );
}

#[test]
fn go_nulls_for_nil_slices_decode_as_empty() {
    let go = json!({
        "execution_id": "e",
        "session_scope": {},
        "prompt": "p",
        "context": null,
        "targets": null,
        "workspace": {"root": "/w", "writable": null},
        "tool_policy": {"profile": "", "allowlist": null},
        "budget": {"deadline": null},
        "required": null
    });
    let request: ContractRequest = serde_json::from_value(go).unwrap();
    assert!(request.targets.is_empty() && request.required.is_empty());
    assert_eq!(request.budget.deadline, None);
}

#[test]
fn deadline_with_offset_keeps_its_offset_and_zero_in_any_offset_is_none() {
    let budget: ContractBudget =
        serde_json::from_value(json!({"deadline": "2026-12-01T07:30:00+08:00"})).unwrap();
    assert_eq!(
        serde_json::to_value(&budget).unwrap(),
        json!({"deadline": "2026-12-01T07:30:00+08:00"})
    );
    let zero: ContractBudget =
        serde_json::from_value(json!({"deadline": "0001-01-01T01:00:00+01:00"})).unwrap();
    assert_eq!(zero.deadline, None);
}

#[test]
fn bad_deadline_is_a_clear_error() {
    let err = serde_json::from_value::<ContractBudget>(json!({"deadline": "90s"})).unwrap_err();
    assert!(err.to_string().contains("not RFC 3339"), "{err}");
}

#[test]
fn result_with_files_err_and_usage() {
    let mut result = ContractResult::with_error(
        Outcome::Failed,
        Error::new(
            ErrorCode::MissingDeliverable,
            "reply.md was not written",
            SideEffects::Possible,
        ),
    );
    result.files.insert("b.txt".into(), b"hi\n".to_vec());
    result.files.insert("a.bin".into(), vec![0, 255, 1]);
    result.logs = "exit 0".into();
    result.usage = Usage {
        prompt_tokens: 12,
        completion_tokens: 0,
    };
    assert_round_trip(
        &result,
        json!({
            "outcome": "failed",
            "files": {"a.bin": "AP8B", "b.txt": "aGkK"},
            "logs": "exit 0",
            "err": {
                "code": "agent.missing_deliverable",
                "reason": "reply.md was not written",
                "side_effects": "possible"
            },
            "usage": {"prompt_tokens": 12}
        }),
    );
    // Go's map keys are sorted, like ours.
    let text = serde_json::to_string(&result).unwrap();
    assert!(text.find("a.bin").unwrap() < text.find("b.txt").unwrap());
}

#[test]
fn succeeded_result_omits_err_but_keeps_usage() {
    assert_round_trip(
        &ContractResult::succeeded("done"),
        json!({"outcome": "succeeded", "text": "done", "usage": {}}),
    );
}

#[test]
fn execution_id_is_an_omitempty_extension_go_ignores() {
    // Ours names its execution, first, so a result read on its own says whose it is.
    let mut result = ContractResult::succeeded("done");
    result.execution_id = "exec-9".into();
    assert_round_trip(
        &result,
        json!({"execution_id": "exec-9", "outcome": "succeeded", "text": "done", "usage": {}}),
    );
    assert!(
        serde_json::to_string(&result)
            .unwrap()
            .starts_with(r#"{"execution_id":"exec-9","outcome""#)
    );
    // Without one it is absent, so Go's own JSON is unchanged both ways; a Go
    // `ContractResult` decoding ours drops the unknown field, as encoding/json does.
    assert_round_trip(
        &ContractResult::succeeded("done"),
        json!({"outcome": "succeeded", "text": "done", "usage": {}}),
    );
}

#[test]
fn nil_bytes_in_files_decode_as_empty_and_bad_base64_is_an_error() {
    let result: ContractResult =
        serde_json::from_value(json!({"outcome": "succeeded", "files": {"x": null}, "usage": {}}))
            .unwrap();
    assert_eq!(result.files["x"], Vec::<u8>::new());
    let err = serde_json::from_value::<ContractResult>(
        json!({"outcome": "succeeded", "files": {"x": "!!"}, "usage": {}}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("files[\"x\"]"), "{err}");
}

#[test]
fn error_retryable_and_side_effects_none() {
    assert_round_trip(
        &Error::new(ErrorCode::ProviderUnavailable, "", SideEffects::None).retryable(),
        json!({"code": "agent.provider_unavailable", "retryable": true, "side_effects": "none"}),
    );
}

#[test]
fn empty_or_unknown_side_effects_fail_closed() {
    for raw in [json!(""), json!("maybe"), json!(null)] {
        let err: Error =
            serde_json::from_value(json!({"code": "agent.internal", "side_effects": raw.clone()}))
                .unwrap();
        assert_eq!(err.side_effects, SideEffects::Possible, "{raw}");
    }
}

#[test]
fn unknown_codes_and_outcomes_survive_and_read_as_unknown() {
    let result: ContractResult = serde_json::from_value(json!({
        "outcome": "partially",
        "err": {"code": "agent.new_thing", "side_effects": "none"},
        "usage": {}
    }))
    .unwrap();
    assert_eq!(result.outcome.effective(), Outcome::Unknown);
    assert_eq!(
        result.err.as_ref().unwrap().code,
        ErrorCode::Other("agent.new_thing".into())
    );
    let back = serde_json::to_value(&result).unwrap();
    assert_eq!(back["outcome"], "partially");
    assert_eq!(back["err"]["code"], "agent.new_thing");
}

#[test]
fn every_go_error_code_string() {
    let codes: Vec<&str> = ErrorCode::KNOWN.iter().map(ErrorCode::as_str).collect();
    assert_eq!(
        codes,
        [
            "agent.canceled",
            "agent.deadline_exceeded",
            "agent.budget_exceeded",
            "agent.provider_unavailable",
            "agent.provider_rejected",
            "agent.tool_rejected",
            "agent.path_outside_workspace",
            "agent.missing_capability",
            "agent.missing_deliverable",
            "agent.empty_output",
            "agent.unknown_outcome",
            "agent.internal",
        ]
    );
    let caps: Vec<&str> = Capability::KNOWN.iter().map(Capability::as_str).collect();
    assert_eq!(
        caps,
        [
            "text",
            "files",
            "stream",
            "tools",
            "cancel",
            "resume",
            "usage",
            "structured-output"
        ]
    );
}

#[test]
fn events_and_descriptor() {
    assert_round_trip(
        &Event {
            kind: EventKind::ToolExecStart,
            text: String::new(),
            tool: "shell".into(),
            detail: "ls".into(),
        },
        json!({"kind": "tool_execution_start", "tool": "shell", "detail": "ls"}),
    );
    assert_round_trip(
        &Event::text_delta("he"),
        json!({"kind": "text_delta", "text": "he"}),
    );
    let descriptor = BackendDescriptor {
        name: "agent-native".into(),
        capabilities: vec![Capability::Text, Capability::Cancel],
        adapter_version: "pi 0.9".into(),
    };
    assert_round_trip(
        &descriptor,
        json!({"name": "agent-native", "capabilities": ["text", "cancel"], "adapter_version": "pi 0.9"}),
    );
    assert!(descriptor.has(&Capability::Cancel) && !descriptor.has(&Capability::Files));
    // Go writes a nil capability slice as null.
    let from_go: BackendDescriptor =
        serde_json::from_value(json!({"name": "x", "capabilities": null})).unwrap();
    assert!(from_go.capabilities.is_empty());
}

#[test]
fn error_display_and_fields_match_go_methods() {
    let err = Error::new(ErrorCode::EmptyOutput, "no text", SideEffects::None);
    assert_eq!(err.to_string(), "agent.empty_output: no text");
    assert_eq!(
        err.fields(),
        vec![
            ("retryable", "false".to_owned()),
            ("reason", "no text".to_owned()),
            ("side_effects", "none".to_owned())
        ]
    );
}

#[test]
fn negative_token_counts_are_rejected() {
    assert!(serde_json::from_value::<Usage>(json!({"prompt_tokens": -1})).is_err());
}
