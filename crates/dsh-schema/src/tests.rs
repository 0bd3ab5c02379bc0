#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{parameters, value};

/// The DSL's rules, as dsh-tools' compiler enforces them (see the module doc).
fn check_dsl(node: &Value, path: &str, property: bool) -> Result<(), String> {
    let Value::Object(object) = node else {
        return Err(format!("{path}: not an object"));
    };
    let mut allowed = vec!["description", "title"];
    if property {
        allowed.push("required");
    }
    if let Some(required) = object.get("required")
        && (required != &Value::Bool(true) || !property)
    {
        return Err(format!("{path}: bad required"));
    }
    if let Some(branches) = object.get("oneOf") {
        allowed.push("oneOf");
        let branches = branches.as_array().ok_or(format!("{path}: oneOf"))?;
        if branches.len() < 2 || object.contains_key("type") {
            return Err(format!("{path}: oneOf shape"));
        }
        for (i, b) in branches.iter().enumerate() {
            check_dsl(b, &format!("{path}.oneOf[{i}]"), false)?;
        }
    } else {
        allowed.push("type");
        match object.get("type").and_then(Value::as_str) {
            Some("json") => {}
            Some("object") => {
                allowed.extend(["properties", "additionalProperties"]);
                if !object
                    .get("additionalProperties")
                    .is_some_and(Value::is_boolean)
                {
                    return Err(format!("{path}: additionalProperties not explicit"));
                }
                if let Some(properties) = object.get("properties") {
                    for (k, p) in properties.as_object().ok_or(format!("{path}: props"))? {
                        check_dsl(p, &format!("{path}.{k}"), true)?;
                    }
                }
            }
            Some("array") => {
                allowed.push("items");
                if let Some(items) = object.get("items") {
                    check_dsl(items, &format!("{path}.items"), false)?;
                }
            }
            Some("string" | "number" | "integer" | "boolean" | "null") => {
                allowed.extend(["enum", "const"]);
                if let Some(e) = object.get("enum")
                    && e.as_array().is_none_or(Vec::is_empty)
                {
                    return Err(format!("{path}: enum"));
                }
            }
            other => return Err(format!("{path}: type {other:?}")),
        }
    }
    for key in object.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(format!("{path}: keyword {key}"));
        }
    }
    Ok(())
}

fn check_parameters(map: &Value) -> Result<(), String> {
    for (k, p) in map.as_object().ok_or("parameters: not a map")? {
        check_dsl(p, k, true)?;
    }
    Ok(())
}

#[test]
fn an_object_schema_becomes_a_parameter_map_with_required_marks() {
    let schema = json!({
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["a", "b"], "description": "The kind."},
            "id": {"type": "string"},
            "record": {"description": "Anything."},
            "environmentId": {"oneOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["kind", "record"],
        "additionalProperties": false,
    });
    let map = parameters(&schema);
    check_parameters(&map).unwrap();
    insta::assert_json_snapshot!(map, @r#"
    {
      "kind": {
        "type": "string",
        "description": "The kind.",
        "enum": [
          "a",
          "b"
        ],
        "required": true
      },
      "id": {
        "type": "string"
      },
      "record": {
        "type": "json",
        "description": "Anything.",
        "required": true
      },
      "environmentId": {
        "oneOf": [
          {
            "type": "string"
          },
          {
            "type": "null"
          }
        ]
      }
    }
    "#);
}

#[test]
fn objects_say_additional_properties_explicitly() {
    // Closed stays closed; absent and schema-valued (a map) are open.
    assert_eq!(
        value(&json!({"type": "object", "properties": {}, "additionalProperties": false})),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    assert_eq!(
        value(&json!({"type": "object"})),
        json!({"type": "object", "additionalProperties": true})
    );
    assert_eq!(
        value(&json!({"type": "object", "additionalProperties": {"type": "string"}})),
        json!({"type": "object", "additionalProperties": true})
    );
}

#[test]
fn nullable_types_become_one_of_and_overlaps_become_json() {
    assert_eq!(
        value(&json!({"type": ["string", "null"], "description": "d", "minLength": 1})),
        json!({"oneOf": [{"type": "string"}, {"type": "null"}], "description": "d"})
    );
    assert_eq!(
        value(
            &json!({"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"type": "null"}]})
        ),
        json!({"oneOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true},
            {"type": "null"}]})
    );
    // integer and number overlap: "exactly one" would refuse 3.
    assert_eq!(
        value(&json!({"anyOf": [{"type": "integer"}, {"type": "number"}]})),
        json!({"type": "json"})
    );
    // Two objects overlap too.
    assert_eq!(
        value(&json!({"oneOf": [{"type": "object"}, {"type": "object"}], "title": "t"})),
        json!({"type": "json", "title": "t"})
    );
    // A single branch is that branch.
    assert_eq!(
        value(&json!({"anyOf": [{"type": "boolean"}]})),
        json!({"type": "boolean"})
    );
}

#[test]
fn what_the_dsl_cannot_say_is_dropped_never_tightened() {
    assert_eq!(
        value(&json!({"type": "integer", "minimum": 0, "format": "uint32", "default": 3})),
        json!({"type": "integer"})
    );
    assert_eq!(value(&json!({"$ref": "#/x"})), json!({"type": "json"}));
    assert_eq!(value(&json!(true)), json!({"type": "json"}));
    assert_eq!(
        value(&json!({"const": "v"})),
        json!({"type": "string", "const": "v"})
    );
    assert_eq!(
        value(&json!({"enum": ["a", 1]})),
        json!({"type": "json"}),
        "mixed enum"
    );
    assert_eq!(
        value(&json!({"type": "string", "enum": ["a", null]})),
        json!({"type": "string"}),
        "an enum value of another type drops the enum"
    );
    assert_eq!(
        value(&json!({"type": "array", "items": [{"type": "string"}]})),
        json!({"type": "array"}),
        "tuple items are widened"
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("type"),
            Just("object"),
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("null"),
            Just("array"),
            Just("properties"),
            Just("required"),
            Just("items"),
            Just("oneOf"),
            Just("anyOf"),
            Just("enum"),
            Just("const"),
            Just("additionalProperties"),
            Just("description"),
            Just("x"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("type"),
                        Just("properties"),
                        Just("required"),
                        Just("items"),
                        Just("oneOf"),
                        Just("anyOf"),
                        Just("enum"),
                        Just("const"),
                        Just("additionalProperties"),
                        Just("description"),
                        Just("a"),
                        Just("b"),
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    /// Whatever the input, the output is DSL dsh's compiler accepts (and nothing panics).
    #[test]
    fn any_json_converts_to_valid_dsl(schema in arb_json()) {
        let converted = value(&schema);
        prop_assert!(check_dsl(&converted, "schema", false).is_ok(), "{:?}", check_dsl(&converted, "schema", false));
        let map = parameters(&schema);
        prop_assert!(check_parameters(&map).is_ok(), "{:?}", check_parameters(&map));
    }
}
