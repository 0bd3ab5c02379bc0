//! The `agent-native` backend (deprecated alias `pi-native`): the pi coding agent
//! (npm `@mariozechner/pi-coding-agent`, bin `pi`) run headless as
//! `pi --mode json --session-dir DIR [--session FILE] [--model M] [tool flags]
//! [--append-system-prompt FILE] [args…]` with the prompt on stdin, in the workspace
//! root, driven by [`crate::agent_program::drive`].
//!
//! `pi --mode json` writes one JSON object a line: a `session` header, then pi's
//! `AgentSessionEvent`s — `agent_start`, `turn_start`, `message_start` /
//! `message_update` (with an `assistantMessageEvent`: `text_delta`, `thinking_delta`,
//! `toolcall_start`, `toolcall_delta`, …) / `message_end`, `tool_execution_start` /
//! `_update` / `_end`, `turn_end`, `agent_end` (every message of the run), plus
//! `auto_retry_*`, `compaction_*` and `queue_update`.
//!
//! * [`parse_line`] is a pure function from one line to what it means
//!   ([`Line`]). It never panics; a line that is not a JSON object with a `type` is
//!   [`Line::Unrecognised`]; an unknown `type` is [`Line::Other`] (pi adds event types
//!   between releases). It is a hand-written serde visitor rather than a
//!   `serde_json::Value` decode: `message_update` lines repeat the whole partial
//!   message (about 1 KB each, the bulk of the stream), and the visitor skips those
//!   parts without building them. Fuzzed (`agent_exec_pi_stream`), property-tested.
//! * [`PiStream`] folds lines into the driver's [`Verdict`]: the result is final only
//!   on `agent_end`, judged by the run's last assistant message and its `stopReason`:
//!   `stop` → completed with that message's text; `error` → failed ([`classify_failure`]:
//!   transport trouble is `agent.provider_unavailable`, anything else
//!   `agent.provider_rejected`);
//!   `length` → failed `agent.budget_exceeded` (the answer was cut at the output-token
//!   limit: not passed off as complete); `aborted` → failed `agent.canceled`; `toolUse`
//!   or anything unknown stays pending, so the driver reports `unknown`.
//!   Usage is summed over every assistant `message_end` (pi reports usage per message,
//!   one message per model request): prompt tokens are `input + cacheRead +
//!   cacheWrite`, completion tokens `output`.
//! * [`Pi`] is the [`AgentCli`]: the argv, the prompt and the probes; [`PiBackend`] is
//!   the one agent-CLI backend over it.
//!
//! Decisions:
//! * One-shot JSON mode, not `--mode rpc`: one execution is one prompt, the stream
//!   carries everything the contract needs, and cancel is the driver's whole-tree
//!   termination (which also reaches the detached process groups pi's `bash` tool
//!   starts), so RPC's `abort` command would add a protocol without adding a guarantee.
//! * The prompt goes on stdin, never in argv: pi reads a positional `@name` as a file
//!   to attach and `-x` as a flag. pi trims stdin, so leading/trailing whitespace of
//!   the prompt is not kept. `context` is rendered above the prompt as a transcript and
//!   `targets` below it as the files to write.
//! * `instructions` go through `--append-system-prompt` as a *file* we write: pi reads
//!   the option's value as a path when such a file exists, so passing the text itself
//!   could silently read a file instead, and argv has a size limit.
//! * Exit status 0 says nothing in JSON mode (pi exits 0 after a failed model call),
//!   so the stream's `stopReason` decides.
//! * The environment defaults to `PI_OFFLINE=1` (no update check or telemetry call to
//!   pi.dev on every run); the config's `env` can override it.
//! * The [`agent_exec_contract::ToolPolicy`] is held with pi's own flags
//!   ([`tool_args`]): profile `reasoning` or empty (the contract's default) is
//!   `--no-tools`; `workspace` keeps pi's default set (`read`, `bash`, `edit`, `write`,
//!   plus tools of extensions the user installed); an allowlist is `--tools a,b`,
//!   exactly those, each of which must be one of pi's built-in tools ([`PI_TOOLS`]);
//!   anything else is refused (`agent.tool_rejected`) before pi starts.
//! * Error reasons and logs are scrubbed of the values of environment variables
//!   (configured or inherited) that look like credentials (`*KEY*`, `*TOKEN*`,
//!   `*SECRET*`, `*PASSWORD*`), in case a provider echoes a key back.
//!
//! Invariants: the parser never panics and never reads a line as success unless it
//! is pi's `agent_end` after a `stop`; `succeeded` also needs pi to exit 0 soon after
//! (the driver's table); no configured or inherited credential value appears in a
//! reason or in logs.
//!
//! * Resume: pi keeps each execution's sessions in that execution's folder of the
//!   [`SessionStore`] (`--session-dir`; never `~/.pi/agent/sessions`). The `session`
//!   header's id is the handle ([`StreamParser::session`], which the driver reports the
//!   moment it is read), and only when it is a UUID ([`check_handle`]). A resumed attempt maps
//!   the handle back to `<timestamp>_<id>.jsonl` by listing that folder only
//!   ([`session_file_matches`]) and runs `--session FILE` with the continuation prompt
//!   (the request's `context` is in the session already, so it is not rendered again).
//!   The folder is removed after a `succeeded` attempt. `verify` proves it: the probe's
//!   session file must exist, and a second pi on `--session FILE` must name the same
//!   session. Decision: the handle is the id, not the file's path — a path from the
//!   journal would be trusted input naming a file; the id only selects among files the
//!   folder listing shows.
//!
//! Deliberately not done: pi's own provider configuration (`models.json` in
//! `PI_CODING_AGENT_DIR`, default `~/.pi/agent`) is the user's, and this backend only
//! names the model; a sweep of session folders nobody resumed.

use std::fmt;
use std::time::Duration;

use agent_exec_contract::{
    ContractRequest, ContractResult, Error, ErrorCode, Event, EventKind, ExecutionContext, Outcome,
    SideEffects, Usage,
};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::agent_cli::{
    AgentCli, AgentCliBackend, Attempt, Probe, ProbePlan, ProgramVersion, SessionSeen,
    ToolPolicyRefused, ToolsProof, VersionOrder,
};
use crate::agent_program::{self, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict};
use crate::session_store::SessionStore;

/// The kind name in config (`kind = "agent-native"`).
pub const KIND: &str = "agent-native";

/// The deprecated name that resolves to [`KIND`] (with a deprecation warning).
pub const DEPRECATED_ALIAS: &str = "pi-native";

/// The program run when the config names none (looked up on `PATH`).
pub const DEFAULT_PROGRAM: &str = "pi";

/// What to install when the program is missing.
pub const INSTALL_HINT: &str = "install @mariozechner/pi-coding-agent (npm i -g @mariozechner/pi-coding-agent; needs Node >= 20.6)";

/// The kind's own flags, before the session, model and tool flags.
pub const JSON_MODE_FLAGS: [&str; 2] = ["--mode", "json"];

/// The flag of a run whose session is not kept (no session store).
pub const NO_SESSION_FLAG: &str = "--no-session";

/// How long each `verify` probe may take (Node start-up on a loaded machine).
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest tool-failure text kept in an event's `detail`, in bytes.
const MAX_DETAIL: usize = 200;

/// Why an assistant message stopped (pi's `stopReason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The output-token limit cut the answer.
    Length,
    /// The model asked for tools (the loop goes on).
    ToolUse,
    /// The model request failed (`errorMessage` says why).
    Error,
    /// The run was aborted.
    Aborted,
    /// A reason this parser does not know (or none).
    Other(String),
}

impl StopReason {
    fn parse(reason: &str) -> StopReason {
        match reason {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

/// An assistant message as pi ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assistant {
    /// Its text parts, joined with newlines.
    pub text: String,
    pub stop_reason: StopReason,
    /// pi's `errorMessage`, when it stopped on an error.
    pub error: Option<String>,
    /// Usage of the model request that produced it.
    pub usage: Usage,
}

/// What one line of `pi --mode json` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The `session` header: its format version and the session's id, when given.
    Session {
        version: Option<u64>,
        id: Option<String>,
    },
    /// Assistant text streaming in.
    TextDelta(String),
    /// Thinking text streaming in.
    ReasoningDelta(String),
    /// A tool call starts streaming: its content index and tool name.
    ToolCallStart { index: u64, name: String },
    /// Arguments of the tool call at `index` streaming in.
    ToolCallDelta { index: u64, delta: String },
    /// `tool_execution_start`: the tool and a one-line summary of its arguments.
    ToolStart { tool: String, detail: String },
    /// `tool_execution_end`: on error, the start of the tool's message.
    ToolEnd {
        tool: String,
        is_error: bool,
        detail: String,
    },
    /// `message_end` of an assistant message (one model request).
    AssistantEnd(Assistant),
    /// `agent_end`: the run is over; its last assistant message, if any.
    AgentEnd(Option<Assistant>),
    /// A well-formed line that means nothing for the contract (lifecycle, user and
    /// tool-result messages, retries, compaction, unknown types).
    Other,
    /// Not a JSON object with a string `type`.
    Unrecognised,
}

/// Parses one line (without its newline).
pub fn parse_line(line: &[u8]) -> Line {
    match serde_json::from_slice::<RawLine>(line) {
        Ok(raw) => raw.into_line(),
        Err(_) => Line::Unrecognised,
    }
}

// ---------------------------------------------------------------------------------
// The visitor. pi writes `type` first in every object it emits, so once the type is
// known, the fields that type does not need are skipped (IgnoredAny) instead of
// built; a field seen before the type is parsed in case it is needed.

/// The line types this parser reads fields of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    MessageUpdate,
    MessageEnd,
    ToolStart,
    ToolEnd,
    AgentEnd,
    Other,
}

/// The top-level keys this parser reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Type,
    AssistantMessageEvent,
    Message,
    Messages,
    ToolName,
    Args,
    Result,
    IsError,
    Version,
    Id,
    Other,
}

/// Keys of an `assistantMessageEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKey {
    Type,
    ContentIndex,
    Delta,
    Partial,
    Other,
}

/// `assistantMessageEvent.type`, as far as it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Text,
    Thinking,
    ToolCallStart,
    ToolCall,
    Other,
}

/// Deserializes a string into one of a few names without allocating; anything that
/// is not a string is a type error (the line is then unrecognised).
macro_rules! name_enum {
    ($ty:ident, $expecting:literal, $other:expr, { $($name:literal => $variant:expr),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct NameVisitor;
                impl Visitor<'_> for NameVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        Ok(match v {
                            $($name => $variant,)*
                            _ => $other,
                        })
                    }
                }
                deserializer.deserialize_str(NameVisitor)
            }
        }
    };
}

name_enum!(Kind, "an event type", Kind::Other, {
    "session" => Kind::Session,
    "message_update" => Kind::MessageUpdate,
    "message_end" => Kind::MessageEnd,
    "tool_execution_start" => Kind::ToolStart,
    "tool_execution_end" => Kind::ToolEnd,
    "agent_end" => Kind::AgentEnd,
});

name_enum!(Key, "a field name", Key::Other, {
    "type" => Key::Type,
    "assistantMessageEvent" => Key::AssistantMessageEvent,
    "message" => Key::Message,
    "messages" => Key::Messages,
    "toolName" => Key::ToolName,
    "args" => Key::Args,
    "result" => Key::Result,
    "isError" => Key::IsError,
    "version" => Key::Version,
    "id" => Key::Id,
});

name_enum!(EventKey, "a field name", EventKey::Other, {
    "type" => EventKey::Type,
    "contentIndex" => EventKey::ContentIndex,
    "delta" => EventKey::Delta,
    "partial" => EventKey::Partial,
});

name_enum!(DeltaKind, "an assistant message event type", DeltaKind::Other, {
    "text_delta" => DeltaKind::Text,
    "thinking_delta" => DeltaKind::Thinking,
    "toolcall_start" => DeltaKind::ToolCallStart,
    "toolcall_delta" => DeltaKind::ToolCall,
});

/// The fields of one line that matter, before interpretation.
#[derive(Default)]
struct RawLine {
    kind: Option<Kind>,
    event: Option<RawEvent>,
    message: Option<Value>,
    last_assistant: Option<Value>,
    tool_name: Option<String>,
    args: Option<Value>,
    result: Option<Value>,
    is_error: Option<Value>,
    version: Option<Value>,
    id: Option<Value>,
}

/// The fields of an `assistantMessageEvent` that matter.
#[derive(Default)]
struct RawEvent {
    kind: Option<DeltaKind>,
    content_index: Option<Value>,
    delta: Option<String>,
    partial: Option<Value>,
}

/// True when a field belongs to `wanted` lines, or the type is not known yet.
fn wants(kind: Option<Kind>, wanted: &[Kind]) -> bool {
    kind.is_none_or(|kind| wanted.contains(&kind))
}

impl<'de> serde::Deserialize<'de> for RawLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LineVisitor;
        impl<'de> Visitor<'de> for LineVisitor {
            type Value = RawLine;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a pi JSON-mode event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawLine, A::Error> {
                use Kind as K;
                let mut raw = RawLine::default();
                while let Some(key) = map.next_key::<Key>()? {
                    let kind = raw.kind;
                    match key {
                        Key::Type => raw.kind = Some(map.next_value()?),
                        Key::AssistantMessageEvent if wants(kind, &[K::MessageUpdate]) => {
                            raw.event = Some(map.next_value()?);
                        }
                        Key::Message if wants(kind, &[K::MessageEnd]) => {
                            raw.message = Some(map.next_value()?);
                        }
                        Key::Messages if wants(kind, &[K::AgentEnd]) => {
                            raw.last_assistant = map.next_value::<LastAssistant>()?.0;
                        }
                        Key::ToolName if wants(kind, &[K::ToolStart, K::ToolEnd]) => {
                            raw.tool_name = map.next_value::<Value>()?.as_str().map(str::to_owned);
                        }
                        Key::Args if wants(kind, &[K::ToolStart]) => {
                            raw.args = Some(map.next_value()?);
                        }
                        Key::Result if wants(kind, &[K::ToolEnd]) => {
                            raw.result = Some(map.next_value()?);
                        }
                        Key::IsError if wants(kind, &[K::ToolEnd]) => {
                            raw.is_error = Some(map.next_value()?);
                        }
                        Key::Version if wants(kind, &[K::Session]) => {
                            raw.version = Some(map.next_value()?);
                        }
                        Key::Id if wants(kind, &[K::Session]) => {
                            raw.id = Some(map.next_value()?);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(raw)
            }
        }
        deserializer.deserialize_map(LineVisitor)
    }
}

impl<'de> serde::Deserialize<'de> for RawEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EventVisitor;
        impl<'de> Visitor<'de> for EventVisitor {
            type Value = RawEvent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an assistantMessageEvent object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEvent, A::Error> {
                let mut raw = RawEvent::default();
                while let Some(key) = map.next_key::<EventKey>()? {
                    let kind = raw.kind;
                    match key {
                        EventKey::Type => raw.kind = Some(map.next_value()?),
                        EventKey::ContentIndex => raw.content_index = Some(map.next_value()?),
                        EventKey::Delta
                            if kind.is_none_or(|k| {
                                matches!(
                                    k,
                                    DeltaKind::Text | DeltaKind::Thinking | DeltaKind::ToolCall
                                )
                            }) =>
                        {
                            raw.delta = map.next_value::<Value>()?.as_str().map(str::to_owned);
                        }
                        // The partial message is read only for the tool's name.
                        EventKey::Partial if kind.is_none_or(|k| k == DeltaKind::ToolCallStart) => {
                            raw.partial = Some(map.next_value()?);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(raw)
            }
        }
        deserializer.deserialize_map(EventVisitor)
    }
}

/// The last assistant message of an `agent_end`'s `messages` (others are skipped
/// after reading their role).
struct LastAssistant(Option<Value>);

impl<'de> serde::Deserialize<'de> for LastAssistant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SeqVisitor;
        impl<'de> Visitor<'de> for SeqVisitor {
            type Value = LastAssistant;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LastAssistant, A::Error> {
                let mut last = None;
                while let Some(message) = seq.next_element::<Value>()? {
                    if message.get("role").and_then(Value::as_str) == Some("assistant") {
                        last = Some(message);
                    }
                }
                Ok(LastAssistant(last))
            }
        }
        deserializer.deserialize_seq(SeqVisitor)
    }
}

impl RawLine {
    fn into_line(self) -> Line {
        let Some(kind) = self.kind else {
            return Line::Unrecognised;
        };
        match kind {
            Kind::Session => Line::Session {
                version: self.version.as_ref().and_then(Value::as_u64),
                id: self.id.as_ref().and_then(Value::as_str).map(str::to_owned),
            },
            Kind::MessageUpdate => self.event.map_or(Line::Other, RawEvent::into_line),
            Kind::MessageEnd => self
                .message
                .as_ref()
                .and_then(assistant_of)
                .map_or(Line::Other, Line::AssistantEnd),
            Kind::ToolStart => Line::ToolStart {
                tool: self.tool_name.unwrap_or_default(),
                detail: self.args.as_ref().map(summarize_args).unwrap_or_default(),
            },
            Kind::ToolEnd => {
                let is_error = self.is_error.as_ref().and_then(Value::as_bool) == Some(true);
                Line::ToolEnd {
                    tool: self.tool_name.unwrap_or_default(),
                    is_error,
                    detail: if is_error {
                        self.result.as_ref().map(first_text).unwrap_or_default()
                    } else {
                        String::new()
                    },
                }
            }
            Kind::AgentEnd => Line::AgentEnd(self.last_assistant.as_ref().and_then(assistant_of)),
            Kind::Other => Line::Other,
        }
    }
}

impl RawEvent {
    fn into_line(self) -> Line {
        let index = self.content_index.as_ref().and_then(Value::as_u64);
        match (self.kind, self.delta) {
            (Some(DeltaKind::Text), Some(delta)) => Line::TextDelta(delta),
            (Some(DeltaKind::Thinking), Some(delta)) => Line::ReasoningDelta(delta),
            (Some(DeltaKind::ToolCall), Some(delta)) => Line::ToolCallDelta {
                index: index.unwrap_or(0),
                delta,
            },
            (Some(DeltaKind::ToolCallStart), _) => {
                let index = index.unwrap_or(0);
                let name = self
                    .partial
                    .as_ref()
                    .and_then(|p| p.get("content"))
                    .and_then(|c| c.get(usize::try_from(index).ok()?))
                    .and_then(|part| part.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Line::ToolCallStart { index, name }
            }
            _ => Line::Other,
        }
    }
}

/// A number pi wrote as a token count (an integer, or a float from some providers).
fn count(value: Option<&Value>) -> u64 {
    match value {
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .unwrap_or(0),
        None => 0,
    }
}

/// Reads an assistant message; anything else (user, toolResult, malformed) is `None`.
fn assistant_of(message: &Value) -> Option<Assistant> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let text = message
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let usage = message.get("usage");
    let field = |name: &str| count(usage.and_then(|u| u.get(name)));
    Some(Assistant {
        text,
        stop_reason: StopReason::parse(
            message
                .get("stopReason")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ),
        error: message
            .get("errorMessage")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: Usage {
            prompt_tokens: field("input")
                .saturating_add(field("cacheRead"))
                .saturating_add(field("cacheWrite")),
            completion_tokens: field("output"),
        },
    })
}

/// One line saying what a tool call is about: the command, path or pattern.
fn summarize_args(args: &Value) -> String {
    ["command", "path", "file_path", "pattern"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str))
        .map(|s| agent_program::bounded(s, MAX_DETAIL))
        .unwrap_or_default()
}

/// The first text part of a tool result (`{"content":[{"type":"text","text":…}]}`).
fn first_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|parts| {
            parts
                .iter()
                .find_map(|part| part.get("text").and_then(Value::as_str))
        })
        .map(|s| agent_program::bounded(s, MAX_DETAIL))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------

/// Folds pi's lines into events, usage and a verdict (see the module doc).
#[derive(Debug, Default)]
pub struct PiStream {
    usage: Usage,
    /// Tool names of the streaming message's tool calls, by content index.
    tool_calls: Vec<(u64, String)>,
    last_assistant: Option<Assistant>,
    verdict: Verdict,
    session_version: Option<u64>,
    saw_session: bool,
    /// The session header's id, when it was a usable handle ([`check_handle`]).
    session_id: Option<String>,
    /// Whether pi keeps this session (then [`StreamParser::session`] gives its id).
    keeps_session: bool,
    /// Why the header's id is not a usable handle (for the logs).
    session_problem: Option<String>,
    ended: bool,
}

impl PiStream {
    pub fn new() -> Self {
        PiStream::default()
    }

    /// A stream of a run whose session pi keeps: [`StreamParser::session`] gives the
    /// header's id once read, and the driver reports it at once (before the line's
    /// events), so a runner killed a moment later has already handed it to the
    /// journal. [`PiStream::new`] (an ephemeral run) has no handle to give.
    pub fn keeping_session() -> Self {
        PiStream {
            keeps_session: true,
            ..PiStream::default()
        }
    }

    /// The session's id from the header, when it was a usable handle.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Why the header's id was refused as a handle, if it was.
    pub fn session_problem(&self) -> Option<&str> {
        self.session_problem.as_deref()
    }

    /// Whether the `session` header was seen (pi's JSON mode starts with it).
    pub fn saw_session(&self) -> bool {
        self.saw_session
    }

    /// The session header's format version, when it gave one.
    pub fn session_version(&self) -> Option<u64> {
        self.session_version
    }

    /// Whether pi keeps this run's session ([`PiStream::keeping_session`]).
    pub fn keeps_session(&self) -> bool {
        self.keeps_session
    }

    /// Whether `agent_end` was seen.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The verdict `final_message` means (see the module doc).
    fn judge(final_message: Option<&Assistant>) -> Verdict {
        let Some(message) = final_message else {
            return Verdict::Pending;
        };
        let said = |fallback: &str| {
            message
                .error
                .clone()
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| fallback.to_owned())
        };
        match &message.stop_reason {
            StopReason::Stop => Verdict::Completed(message.text.clone()),
            StopReason::Error => {
                let error = said("the model request failed without a message");
                Verdict::Failed {
                    code: classify_failure(&error),
                    message: format!("pi: {error}"),
                }
            }
            StopReason::Length => Verdict::Failed {
                code: ErrorCode::BudgetExceeded,
                message: "pi: the model stopped at its output-token limit (stopReason `length`); the answer is incomplete".to_owned(),
            },
            StopReason::Aborted => Verdict::Failed {
                code: ErrorCode::Canceled,
                message: format!("pi aborted the run: {}", said("no reason given")),
            },
            StopReason::ToolUse | StopReason::Other(_) => Verdict::Pending,
        }
    }
}

/// Words of pi's own "retryable error" test (`_isRetryableError` in pi 0.73), written
/// without separators: a message pi itself would retry is transport trouble.
const TRANSIENT_WORDS: [&str; 27] = [
    "overloaded",
    "providerreturnederror",
    "ratelimit",
    "toomanyrequests",
    "serviceunavailable",
    "servererror",
    "internalerror",
    "networkerror",
    "connectionerror",
    "connectionrefused",
    "connectionlost",
    "websocketclosed",
    "websocketerror",
    "othersideclosed",
    "fetchfailed",
    "upstreamconnect",
    "resetbeforeheaders",
    "sockethangup",
    "endedwithout",
    "http2requestdidnotgetaresponse",
    "timedout",
    "timeout",
    "terminated",
    "retrydelay",
    "econnrefused",
    "econnreset",
    "unavailable",
];

/// Transport trouble, worth retrying later ([`ErrorCode::ProviderUnavailable`]), or a
/// refusal ([`ErrorCode::ProviderRejected`]). An HTTP status at the start of the
/// message (`401 Incorrect API key…`, as the provider SDKs write it) decides: 408,
/// 429 and 5xx are transient, other statuses are refusals. Otherwise the words pi
/// itself retries on (`TRANSIENT_WORDS`) mean transient; anything else is a refusal.
pub fn classify_failure(message: &str) -> ErrorCode {
    let status = message
        .get(..3)
        .filter(|head| head.bytes().all(|b| b.is_ascii_digit()))
        .filter(|_| {
            message
                .as_bytes()
                .get(3)
                .is_none_or(|b| !b.is_ascii_digit())
        })
        .and_then(|head| head.parse::<u16>().ok());
    let transient = match status {
        Some(code) if (100..600).contains(&code) => code == 408 || code == 429 || code >= 500,
        _ => {
            let squeezed: String = message
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .map(|c| c.to_ascii_lowercase())
                .collect();
            TRANSIENT_WORDS.iter().any(|word| squeezed.contains(word))
        }
    };
    if transient {
        ErrorCode::ProviderUnavailable
    } else {
        ErrorCode::ProviderRejected
    }
}

/// Checks that `handle` is a pi session id as agent-exec uses it: a valid contract
/// handle ([`check_session_handle`](agent_exec_contract::check_session_handle)) that is
/// also a UUID (`8-4-4-4-12` hex digits, what pi 0.73 writes in its session header).
/// Anything else is refused on both sides: never reported, never resumed.
pub fn check_handle(handle: &str) -> Result<(), HandleRefused> {
    agent_exec_contract::check_session_handle(handle).map_err(HandleRefused::Contract)?;
    if agent_program::is_uuid(handle) {
        Ok(())
    } else {
        Err(HandleRefused::NotUuid(handle.to_owned()))
    }
}

/// Why [`check_handle`] refused a handle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleRefused {
    /// Not a handle of the contract at all (the contract's own reason).
    #[error("{0}")]
    Contract(String),
    /// A handle, but not the UUID pi names its sessions by.
    #[error("pi session handle {0:?} is not a session id (a UUID)")]
    NotUuid(String),
}

/// Whether `name` (a file name listed from a session folder) is the file pi 0.73
/// writes for session `id`: `<timestamp>_<id>.jsonl`, the timestamp being letters,
/// digits and `-` only (`2026-12-02T00-31-39-337Z`).
pub fn session_file_matches(name: &str, id: &str) -> bool {
    name.strip_suffix(".jsonl")
        .and_then(|stem| stem.strip_suffix(id))
        .and_then(|head| head.strip_suffix('_'))
        .is_some_and(|stamp| {
            !stamp.is_empty()
                && stamp
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

impl StreamParser for PiStream {
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
        let event = |kind: EventKind, text: String, tool: String, detail: String| Event {
            kind,
            text,
            tool,
            detail,
        };
        match parse_line(line) {
            Line::Session { version, id } => {
                self.saw_session = true;
                self.session_version = version;
                match id.as_deref().map(check_handle) {
                    Some(Ok(())) => self.session_id = id,
                    Some(Err(problem)) => self.session_problem = Some(problem.to_string()),
                    None => {
                        self.session_problem = Some("the session header has no id".to_owned());
                    }
                }
            }
            Line::TextDelta(text) => events.push(Event::text_delta(text)),
            Line::ReasoningDelta(text) => events.push(event(
                EventKind::ReasoningDelta,
                text,
                String::new(),
                String::new(),
            )),
            Line::ToolCallStart { index, name } => {
                self.tool_calls.retain(|(i, _)| *i != index);
                self.tool_calls.push((index, name));
            }
            Line::ToolCallDelta { index, delta } => {
                let tool = self
                    .tool_calls
                    .iter()
                    .find(|(i, _)| *i == index)
                    .map(|(_, name)| name.clone())
                    .unwrap_or_default();
                events.push(event(EventKind::ToolCallDelta, delta, tool, String::new()));
            }
            Line::ToolStart { tool, detail } => {
                events.push(event(EventKind::ToolExecStart, String::new(), tool, detail));
            }
            Line::ToolEnd {
                tool,
                is_error,
                detail,
            } => {
                let detail = if is_error {
                    format!("error: {detail}")
                } else {
                    detail
                };
                events.push(event(EventKind::ToolExecEnd, String::new(), tool, detail));
            }
            Line::AssistantEnd(message) => {
                self.usage = self.usage.plus(message.usage);
                self.tool_calls.clear();
                self.last_assistant = Some(message);
            }
            Line::AgentEnd(last) => {
                self.ended = true;
                let last = last.or_else(|| self.last_assistant.clone());
                self.verdict = Self::judge(last.as_ref());
            }
            Line::Other | Line::Unrecognised => {}
        }
    }

    fn verdict(&self) -> Verdict {
        self.verdict.clone()
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn session(&self) -> Option<&str> {
        self.session_id.as_deref().filter(|_| self.keeps_session)
    }
}

// ---------------------------------------------------------------------------------

/// pi as an [`AgentCli`]: its argv, parser and probes. Holds its configuration and
/// where pi's sessions are kept (per execution, see [`crate::session_store`]); nothing
/// else carries over between executions.
#[derive(Debug, Clone)]
pub struct Pi {
    config: ProgramConfig,
    sessions: Option<SessionStore>,
}

/// The `agent-native` backend.
pub type PiBackend = AgentCliBackend<Pi>;

/// How one attempt tells pi about its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionArgs<'a> {
    /// Not kept: `--no-session` (no session store).
    Ephemeral,
    /// A new session, written in this folder: `--session-dir DIR`.
    New(&'a std::path::Path),
    /// The session file (inside `dir`) to continue: `--session-dir DIR --session FILE`.
    Resume {
        dir: &'a std::path::Path,
        file: &'a std::path::Path,
    },
}

/// pi's built-in tools (0.73): the names an allowlist may use.
pub const PI_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The flags that hold pi to `policy` (see the module doc); an unknown profile or
/// tool is an error naming what is known.
pub fn tool_args(
    policy: &agent_exec_contract::ToolPolicy,
) -> Result<Vec<String>, ToolPolicyRefused> {
    if !policy.allowlist.is_empty() {
        if let Some(bad) = policy
            .allowlist
            .iter()
            .find(|name| !PI_TOOLS.contains(&name.as_str()))
        {
            return Err(ToolPolicyRefused(format!(
                "tool `{bad}` is unknown to the {KIND} backend (known: {})",
                PI_TOOLS.join(", ")
            )));
        }
        return Ok(vec!["--tools".into(), policy.allowlist.join(",")]);
    }
    match policy.profile.as_str() {
        "" | "reasoning" => Ok(vec!["--no-tools".into()]),
        "workspace" => Ok(Vec::new()),
        other => Err(ToolPolicyRefused(format!(
            "tool profile `{other}` is unknown to the {KIND} backend (known: reasoning, workspace, or an allowlist of {})",
            PI_TOOLS.join(", ")
        ))),
    }
}

impl PiBackend {
    /// A backend for `config` (`program` defaults to `pi` on `PATH`). Problems are
    /// reported by [`Backend::verify`](agent_exec_contract::Backend::verify) and at run
    /// time, never by a panic.
    pub fn new(config: ProgramConfig) -> Self {
        AgentCliBackend::of(Pi {
            config,
            sessions: SessionStore::default_for(KIND),
        })
    }

    /// The same backend keeping pi's sessions in `store` instead of the state
    /// directory (tests; an embedder with its own state folder).
    pub fn with_session_store(self, store: SessionStore) -> Self {
        AgentCliBackend::of(Pi {
            sessions: Some(store),
            ..self.into_cli()
        })
    }

    /// The kind's own arguments (see [`Pi::kind_args`]).
    pub fn kind_args(
        &self,
        request: &ContractRequest,
        instructions_file: Option<&std::path::Path>,
        session: SessionArgs<'_>,
    ) -> Result<Vec<String>, ToolPolicyRefused> {
        self.cli().kind_args(request, instructions_file, session)
    }
}

impl Pi {
    fn program(&self) -> &str {
        self.config.program_or(DEFAULT_PROGRAM)
    }

    /// The kind's own arguments: [`JSON_MODE_FLAGS`], the session flags, the model, the
    /// tool flags from the request's policy, and `--append-system-prompt
    /// instructions_file` when given. An unknown tool profile is refused.
    pub fn kind_args(
        &self,
        request: &ContractRequest,
        instructions_file: Option<&std::path::Path>,
        session: SessionArgs<'_>,
    ) -> Result<Vec<String>, ToolPolicyRefused> {
        let mut args: Vec<String> = JSON_MODE_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        match session {
            SessionArgs::Ephemeral => args.push(NO_SESSION_FLAG.into()),
            SessionArgs::New(dir) => {
                args.extend(["--session-dir".into(), dir.display().to_string()]);
            }
            SessionArgs::Resume { dir, file } => args.extend([
                "--session-dir".into(),
                dir.display().to_string(),
                "--session".into(),
                file.display().to_string(),
            ]),
        }
        if let Some(model) = &self.config.model {
            args.push("--model".into());
            args.push(model.clone());
        }
        args.extend(tool_args(&request.tool_policy)?);
        if let Some(path) = instructions_file {
            args.push("--append-system-prompt".into());
            args.push(path.display().to_string());
        }
        Ok(args)
    }
}

/// Where one attempt's session lives (see [`PiBackend::session_for`]).
enum AttemptSession {
    Ephemeral,
    New(std::path::PathBuf),
    Resume {
        dir: std::path::PathBuf,
        file: std::path::PathBuf,
    },
}

impl AttemptSession {
    fn args(&self) -> SessionArgs<'_> {
        match self {
            AttemptSession::Ephemeral => SessionArgs::Ephemeral,
            AttemptSession::New(dir) => SessionArgs::New(dir),
            AttemptSession::Resume { dir, file } => SessionArgs::Resume { dir, file },
        }
    }
}

impl Pi {
    /// The session of this attempt. A fresh attempt gets the execution's folder (or,
    /// when it cannot be made, an ephemeral session and a note: the run itself does
    /// not need it). A resumed one continues the file of `ctx.resume`'s handle, found
    /// by listing the execution's folder; a handle that is not a pi session id, or
    /// no such file, is refused before pi starts (`agent.internal`: agent-exec's own
    /// record is unusable; side effects `none`).
    fn session_for(
        &self,
        request: &ContractRequest,
        ctx: &ExecutionContext,
        resume: Option<&str>,
        notes: &mut Vec<String>,
    ) -> Result<AttemptSession, Error> {
        let refuse = |reason: String| Error::new(ErrorCode::Internal, reason, SideEffects::None);
        let Some(handle) = resume else {
            let Some(store) = &self.sessions else {
                notes.push(
                    "pi's session is not kept (no state directory), so this attempt cannot be resumed"
                        .to_owned(),
                );
                return Ok(AttemptSession::Ephemeral);
            };
            return Ok(match store.folder(&request.execution_id) {
                Ok(dir) => AttemptSession::New(dir),
                Err(problem) => {
                    notes.push(format!(
                        "pi's session is not kept, so this attempt cannot be resumed: {problem}"
                    ));
                    AttemptSession::Ephemeral
                }
            });
        };
        check_handle(handle).map_err(|problem| refuse(format!("cannot resume: {problem}")))?;
        let attempt = ctx.resume.as_ref().map_or(0, |from| from.attempt);
        let store = self.sessions.as_ref().ok_or_else(|| {
            refuse("cannot resume: pi's sessions are not kept (no state directory)".to_owned())
        })?;
        let file = store
            .find(&request.execution_id, |name| {
                session_file_matches(name, handle)
            })
            .map_err(|problem| {
                refuse(format!(
                    "cannot resume pi session {handle} of attempt {attempt}: {problem}"
                ))
            })?;
        Ok(AttemptSession::Resume {
            dir: store.path_of(&request.execution_id),
            file,
        })
    }
}

/// `0.73.1` (what `pi --version` prints) → `0.73.1`; anything not starting with
/// `N.N` is `None`.
pub fn parse_version(output: &str) -> Option<&str> {
    let word = output.split_whitespace().find(|w| {
        let w = w.trim_start_matches('v');
        let mut parts = w.split('.');
        let numeric = |p: Option<&str>| {
            p.is_some_and(|p| !p.is_empty() && p.bytes().take_while(u8::is_ascii_digit).count() > 0)
        };
        numeric(parts.next()) && numeric(parts.next())
    })?;
    Some(word.trim_start_matches('v'))
}

/// The npm package pi ships in.
pub const NPM_PACKAGE: &str = "@mariozechner/pi-coding-agent";

/// The version of the npm package `program` resolves into: following the `pi`
/// symlink npm installs (`.bin/pi` → `…/pi-coding-agent/dist/cli.js`) up to a
/// `package.json` named [`NPM_PACKAGE`]. `None` for anything else (a wrapper script,
/// a bundled binary): then `pi --version` is asked. Reading a file instead of starting
/// Node saves a second of CPU on every `verify`.
pub fn package_version(program: &std::path::Path) -> Option<String> {
    let real = std::fs::canonicalize(program).ok()?;
    real.ancestors().skip(1).take(3).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
        let manifest: Value = serde_json::from_str(&text).ok()?;
        if manifest.get("name").and_then(Value::as_str) != Some(NPM_PACKAGE) {
            return None;
        }
        let version = manifest.get("version").and_then(Value::as_str)?;
        parse_version(version).map(str::to_owned)
    })
}

/// The folder of a format probe's sessions (under the probe folder's `home`) and the
/// execution id it keeps them under.
fn probe_sessions(folder: &ProbeFolder) -> (SessionStore, &'static str) {
    (
        SessionStore::at(folder.home.join("sessions")),
        "agent-exec-format-probe",
    )
}

#[async_trait::async_trait]
impl AgentCli for Pi {
    const KIND: &'static str = KIND;
    const DEFAULT_PROGRAM: &'static str = DEFAULT_PROGRAM;
    const INSTALL_HINT: &'static str = INSTALL_HINT;
    // The format probe starts Node and loads pi (about a second of CPU); the version
    // probe may too (a wrapper program): side by side, not one after the other.
    const PROBES: ProbePlan = ProbePlan {
        version: VersionOrder::Alongside,
        tools: ToolsProof::FormatProbeOnly,
        structured_output: false,
        resume: true,
        upgrade: "upgrade @mariozechner/pi-coding-agent",
        resume_hint: "",
    };
    const SESSION_HANDLE: &'static str = "a pi session id (a UUID)";
    // pi already retried (its `retry` setting); what is left is transient trouble the
    // caller may retry later, if the side effects allow.
    const RETRY_UNAVAILABLE: bool = true;
    type Parser = PiStream;

    fn config(&self) -> &ProgramConfig {
        &self.config
    }

    fn attempt(
        &self,
        request: &ContractRequest,
        ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<PiStream>, Error> {
        let prompt = match resume {
            // The conversation so far is in the session already: only the
            // continuation prompt (and the deliverables, as a reminder) is new.
            Some(_) => agent_program::render_continuation(request),
            None => agent_program::render_prompt(request),
        };
        if prompt.trim().is_empty() {
            // pi trims stdin and does nothing with an empty prompt.
            return Err(Error::new(
                ErrorCode::ProviderRejected,
                "the agent-native backend needs a non-empty prompt",
                SideEffects::None,
            ));
        }
        // Kept alive until pi has exited (pi reads it at start-up).
        let instructions = if request.instructions.is_empty() {
            None
        } else {
            Some(write_instructions(&request.instructions).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("cannot write the instructions file for pi: {e}"),
                    SideEffects::None,
                )
            })?)
        };
        let mut notes = Vec::new();
        let session = self.session_for(request, ctx, resume, &mut notes)?;
        let session_args = session.args();
        let kind_args = self.kind_args(
            request,
            instructions.as_ref().map(|f| f.path()),
            session_args,
        )?;
        let mut run = self.config.agent_run(
            self.program(),
            kind_args,
            Vec::new(),
            Some(prompt.into_bytes()),
            &request.workspace.root,
        );
        // Quiet defaults, then the config's `env` (the backend adds the identity).
        run.env = [("PI_OFFLINE".to_owned(), "1".to_owned())].into();
        run.env.extend(self.config.env.clone());
        // A handle only when pi keeps the session: an ephemeral one cannot be resumed.
        let stream = match session_args {
            SessionArgs::Ephemeral => PiStream::new(),
            _ => PiStream::keeping_session(),
        };
        Ok(Attempt {
            keep: instructions.into_iter().collect(),
            notes,
            ..Attempt::new(run, stream)
        })
    }

    fn after_run(
        &self,
        request: &ContractRequest,
        ctx: &ExecutionContext,
        stream: &PiStream,
        result: &ContractResult,
        notes: &mut Vec<String>,
    ) {
        if let Some(problem) = stream.session_problem() {
            notes.push(format!(
                "pi's session id was not reported, so this attempt cannot be resumed: {problem}"
            ));
        }
        if let (Some(resumed), Some(id)) = (&ctx.resume, stream.session_id())
            && resumed.session != id
        {
            notes.push(format!(
                "pi continued session {id}, not the requested {}",
                resumed.session
            ));
        }
        // A succeeded execution is never resumed: its sessions go (see session_store).
        if result.outcome == Outcome::Succeeded
            && stream.keeps_session()
            && let Some(store) = &self.sessions
            && let Err(problem) = store.remove(&request.execution_id)
        {
            notes.push(format!("pi's session folder was not removed: {problem}"));
        }
    }

    /// From its package (see [`package_version`]), else from `pi --version`, which pi
    /// prints on stderr when stdout is not a terminal (its non-interactive modes keep
    /// stdout for the protocol), so both are read.
    async fn version(&self) -> Result<ProgramVersion, ProbeError> {
        let program = self.program();
        if let Some(version) = crate::locate::find_program(program)
            .ok()
            .and_then(|path| package_version(&path))
        {
            return Ok(ProgramVersion::new(format!("pi {version}")));
        }
        let output = agent_program::probe_run(
            program,
            &["--version"],
            &self.config.env,
            PROBE_TIMEOUT,
            INSTALL_HINT,
        )
        .await?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(ProbeError::Unproven(format!(
                "`{program} --version` failed ({}): {}",
                output.status,
                agent_program::bounded(stderr.trim(), 400)
            )));
        }
        parse_version(&stdout)
            .or_else(|| parse_version(&stderr))
            .map(|version| ProgramVersion::new(format!("pi {version}")))
            .ok_or_else(|| {
                ProbeError::Unproven(format!(
                    "`{program} --version` printed {:?}, not a version number; {INSTALL_HINT}",
                    agent_program::bounded(format!("{stdout}{stderr}").trim(), 200)
                ))
            })
    }

    /// pi in JSON mode against a provider on a loopback port nobody listens on, so no
    /// model is needed and nothing leaves the machine. The stream must be pi's
    /// (session header, `agent_end`) and end in a failed verdict. It keeps its session
    /// in the probe folder (`--session-dir`, as a real run), whose header id must be a
    /// usable handle.
    ///
    /// `probe.resume`: the session's file `<timestamp>_<id>.jsonl` must be in that
    /// folder, and a second pi started with `--session FILE` must name the same
    /// session in its header — pi really continues a session file, not just accepts
    /// the flag.
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError> {
        let program = self.program();
        let agent_dir = &folder.home;
        let (store, probe_id) = probe_sessions(folder);
        let sessions = store
            .folder(probe_id)
            .map_err(|problem| ProbeError::Setup(problem.to_string()))?;
        let file = match probe.resume {
            None => {
                let port = agent_program::refused_loopback_port()?;
                let models = serde_json::json!({"providers": {"agent-exec-probe": {
                    "baseUrl": format!("http://127.0.0.1:{port}/v1"),
                    "api": "openai-completions",
                    "apiKey": "agent-exec-probe",
                    "models": [{"id": "probe"}]}}});
                // No agent-level retries and no SDK-level ones (the SDK's default backs
                // off about a second on a refused connection).
                let settings =
                    serde_json::json!({"retry": {"enabled": false, "provider": {"maxRetries": 0}}});
                std::fs::write(agent_dir.join("models.json"), models.to_string())
                    .and_then(|()| {
                        std::fs::write(agent_dir.join("settings.json"), settings.to_string())
                    })
                    .map_err(|e| {
                        ProbeError::Setup(format!("cannot write the probe configuration: {e}"))
                    })?;
                None
            }
            Some(id) => Some(
                store
                    .find(probe_id, |name| session_file_matches(name, id))
                    .map_err(|problem| {
                        ProbeError::Unproven(format!("pi kept no session file for {id}: {problem}"))
                    })?,
            ),
        };
        let session = match &file {
            None => SessionArgs::New(&sessions),
            Some(file) => SessionArgs::Resume {
                dir: &sessions,
                file,
            },
        };
        // The kind's flags alone: the probe names its own model.
        let plain = Pi {
            config: ProgramConfig::new(KIND),
            sessions: None,
        };
        let mut args = plain
            .kind_args(&folder.request(probe.tools), None, session)
            .map_err(|problem| ProbeError::Setup(problem.to_string()))?;
        args.extend(["--model", "agent-exec-probe/probe"].map(str::to_owned));
        let mut env = self.config.env.clone();
        env.insert(
            "PI_CODING_AGENT_DIR".to_owned(),
            agent_dir.display().to_string(),
        );
        env.insert("PI_OFFLINE".to_owned(), "1".to_owned());
        let mut stream = PiStream::new();
        let mut events = Vec::new();
        let format = agent_program::FormatProbe {
            program,
            args: &args,
            env: &env,
            cwd: &folder.workspace,
            stdin: match probe.resume {
                None => b"agent-exec format probe",
                Some(_) => b"agent-exec resume probe",
            },
            timeout: PROBE_TIMEOUT,
            install_hint: INSTALL_HINT,
        };
        let resuming = probe.resume.is_some();
        let seen = agent_program::probe_stream(&format, &mut |line| {
            stream.line(line, &mut events);
            events.clear();
            stream.saw_session() && (resuming || stream.ended())
        })
        .await?;
        if let Some(id) = probe.resume {
            return match stream.session_id() {
                Some(again) if seen.proven && again == id => Ok(SessionSeen::Id(id.to_owned())),
                again => Err(ProbeError::Unproven(format!(
                    "`{program} --session FILE` did not continue session {id} (its header named {again:?}; {})",
                    seen.describe()
                ))),
            };
        }
        match stream.verdict() {
            Verdict::Failed { .. } if seen.proven => {}
            verdict => {
                return Err(ProbeError::Unproven(format!(
                    "`{program} --mode json` did not speak the expected event stream (session header: {}, agent_end: {}, verdict: {verdict:?}; {})",
                    stream.saw_session(),
                    stream.ended(),
                    seen.describe()
                )));
            }
        }
        Ok(match stream.session_id() {
            Some(id) => SessionSeen::Id(id.to_owned()),
            None => SessionSeen::Missing(format!(
                "pi's session header gave no usable session id: {}",
                stream.session_problem().unwrap_or("no id")
            )),
        })
    }

    fn resume_unavailable(&self) -> Option<&'static str> {
        self.sessions.is_none().then_some(
            "there is no state directory to keep pi's sessions in (set XDG_STATE_HOME or HOME)",
        )
    }
}

/// The instructions as a file pi reads for `--append-system-prompt` (see the module
/// doc for why a file).
fn write_instructions(text: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write as _;
    let mut file = tempfile::Builder::new()
        .prefix("agent-exec-pi-instructions-")
        .suffix(".md")
        .tempfile()?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_exec_contract::Backend as _;
    use proptest::prelude::*;

    #[test]
    fn a_refused_handle_says_why_in_the_same_words() {
        assert_eq!(
            check_handle("abc").unwrap_err().to_string(),
            "pi session handle \"abc\" is not a session id (a UUID)"
        );
        assert_eq!(
            check_handle("").unwrap_err().to_string(),
            "session handle is empty"
        );
    }

    fn fold(lines: &[&str]) -> (PiStream, Vec<Event>) {
        let mut stream = PiStream::new();
        let mut events = Vec::new();
        for line in lines {
            stream.line(line.as_bytes(), &mut events);
        }
        (stream, events)
    }

    const ASSISTANT_STOP: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input":100,"output":9,"cacheRead":20,"cacheWrite":3,"totalTokens":132},"stopReason":"stop"}}"#;

    #[test]
    fn maps_deltas_tools_and_messages() {
        assert_eq!(
            parse_line(
                br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"he","partial":{"role":"assistant"}},"message":{"role":"assistant"}}"#
            ),
            Line::TextDelta("he".into())
        );
        assert_eq!(
            parse_line(
                br#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_start","contentIndex":1,"partial":{"content":[{"type":"text","text":"x"},{"type":"toolCall","name":"bash"}]}}}"#
            ),
            Line::ToolCallStart {
                index: 1,
                name: "bash".into()
            }
        );
        assert_eq!(
            parse_line(
                br#"{"type":"tool_execution_start","toolCallId":"c","toolName":"bash","args":{"command":"ls -la"}}"#
            ),
            Line::ToolStart {
                tool: "bash".into(),
                detail: "ls -la".into()
            }
        );
        assert_eq!(
            parse_line(
                br#"{"type":"tool_execution_end","toolCallId":"c","toolName":"edit","result":{"content":[{"type":"text","text":"no match"}]},"isError":true}"#
            ),
            Line::ToolEnd {
                tool: "edit".into(),
                is_error: true,
                detail: "no match".into()
            }
        );
        let Line::AssistantEnd(message) = parse_line(ASSISTANT_STOP.as_bytes()) else {
            panic!("expected an assistant end")
        };
        assert_eq!(message.text, "done");
        assert_eq!(message.stop_reason, StopReason::Stop);
        assert_eq!(
            message.usage,
            Usage {
                prompt_tokens: 123,
                completion_tokens: 9
            }
        );
        assert_eq!(
            parse_line(br#"{"type":"message_end","message":{"role":"user","content":"hi"}}"#),
            Line::Other
        );
        assert_eq!(
            parse_line(br#"{"type":"session","version":3,"id":"x"}"#),
            Line::Session {
                version: Some(3),
                id: Some("x".into())
            }
        );
        assert_eq!(parse_line(br#"{"type":"queue_update"}"#), Line::Other);
        assert_eq!(parse_line(b"not json"), Line::Unrecognised);
        assert_eq!(parse_line(b"[1,2]"), Line::Unrecognised);
        assert_eq!(parse_line(br#"{"no_type":1}"#), Line::Unrecognised);
        assert_eq!(parse_line(br#"{"type":5}"#), Line::Unrecognised);
    }

    #[test]
    fn fields_before_the_type_are_still_read() {
        assert_eq!(
            parse_line(
                br#"{"args":{"path":"a.txt"},"toolName":"write","type":"tool_execution_start"}"#
            ),
            Line::ToolStart {
                tool: "write".into(),
                detail: "a.txt".into()
            }
        );
    }

    #[test]
    fn only_agent_end_is_final_and_usage_is_summed_over_messages() {
        let tool_use = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash"}],"usage":{"input":50,"output":5},"stopReason":"toolUse"}}"#;
        let (stream, _) = fold(&[tool_use, ASSISTANT_STOP]);
        assert_eq!(stream.verdict(), Verdict::Pending);
        let (stream, _) = fold(&[
            tool_use,
            ASSISTANT_STOP,
            r#"{"type":"agent_end","messages":[]}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Completed("done".into()));
        assert_eq!(
            stream.usage(),
            Usage {
                prompt_tokens: 173,
                completion_tokens: 14
            }
        );
    }

    #[test]
    fn agent_end_judges_by_the_last_assistant_message() {
        let end = |message: &str| {
            format!(
                r#"{{"type":"agent_end","messages":[{{"role":"user","content":"q"}},{message}]}}"#
            )
        };
        let verdict = |message: &str| fold(&[&end(message)]).0.verdict();
        assert_eq!(
            verdict(
                r#"{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stopReason":"stop"}"#
            ),
            Verdict::Completed("a\nb".into())
        );
        assert_eq!(
            verdict(
                r#"{"role":"assistant","content":[],"stopReason":"error","errorMessage":"terminated"}"#
            ),
            Verdict::Failed {
                code: ErrorCode::ProviderUnavailable,
                message: "pi: terminated".into()
            }
        );
        assert!(matches!(
            verdict(
                r#"{"role":"assistant","content":[],"stopReason":"error","errorMessage":"401 invalid api key"}"#
            ),
            Verdict::Failed {
                code: ErrorCode::ProviderRejected,
                ..
            }
        ));
        assert!(matches!(
            verdict(
                r#"{"role":"assistant","content":[{"type":"text","text":"half"}],"stopReason":"length"}"#
            ),
            Verdict::Failed {
                code: ErrorCode::BudgetExceeded,
                ..
            }
        ));
        assert!(matches!(
            verdict(r#"{"role":"assistant","content":[],"stopReason":"aborted"}"#),
            Verdict::Failed {
                code: ErrorCode::Canceled,
                ..
            }
        ));
        assert_eq!(
            verdict(r#"{"role":"assistant","content":[],"stopReason":"toolUse"}"#),
            Verdict::Pending
        );
        assert_eq!(
            verdict(r#"{"role":"assistant","content":[],"stopReason":"someday"}"#),
            Verdict::Pending
        );
        assert_eq!(
            verdict(r#"{"role":"toolResult","content":[]}"#),
            Verdict::Pending
        );
    }

    #[test]
    fn tool_call_deltas_carry_the_tool_name_and_events_keep_order() {
        let (_, events) = fold(&[
            r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_start","contentIndex":0,"partial":{"content":[{"type":"toolCall","name":"write"}]}}}"#,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_delta","contentIndex":0,"delta":"{\"path\""}}"#,
            r#"{"type":"tool_execution_start","toolName":"write","args":{"path":"out.txt"}}"#,
            r#"{"type":"tool_execution_end","toolName":"write","result":{},"isError":false}"#,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","delta":"hm"}}"#,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"ok"}}"#,
        ]);
        let seen: Vec<(EventKind, &str, &str)> = events
            .iter()
            .map(|e| (e.kind.clone(), e.tool.as_str(), e.text.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (EventKind::ToolCallDelta, "write", "{\"path\""),
                (EventKind::ToolExecStart, "write", ""),
                (EventKind::ToolExecEnd, "write", ""),
                (EventKind::ReasoningDelta, "", "hm"),
                (EventKind::TextDelta, "", "ok"),
            ]
        );
        assert_eq!(events[1].detail, "out.txt");
    }

    #[test]
    fn failures_are_classified_by_status_then_by_pis_retry_words() {
        let unavailable = ErrorCode::ProviderUnavailable;
        let rejected = ErrorCode::ProviderRejected;
        assert_eq!(classify_failure("429 Rate limit reached"), unavailable);
        assert_eq!(classify_failure("503 Service Unavailable"), unavailable);
        assert_eq!(classify_failure("401 Incorrect API key provided"), rejected);
        // The status decides, not a number further on.
        assert_eq!(
            classify_failure("400 max_tokens 500 is too large"),
            rejected
        );
        assert_eq!(classify_failure("terminated"), unavailable);
        assert_eq!(classify_failure("Connection error."), unavailable);
        assert_eq!(classify_failure("Request timed out."), unavailable);
        assert_eq!(classify_failure("socket hang up"), unavailable);
        assert_eq!(
            classify_failure("Provider finish_reason: content_filter"),
            rejected
        );
        assert_eq!(classify_failure("No API key found for scripted"), rejected);
        assert_eq!(classify_failure(""), rejected);
    }

    #[test]
    fn the_version_is_read_from_pis_package_through_the_bin_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir
            .path()
            .join("node_modules/@mariozechner/pi-coding-agent");
        std::fs::create_dir_all(package.join("dist")).unwrap();
        std::fs::write(package.join("dist/cli.js"), "#!/usr/bin/env node\n").unwrap();
        let manifest = |name: &str| format!(r#"{{"name":"{name}","version":"0.73.1"}}"#);
        std::fs::write(package.join("package.json"), manifest(NPM_PACKAGE)).unwrap();
        let bin = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(
            "../@mariozechner/pi-coding-agent/dist/cli.js",
            bin.join("pi"),
        )
        .unwrap();
        assert_eq!(package_version(&bin.join("pi")).as_deref(), Some("0.73.1"));
        // Another package's manifest is not pi's version.
        std::fs::write(package.join("package.json"), manifest("impostor")).unwrap();
        assert_eq!(package_version(&bin.join("pi")), None);
        assert_eq!(package_version(&dir.path().join("missing")), None);
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("0.73.1"), Some("0.73.1"));
        assert_eq!(parse_version("v1.2.3\n"), Some("1.2.3"));
        assert_eq!(parse_version("pi 0.9"), Some("0.9"));
        assert_eq!(parse_version("usage: pi [options]"), None);
        assert_eq!(parse_version(""), None);
    }

    #[test]
    fn tool_policy_becomes_pi_flags() {
        use agent_exec_contract::ToolPolicy;
        let policy = |profile: &str, allow: &[&str]| ToolPolicy {
            profile: profile.into(),
            allowlist: allow.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(tool_args(&policy("", &[])).unwrap(), ["--no-tools"]);
        assert_eq!(
            tool_args(&policy("reasoning", &[])).unwrap(),
            ["--no-tools"]
        );
        assert!(tool_args(&policy("workspace", &[])).unwrap().is_empty());
        assert_eq!(
            tool_args(&policy("reasoning", &["read", "ls"])).unwrap(),
            ["--tools", "read,ls"]
        );
        assert!(
            tool_args(&policy("", &["read", "web_fetch"]))
                .unwrap_err()
                .to_string()
                .contains("web_fetch")
        );
        assert!(
            tool_args(&policy("everything", &[]))
                .unwrap_err()
                .to_string()
                .contains("everything")
        );

        let backend = PiBackend::new(ProgramConfig::new("pi"));
        let mut request = ContractRequest {
            tool_policy: policy("workspace", &[]),
            ..ContractRequest::default()
        };
        let args = backend
            .kind_args(&request, None, SessionArgs::Ephemeral)
            .unwrap();
        assert_eq!(args, ["--mode", "json", "--no-session"]);
        let dir = std::path::Path::new("/state/s");
        let file = dir.join("t_1.jsonl");
        assert_eq!(
            backend
                .kind_args(&request, None, SessionArgs::New(dir))
                .unwrap(),
            ["--mode", "json", "--session-dir", "/state/s"]
        );
        assert_eq!(
            backend
                .kind_args(&request, None, SessionArgs::Resume { dir, file: &file })
                .unwrap(),
            [
                "--mode",
                "json",
                "--session-dir",
                "/state/s",
                "--session",
                "/state/s/t_1.jsonl"
            ]
        );
        request.tool_policy = policy("everything", &[]);
        let err = Error::from(
            backend
                .kind_args(&request, None, SessionArgs::Ephemeral)
                .unwrap_err(),
        );
        assert_eq!(err.code, ErrorCode::ToolRejected);
        assert_eq!(err.side_effects, SideEffects::None);
    }

    #[test]
    fn the_prompt_carries_context_and_targets() {
        let mut request = ContractRequest {
            prompt: "@notes.md -v".into(),
            ..ContractRequest::default()
        };
        request.context = vec![agent_exec_contract::Message {
            role: "user".into(),
            content: "earlier".into(),
        }];
        request.targets = vec!["out.txt".into()];
        let prompt = crate::agent_program::render_prompt(&request);
        assert!(prompt.starts_with("Conversation so far:\n[user] earlier\n\n@notes.md -v"));
        assert!(prompt.ends_with("- out.txt\n"));
    }

    #[test]
    fn credential_values_from_the_config_env_are_redacted() {
        let mut config = ProgramConfig::new("pi");
        config
            .env
            .insert("MY_API_KEY".into(), "sk-very-secret".into());
        config
            .env
            .insert("PI_CODING_AGENT_DIR".into(), "/home/me/.pi".into());
        let backend = PiBackend::new(config);
        assert_eq!(
            backend.redact("401: bad key sk-very-secret in /home/me/.pi"),
            "401: bad key [redacted] in /home/me/.pi"
        );
    }

    const ID: &str = "01a2342a-a615-70e2-8844-5cd0d1b80423";

    #[test]
    fn the_session_header_id_is_the_handle_once_checked() {
        let mut stream = PiStream::keeping_session();
        let mut events = Vec::new();
        let header = format!(r#"{{"type":"session","version":3,"id":"{ID}","cwd":"/w"}}"#);
        assert_eq!(stream.session(), None);
        stream.line(header.as_bytes(), &mut events);
        assert!(events.is_empty());
        assert_eq!(stream.session_id(), Some(ID));
        assert_eq!(stream.session(), Some(ID));
        // An ephemeral run's id is no handle: nothing to resume.
        let mut ephemeral = PiStream::new();
        ephemeral.line(header.as_bytes(), &mut events);
        assert_eq!(ephemeral.session(), None);

        // An id that is not a session id is neither kept nor given as the handle.
        let mut stream = PiStream::keeping_session();
        stream.line(
            br#"{"type":"session","version":3,"id":"../../etc/passwd"}"#,
            &mut events,
        );
        assert_eq!(stream.session_id(), None);
        assert_eq!(stream.session(), None);
        assert!(
            stream.session_problem().unwrap().contains("session handle"),
            "{:?}",
            stream.session_problem()
        );
    }

    #[test]
    fn only_uuids_are_pi_handles() {
        assert_eq!(check_handle(ID), Ok(()));
        assert_eq!(check_handle(&ID.to_uppercase()), Ok(()));
        for bad in [
            "",
            "--session",
            "../x",
            "01a2342a-a615-70e2-8844",
            "01a2342a-a615-70e2-8844-5cd0d1b80423-1",
            "01a2342a_a615_70e2_8844_5cd0d1b80423",
            "g1a2342a-a615-70e2-8844-5cd0d1b80423",
            "01a2342a-a615-70e2-8844-5cd0d1b8042/",
        ] {
            assert!(check_handle(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn session_files_are_matched_by_pis_own_name() {
        let name = format!("2026-12-02T00-32-19-990Z_{ID}.jsonl");
        assert!(session_file_matches(&name, ID));
        assert!(!session_file_matches(&format!("_{ID}.jsonl"), ID));
        assert!(!session_file_matches(&format!("x_{ID}.json"), ID));
        assert!(!session_file_matches(&format!("a.b_{ID}.jsonl"), ID));
        assert!(!session_file_matches(&format!("x_{ID}x.jsonl"), ID));
        assert!(!session_file_matches(
            &name,
            "01a2342a-a615-70e2-8844-5cd0d1b80424"
        ));
    }

    #[test]
    fn a_resume_with_a_bad_handle_or_no_session_file_is_refused_before_pi_starts() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::at(dir.path());
        // A program that would fail loudly if it were ever started.
        let mut config = ProgramConfig::new(KIND);
        config.program = Some("/nonexistent/pi".into());
        let backend = PiBackend::new(config).with_session_store(store.clone());
        let request = ContractRequest {
            execution_id: "e-1".into(),
            prompt: "go on".into(),
            workspace: agent_exec_contract::WorkspaceHandle {
                root: dir.path().display().to_string(),
                writable: Vec::new(),
            },
            ..ContractRequest::default()
        };
        let resume = |session: &str| {
            let mut ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
            ctx.resume = Some(agent_exec_contract::ResumeFrom {
                session: session.into(),
                attempt: 1,
                original_prompt: "start".into(),
            });
            ctx
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for bad in ["--help", "../../x", "a/b"] {
            let result = rt.block_on(backend.execute(&request, resume(bad)));
            assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
            let err = result.err.unwrap();
            assert_eq!(err.code, ErrorCode::Internal);
            assert_eq!(err.side_effects, SideEffects::None);
            assert!(err.reason.contains("cannot resume: "), "{}", err.reason);
        }
        // A well-formed id whose file is not in the execution's folder.
        let result = rt.block_on(backend.execute(&request, resume(ID)));
        let err = result.err.unwrap();
        assert_eq!(err.side_effects, SideEffects::None);
        assert!(
            err.reason.contains("cannot resume pi session"),
            "{}",
            err.reason
        );
        // Nor does a file of that id in another execution's folder count.
        let other = store.folder("e-2").unwrap();
        std::fs::write(other.join(format!("t_{ID}.jsonl")), "{}").unwrap();
        store.folder("e-1").unwrap();
        let result = rt.block_on(backend.execute(&request, resume(ID)));
        assert!(
            result
                .err
                .unwrap()
                .reason
                .contains("no matching session file"),
        );
    }

    proptest! {
        #[test]
        fn handles_from_any_header_are_checked_ids(id in "[ -~]{0,48}") {
            let header = serde_json::json!({"type": "session", "version": 3, "id": id}).to_string();
            let mut stream = PiStream::keeping_session();
            stream.line(header.as_bytes(), &mut Vec::new());
            let accepted = check_handle(&id).is_ok();
            prop_assert_eq!(stream.session_id().is_some(), accepted);
            prop_assert_eq!(stream.session_problem().is_some(), !accepted);
            let handle = stream.session().map(str::to_owned);
            prop_assert_eq!(handle.is_some(), accepted);
            if let Some(handle) = handle {
                prop_assert!(agent_exec_contract::check_session_handle(&handle).is_ok());
                prop_assert!(!handle.contains('/') && !handle.starts_with('-'));
            }
        }

        #[test]
        fn file_matching_never_panics_and_needs_the_exact_id(
            name in "[ -~]{0,80}",
            id in "[0-9a-f-]{0,40}",
        ) {
            if session_file_matches(&name, &id) {
                let expected_suffix = format!("_{id}.jsonl");
                prop_assert!(name.ends_with(&expected_suffix));
                prop_assert!(!name.contains('/'));
            }
        }

        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut stream = PiStream::new();
            let mut events = Vec::new();
            stream.line(&bytes, &mut events);
            let _ = stream.verdict();
        }

        #[test]
        fn never_panics_on_typed_objects(
            kind in "(session|message_update|message_end|tool_execution_start|tool_execution_end|agent_end|x)",
            event in "(text_delta|thinking_delta|toolcall_start|toolcall_delta|x)",
            body in "[ -~]{0,24}",
            index in any::<i64>(),
        ) {
            let body = serde_json::Value::String(body).to_string();
            let line = format!(
                r#"{{"type":"{kind}","assistantMessageEvent":{{"type":"{event}","contentIndex":{index},"delta":{body},"partial":{{"content":[{body}]}}}},"message":{{"role":"assistant","content":{body},"usage":{{"input":{index}}},"stopReason":{body}}},"messages":[{{"role":"assistant","stopReason":{body}}}],"toolName":{body},"args":{body},"isError":{body},"version":{index}}}"#
            );
            let mut stream = PiStream::new();
            let mut events = Vec::new();
            stream.line(line.as_bytes(), &mut events);
            let _ = (stream.verdict(), stream.usage());
        }
    }
}
