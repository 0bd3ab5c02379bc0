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
