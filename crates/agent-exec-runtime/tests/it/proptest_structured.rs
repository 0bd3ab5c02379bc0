//! Structured output's two outside inputs, generated: schemas from a small JSON Schema
//! grammar (invalid ones included: a bad type name, a regex that does not compile) and
//! final texts (JSON values, fenced JSON, arbitrary text). The twin of
//! `fuzz/fuzz_targets/agent_exec_output_schema.rs`.
//!
//! The property that could fail: `Schema::check_text` says `Ok` exactly when the text
//! parses as JSON and the `jsonschema` validator accepts it — the runtime's fast path
//! (`is_valid`, then errors only to name a mismatch) never lets a mismatch through, nor
//! refuses a match. And no refusal is unbounded or empty.
#![allow(clippy::unwrap_used)]

use agent_exec_runtime::structured::check_schema;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Value, json};

/// A reason's bound: the module's 600 bytes of validator message, plus its framing.
const MAX_REASON_BYTES: usize = 1024;

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-5i64..200).prop_map(Value::from),
        (-5.0f64..5.0).prop_map(Value::from),
        "[a-c0-9/]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-c]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        select(vec![
            "string", "integer", "number", "boolean", "null", "object", "array"
        ])
        .prop_map(|t| json!({"type": t})),
        Just(json!({"type": "no-such-type"})),
        (0i64..100).prop_map(|n| json!({"minimum": n})),
        (0u64..8).prop_map(|n| json!({"maxLength": n})),
        select(vec!["^a", "[0-9]+$", "^src/", "(", "a{2,}"]).prop_map(|p| json!({"pattern": p})),
        proptest::collection::vec(value(), 0..3).prop_map(|v| json!({"enum": v})),
        Just(json!({})),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (
                proptest::collection::btree_map("[a-c]", inner.clone(), 0..3),
                proptest::collection::vec("[a-c]", 0..2),
                any::<bool>()
            )
                .prop_map(|(properties, required, open)| json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": open,
                })),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            proptest::collection::vec(inner, 1..3).prop_map(|any_of| json!({"anyOf": any_of})),
        ]
    })
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => value().prop_map(|v| v.to_string()),
        1 => value().prop_map(|v| format!("```json\n{v}\n```")),
        1 => ".{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn check_text_agrees_with_the_validator_and_refusals_are_bounded(
        schema in schema(),
        text in text(),
    ) {
        match check_schema(&schema) {
            Err(why) => {
                prop_assert!(!why.is_empty() && why.len() <= MAX_REASON_BYTES, "{}", why);
                prop_assert!(jsonschema::validator_for(&schema).is_err(), "refused a schema the validator takes: {}", schema);
            }
            Ok(compiled) => {
                let expected = serde_json::from_str::<Value>(&text)
                    .is_ok_and(|v| jsonschema::validator_for(&schema).unwrap().is_valid(&v));
                match compiled.check_text(&text) {
                    Ok(()) => prop_assert!(expected, "{} passed {}", text, schema),
                    Err(why) => {
                        prop_assert!(!expected, "{} refused under {}: {}", text, schema, why);
                        prop_assert!(!why.is_empty() && why.len() <= MAX_REASON_BYTES, "{}", why);
                    }
                }
            }
        }
    }
}
