//! # model-script
//!
//! Test support: a model server on loopback whose words are scripted, for driving real
//! agent programs (codex, codex-acp, claude-code, pi, gemini) in tests. The agent, its tool
//! calls and its process tree are real; only the model's replies come from a script.
//!
//! ## Design
//!
//! * A [`Script`] is a list of [`Turn`]s. Every model request (any protocol) takes the
//!   next turn, in arrival order; when the script is exhausted the server answers with
//!   [`EXHAUSTED_TEXT`] and counts it, so a test can assert the agent asked no more
//!   than scripted.
//! * A [`Turn`] is protocol-neutral: text, tool calls, usage, and how the stream ends
//!   ([`Ending`]: complete, hang forever, or disconnect). Each protocol module renders
//!   the same turn in its own wire format: [`responses`] (OpenAI Responses streaming,
//!   what codex speaks), [`chat`] (OpenAI Chat Completions streaming, what
//!   DeepSeek Harness speaks), [`anthropic`]
//!   (Anthropic Messages streaming, what Claude Code speaks), [`gemini`] (the Gemini
//!   API's `streamGenerateContent`, what Gemini CLI speaks).
//! * [`ScriptedServer::start`] serves every protocol at once on an ephemeral loopback
//!   port (its own thread and runtime, so it outlives any one test runtime) and
//!   records each request ([`Recorded`]: path, headers that matter, JSON body).
//!
//! ## Invariants
//! * Loopback only; ephemeral ports; nothing is read from or written to disk.
//! * A request never blocks on another: turns are taken under a short lock.
//!
//! ## Deliberately not done
//! * No model: the server does not look at the prompt to decide what to say. A test
//!   that needs a different answer writes a different script.
//! * No authentication check: any key is accepted (and recorded, so a test can check
//!   what was sent).

pub mod anthropic;
pub mod chat;
pub mod gemini;
pub mod responses;
mod server;
mod sse;

pub use server::{Recorded, ScriptedServer};

/// The text served once the script is exhausted.
pub const EXHAUSTED_TEXT: &str = "model-script: script exhausted";

/// One scripted model reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// What the model says, in order.
    pub parts: Vec<Part>,
    /// Token usage reported at the end (when the stream completes).
    pub usage: Usage,
    /// How the stream ends.
    pub ending: Ending,
}

/// One piece of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Assistant text, streamed in a few deltas.
    Text(String),
    /// A function/tool call with JSON arguments (serialized as a string on the wire).
    ToolCall {
        call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// A call of a tool inside a namespace: the Responses API's `namespace` tools,
    /// which is how Codex (0.171) offers each MCP server (`mcp__envreg`, holding
    /// `env_resolve`, …). Protocols without namespaces get one flat name,
    /// `{namespace}__{name}` (the `mcp__<server>__<tool>` spelling Claude Code uses).
    NamespacedToolCall {
        call_id: String,
        namespace: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// A free-form ("custom") tool call, e.g. codex's `apply_patch` grammar tool:
    /// the input is raw text, not JSON.
    CustomToolCall {
        call_id: String,
        name: String,
        input: String,
    },
}

/// Token counts reported with a completed turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input_tokens: 100,
            output_tokens: 10,
        }
    }
}

/// How a turn's stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ending {
    /// The protocol's normal completion (with usage).
    #[default]
    Complete,
    /// The parts are sent, then nothing more, forever (the connection stays open).
    Hang,
    /// The parts are sent, then the connection is aborted.
    Disconnect,
}

impl Part {
    /// A namespaced call as one flat call (name `{namespace}__{name}`), for protocols
    /// without namespaces; every other part as it is.
    pub fn flattened(&self) -> Part {
        match self {
            Part::NamespacedToolCall {
                call_id,
                namespace,
                name,
                arguments,
            } => Part::ToolCall {
                call_id: call_id.clone(),
                name: format!("{namespace}__{name}"),
                arguments: arguments.clone(),
            },
            other => other.clone(),
        }
    }
}

impl Turn {
    /// A turn that only says `text`.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            parts: vec![Part::Text(text.into())],
            ..Turn::default()
        }
    }

    /// A turn that only calls `name` with `arguments`.
    pub fn tool_call(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Turn {
        Turn {
            parts: vec![Part::ToolCall {
                call_id: call_id.into(),
                name: name.into(),
                arguments,
            }],
            ..Turn::default()
        }
    }

    /// A turn that calls `name` in `namespace` with `arguments`.
    pub fn namespaced_tool_call(
        call_id: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Turn {
        Turn {
            parts: vec![Part::NamespacedToolCall {
                call_id: call_id.into(),
                namespace: namespace.into(),
                name: name.into(),
                arguments,
            }],
            ..Turn::default()
        }
    }

    /// A turn that calls the free-form tool `name` with raw `input`.
    pub fn custom_tool_call(
        call_id: impl Into<String>,
        name: impl Into<String>,
        input: impl Into<String>,
    ) -> Turn {
        Turn {
            parts: vec![Part::CustomToolCall {
                call_id: call_id.into(),
                name: name.into(),
                input: input.into(),
            }],
            ..Turn::default()
        }
    }

    /// The same turn with `usage`.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }

    /// The same turn ending with `ending`.
    pub fn ending(mut self, ending: Ending) -> Turn {
        self.ending = ending;
        self
    }
}

/// The turns a server serves, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    pub turns: Vec<Turn>,
}

impl Script {
    pub fn new(turns: Vec<Turn>) -> Script {
        Script { turns }
    }
}
