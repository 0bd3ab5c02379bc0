//! Properties of the wire encoding, so CI covers what the fuzz target
//! (`fuzz/fuzz_targets/agent_exec_contract_json.rs`) explores further.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use agent_exec_contract::*;
use proptest::prelude::*;

fn code() -> impl Strategy<Value = ErrorCode> {
    prop_oneof![
        proptest::sample::select(ErrorCode::KNOWN.to_vec()),
        "agent\\.[a-z_]{1,12}".prop_map(|s| ErrorCode::from_wire(&s)),
    ]
}

fn result() -> impl Strategy<Value = ContractResult> {
    (
        proptest::sample::select(Outcome::KNOWN.to_vec()),
        ".{0,20}",
        proptest::collection::btree_map(
            ".{1,8}",
            proptest::collection::vec(any::<u8>(), 0..40),
            0..4,
        ),
        proptest::option::of((code(), ".{0,20}", any::<bool>(), any::<bool>())),
        (any::<u32>(), any::<u32>()),
    )
        .prop_map(|(outcome, text, files, err, (p, c))| ContractResult {
            execution_id: String::new(),
            outcome,
            text,
            files: files.into_iter().collect::<BTreeMap<_, _>>(),
            logs: String::new(),
            err: err.map(|(code, reason, retryable, none)| Error {
                code,
                reason,
                retryable,
                side_effects: if none {
                    SideEffects::None
                } else {
                    SideEffects::Possible
                },
            }),
            usage: Usage {
                prompt_tokens: u64::from(p),
                completion_tokens: u64::from(c),
            },
        })
}

proptest! {
    #[test]
    fn results_round_trip(value in result()) {
        let text = serde_json::to_string(&value).unwrap();
        let back: ContractResult = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, value);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_decoded_values_are_stable(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(value) = serde_json::from_slice::<ContractRequest>(&data) {
            let again: ContractRequest = serde_json::from_str(&serde_json::to_string(&value).unwrap()).unwrap();
            prop_assert_eq!(again, value);
        }
        let _ = serde_json::from_slice::<ContractResult>(&data);
    }

    #[test]
    fn json_shaped_requests_never_panic(
        id in ".{0,10}",
        deadline in prop_oneof![Just("0001-01-01T00:00:00Z".to_owned()), "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})"],
        required in proptest::collection::vec("[a-z-]{0,12}", 0..4),
    ) {
        let json = serde_json::json!({
            "execution_id": id,
            "budget": {"deadline": deadline},
            "required": required,
        });
        if let Ok(value) = serde_json::from_value::<ContractRequest>(json) {
            let again: ContractRequest = serde_json::from_str(&serde_json::to_string(&value).unwrap()).unwrap();
            prop_assert_eq!(again, value);
        }
    }
}

/// A request as a Go caller would write it (the zero deadline or a real one, the
/// optional `output_schema`), as JSON text.
fn go_request_text() -> impl Strategy<Value = String> {
    (
        "[a-z0-9-]{1,12}",
        ".{0,30}",
        proptest::option::of("[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T[01][0-9]:[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]0[0-9]:[0-5][0-9])"),
        proptest::option::of(("[a-z]{1,8}", proptest::sample::select(vec!["string", "integer", "object"]))),
        0u32..100_000,
    )
        .prop_map(|(id, prompt, deadline, schema, tokens)| {
            let mut json = serde_json::json!({
                "execution_id": id,
                "session_scope": {},
                "prompt": prompt,
                "workspace": {"root": "/w"},
                "tool_policy": {"profile": ""},
                "budget": {"max_prompt_tokens": tokens, "deadline": deadline.unwrap_or_else(|| "0001-01-01T00:00:00Z".into())},
            });
            if let Some((name, kind)) = schema {
                json["output_schema"] = serde_json::json!({"type": "object", "properties": {name: {"type": kind}}});
            }
            json.to_string()
        })
}

proptest! {
    // The twin of `fuzz/fuzz_targets/agent_exec_request.rs`.
    #[test]
    fn decode_request_never_panics_and_what_it_accepts_is_stable(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(request) = decode_request(&data) {
            let text = serde_json::to_vec(&request).unwrap();
            prop_assert_eq!(decode_request(&text).unwrap(), request);
        }
    }

    #[test]
    fn go_shaped_requests_decode_and_re_encode_as_go_wrote_them(text in go_request_text()) {
        let request = decode_request(text.as_bytes()).unwrap();
        let ours: serde_json::Value = serde_json::to_value(&request).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Deadlines are compared as instants (Go trims trailing zeros; so do we).
        let mut ours_cmp = ours.clone();
        let mut theirs_cmp = theirs.clone();
        for v in [&mut ours_cmp, &mut theirs_cmp] {
            v["budget"]["deadline"] = serde_json::Value::Null;
            if v["budget"]["max_prompt_tokens"] == 0 {
                v["budget"].as_object_mut().unwrap().remove("max_prompt_tokens");
            }
        }
        prop_assert_eq!(ours_cmp, theirs_cmp);
        let again = decode_request(&serde_json::to_vec(&ours).unwrap()).unwrap();
        prop_assert_eq!(again, request);
    }
}
