//! The `codex` backend's stream parser: `codex exec --json` writes one JSON object a
//! line (`thread.started`, `turn.started`, `item.started` / `item.updated` /
//! `item.completed` with an `item` of type `agent_message`, `reasoning`,
//! `command_execution`, `file_change`, `mcp_tool_call`, …, `turn.completed` with
//! `usage`, `turn.failed`, `error`).
//!
//! [`parse_line`] is a pure function from one line to what it means for the contract:
//! events in order, usage, the final message, a failure. It never panics; a line that
//! is not JSON or not an object is [`Line::Unrecognised`], kept for the logs, never a
//! crash. An unknown `type` is ignored (codex adds event types between releases).
//!
//! Deliberately not done yet: the process-driving `Backend` (spawning `codex exec`,
//! cancellation, `verify`). Only the parser is landed; see the crate docs.

use agent_exec_contract::{Event, EventKind, Usage};
use serde_json::Value;

/// What one line of `codex exec --json` means.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Events to emit, in order (may be empty, e.g. `thread.started`).
    Events(Vec<Event>),
    /// A completed assistant message: its text is emitted and is the result text.
    AgentMessage(String),
    /// `turn.completed`: the turn ended; usage as codex reported it.
    TurnCompleted(Usage),
    /// `turn.failed` or `error`: codex's own message.
    Failed(String),
    /// Not JSON, not an object, or without a `type`.
    Unrecognised,
}

/// Parses one line (without its newline).
pub fn parse_line(line: &[u8]) -> Line {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Line::Unrecognised;
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Line::Unrecognised;
    };
    match kind {
        "turn.completed" => {
            let usage = value.get("usage");
            let field = |name: &str| {
                usage
                    .and_then(|u| u.get(name))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            Line::TurnCompleted(Usage {
                prompt_tokens: field("input_tokens"),
                completion_tokens: field("output_tokens"),
            })
        }
        "turn.failed" => Line::Failed(message(value.get("error").unwrap_or(&Value::Null))),
        "error" => Line::Failed(message(&value)),
        "item.started" | "item.completed" => {
            let started = kind == "item.started";
            let Some(item) = value.get("item") else {
                return Line::Unrecognised;
            };
            item_line(item, started)
        }
        _ => Line::Events(Vec::new()),
    }
}

fn message(value: &Value) -> String {
    value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("codex reported an error without a message")
        .to_owned()
}

fn text_of(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn item_line(item: &Value, started: bool) -> Line {
    let item_type = item.get("type").and_then(Value::as_str).unwrap_or_default();
    let tool_event = |kind: EventKind, tool: &str, detail: String| Event {
        kind,
        text: String::new(),
        tool: tool.to_owned(),
        detail,
    };
    let phase = if started {
        EventKind::ToolExecStart
    } else {
        EventKind::ToolExecEnd
    };
    match item_type {
        "agent_message" if !started => Line::AgentMessage(text_of(item, "text")),
        "reasoning" if !started => Line::Events(vec![Event {
            kind: EventKind::ReasoningDelta,
            text: text_of(item, "text"),
            tool: String::new(),
            detail: String::new(),
        }]),
        "command_execution" => {
            Line::Events(vec![tool_event(phase, "shell", text_of(item, "command"))])
        }
        "file_change" => {
            let paths: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .map(|changes| {
                    changes
                        .iter()
                        .filter_map(|c| c.get("path").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            Line::Events(vec![tool_event(phase, "apply_patch", paths.join("\n"))])
        }
        "mcp_tool_call" => Line::Events(vec![tool_event(
            phase,
            &text_of(item, "tool"),
            String::new(),
        )]),
        "web_search" => Line::Events(vec![tool_event(
            phase,
            "web_search",
            text_of(item, "query"),
        )]),
        _ => Line::Events(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn maps_items_usage_and_failures() {
        assert_eq!(
            parse_line(br#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}"#),
            Line::AgentMessage("done".into())
        );
        let Line::Events(events) = parse_line(
            br#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}"#,
        ) else {
            panic!("expected events")
        };
        assert_eq!(events[0].kind, EventKind::ToolExecStart);
        assert_eq!(events[0].detail, "bash -lc ls");
        assert_eq!(
            parse_line(br#"{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":0,"output_tokens":9}}"#),
            Line::TurnCompleted(Usage { prompt_tokens: 120, completion_tokens: 9 })
        );
        assert_eq!(
            parse_line(br#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#),
            Line::Failed("stream disconnected".into())
        );
        assert_eq!(
            parse_line(br#"{"type":"thread.started","thread_id":"t"}"#),
            Line::Events(vec![])
        );
        assert_eq!(parse_line(b"not json"), Line::Unrecognised);
        assert_eq!(parse_line(b"[1,2]"), Line::Unrecognised);
    }

    proptest! {
        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_line(&bytes);
        }

        #[test]
        fn never_panics_on_typed_objects(kind in "(item\\.started|item\\.completed|turn\\.completed|turn\\.failed|error|x)", body in "[ -~]{0,40}") {
            let line = format!(r#"{{"type":"{kind}","item":{{"type":"{body}"}},"usage":{{"input_tokens":"{body}"}}}}"#);
            let _ = parse_line(line.as_bytes());
        }
    }
}
