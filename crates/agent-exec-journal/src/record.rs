//! What the journal stores and returns: states, writes and the records read back.

use serde::Serialize;

use crate::owner::ProcessIdentity;

/// The lifecycle state of one execution (and, for its attempts, of one attempt).
///
/// `Running` and `Canceling` are the only non-terminal states; the other four are
/// exactly the contract's outcomes. A row left non-terminal by a dead process becomes
/// `Unknown` on the next open; nothing else ever changes a terminal state except a new
/// attempt under the same execution id (a step retry), which is recorded as a transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Running,
    Canceling,
    Succeeded,
    Failed,
    Canceled,
    Unknown,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Running,
        State::Canceling,
        State::Succeeded,
        State::Failed,
        State::Canceled,
        State::Unknown,
    ];

    /// The stored spelling (identical to the contract's outcome strings for the four
    /// terminal states).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Canceling => "canceling",
            State::Succeeded => "succeeded",
            State::Failed => "failed",
            State::Canceled => "canceled",
            State::Unknown => "unknown",
        }
    }

    /// Parses a stored or contract spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// True for the four outcomes of the contract.
    pub fn is_terminal(self) -> bool {
        !matches!(self, State::Running | State::Canceling)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Token usage as the contract reports it: zero means "not reported", never a guess.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The start (or, for a step retry, the continuation) of an execution.
#[derive(Debug, Clone)]
pub struct ExecutionStart<'a> {
    pub execution_id: &'a str,
    /// Canonical backend name of the first attempt to come.
    pub backend: &'a str,
    /// The request as JSON (the contract's Go-tag shape), kept for `runs show` and resume.
    /// Stored once, from the first start.
    pub request_json: Option<&'a str>,
    /// The execution's deadline (RFC 3339), kept from the first start: all attempts share
    /// one deadline, even attempts made by later processes.
    pub deadline: Option<&'a str>,
}

/// What earlier attempts under the same execution id left.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prior {
    pub attempts: u32,
    pub usage: Usage,
    pub deadline: Option<String>,
}

/// Where a resume picks up (or, read only, would).
#[derive(Debug, Clone, PartialEq)]
pub struct Resumable<T> {
    /// The execution's backend (that of its latest attempt), whose session continues.
    pub backend: String,
    /// The newest session handle journaled on that backend.
    pub session: String,
    /// The attempt that reported it.
    pub session_attempt: u32,
    /// The stored request, as the caller's `parse` read it.
    pub request: T,
    /// Attempts, usage and deadline so far.
    pub prior: Prior,
}

/// The terminal record of an attempt, or of its execution.
#[derive(Debug, Clone)]
pub struct End<'a> {
    /// One of the four terminal states.
    pub outcome: State,
    /// The contract's `Error` as JSON (`{"code":…,"side_effects":…}`), when there is one.
    pub error_json: Option<&'a str>,
    /// The error code alone, for listing and filtering.
    pub error_code: Option<&'a str>,
    /// For an attempt: its own usage. Ignored for an execution, whose usage is always the
    /// sum over its attempts.
    pub usage: Usage,
    /// Set when a cancel was asked for and could not be confirmed (invariant 4).
    pub cancel_requested: bool,
}

/// One row of `runs`: an execution and its latest state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionSummary {
    pub execution_id: String,
    /// Backend of the latest attempt.
    pub backend: String,
    pub state: State,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub cancel_requested: bool,
    /// Sum over all attempts.
    pub usage: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// One attempt of an execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptRecord {
    pub attempt: u32,
    pub backend: String,
    pub state: State,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
    pub usage: Usage,
    pub owner: ProcessIdentity,
    /// The backend's own session handle (Codex thread id, Claude Code session id, …),
    /// as reported while the attempt ran; what a resume continues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_handle: Option<String>,
}

/// One state change, in the order it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransitionRecord {
    pub attempt: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<State>,
    pub to: State,
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Everything the journal knows about one execution (`runs show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutionRecord {
    #[serde(flatten)]
    pub summary: ExecutionSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
    /// The result the execution returned to its caller (schema version 3), as kept:
    /// see [`KeptResult`]. `None` while it runs, and for an execution that ended
    /// without returning one (a runner that died, a version-2 row).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// The kept result exactly as stored, byte for byte (what `agent-exec result`
    /// prints); not part of the record's JSON, which has `result` parsed.
    #[serde(skip)]
    pub result_text: Option<String>,
    /// What the journal left out of the kept result, when anything (deliverables
    /// over [`KEPT_FILES_CAP`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_note: Option<String>,
    /// The last [`OUTPUT_TAIL_CAP`] bytes of the output the backend streamed while it
    /// ran (its `text_delta` events: the program's stdout for a `command` backend),
    /// when the kept result's text does not already end with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
    /// A cancel asked for by another process (`agent-exec cancel`), not yet acted on
    /// or acted on by the runner: when and by whom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_request: Option<String>,
    pub attempts: Vec<AttemptRecord>,
    pub transitions: Vec<TransitionRecord>,
    /// The process that last started this execution.
    pub owner: ProcessIdentity,
}

/// The deliverable bytes a kept result may hold, all files together: 4 MiB. A
/// result whose files add up to more keeps the files that fit (in path order) and
/// drops the rest, saying which in [`KeptResult::note`]; the text, logs, error and
/// usage are always kept whole.
pub const KEPT_FILES_CAP: usize = 4 * 1024 * 1024;

/// The text a kept result may hold: 16 MiB. A longer text (a program that printed
/// gigabytes) keeps its last 16 MiB, and [`KeptResult::note`] says so: the journal
/// stays a journal, and a row never outgrows what SQLite can store.
pub const KEPT_TEXT_CAP: usize = 16 * 1024 * 1024;

/// How much streamed output is kept per execution (its tail): 64 KiB.
pub const OUTPUT_TAIL_CAP: usize = 64 * 1024;

/// A `ContractResult` as the journal keeps it: its JSON (the contract's Go tags,
/// exactly as `agent-exec run --json` prints it when nothing was left out) and a
/// note naming what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptResult {
    pub json: String,
    pub note: Option<String>,
}

impl KeptResult {
    /// Keeps `result`: whole when its deliverables are within [`KEPT_FILES_CAP`] and
    /// its text within [`KEPT_TEXT_CAP`], else cut as those say.
    pub fn of(result: &agent_exec_contract::ContractResult) -> KeptResult {
        let total: usize = result.files.values().map(Vec::len).sum();
        if total <= KEPT_FILES_CAP && result.text.len() <= KEPT_TEXT_CAP {
            return KeptResult {
                json: serde_json::to_string(result).unwrap_or_default(),
                note: None,
            };
        }
        let mut kept = result.clone();
        let mut notes = Vec::new();
        if kept.text.len() > KEPT_TEXT_CAP {
            notes.push(format!(
                "text cut to its last {} MiB (of {} bytes)",
                KEPT_TEXT_CAP / (1024 * 1024),
                kept.text.len()
            ));
            kept.text = tail_of(&kept.text, KEPT_TEXT_CAP).to_owned();
        }
        let mut room = KEPT_FILES_CAP;
        let mut dropped = Vec::new();
        kept.files.retain(|path, bytes| {
            if bytes.len() <= room {
                room -= bytes.len();
                true
            } else {
                dropped.push(format!("{path} ({} bytes)", bytes.len()));
                false
            }
        });
        if !dropped.is_empty() {
            notes.push(format!(
                "deliverables not kept (over the journal's {} MiB cap): {}",
                KEPT_FILES_CAP / (1024 * 1024),
                dropped.join(", ")
            ));
        }
        KeptResult {
            json: serde_json::to_string(&kept).unwrap_or_default(),
            note: Some(notes.join("; ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_over_the_cap_keeps_its_tail_and_says_so() {
        let mut result = agent_exec_contract::ContractResult::succeeded("é".repeat(KEPT_TEXT_CAP));
        result.text.push_str("the end");
        let kept = KeptResult::of(&result);
        let back: agent_exec_contract::ContractResult = serde_json::from_str(&kept.json).unwrap();
        assert!(back.text.len() <= KEPT_TEXT_CAP && back.text.ends_with("the end"));
        let note = kept.note.unwrap();
        assert!(
            note.starts_with("text cut to its last 16 MiB (of "),
            "{note}"
        );
        let small = agent_exec_contract::ContractResult::succeeded("short");
        assert_eq!(KeptResult::of(&small).note, None);
    }
}

/// The last `cap` bytes of `text`, cut at a character boundary.
pub fn tail_of(text: &str, cap: usize) -> &str {
    let mut start = text.len().saturating_sub(cap);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// What `request_cancel` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelAsk {
    /// Recorded; the runner (this owner) acts on it at its next look.
    Recorded { owner: ProcessIdentity },
    /// Nothing to cancel: it ended in this state.
    AlreadyEnded(State),
}

/// An execution that the open found orphaned and marked `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovered {
    pub execution_id: String,
    pub attempt: u32,
    pub previous: State,
    /// Why the owner is known to be gone (process exited, pid reused, host rebooted).
    pub reason: String,
}

/// A JSON text read back from the store; a corrupt value is surfaced as a string rather
/// than failing the whole read, so one bad row never hides the others.
pub(crate) fn json_or_text(text: Option<String>) -> Option<serde_json::Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(serde_json::Value::String(t)))
}
