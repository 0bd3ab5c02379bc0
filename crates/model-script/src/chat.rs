//! The OpenAI Chat Completions streaming wire format (`POST /v1/chat/completions`,
//! `stream: true`): `chat.completion.chunk` frames with content deltas and tool-call
//! deltas, a finish reason, a usage chunk, then `data: [DONE]`.
//!
//! DeepSeek Harness (dsh) speaks this too (its DeepSeek provider POSTs
//! `${DEEPSEEK_BASE_URL}/chat/completions`, adding `thinking`, `reasoning_effort` and
//! `max_tokens`, which are recorded and otherwise ignored), and beside every session it
//! sends one or two session-title requests: no `tools`, a system prompt asking for a
//! title. [`is_side_request`] tells those apart so they do not consume scripted turns;
//! they are answered with [`SIDE_TITLE`]. OpenCode sends one too, at the start of a
//! session ("You are a title generator …", no tools).

use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};

/// What a side (session-title) request is answered with.
pub const SIDE_TITLE: &str = "Scripted session";

/// Whether a Chat Completions request is a host's side request rather than a turn of
/// the conversation: it offers no tools (no `tools`, or an empty list) and a system
/// message asks for a session title (dsh: "Create a concise title for an AI
/// coding-assistant session…"). Decided on both, not on "no tools" alone: a plain
/// Chat Completions client (agent-exec's openai backend) sends real turns without tools.
pub fn is_side_request(body: &Value) -> bool {
    let offers_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    if offers_tools {
        return false;
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return false;
    };
    messages.iter().any(|message| {
        message.get("role").and_then(Value::as_str) == Some("system")
            && message
                .get("content")
                .and_then(Value::as_str)
                .is_some_and(|text| TITLE_PROMPTS.iter().any(|marker| text.contains(marker)))
    })
}

/// What a host's title request says in its system prompt: dsh's "Create a concise
/// title …", OpenCode's (1.18) "You are a title generator. …".
const TITLE_PROMPTS: [&str; 2] = ["concise title", "You are a title generator"];

/// The reply to a side request: a short streamed text, numbered apart from turns.
pub fn side_reply() -> Response {
    render(&Turn::text(SIDE_TITLE).with_usage(1, 1), 0)
}

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

#[cfg(test)]
mod tests {
    use super::is_side_request;
    use serde_json::json;

    #[test]
    fn side_requests_are_tool_less_title_requests() {
        let title = json!({"role": "system", "content": "Create a concise title for an AI coding-assistant session from the supplied human messages."});
        let user = json!({"role": "user", "content": "hello"});
        assert!(is_side_request(
            &json!({"stream": true, "messages": [title, user]})
        ));
        assert!(is_side_request(
            &json!({"stream": true, "tools": [], "messages": [title, user]})
        ));
        let opencode = json!({"role": "system", "content": "You are a title generator. You output ONLY a thread title. Nothing else."});
        assert!(is_side_request(
            &json!({"stream": true, "messages": [opencode, user]})
        ));
        // A turn that offers tools is a turn, whatever its system prompt says.
        assert!(!is_side_request(&json!({"stream": true,
            "tools": [{"type": "function", "function": {"name": "read"}}],
            "messages": [title, user]})));
        // A plain client's tool-less turn is a turn.
        assert!(!is_side_request(
            &json!({"stream": true, "messages": [user]})
        ));
        assert!(!is_side_request(&json!({"stream": true})));
    }
}
