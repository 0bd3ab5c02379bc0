//! The OpenAI Chat Completions streaming wire format (`POST /v1/chat/completions`,
//! `stream: true`): `chat.completion.chunk` frames with content deltas and tool-call
//! deltas, a finish reason, a usage chunk, then `data: [DONE]`.

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
    let id = format!("chatcmpl-{n}");
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        frame(
            None,
            &json!({"id": id, "object": "chat.completion.chunk", "created": 0,
                    "model": "scripted",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut body = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        json!(null),
    )];
    let mut tool_index = 0usize;
    for original in &turn.parts {
        let part = &original.flattened();
        match part {
            Part::Text(text) => {
                for piece in pieces(text) {
                    body.push(chunk(json!({"content": piece}), json!(null)));
                }
            }
            Part::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                body.push(chunk(
                    json!({"tool_calls": [{"index": tool_index, "id": call_id, "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}}]}),
                    json!(null),
                ));
                tool_index += 1;
            }
            // Chat Completions has no free-form tools: sent as a function call whose
            // single argument is the raw input.
            // Flattened above into a ToolCall.
            Part::NamespacedToolCall { .. } => {}
            Part::CustomToolCall {
                call_id,
                name,
                input,
            } => {
                body.push(chunk(
                    json!({"tool_calls": [{"index": tool_index, "id": call_id, "type": "function",
                        "function": {"name": name,
                                     "arguments": json!({"input": input}).to_string()}}]}),
                    json!(null),
                ));
                tool_index += 1;
            }
        }
    }
    let finish = if tool_index > 0 { "tool_calls" } else { "stop" };
    let usage = turn.usage;
    let tail = vec![
        chunk(json!({}), json!(finish)),
        frame(
            None,
            &json!({"id": id, "object": "chat.completion.chunk", "created": 0,
                    "model": "scripted", "choices": [],
                    "usage": {"prompt_tokens": usage.input_tokens,
                              "completion_tokens": usage.output_tokens,
                              "total_tokens": usage.input_tokens + usage.output_tokens}}),
        ),
        Bytes::from_static(b"data: [DONE]\n\n"),
    ];
    (body, tail)
}
