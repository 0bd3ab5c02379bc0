//! The Anthropic Messages streaming wire format (`POST /v1/messages`, `stream: true`),
//! what Claude Code (and pi with an Anthropic provider) speaks: `message_start`, per
//! content block `content_block_start` / `content_block_delta` (`text_delta` or
//! `input_json_delta`) / `content_block_stop`, then `message_delta` with the stop
//! reason and usage, and `message_stop`.
//!
//! Claude Code also sends side requests that are not part of the conversation (a
//! title or topic query without `tools`, `count_tokens`); [`is_side_request`] tells
//! them apart so they do not consume scripted turns.

use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};

use crate::sse::{frame, pieces, respond};
use crate::{Part, Turn};

/// Whether a Messages request is a side request (no `tools` field at all, or not
/// streamed): answered with a short text, without taking a turn from the script.
/// A streamed request with an *empty* `tools` list is a conversation turn: Claude Code
/// run with `--tools ""` (no tools allowed) sends exactly that.
pub fn is_side_request(body: &Value) -> bool {
    let offers_tools_field = body.get("tools").and_then(Value::as_array).is_some();
    let streamed = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    !offers_tools_field || !streamed
}

/// The non-streamed reply to a side request.
pub fn side_reply(body: &Value) -> Response {
    let streamed = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if streamed {
        return render(&Turn::text("ok").with_usage(1, 1), 0);
    }
    let message = json!({"id": "msg_side", "type": "message", "role": "assistant",
        "model": "scripted", "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    axum::response::IntoResponse::into_response(axum::Json(message))
}

/// The SSE response for `turn`; `n` numbers ids so they differ between requests.
pub fn render(turn: &Turn, n: usize) -> Response {
    let (body, tail) = frames(turn, n);
    respond(body, tail, turn.ending)
}

/// The frames of `turn`: what is sent before the ending, and the completion.
pub fn frames(turn: &Turn, n: usize) -> (Vec<Bytes>, Vec<Bytes>) {
    let event = |value: Value| {
        let name = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ping")
            .to_owned();
        frame(Some(&name), &value)
    };
    let usage = turn.usage;
    let mut body = vec![event(json!({"type": "message_start", "message": {
        "id": format!("msg_scripted_{n}"), "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
        "stop_sequence": null,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": 1}}}))];
    let mut tools = 0usize;
    for (index, original) in turn.parts.iter().enumerate() {
        let part = &original.flattened();
        match part {
            Part::Text(text) => {
                body.push(event(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}})));
                for piece in pieces(text) {
                    body.push(event(json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}})));
                }
            }
            Part::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                tools += 1;
                body.push(event(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name,
                                      "input": {}}})));
                body.push(event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta",
                              "partial_json": arguments.to_string()}})));
            }
            // Messages has no free-form tools: a tool_use whose one field is the input.
            // Flattened above into a ToolCall.
            Part::NamespacedToolCall { .. } => {}
            Part::CustomToolCall {
                call_id,
                name,
                input,
            } => {
                tools += 1;
                body.push(event(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name,
                                      "input": {}}})));
                body.push(event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta",
                              "partial_json": json!({"input": input}).to_string()}})));
            }
        }
        body.push(event(json!({"type": "content_block_stop", "index": index})));
    }
    let stop = if tools > 0 { "tool_use" } else { "end_turn" };
    let tail = vec![
        event(json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"input_tokens": usage.input_tokens,
                      "output_tokens": usage.output_tokens}})),
        event(json!({"type": "message_stop"})),
    ];
    (body, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_requests_have_no_tools_field_or_are_not_streamed() {
        let tools = json!([{"name": "Bash", "input_schema": {}}]);
        assert!(!is_side_request(&json!({"stream": true, "tools": tools})));
        // Claude Code with `--tools ""`: a real turn that offers no tools.
        assert!(!is_side_request(&json!({"stream": true, "tools": []})));
        assert!(is_side_request(&json!({"stream": true})));
        assert!(is_side_request(&json!({"stream": false, "tools": tools})));
        assert!(is_side_request(&json!({"tools": tools})));
    }
}
