//! The journal port: what the runtime reports about every execution, so that a
//! durable journal (the `agent-exec-journal` crate: SQLite, PostgreSQL) can record it.
//!
//! It lives in the contract, not in the runtime, so the journal crate depends only on
//! the contract and the runtime only on this trait (no dependency cycle, and the
//! runtime can be tested with an in-memory recorder).
//!
//! Order of calls for one execution: `execution_started`, then per attempt
//! `attempt_started`, zero or more `transition`s, `attempt_finished`; finally
//! `execution_finished`. A process that dies in between leaves the execution
//! non-terminal; the journal turns it into `unknown` when next opened.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::SideEffects;
use crate::types::{ContractRequest, ContractResult, Outcome, Usage};

/// State of an attempt as the journal records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptState {
    /// Dispatched to the backend.
    Running,
    /// A cancel (caller or deadline) was sent; the tree is being terminated.
    Canceling,
    /// Terminal states, the same four as [`crate::Outcome`].
    Succeeded,
    Failed,
    Canceled,
    Unknown,
}

impl AttemptState {
    /// Lower-case name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptState::Running => "running",
            AttemptState::Canceling => "canceling",
            AttemptState::Succeeded => "succeeded",
            AttemptState::Failed => "failed",
            AttemptState::Canceled => "canceled",
            AttemptState::Unknown => "unknown",
        }
    }
}

/// What an execution's earlier attempts (a step retry, possibly from another
/// process) left in the journal; the runtime continues from it so that every
/// attempt shares one budget and one deadline (invariant 1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriorAttempts {
    /// Attempts already recorded under this execution id (0 for a new one).
    pub attempts: u32,
    /// Usage already spent.
    pub usage: Usage,
    /// The deadline recorded when the execution was first started.
    pub deadline: Option<OffsetDateTime>,
}

/// Whether a new start under an existing execution id may continue an execution
/// that ended with `outcome` and `side_effects`.
///
/// A step retry continues a *failed* step: only a `failed` or `canceled` execution
/// that confirmed it touched nothing (`side_effects: none`) may run again. A
/// `succeeded` execution is done, and running it again would repeat its work; an
/// `unknown` one, or any with side effects `possible`, may have changed the world,
/// and invariant 5 forbids replaying it unconditionally. Journals apply this rule in
/// the same transaction that would record the continuation, so two processes cannot
/// both pass it.
pub fn may_continue(outcome: &Outcome, side_effects: SideEffects) -> bool {
    matches!(outcome.effective(), Outcome::Failed | Outcome::Canceled)
        && side_effects == SideEffects::None
}

/// Where a resumed execution picks up, as the journal read it in the same transaction
/// that claimed the execution for the resuming process.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumePoint {
    /// The execution's original request, as first journaled.
    pub request: ContractRequest,
    /// The backend whose session is continued (resume never changes backend).
    pub backend: String,
    /// The newest session handle journaled for this execution on `backend`.
    pub session: String,
    /// The attempt that reported `session`.
    pub session_attempt: u32,
    /// Attempts, usage and deadline so far: the resumed attempt continues them.
    pub prior: PriorAttempts,
}

/// Error from a journal. The runtime fails closed when it cannot record the start of
/// an execution or attempt, and reports (in `logs`) a failure to record the end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("journal: {0}")]
pub struct JournalError(pub String);

/// Receives the life of every execution.
#[async_trait]
pub trait JournalHook: Send + Sync {
    /// An execution starts (or a step retry of it continues). Returns what earlier
    /// attempts under the same id left. Must refuse, recording nothing, to continue
    /// an execution that [`may_continue`] does not allow.
    async fn execution_started(
        &self,
        backend: &str,
        request: &ContractRequest,
        at: OffsetDateTime,
    ) -> Result<PriorAttempts, JournalError>;

    /// Attempt `attempt` (1-based, continuing `PriorAttempts::attempts`) starts on
    /// `backend` (a fallback may use another backend under the same id).
    async fn attempt_started(
        &self,
        execution_id: &str,
        attempt: u32,
        backend: &str,
        at: OffsetDateTime,
    ) -> Result<(), JournalError>;

    /// A non-terminal state change of an attempt, with a short human note.
    async fn transition(
        &self,
        execution_id: &str,
        attempt: u32,
        state: AttemptState,
        note: &str,
        at: OffsetDateTime,
    ) -> Result<(), JournalError>;

    /// An attempt ended with `result` (outcome, error, usage).
    async fn attempt_finished(
        &self,
        execution_id: &str,
        attempt: u32,
        result: &ContractResult,
        at: OffsetDateTime,
    ) -> Result<(), JournalError>;

    /// The backend of attempt `attempt` reported its session handle (already checked by
    /// [`crate::check_session_handle`]). May come more than once per attempt; the last
    /// one counts. Written at once: a runner killed a moment later leaves it behind.
    /// The default records nothing, so such a journal cannot resume.
    async fn session_reported(
        &self,
        execution_id: &str,
        attempt: u32,
        session: &str,
        at: OffsetDateTime,
    ) -> Result<(), JournalError> {
        let _ = (execution_id, attempt, session, at);
        Ok(())
    }

    /// The caller resumes `execution_id` on `backend`. In one transaction: refuse when
    /// it is not journaled, succeeded, still running under a live owner, was journaled
    /// on another backend than `backend`, or has no session handle on it; mark an
    /// orphaned run `unknown` first; otherwise claim it for this process (state
    /// `running`) and return where it picks up. The runtime then records the resumed
    /// attempt with `attempt_started` as the next attempt.
    ///
    /// `backend` is checked here, inside the transaction, and not by the runtime after
    /// it: a refusal after the claim would leave the execution claimed by a process
    /// that runs nothing, or need an outcome written that nobody observed.
    async fn execution_resumed(
        &self,
        execution_id: &str,
        backend: &str,
        at: OffsetDateTime,
    ) -> Result<ResumePoint, JournalError> {
        let _ = (backend, at);
        Err(JournalError(format!(
            "execution {execution_id:?} cannot be resumed: this journal keeps no session handles"
        )))
    }

    /// The execution ended with `result` (the last attempt's, usage summed).
    async fn execution_finished(
        &self,
        execution_id: &str,
        result: &ContractResult,
        at: OffsetDateTime,
    ) -> Result<(), JournalError>;
}
