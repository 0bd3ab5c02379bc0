//! Decoding an OpenAI-compatible chat-completions stream (`stream: true`).
//!
//! Two layers, both fed bytes from outside and both never panicking:
//! * the server-sent-events framing, by `eventsource-stream` (lines, `data:` fields,
//!   blank-line dispatch, comments, UTF-8 across chunk boundaries);
//! * [`ChatStream`]: the `data` of each event, a `chat.completion.chunk` JSON object or
//!   the `[DONE]` sentinel, folded into text, reasoning, tool-call fragments, the finish
//!   reason and usage, and turned into the contract's [`Event`]s in arrival order.
//!
//! Invariant: completeness is decided here and only here. A stream is complete when the
//! server sent `[DONE]`, or sent a `finish_reason` and then closed cleanly. Anything else
//! (a cut connection, a framing or JSON error, an in-stream `error` object) is not, and
//! the backend turns it into `unknown` or `failed` — never `succeeded`.
//!
//! Decision: a chunk that is not JSON, or JSON of the wrong shape, is a protocol error
//! that ends decoding (the stream can no longer be trusted); unknown *fields* are ignored
//! (servers add their own, e.g. `reasoning_content`, `timings`).

use std::collections::BTreeMap;

use agent_exec_contract::{Event, EventKind, Usage};
use eventsource_stream::Eventsource as _;
use futures::{Stream, StreamExt as _};
use serde::Deserialize;

use crate::output::bounded;

/// The sentinel that ends an OpenAI stream.
pub const DONE: &str = "[DONE]";

/// What went wrong decoding the stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("the event stream is malformed: {0}")]
    Framing(String),
    #[error("a stream chunk is not a chat.completion.chunk: {0}")]
    Chunk(String),
    #[error("the server reported an error in the stream: {0}")]
    Server(String),
    #[error("the connection failed mid-stream: {0}")]
    Transport(String),
    #[error("the stream exceeded {0} bytes")]
    TooLarge(usize),
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek's name for reasoning text.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// vLLM's and llama.cpp's name for it.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// The state of one chat-completions stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChatStream {
    /// Assistant text so far.
    pub text: String,
    /// Usage, once the server sent it (with `stream_options.include_usage`).
    pub usage: Option<Usage>,
    /// The first choice's finish reason, once sent.
    pub finish_reason: Option<String>,
    /// `[DONE]` was received.
    pub done: bool,
    /// Tool calls the model asked for: index → (name, arguments so far).
    pub tool_calls: BTreeMap<u64, (String, String)>,
    /// Any content, reasoning, tool-call delta or finish reason has been received (the
    /// "first token": from here on the caller has seen events and nothing is retried).
    pub started: bool,
}

impl ChatStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the completion is known to be whole (see the module doc); `clean_end` says
    /// the connection closed without error.
    pub fn is_complete(&self, clean_end: bool) -> bool {
        self.done || (clean_end && self.finish_reason.is_some())
    }

    /// Folds in the `data` of one event and returns the contract events it produces, in
    /// order. Data after `[DONE]` is ignored.
    pub fn feed(&mut self, data: &str) -> Result<Vec<Event>, StreamError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == DONE {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| StreamError::Chunk(e.to_string()))?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(StreamError::Server(bounded(&message, 500)));
        }
        let mut events = Vec::new();
        // We ask for one choice; other indexes (a server ignoring `n`) are not ours.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let delta = choice.delta.unwrap_or_default();
            for reasoning in [delta.reasoning_content, delta.reasoning]
                .into_iter()
                .flatten()
                .filter(|r| !r.is_empty())
            {
                self.started = true;
                events.push(Event {
                    kind: EventKind::ReasoningDelta,
                    text: reasoning,
                    tool: String::new(),
                    detail: String::new(),
                });
            }
            if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                self.started = true;
                self.text.push_str(&content);
                events.push(Event::text_delta(content));
            }
            for call in delta.tool_calls {
                self.started = true;
                let entry = self.tool_calls.entry(call.index).or_default();
                let (name, arguments) = match call.function {
                    Some(f) => (f.name, f.arguments),
                    None => (None, None),
                };
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    entry.0 = name;
                }
                let arguments = arguments.unwrap_or_default();
                entry.1.push_str(&arguments);
                events.push(Event {
                    kind: EventKind::ToolCallDelta,
                    text: String::new(),
                    tool: entry.0.clone(),
                    detail: arguments,
                });
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty())
                && self.finish_reason.is_none()
            {
                self.started = true;
                self.finish_reason = Some(reason);
                events.push(Event::of_kind(EventKind::MessageEnd));
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                prompt_tokens: usage.prompt_tokens.unwrap_or(0),
                completion_tokens: usage.completion_tokens.unwrap_or(0),
            });
        }
        Ok(events)
    }
}

/// How a decoded stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub stream: ChatStream,
    /// Events in arrival order.
    pub events: Vec<Event>,
    /// `None` when the byte stream ended cleanly.
    pub error: Option<StreamError>,
}

impl Decoded {
    pub fn is_complete(&self) -> bool {
        self.stream.is_complete(self.error.is_none())
    }
}

/// Decodes a byte stream, calling `on_event` for each contract event as it is decoded;
/// stops at the first error (the framing layer would otherwise repeat it forever) or
/// after `max_bytes` bytes.
pub async fn decode<S, B, E>(
    bytes: S,
    max_bytes: usize,
    mut on_event: impl FnMut(&ChatStream, Event),
) -> (ChatStream, Option<StreamError>)
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut seen = 0usize;
    let limited = bytes.map(move |item| match item {
        Ok(chunk) => {
            seen = seen.saturating_add(chunk.as_ref().len());
            if seen > max_bytes {
                Err(LimitOrTransport::Limit)
            } else {
                Ok(chunk)
            }
        }
        Err(e) => Err(LimitOrTransport::Transport(e.to_string())),
    });
    let mut events = limited.eventsource();
    let mut chat = ChatStream::new();
    while let Some(item) = events.next().await {
        let event = match item {
            Ok(event) => event,
            Err(eventsource_stream::EventStreamError::Transport(LimitOrTransport::Limit)) => {
                return (chat, Some(StreamError::TooLarge(max_bytes)));
            }
            Err(eventsource_stream::EventStreamError::Transport(LimitOrTransport::Transport(
                e,
            ))) => return (chat, Some(StreamError::Transport(e))),
            Err(e) => return (chat, Some(StreamError::Framing(e.to_string()))),
        };
        match chat.feed(&event.data) {
            Ok(new) => {
                for e in new {
                    on_event(&chat, e);
                }
            }
            Err(e) => return (chat, Some(e)),
        }
        if chat.done {
            break;
        }
    }
    (chat, None)
}

enum LimitOrTransport {
    Limit,
    Transport(String),
}

impl std::fmt::Display for LimitOrTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitOrTransport::Limit => f.write_str("size limit"),
            LimitOrTransport::Transport(e) => f.write_str(e),
        }
    }
}

/// Decodes a whole recorded stream given as chunks (as they would arrive on the wire).
/// Synchronous: for tests, benchmarks and the fuzz target.
pub fn decode_chunks(chunks: &[&[u8]], max_bytes: usize) -> Decoded {
    let stream = futures::stream::iter(
        chunks
            .iter()
            .map(|c| Ok::<_, std::convert::Infallible>(c.to_vec())),
    );
    let mut events = Vec::new();
    let (stream, error) =
        futures::executor::block_on(decode(stream, max_bytes, |_, e| events.push(e)));
    Decoded {
        stream,
        events,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(content: &str) -> String {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
            serde_json::to_string(content).unwrap()
        )
    }

    const FINISH: &str =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    const USAGE: &str = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18}}\n\n";

    #[test]
    fn a_whole_stream_decodes_to_text_usage_and_ordered_events() {
        let wire = format!(
            ": keep-alive\n\n{}{}{FINISH}{USAGE}data: [DONE]\n\n",
            chunk("Hel"),
            chunk("lo ✓")
        );
        let decoded = decode_chunks(&[wire.as_bytes()], 1 << 20);
        assert!(decoded.error.is_none(), "{decoded:?}");
        assert!(decoded.is_complete());
        assert_eq!(decoded.stream.text, "Hello ✓");
        assert_eq!(
            decoded.stream.usage,
            Some(Usage {
                prompt_tokens: 11,
                completion_tokens: 7
            })
        );
        let kinds: Vec<_> = decoded.events.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                EventKind::TextDelta,
                EventKind::TextDelta,
                EventKind::MessageEnd
            ]
        );
    }

    #[test]
    fn a_cut_stream_is_not_complete() {
        let wire = chunk("partial");
        let decoded = decode_chunks(&[wire.as_bytes(), b"data: {\"choi"], 1 << 20);
        assert_eq!(decoded.stream.text, "partial");
        assert!(!decoded.is_complete());
    }

    #[test]
    fn reasoning_and_tool_calls_become_events() {
        let wire = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"p\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"not ours\"}}]}\n\n",
        );
        let decoded = decode_chunks(&[wire.as_bytes()], 1 << 20);
        assert_eq!(decoded.events[0].kind, EventKind::ReasoningDelta);
        assert_eq!(decoded.events[1].tool, "read");
        assert_eq!(decoded.events[2].tool, "read", "the name carries over");
        assert_eq!(decoded.stream.tool_calls[&0].1, "{\"p\":1}");
        assert_eq!(decoded.stream.text, "");
    }

    #[test]
    fn server_errors_and_garbage_end_decoding() {
        let wire = "data: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        let decoded = decode_chunks(&[wire.as_bytes()], 1 << 20);
        assert_eq!(
            decoded.error,
            Some(StreamError::Server("overloaded".into()))
        );
        let decoded = decode_chunks(&[b"data: not json\n\n"], 1 << 20);
        assert!(matches!(decoded.error, Some(StreamError::Chunk(_))));
        let decoded = decode_chunks(&[b"data: \xff\xfe\n\n"], 1 << 20);
        assert!(matches!(decoded.error, Some(StreamError::Framing(_))));
        let big = chunk(&"x".repeat(100));
        let decoded = decode_chunks(&[big.as_bytes()], 50);
        assert_eq!(decoded.error, Some(StreamError::TooLarge(50)));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Arbitrary bytes in arbitrary chunks never panic.
            #[test]
            fn arbitrary_bytes_never_panic(
                chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)
            ) {
                let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
                let _ = decode_chunks(&refs, 4096);
            }

            /// However a valid stream is split into chunks, it decodes to the same text.
            #[test]
            fn chunking_does_not_change_the_result(
                pieces in proptest::collection::vec("[a-zé✓ \\n\"]{0,8}", 1..6),
                cuts in proptest::collection::vec(0usize..400, 0..6),
            ) {
                let mut wire = String::new();
                for p in &pieces {
                    wire.push_str(&chunk(p));
                }
                wire.push_str(FINISH);
                wire.push_str("data: [DONE]\n\n");
                let bytes = wire.as_bytes();
                let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
                cuts.sort();
                let mut parts = Vec::new();
                let mut last = 0;
                for c in cuts {
                    parts.push(&bytes[last..c]);
                    last = c;
                }
                parts.push(&bytes[last..]);
                let decoded = decode_chunks(&parts, 1 << 20);
                prop_assert!(decoded.error.is_none(), "{:?}", decoded.error);
                prop_assert!(decoded.is_complete());
                prop_assert_eq!(decoded.stream.text, pieces.concat());
            }
        }
    }
}
