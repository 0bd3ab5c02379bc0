//! `facet dsh-bridge` on generated lines (the fuzz target `facet_dsh_bridge` runs the
//! same property without bounds): a configured bridge never panics, and every line it
//! writes is one JSON object carrying an `id` and exactly one of `result`, `error`
//! or `approval`.
use facet::dsh_bridge::Bridge;
use proptest::prelude::*;
use serde_json::{Value, json};

fn check(lines: &[Vec<u8>], state: &std::path::Path) {
    let mut bridge = Bridge::with_state_dir(state.to_path_buf());
    let configure = json!({"id": 0, "method": "configure", "params": {"config": {}}});
    assert_eq!(bridge.handle(configure.to_string().as_bytes()).len(), 1);
    for line in lines {
        for answer in bridge.handle(line) {
            let value: Value = serde_json::from_str(&answer).unwrap();
            assert!(value.get("id").is_some(), "{answer}");
            let kinds = ["result", "error", "approval"]
                .iter()
                .filter(|key| value.get(**key).is_some())
                .count();
            assert_eq!(kinds, 1, "{answer}");
        }
    }
}

fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("read".to_owned()),
        Just("grep".to_owned()),
        Just("glob".to_owned()),
        Just("facet".to_owned()),
        Just("bash".to_owned()),
        "[a-z_]{0,12}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("..".to_owned()),
            Just("/".to_owned()),
            Just("add".to_owned()),
            Just("allowed-once".to_owned()),
            Just("{..,a}/**".to_owned()),
            any::<String>(),
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("file_path".to_owned()),
                    Just("path".to_owned()),
                    Just("include".to_owned()),
                    Just("action".to_owned()),
                    Just("paths".to_owned()),
                    Just("decision".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..4
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    let method = prop_oneof![
        Just("judge"),
        Just("approval_answer"),
        Just("context"),
        Just("facet"),
        Just("hello"),
        Just("configure"),
        Just("nope"),
    ];
    (
        0u64..6,
        method,
        tool(),
        json_value(),
        json_value(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(id, method, tool, arguments, decision, agent, never)| {
            let cwd = std::env::temp_dir().display().to_string();
            let params = json!({
                "session": if agent { json!(format!("s{id}")) } else { Value::Null },
                "cwd": if agent { json!(cwd) } else { Value::Null },
                "approval": {"service": true, "policy": if never { "never" } else { "ask" }},
                "tool": tool,
                "callId": format!("c{id}"),
                "arguments": arguments,
                "decision": decision,
                "config": {},
            });
            json!({"id": id, "method": method, "params": params, "protocol": 1})
                .to_string()
                .into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn generated_requests_are_answered(lines in prop::collection::vec(request(), 1..12)) {
        let state = tempfile::tempdir().unwrap();
        check(&lines, state.path());
    }

    #[test]
    fn arbitrary_bytes_are_answered(lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 1..8)) {
        let state = tempfile::tempdir().unwrap();
        check(&lines, state.path());
    }
}
