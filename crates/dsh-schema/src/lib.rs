//! # dsh-schema
//!
//! Converts the JSON Schemas our tool specs are written in (`envreg_core::tools`, the
//! MCP contract) into DeepSeek Harness's value-schema DSL, what `defineTool` takes for
//! `parameters` (a property map, `required: true` on a property) and `output.schema`
//! (one value schema). The dsh plugins receive the converted schemas from the Rust
//! bridge and register them as they are: no JavaScript converts or retypes a schema.
//!
//! ## The DSL (dsh-tools 0.1.0-rc.8, checked by its compiler at registration)
//! `type` ∈ string/number/integer/boolean/null/array/object/json, or `oneOf` (exact
//! one, at least two branches, no `type` beside it); scalars may carry `enum`/`const`;
//! an object MUST say `additionalProperties: true|false` and has `properties`; an array
//! has `items`; annotations `description`, `title`. Any other keyword is an error.
//!
//! ## Conversion rules
//! - Exact where the DSL can say it: types, enums, consts, properties, required,
//!   closed objects, items, descriptions, titles.
//! - Never stricter than the source: anything the DSL cannot say (`minimum`,
//!   `format`, `pattern`, typed `additionalProperties` maps, `$ref`, `allOf`, …) is
//!   dropped or widened, so a value the Rust side produces or accepts is never refused
//!   by dsh. An object whose `additionalProperties` is absent or a schema is open
//!   (`true`); a node with no usable type is `json`.
//! - `anyOf`, `oneOf` and `type: [..]` become `oneOf` only when every branch has one
//!   distinct type (and not both `integer` and `number`), so "exactly one" and "at
//!   least one" agree; otherwise `json`. (Decision: a widened branch inside an
//!   overlapping `oneOf` could make a valid value match twice and be refused.)
//! - `default` and `examples` are dropped: not needed by the model, and dsh requires
//!   them to be lossless JSON it would check again.
//!
//! ## Deliberately not done
//! - No `$ref` resolution: the specs inline their subschemas.
//! - No reverse conversion.

use serde_json::{Map, Value, json};

/// The DSL types.
const TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "null", "array", "object",
];

/// An object schema's properties as a dsh parameter map (`defineTool`'s
/// `parameters`): each property converted, `required: true` on the required ones.
/// A schema that is not an object with properties gives an empty map.
pub fn parameters(schema: &Value) -> Value {
    match schema.get("properties") {
        Some(Value::Object(properties)) => Value::Object(property_map(properties, schema)),
        _ => Value::Object(Map::new()),
    }
}

/// One JSON Schema as a dsh value schema (`output.schema`, or a nested value).
pub fn value(schema: &Value) -> Value {
    convert(schema)
}

fn property_map(properties: &Map<String, Value>, parent: &Value) -> Map<String, Value> {
    let required: Vec<&str> = parent
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(key, schema)| {
            let mut spec = convert(schema);
            if required.contains(&key.as_str())
                && let Value::Object(object) = &mut spec
            {
                object.insert("required".into(), Value::Bool(true));
            }
            (key.clone(), spec)
        })
        .collect()
}

fn annotations(schema: &Value, into: &mut Map<String, Value>) {
    for key in ["description", "title"] {
        if let Some(Value::String(text)) = schema.get(key) {
            into.insert(key.into(), Value::String(text.clone()));
        }
    }
}

fn json_node(schema: &Value) -> Value {
    let mut node = Map::new();
    node.insert("type".into(), json!("json"));
    annotations(schema, &mut node);
    Value::Object(node)
}

/// The single type a branch has, when it has exactly one the DSL knows.
fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => Some(t),
        Some(Value::Array(ts)) if ts.len() == 1 => ts[0].as_str().filter(|t| TYPES.contains(t)),
        None => schema.get("const").map(type_of_value),
        _ => None,
    }
}

fn type_of_value(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Branches whose types are pairwise distinct (integer and number overlap).
fn disjoint(branches: &[Value]) -> bool {
    let mut seen: Vec<&str> = Vec::new();
    for branch in branches {
        let Some(t) = single_type(branch) else {
            return false;
        };
        let clashes =
            |s: &&str| *s == t || matches!((*s, t), ("integer", "number") | ("number", "integer"));
        if seen.iter().any(clashes) {
            return false;
        }
        seen.push(t);
    }
    true
}

fn one_of(schema: &Value, branches: &[Value]) -> Value {
    if branches.len() < 2 || !disjoint(branches) {
        if branches.len() == 1 {
            let mut only = convert(&branches[0]);
            if let Value::Object(object) = &mut only {
                annotations(schema, object);
            }
            return only;
        }
        return json_node(schema);
    }
    let mut node = Map::new();
    node.insert(
        "oneOf".into(),
        Value::Array(branches.iter().map(convert).collect()),
    );
    annotations(schema, &mut node);
    Value::Object(node)
}

fn convert(schema: &Value) -> Value {
    let Value::Object(object) = schema else {
        // `true`, `false` or garbage: nothing the DSL can check.
        return json!({"type": "json"});
    };
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = object.get(key) {
            return one_of(schema, branches);
        }
    }
    let ty = match object.get("type") {
        Some(Value::Array(types)) => {
            // `type: [a, b]` is `oneOf` of the same node with each type.
            let branches: Vec<Value> = types
                .iter()
                .map(|t| {
                    let mut branch = object.clone();
                    branch.insert("type".into(), t.clone());
                    branch.remove("description");
                    branch.remove("title");
                    Value::Object(branch)
                })
                .collect();
            return one_of(schema, &branches);
        }
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => t.as_str(),
        Some(_) => return json_node(schema),
        None => match (object.get("const"), object.get("enum")) {
            (Some(c), _) => type_of_value(c),
            (None, Some(Value::Array(values))) if !values.is_empty() => {
                let first = type_of_value(&values[0]);
                if values.iter().all(|v| type_of_value(v) == first) {
                    first
                } else {
                    return json_node(schema);
                }
            }
            _ if object.contains_key("properties") => "object",
            _ => return json_node(schema),
        },
    };
    let mut node = Map::new();
    node.insert("type".into(), Value::String(ty.to_owned()));
    annotations(schema, &mut node);
    match ty {
        "object" => {
            let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
            if let Some(Value::Object(properties)) = object.get("properties") {
                node.insert(
                    "properties".into(),
                    Value::Object(property_map(properties, schema)),
                );
            }
            node.insert("additionalProperties".into(), Value::Bool(!closed));
        }
        "array" => {
            if let Some(items) = object.get("items")
                && items.is_object()
            {
                node.insert("items".into(), convert(items));
            }
        }
        _ => {
            // enum/const only when every value has the node's type (the DSL checks it).
            let fits = |v: &Value| {
                let t = type_of_value(v);
                t == ty || (ty == "number" && t == "integer")
            };
            if let Some(Value::Array(values)) = object.get("enum")
                && !values.is_empty()
                && values
                    .iter()
                    .all(|v| fits(v) && !v.is_array() && !v.is_object())
            {
                node.insert("enum".into(), Value::Array(values.clone()));
            }
            if let Some(c) = object.get("const")
                && fits(c)
            {
                node.insert("const".into(), c.clone());
            }
        }
    }
    Value::Object(node)
}

#[cfg(test)]
mod tests;
