//! The OpenAI Responses streaming wire format (`POST /v1/responses`, `stream: true`),
//! as codex consumes it: `response.created`, per item `response.output_item.added`,
//! text as `response.output_text.delta`, `response.output_item.done` with the whole
//! item (`message`, `function_call` — with its `namespace` for a namespaced tool —,
//! `custom_tool_call`), and `response.completed`
//! with usage.

use axum::body::Bytes;
use axum::response::Response;
use serde_json::json;

use crate::sse::{frame, pieces, respond};
use crate::{Part, Turn};

/// The SSE response for `turn`; `n` numbers ids so they differ between requests.
pub fn render(turn: &Turn, n: usize) -> Response {
    let (body, tail) = frames(turn, n);
    respond(body, tail, turn.ending)
}

/// The frames of `turn`: what is sent before the ending, and the completion.
pub fn frames(turn: &Turn, n: usize) -> (Vec<Bytes>, Vec<Bytes>) {
    let response_id = format!("resp_{n}");
    let ev = |data: serde_json::Value| {
        let name = data["type"].as_str().unwrap_or_default().to_owned();
        frame(Some(&name), &data)
    };
    let mut body = vec![ev(json!({
        "type": "response.created",
        "response": {"id": response_id, "status": "in_progress"}
    }))];
    for (index, part) in turn.parts.iter().enumerate() {
        match part {
            Part::Text(text) => {
                let item_id = format!("msg_{n}_{index}");
                body.push(ev(json!({
                    "type": "response.output_item.added", "output_index": index,
                    "item": {"type": "message", "id": item_id, "role": "assistant",
                             "status": "in_progress", "content": []}
                })));
                for piece in pieces(text) {
                    body.push(ev(json!({
                        "type": "response.output_text.delta", "item_id": item_id,
                        "output_index": index, "content_index": 0, "delta": piece
                    })));
                }
                body.push(ev(json!({
                    "type": "response.output_item.done", "output_index": index,
                    "item": {"type": "message", "id": item_id, "role": "assistant",
                             "status": "completed",
                             "content": [{"type": "output_text", "text": text, "annotations": []}]}
                })));
            }
            Part::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let item = json!({
                    "type": "function_call", "id": format!("fc_{n}_{index}"),
                    "call_id": call_id, "name": name,
                    "arguments": arguments.to_string(), "status": "completed"
                });
                body.push(ev(json!({
                    "type": "response.output_item.added", "output_index": index, "item": item
                })));
                body.push(ev(json!({
                    "type": "response.output_item.done", "output_index": index, "item": item
                })));
            }
            Part::NamespacedToolCall {
                call_id,
                namespace,
                name,
                arguments,
            } => {
                let item = json!({
                    "type": "function_call", "id": format!("fc_{n}_{index}"),
                    "call_id": call_id, "namespace": namespace, "name": name,
                    "arguments": arguments.to_string(), "status": "completed"
                });
                body.push(ev(json!({
                    "type": "response.output_item.added", "output_index": index, "item": item
                })));
                body.push(ev(json!({
                    "type": "response.output_item.done", "output_index": index, "item": item
                })));
            }
            Part::CustomToolCall {
                call_id,
                name,
                input,
            } => {
                let item = json!({
                    "type": "custom_tool_call", "id": format!("ctc_{n}_{index}"),
                    "call_id": call_id, "name": name, "input": input, "status": "completed"
                });
                body.push(ev(json!({
                    "type": "response.output_item.added", "output_index": index, "item": item
                })));
                body.push(ev(json!({
                    "type": "response.output_item.done", "output_index": index, "item": item
                })));
            }
        }
    }
    let usage = turn.usage;
    let tail = vec![ev(json!({
        "type": "response.completed",
        "response": {
            "id": response_id, "status": "completed",
            "usage": {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input_tokens + usage.output_tokens
            }
        }
    }))];
    (body, tail)
}
