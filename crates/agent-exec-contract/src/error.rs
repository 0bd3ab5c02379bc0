//! The standardised execution error (Go `Error`, `ErrorCode`, `SideEffects`).

use serde::{Deserialize, Serialize};

use crate::wire::go_string_enum;

go_string_enum! {
    /// Stable error classification (Go `ErrorCode`). A code this build does not know
    /// is kept in `Other` and handled as an unknown outcome.
    pub enum ErrorCode {
        Canceled = "agent.canceled",
        DeadlineExceeded = "agent.deadline_exceeded",
        BudgetExceeded = "agent.budget_exceeded",
        ProviderUnavailable = "agent.provider_unavailable",
        ProviderRejected = "agent.provider_rejected",
        ToolRejected = "agent.tool_rejected",
        PathOutsideWorkspace = "agent.path_outside_workspace",
        MissingCapability = "agent.missing_capability",
        MissingDeliverable = "agent.missing_deliverable",
        EmptyOutput = "agent.empty_output",
        UnknownOutcome = "agent.unknown_outcome",
        Internal = "agent.internal",
    }
}

/// Whether a failed execution may have changed the world (Go `SideEffects`); it
/// decides whether a retry or fallback may replay the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideEffects {
    /// Confirmed: nothing outside was touched (not dispatched, or read-only).
    None,
    /// Files may have been written, tools called, or the end state is unknown.
    /// Replaying is forbidden unless the caller decides otherwise.
    ///
    /// Decoding: Go's zero value `""` and any unknown value decode as `Possible`
    /// (fail closed: "we do not know" must never read as "nothing happened").
    Possible,
}

impl SideEffects {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            SideEffects::None => "none",
            SideEffects::Possible => "possible",
        }
    }
}

impl Serialize for SideEffects {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SideEffects {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = Option::<String>::deserialize(de)?;
        Ok(match text.as_deref() {
            Some("none") => SideEffects::None,
            _ => SideEffects::Possible,
        })
    }
}

/// The standardised execution error (Go `Error`). `retryable` only says a transient
/// transport fault occurred; it is judged independently of `side_effects`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Error {
    pub code: ErrorCode,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub retryable: bool,
    #[serde(default = "possible")]
    pub side_effects: SideEffects,
}

/// The prefix of `reason` when a cancel was requested but could not be confirmed
/// (invariant 4: the outcome then stays unknown, never canceled).
pub const CANCEL_REQUESTED: &str = "cancel_requested";

impl Error {
    /// An error with `code` and `reason`, not retryable.
    pub fn new(code: ErrorCode, reason: impl Into<String>, side_effects: SideEffects) -> Self {
        Error {
            code,
            reason: reason.into(),
            retryable: false,
            side_effects,
        }
    }

    /// Marks the error retryable (a transient transport fault).
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// Whether the reason says a cancel was requested but not confirmed.
    pub fn cancel_requested(&self) -> bool {
        self.reason.starts_with(CANCEL_REQUESTED)
    }

    /// Log fields, as Go's `ErrorFields` returns them. The execution id is passed
    /// by the caller alongside, never stored here.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = vec![("retryable", self.retryable.to_string())];
        if !self.reason.is_empty() {
            fields.push(("reason", self.reason.clone()));
        }
        fields.push(("side_effects", self.side_effects.as_str().to_owned()));
        fields
    }
}

impl std::fmt::Display for Error {
    /// `code: reason`, as Go's `Error()` renders it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.reason)
    }
}

impl std::error::Error for Error {}

fn is_false(b: &bool) -> bool {
    !*b
}

fn possible() -> SideEffects {
    SideEffects::Possible
}
