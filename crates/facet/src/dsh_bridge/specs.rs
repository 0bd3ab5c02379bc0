//! What the plugin registers, built here so the JavaScript retypes none of it: the
//! rule text as a system-prompt section, the name and order of the runtime-context
//! entry, the `facet` tool (description, parameters and output schema already in
//! dsh's value-schema DSL, every object's `additionalProperties` explicit), and the
//! names of the tools the guard judges (so a call of any other tool — `bash` — is
//! never sent here). Also the row's `config`, checked here.

use facet_core::{Mode, Policy};
use serde_json::{Map, Value, json};

use crate::facet_tool::{ACTION_DESCRIPTION, PATHS_DESCRIPTION, PURPOSE, TOOL_NAME};

/// The system-prompt section holding the seed's rule text.
pub const RULE_SECTION: &str = "facet:rule";
/// Its order: after the persona (0), before the tools' own guidance (100–199), so the
/// model reads the scope before it reads what each file tool does.
pub const RULE_ORDER: i64 = 90;
/// The runtime-context entry holding the binding (`facetContextText`).
pub const CONTEXT_NAME: &str = "facet";
/// Its order among runtime contexts (dsh's sandbox and approval policies follow).
pub const CONTEXT_ORDER: i64 = 50;

/// The row keys the plugin understands. `binary` is read by the JavaScript (it
/// names this program); `mode` is the mode a session starts in.
const ROW_KEYS: [&str; 2] = ["mode", "binary"];

/// The row's `config`, checked. Every fault is named with the key and the fix, so
/// dsh's apply-time error says what to change.
pub fn row_mode(config: &Map<String, Value>) -> Result<Option<Mode>, String> {
    for key in config.keys() {
        if !ROW_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "dsh-facet: unknown config key `{key}`; the row takes `mode` (ask, deny or off) \
                 and `binary` (the path of the facet program)"
            ));
        }
    }
    match config.get("mode") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => text.parse::<Mode>().map(Some).map_err(|_| {
            format!("dsh-facet: config `mode` must be one of ask, deny, off, not {text:?}")
        }),
        Some(other) => Err(format!(
            "dsh-facet: config `mode` must be one of ask, deny, off, not {other}"
        )),
    }
}

/// The plugin's registrations. `description` of the tool ends with the one sentence
/// that differs from the MCP face: here the change is recorded by the call itself.
pub fn specs(policy: &Policy, mode: Mode) -> Value {
    let mut judged: Vec<&str> = policy.tools().names().collect();
    judged.push(TOOL_NAME);
    judged.sort_unstable();
    judged.dedup();
    json!({
        "rule": {
            "name": RULE_SECTION,
            "order": RULE_ORDER,
            "text": facet_core::seed::facet_rule_text(),
        },
        "context": {"name": CONTEXT_NAME, "order": CONTEXT_ORDER},
        "tool": tool_spec(),
        "judged": judged,
        "mode": mode.as_str(),
    })
}

/// The `facet` tool in dsh's DSL: parameters as the implicit (open) root map,
/// `output.schema` a closed object.
pub fn tool_spec() -> Value {
    json!({
        "name": TOOL_NAME,
        "description": format!(
            "{PURPOSE} An `add` is put to the user and recorded for this session when they allow it."
        ),
        "parameters": {
            "action": {
                "type": "string",
                "required": true,
                "enum": ["status", "add", "remove", "reset"],
                "description": ACTION_DESCRIPTION,
            },
            "paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": PATHS_DESCRIPTION,
            },
        },
        "output": {
            "schema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "action": {
                        "type": "string",
                        "required": true,
                        "enum": ["status", "add", "remove", "reset"],
                    },
                    "directory": {
                        "type": "string",
                        "required": true,
                        "description": "The session's folder, as dsh recorded it (canonical).",
                    },
                    "facet": {
                        "oneOf": [{"type": "string"}, {"type": "null"}],
                        "required": true,
                        "description": "The facet root; null when the session is not scoped.",
                    },
                    "granted": {
                        "type": "array",
                        "items": {"type": "string"},
                        "required": true,
                        "description": "Every path granted outside the facet (canonical).",
                    },
                    "changed": {
                        "type": "array",
                        "items": {"type": "string"},
                        "required": true,
                        "description": "What this call added or withdrew (canonical).",
                    },
                    "mode": {
                        "type": "string",
                        "required": true,
                        "enum": ["ask", "deny", "off"],
                    },
                    "summary": {
                        "type": "string",
                        "required": true,
                        "description": "What happened and the binding now, as the model reads it.",
                    },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn row_config_is_checked_key_by_key() {
        assert_eq!(row_mode(&config(json!({}))), Ok(None));
        assert_eq!(
            row_mode(&config(json!({"mode": "deny", "binary": "/x/facet"}))),
            Ok(Some(Mode::Deny))
        );
        let wrong = row_mode(&config(json!({"mode": "sometimes"}))).unwrap_err();
        assert!(
            wrong.contains("`mode`") && wrong.contains("\"sometimes\""),
            "{wrong}"
        );
        let typed = row_mode(&config(json!({"mode": 3}))).unwrap_err();
        assert!(typed.contains("not 3"), "{typed}");
        let unknown = row_mode(&config(json!({"registry": "/r"}))).unwrap_err();
        assert!(unknown.contains("`registry`"), "{unknown}");
    }
}
