//! The contract's `JournalHook` port, implemented by [`Journal`]: how the runtime writes.
//!
//! The hook's `at` timestamps are not used: rows are stamped by the journal's own clock at
//! write time, so the order of timestamps is the order of commits.

use agent_exec_contract::{
    AttemptState, ContractRequest, ContractResult, JournalHook, PriorAttempts, ResumePoint,
};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::record::{End, ExecutionStart, KeptResult, Prior, State, Usage};
use crate::{Journal, JournalError};

fn port_error(e: JournalError) -> agent_exec_contract::JournalError {
    agent_exec_contract::JournalError(e.to_string())
}

fn state_of(state: AttemptState) -> State {
    match state {
        AttemptState::Running => State::Running,
        AttemptState::Canceling => State::Canceling,
        AttemptState::Succeeded => State::Succeeded,
        AttemptState::Failed => State::Failed,
        AttemptState::Canceled => State::Canceled,
        AttemptState::Unknown => State::Unknown,
    }
}

/// The journal's view of a result. An outcome this build does not know is `unknown`.
struct ResultRow {
    outcome: State,
    error_json: Option<String>,
    error_code: Option<String>,
    usage: Usage,
    cancel_requested: bool,
}

impl ResultRow {
    fn of(result: &ContractResult) -> ResultRow {
        ResultRow {
            outcome: State::parse(result.outcome.effective().as_str())
                .filter(|s| s.is_terminal())
                .unwrap_or(State::Unknown),
            error_json: result
                .err
                .as_ref()
                .and_then(|e| serde_json::to_string(e).ok()),
            error_code: result.err.as_ref().map(|e| e.code.as_str().to_owned()),
            usage: Usage {
                prompt_tokens: result.usage.prompt_tokens,
                completion_tokens: result.usage.completion_tokens,
            },
            cancel_requested: result.err.as_ref().is_some_and(|e| e.cancel_requested()),
        }
    }

    fn end(&self) -> End<'_> {
        End {
            outcome: self.outcome,
            error_json: self.error_json.as_deref(),
            error_code: self.error_code.as_deref(),
            usage: self.usage,
            cancel_requested: self.cancel_requested,
        }
    }
}

fn rfc3339(at: OffsetDateTime) -> Option<String> {
    at.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// The store's `Prior` in the port's terms (the deadline parsed back from RFC 3339).
fn prior_attempts(
    execution_id: &str,
    prior: Prior,
) -> Result<PriorAttempts, agent_exec_contract::JournalError> {
    let deadline = match prior.deadline {
        None => None,
        Some(text) => Some(
            OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339).map_err(
                |e| {
                    agent_exec_contract::JournalError(format!(
                        "execution {execution_id:?}: stored deadline {text:?} is not RFC 3339: {e}"
                    ))
                },
            )?,
        ),
    };
    Ok(PriorAttempts {
        attempts: prior.attempts,
        usage: agent_exec_contract::Usage {
            prompt_tokens: prior.usage.prompt_tokens,
            completion_tokens: prior.usage.completion_tokens,
        },
        deadline,
    })
}

/// The stored request, read back as the contract's Go JSON (it was written by
/// [`JournalHook::execution_started`] from the request the execution ran). A row
/// without one, or with one that does not decode, cannot be resumed: there is nothing
/// to continue it with.
fn stored_request(execution_id: &str, json: Option<&str>) -> Result<ContractRequest, JournalError> {
    let json = json.ok_or_else(|| {
        JournalError::Invalid(format!(
            "execution {execution_id:?} has no journaled request, so it cannot be resumed"
        ))
    })?;
    agent_exec_contract::decode_request(json.as_bytes()).map_err(|e| {
        JournalError::Invalid(format!(
            "execution {execution_id:?}: the journaled request cannot be read ({e}), so it cannot be resumed"
        ))
    })
}

#[async_trait]
impl JournalHook for Journal {
    async fn execution_started(
        &self,
        backend: &str,
        request: &ContractRequest,
        _at: OffsetDateTime,
    ) -> Result<PriorAttempts, agent_exec_contract::JournalError> {
        let request_json = serde_json::to_string(request).ok();
        let deadline = request.budget.deadline.and_then(rfc3339);
        let prior = self
            .start_execution(&ExecutionStart {
                execution_id: &request.execution_id,
                backend,
                request_json: request_json.as_deref(),
                deadline: deadline.as_deref(),
            })
            .await
            .map_err(port_error)?;
        prior_attempts(&request.execution_id, prior)
    }

    async fn attempt_started(
        &self,
        execution_id: &str,
        attempt: u32,
        backend: &str,
        _at: OffsetDateTime,
    ) -> Result<(), agent_exec_contract::JournalError> {
        self.start_attempt(execution_id, attempt, backend)
            .await
            .map_err(port_error)
    }

    async fn transition(
        &self,
        execution_id: &str,
        attempt: u32,
        state: AttemptState,
        note: &str,
        _at: OffsetDateTime,
    ) -> Result<(), agent_exec_contract::JournalError> {
        let note = (!note.is_empty()).then_some(note);
        Journal::transition(self, execution_id, attempt, state_of(state), note)
            .await
            .map_err(port_error)
    }

    async fn attempt_finished(
        &self,
        execution_id: &str,
        attempt: u32,
        result: &ContractResult,
        _at: OffsetDateTime,
    ) -> Result<(), agent_exec_contract::JournalError> {
        let row = ResultRow::of(result);
        self.finish_attempt(execution_id, attempt, &row.end())
            .await
            .map_err(port_error)
    }

    async fn execution_finished(
        &self,
        execution_id: &str,
        result: &ContractResult,
        _at: OffsetDateTime,
    ) -> Result<(), agent_exec_contract::JournalError> {
        let row = ResultRow::of(result);
        let kept = KeptResult::of(result);
        self.finish_execution_kept(execution_id, &row.end(), Some(&kept))
            .await
            .map_err(port_error)
    }

    async fn session_reported(
        &self,
        execution_id: &str,
        attempt: u32,
        session: &str,
        _at: OffsetDateTime,
    ) -> Result<(), agent_exec_contract::JournalError> {
        self.record_session(execution_id, attempt, session)
            .await
            .map_err(port_error)
    }

    async fn execution_resumed(
        &self,
        execution_id: &str,
        backend: &str,
        _at: OffsetDateTime,
    ) -> Result<ResumePoint, agent_exec_contract::JournalError> {
        let resumed = self
            .resume(execution_id, backend, |json| {
                stored_request(execution_id, json)
            })
            .await
            .map_err(port_error)?;
        Ok(ResumePoint {
            request: resumed.request,
            backend: resumed.backend,
            session: resumed.session,
            session_attempt: resumed.session_attempt,
            prior: prior_attempts(execution_id, resumed.prior)?,
        })
    }
}
