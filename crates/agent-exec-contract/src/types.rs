//! The contract's data types, one for each Go type of `contract_spec.go`, with the
//! Go field names and `omitempty` rules (see [`crate::wire`] for how Go's encoder is
//! reproduced).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::Error;
use crate::wire::{go_bytes_map, go_string_enum, go_time, null_as_default};

go_string_enum! {
    /// A capability a backend can have *verified* (Go `Capability`). The resolver
    /// refuses an execution whose required capability is missing rather than
    /// degrading to something weaker.
    pub enum Capability {
        /// Returns a non-empty text result.
        Text = "text",
        /// Delivers file candidates for `targets`.
        Files = "files",
        /// Emits process events while running.
        Stream = "stream",
        /// Calls tools under a [`ToolPolicy`].
        Tools = "tools",
        /// Cancels reliably: model request, tools and subprocesses.
        Cancel = "cancel",
        /// Resumes an execution across processes (with the journal).
        Resume = "resume",
        /// Reports token usage.
        Usage = "usage",
        /// Produces structured (non-plain-text) output.
        StructuredOutput = "structured-output",
    }
}

go_string_enum! {
    /// Terminal state of an execution (Go `Outcome`). `Unknown` wins over any
    /// optimistic reading: a crash, a lost stream or an unconfirmed cancel is unknown,
    /// and unknown is never turned into succeeded or failed.
    pub enum Outcome {
        Succeeded = "succeeded",
        Failed = "failed",
        Canceled = "canceled",
        Unknown = "unknown",
    }
}

impl Outcome {
    /// The outcome a caller must act on. A value this build does not know is
    /// treated as `Unknown` (fail closed), never as success.
    pub fn effective(&self) -> Outcome {
        match self {
            Outcome::Other(_) => Outcome::Unknown,
            known => known.clone(),
        }
    }
}

go_string_enum! {
    /// Kind of a process event (Go `EventKind`).
    pub enum EventKind {
        TextDelta = "text_delta",
        ReasoningDelta = "reasoning_delta",
        ToolCallDelta = "tool_call_delta",
        ToolExecStart = "tool_execution_start",
        ToolExecEnd = "tool_execution_end",
        MessageEnd = "message_end",
    }
}

/// The tools an execution may use (Go `ToolPolicy`). Implementations never widen
/// it; unknown tools are refused. An empty profile means `reasoning`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPolicy {
    #[serde(default)]
    pub profile: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub allowlist: Vec<String>,
}

/// The workspace the caller authorised (Go `WorkspaceHandle`). Path authorisation,
/// not an OS sandbox (invariant 7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceHandle {
    /// Absolute, normalised root.
    #[serde(default)]
    pub root: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub writable: Vec<String>,
}

/// Isolation identity (Go `SessionScope`); grants no visibility across sessions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionScope {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub project: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session: String,
}

/// Limits for one execution, shared by all its attempts (Go `ContractBudget`).
/// Token limits of 0 mean unlimited. Negative values, which Go would accept, are
/// rejected here as bad input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractBudget {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_prompt_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_completion_tokens: u64,
    /// Absolute deadline; `None` is Go's zero time and is written as
    /// `"0001-01-01T00:00:00Z"` (Go's `omitempty` does not omit a struct).
    #[serde(default, with = "go_time")]
    pub deadline: Option<OffsetDateTime>,
}

/// Optional history (Go `Message`); never mixed across session scopes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `user` | `assistant` | `tool` | `system`.
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub content: String,
}

/// The one input of an authorised execution (Go `ContractRequest`).
///
/// Go's `OnEvent func(Event)` (tagged `json:"-"`) is not a field here: events go to
/// the [`crate::EventSink`] in the [`crate::ExecutionContext`], which keeps the request
/// plain data that can be journaled and compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractRequest {
    /// Chosen by the caller; reused by step retries and controlled fallback.
    #[serde(default)]
    pub execution_id: String,
    #[serde(default)]
    pub session_scope: SessionScope,
    #[serde(default)]
    pub prompt: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub context: Vec<Message>,
    /// Deliverable paths, relative to the workspace root.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub targets: Vec<String>,
    #[serde(default)]
    pub workspace: WorkspaceHandle,
    #[serde(default)]
    pub tool_policy: ToolPolicy,
    #[serde(default, rename = "budget")]
    pub budget: ContractBudget,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub required: Vec<Capability>,
    /// Extension (not in the Go file): a JSON Schema object the final text must match
    /// (`structured-output`). A Go caller declares it as
    /// `OutputSchema json.RawMessage \`json:"output_schema,omitempty"\``; Go consumers
    /// that do not know the field ignore it, so the wire stays compatible. `null` or
    /// absent is no schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

/// A process event frame (Go `Event`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Event {
    /// A `text_delta` event.
    pub fn text_delta(text: impl Into<String>) -> Self {
        Event {
            kind: EventKind::TextDelta,
            text: text.into(),
            tool: String::new(),
            detail: String::new(),
        }
    }

    /// An event of `kind` with nothing else set.
    pub fn of_kind(kind: EventKind) -> Self {
        Event {
            kind,
            text: String::new(),
            tool: String::new(),
            detail: String::new(),
        }
    }
}

/// Token usage (Go `Usage`); zero when the backend cannot report it — never a guess.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompt_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub completion_tokens: u64,
}

impl Usage {
    /// Sum of two usages (attempts of one execution share one budget).
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
        }
    }
}

/// Terminal result (Go `ContractResult`). Never absent: every execution ends in one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractResult {
    /// Extension (not in the Go file): the execution this result ends, so a result
    /// read on its own (`agent-exec run --json`, `agent-exec result`) says whose it
    /// is. A Go caller declares it as `ExecutionID string \`json:"execution_id,omitempty"\``;
    /// Go consumers that do not know the field ignore it. Empty is absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub execution_id: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Deliverable candidates (bytes), keyed by target path; base64 on the wire.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        with = "go_bytes_map"
    )]
    pub files: BTreeMap<String, Vec<u8>>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub logs: String,
    /// Set for failed/canceled/unknown; `None` for succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<Error>,
    #[serde(default)]
    pub usage: Usage,
}

impl ContractResult {
    /// A succeeded result with `text`.
    pub fn succeeded(text: impl Into<String>) -> Self {
        ContractResult {
            execution_id: String::new(),
            outcome: Outcome::Succeeded,
            text: text.into(),
            files: BTreeMap::new(),
            logs: String::new(),
            err: None,
            usage: Usage::default(),
        }
    }

    /// A non-succeeded result carrying `err`.
    pub fn with_error(outcome: Outcome, err: Error) -> Self {
        ContractResult {
            execution_id: String::new(),
            outcome,
            text: String::new(),
            files: BTreeMap::new(),
            logs: String::new(),
            err: Some(err),
            usage: Usage::default(),
        }
    }

    /// Failed with `err`.
    pub fn failed(err: Error) -> Self {
        Self::with_error(Outcome::Failed, err)
    }
}

/// Identity and verified capabilities of a backend (Go `BackendDescriptor`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendDescriptor {
    /// Canonical name (`agent-native`, not its alias `pi-native`).
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: Vec<Capability>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub adapter_version: String,
}

impl BackendDescriptor {
    /// Whether the descriptor lists `capability` (Go `Has`).
    pub fn has(&self, capability: &Capability) -> bool {
        self.capabilities.contains(capability)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
