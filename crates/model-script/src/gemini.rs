//! The Gemini API's streaming wire format, what Gemini CLI (through `@google/genai`)
//! speaks: `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`, answered with
//! SSE `data:` frames, each a `GenerateContentResponse`
//! (`{candidates:[{content:{role:"model",parts:[…]}}]}`); text arrives as `{text}`
//! parts in a few frames, a call as one `{functionCall:{name,args}}` part, and the
//! last frame carries `finishReason: "STOP"` and `usageMetadata`.
//!
//! Gemini CLI also sends requests that are not conversation turns: non-streamed
//! `:generateContent` (its model router's classifier, the next-speaker check) and
//! `:countTokens`. [`side_reply`] answers them without taking a scripted turn.

use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};

use crate::sse::{frame, pieces, respond};
use crate::{Part, Turn};

/// What a request under `/v1beta/models/` asks for, from its last path segment
/// (`MODEL:ACTION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `:streamGenerateContent`: a conversation turn.
    Stream { model: String },
    /// `:generateContent`, `:countTokens` or anything else: a side request.
    Side { action: String },
}

/// Reads `MODEL:ACTION`.
pub fn action(segment: &str) -> Action {
    match segment.rsplit_once(':') {
        Some((model, "streamGenerateContent")) => Action::Stream {
            model: model.to_owned(),
        },
        Some((_, action)) => Action::Side {
            action: action.to_owned(),
        },
        None => Action::Side {
            action: String::new(),
        },
    }
}

/// The reply to a side request: a token count for `countTokens`, an empty JSON
/// object as text otherwise (what a classifier that fails to parse it falls back on).
pub fn side_reply(action: &str) -> Response {
    let body = if action == "countTokens" {
        json!({"totalTokens": 10})
    } else {
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "{}"}]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                              "totalTokenCount": 2}})
    };
    axum::response::IntoResponse::into_response(axum::Json(body))
}

/// The SSE response for `turn`, as `model` answering.
pub fn render(turn: &Turn, model: &str) -> Response {
    let (body, tail) = frames(turn, model);
    respond(body, tail, turn.ending)
}

/// The frames of `turn`: what is sent before the ending, and the completion.
pub fn frames(turn: &Turn, model: &str) -> (Vec<Bytes>, Vec<Bytes>) {
    let chunk = |parts: Vec<Value>| {
        frame(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                "modelVersion": model}),
        )
    };
    let mut body = Vec::new();
    for original in &turn.parts {
        match original.flattened() {
            Part::Text(text) => {
                for piece in pieces(&text) {
                    body.push(chunk(vec![json!({"text": piece})]));
                }
            }
            Part::ToolCall {
                name, arguments, ..
            } => body.push(chunk(vec![
                json!({"functionCall": {"name": name, "args": arguments}}),
            ])),
            // Gemini has no free-form tools: a call whose one argument is the input.
            Part::CustomToolCall { name, input, .. } => body.push(chunk(vec![
                json!({"functionCall": {"name": name, "args": {"input": input}}}),
            ])),
            // Flattened above into a ToolCall.
            Part::NamespacedToolCall { .. } => {}
        }
    }
    let usage = turn.usage;
    let tail = vec![frame(
        None,
        &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": usage.input_tokens,
                "candidatesTokenCount": usage.output_tokens,
                "totalTokenCount": usage.input_tokens + usage.output_tokens},
            "modelVersion": model}),
    )];
    (body, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_model_and_action_from_the_last_segment() {
        assert_eq!(
            action("gemini-2.5-flash:streamGenerateContent"),
            Action::Stream {
                model: "gemini-2.5-flash".into()
            }
        );
        assert_eq!(
            action("gemini-3.5-flash-lite:generateContent"),
            Action::Side {
                action: "generateContent".into()
            }
        );
        assert_eq!(
            action("nothing"),
            Action::Side {
                action: String::new()
            }
        );
    }
}
