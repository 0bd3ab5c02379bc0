//! The journal's state machine, decided once: what may follow what, what a step
//! retry, a resume and a recovery do. Pure functions over plain data — states,
//! counts, the owner columns as read and the owner's liveness — so both stores
//! (`sqlite.rs`, `postgres.rs`) only read rows, ask here, and execute the SQL of
//! what was decided (in the same transaction, so a refusal rolls back anything).

use crate::owner::{Liveness, ProcessIdentity};
use crate::record::{End, State};
use crate::{JournalError, NEW_ID_HINT};

/// The transition note of a new execution.
pub(crate) const STARTED_NOTE: &str = "execution started";
/// The transition note of a step retry continuing a journaled execution.
pub(crate) const CONTINUED_NOTE: &str = "execution continued (step retry)";

/// The owner columns as a store read them: the identity, and what is wrong with
/// them when they cannot be read (see [`ProcessIdentity::from_stored`]).
pub(crate) type OwnerRead = (ProcessIdentity, Option<String>);

/// A state this build does not know (written by a newer one) reads as `unknown`: the
/// honest reading of a value we cannot interpret.
pub(crate) fn stored_state(text: String) -> State {
    State::parse(&text).unwrap_or(State::Unknown)
}

/// What recovery does with one open (`running`/`canceling`) execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// Its owner is provably gone: it becomes `unknown`, for this reason.
    Orphaned(String),
    /// Its owner lives, or is on another host: left alone.
    Leave,
    /// Its owner columns cannot be read: left as it is, with a warning.
    Unjudged(String),
}

/// Recovery's judgement of an open execution's owner. `liveness` is asked only of
/// an owner that could be read.
pub(crate) fn recovery(
    (owner, problem): &OwnerRead,
    liveness: impl FnOnce(&ProcessIdentity) -> Liveness,
) -> Recovery {
    if let Some(problem) = problem {
        return Recovery::Unjudged(problem.clone());
    }
    match liveness(owner) {
        Liveness::Dead(reason) => Recovery::Orphaned(reason),
        Liveness::Alive | Liveness::Foreign => Recovery::Leave,
    }
}

/// The owner of an execution that a step retry or a resume wants to take over:
/// `Ok(None)` when it has ended (no owner to judge), `Ok(Some(reason))` when it is
/// open and its owner provably gone (the store marks it `unknown` first), refused
/// when its owner lives or is on another host (busy), or cannot be read (that row's
/// problem, named).
pub(crate) fn take_over(
    execution_id: &str,
    state: State,
    (owner, problem): OwnerRead,
    liveness: impl FnOnce(&ProcessIdentity) -> Liveness,
) -> Result<Option<String>, JournalError> {
    if state.is_terminal() {
        return Ok(None);
    }
    if let Some(problem) = problem {
        return Err(JournalError::Invalid(format!(
            "execution {execution_id:?} is journaled {state}, but {problem}, so whether its runner lives cannot be told; hint: if no agent-exec process runs it, repair or delete that row, or {NEW_ID_HINT}"
        )));
    }
    match liveness(&owner) {
        Liveness::Dead(reason) => Ok(Some(reason)),
        Liveness::Alive | Liveness::Foreign => Err(JournalError::Busy {
            execution_id: execution_id.to_owned(),
            pid: owner.pid,
            host: owner.host,
        }),
    }
}

/// What marking an orphan `unknown` writes: the execution's and its open attempts'
/// state, error and cancel flag, and the transition from `previous`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Orphan {
    pub previous: State,
    /// Why the owner is known to be gone: the transition's note.
    pub reason: String,
    /// The contract `Error` it gets (see [`recovery_error_json`]).
    pub error_json: String,
    /// A `canceling` orphan keeps that a cancel was asked for (invariant 4).
    pub cancel_requested: bool,
}

impl Orphan {
    pub(crate) fn new(previous: State, reason: &str) -> Orphan {
        Orphan {
            previous,
            reason: reason.to_owned(),
            error_json: recovery_error_json(reason),
            cancel_requested: previous == State::Canceling,
        }
    }
}

/// A step retry of a journaled execution (the row exists): which orphan, if any, is
/// marked `unknown` first, and the state the continuation's transition starts from.
/// Refused while a live owner runs it, and for an outcome
/// [`agent_exec_contract::may_continue`] does not continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Continuation {
    pub orphan: Option<Orphan>,
    pub from: State,
}

pub(crate) fn continue_execution(
    execution_id: &str,
    state: State,
    owner: OwnerRead,
    error_json: Option<&str>,
    liveness: impl FnOnce(&ProcessIdentity) -> Liveness,
) -> Result<Continuation, JournalError> {
    match take_over(execution_id, state, owner, liveness)? {
        Some(reason) => {
            let orphan = Orphan::new(state, &reason);
            check_continuable(execution_id, State::Unknown, Some(&orphan.error_json))?;
            Ok(Continuation {
                orphan: Some(orphan),
                from: State::Unknown,
            })
        }
        None => {
            check_continuable(execution_id, state, error_json)?;
            Ok(Continuation {
                orphan: None,
                from: state,
            })
        }
    }
}

/// Refuses to continue an execution that ended as `previous` with the stored error
/// `error_json`, unless [`agent_exec_contract::may_continue`] allows it. Without a
/// readable `side_effects` in the error they are `possible` (fail closed), except
/// for a success, which has no error and is refused anyway.
pub(crate) fn check_continuable(
    execution_id: &str,
    previous: State,
    error_json: Option<&str>,
) -> Result<(), JournalError> {
    let side_effects = error_json
        .and_then(|json| serde_json::from_str::<serde_json::Value>(json).ok())
        .and_then(|error| {
            serde_json::from_value::<agent_exec_contract::SideEffects>(
                error.get("side_effects")?.clone(),
            )
            .ok()
        })
        .unwrap_or(match previous {
            State::Succeeded => agent_exec_contract::SideEffects::None,
            _ => agent_exec_contract::SideEffects::Possible,
        });
    let outcome = agent_exec_contract::Outcome::from_wire(previous.as_str());
    if agent_exec_contract::may_continue(&outcome, side_effects) {
        return Ok(());
    }
    Err(JournalError::Finished {
        execution_id: execution_id.to_owned(),
        outcome: previous.as_str().to_owned(),
        side_effects: side_effects.as_str().to_owned(),
    })
}

/// A new attempt needs an open execution and must be the next number (1-based).
pub(crate) fn check_next_attempt(
    execution_id: &str,
    state: State,
    attempts: u32,
    attempt: u32,
) -> Result<(), JournalError> {
    if state.is_terminal() {
        return Err(JournalError::AlreadyTerminal {
            execution_id: execution_id.to_owned(),
            attempt,
            state,
        });
    }
    if attempt != attempts + 1 {
        return Err(JournalError::Invalid(format!(
            "execution {execution_id:?} has {attempts} attempts; the next is {}, not {attempt}",
            attempts + 1
        )));
    }
    Ok(())
}

/// The transition note of attempt `attempt` starting.
pub(crate) fn attempt_note(attempt: u32, backend: &str) -> String {
    format!("attempt {attempt} on backend {backend}")
}

/// Writes to an attempt (its session handle, a transition, its end) need it open.
pub(crate) fn check_attempt_open(
    execution_id: &str,
    attempt: u32,
    state: State,
) -> Result<(), JournalError> {
    if state.is_terminal() {
        return Err(JournalError::AlreadyTerminal {
            execution_id: execution_id.to_owned(),
            attempt,
            state,
        });
    }
    Ok(())
}

/// A transition is to a non-terminal state (today: `canceling`); an end is recorded
/// with `finish_attempt`. Checked before any row is read.
pub(crate) fn check_transition_target(to: State) -> Result<(), JournalError> {
    if to.is_terminal() {
        return Err(JournalError::Invalid(format!(
            "`{to}` is terminal: record it with finish_attempt"
        )));
    }
    Ok(())
}

/// Whether attempt `attempt`, now `from`, moves to `to`: refused when it ended, and
/// `false` (nothing recorded) when it is in that state already.
pub(crate) fn transition_needed(
    execution_id: &str,
    attempt: u32,
    from: State,
    to: State,
) -> Result<bool, JournalError> {
    check_attempt_open(execution_id, attempt, from)?;
    Ok(from != to)
}

/// An end (of an attempt or an execution) is one of the four outcomes.
pub(crate) fn check_outcome(outcome: State) -> Result<(), JournalError> {
    if outcome.is_terminal() {
        Ok(())
    } else {
        Err(JournalError::Invalid(format!(
            "`{outcome}` is not an outcome"
        )))
    }
}

/// An execution's end needs it open; a terminal state is never overwritten.
pub(crate) fn check_execution_open(
    execution_id: &str,
    state: State,
    attempts: u32,
) -> Result<(), JournalError> {
    if state.is_terminal() {
        return Err(JournalError::AlreadyTerminal {
            execution_id: execution_id.to_owned(),
            attempt: attempts,
            state,
        });
    }
    Ok(())
}

/// The note on an execution's final transition (the attempt's own transition, just
/// before it, carries the bare error code).
pub(crate) fn execution_note(end: &End<'_>) -> String {
    match end.error_code {
        Some(code) => format!("execution finished: {code}"),
        None => "execution finished".to_owned(),
    }
}

/// A cancel request is recorded on an open execution (`Some(note)`, kept in the row
/// and the log; a second request keeps the first one's words in the row); an ended
/// one has nothing to cancel (`None`).
pub(crate) fn cancel_note(state: State, by: &str, now: &str) -> Option<String> {
    (!state.is_terminal()).then(|| format!("cancel requested by {by} at {now}"))
}

/// The end of an execution that never started (`record_unstarted`): a new row, or
/// one that ended before (a step retry queued again). Refused for one that runs.
pub(crate) fn check_unstarted(
    execution_id: &str,
    state: Option<State>,
) -> Result<(), JournalError> {
    match state {
        Some(from) if !from.is_terminal() => Err(JournalError::Invalid(format!(
            "execution {execution_id:?} is {from}; it did start"
        ))),
        _ => Ok(()),
    }
}

/// Whether an orphan proven outside this process (the fleet's lease) is settled:
/// only while it is open and owned by exactly `expected`, whose death was proven —
/// an execution that moved on is left alone (the owner check is the fence).
pub(crate) fn settles_orphan(state: State, stored: &OwnerRead, expected: &ProcessIdentity) -> bool {
    !state.is_terminal() && stored.1.is_none() && stored.0 == *expected
}

/// The resume rule, once the owner of a non-terminal execution has been judged
/// (`state` is then `unknown` for a dead owner; a live one was refused as busy): not
/// a success, on the backend asked for (`wanted`, when given), and with a usable
/// session handle on the journaled backend. The same for both stores and for the
/// read-only check.
pub(crate) fn check_resumable(
    execution_id: &str,
    state: State,
    journaled: &str,
    wanted: Option<&str>,
    session: Option<(u32, String)>,
) -> Result<(u32, String), JournalError> {
    if state == State::Succeeded {
        return Err(JournalError::AlreadySucceeded {
            execution_id: execution_id.to_owned(),
        });
    }
    if let Some(wanted) = wanted
        && wanted != journaled
    {
        return Err(JournalError::OtherBackend {
            execution_id: execution_id.to_owned(),
            journaled: journaled.to_owned(),
            requested: wanted.to_owned(),
        });
    }
    match session {
        // A stored handle is read back as outside input: one that is not an id is
        // never handed on (it could only get here by editing the journal).
        Some((attempt, handle)) if agent_exec_contract::check_session_handle(&handle).is_ok() => {
            Ok((attempt, handle))
        }
        _ => Err(JournalError::NoSessionHandle {
            execution_id: execution_id.to_owned(),
            backend: journaled.to_owned(),
        }),
    }
}

/// The note of the transition a resume records.
pub(crate) fn resumed_note(session_attempt: u32) -> String {
    format!("execution resumed from attempt {session_attempt}'s session")
}

/// The contract `Error` an orphaned attempt gets: its outcome is unknown, and side
/// effects may have happened (the process was running; we cannot know what it did).
pub(crate) fn recovery_error_json(reason: &str) -> String {
    serde_json::json!({
        "code": "agent.unknown_outcome",
        "reason": format!("the runner died before recording an outcome: {reason}"),
        "side_effects": "possible",
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owner::StoredInt;

    /// Every event the journal decides, applied to a row in one state.
    #[derive(Debug, Clone, Copy)]
    enum Event {
        ContinueOwnerDead,
        ContinueOwnerAlive,
        ContinueOwnerForeign,
        ContinueOwnerUnreadable,
        StartAttemptNext,
        StartAttemptSkipping,
        TransitionToCanceling,
        TransitionToRunning,
        RecordSession,
        FinishAttempt,
        FinishExecution,
        RequestCancel,
        ResumeOwnerDead,
        ResumeOwnerAlive,
        RecordUnstarted,
        SettleOrphan,
        Recover,
    }

    const EVENTS: [Event; 17] = [
        Event::ContinueOwnerDead,
        Event::ContinueOwnerAlive,
        Event::ContinueOwnerForeign,
        Event::ContinueOwnerUnreadable,
        Event::StartAttemptNext,
        Event::StartAttemptSkipping,
        Event::TransitionToCanceling,
        Event::TransitionToRunning,
        Event::RecordSession,
        Event::FinishAttempt,
        Event::FinishExecution,
        Event::RequestCancel,
        Event::ResumeOwnerDead,
        Event::ResumeOwnerAlive,
        Event::RecordUnstarted,
        Event::SettleOrphan,
        Event::Recover,
    ];

    fn owner() -> ProcessIdentity {
        ProcessIdentity {
            host: "h".into(),
            boot_id: "b".into(),
            pid: 7,
            start_ticks: 1,
        }
    }

    fn readable() -> OwnerRead {
        (owner(), None)
    }

    fn unreadable() -> OwnerRead {
        ProcessIdentity::from_stored(
            "h".into(),
            "b".into(),
            StoredInt::Int(-1),
            StoredInt::Int(1),
        )
    }

    fn dead(_: &ProcessIdentity) -> Liveness {
        Liveness::Dead("owner pid 7 has exited".into())
    }

    fn alive(_: &ProcessIdentity) -> Liveness {
        Liveness::Alive
    }

    fn foreign(_: &ProcessIdentity) -> Liveness {
        Liveness::Foreign
    }

    /// A short name of what a decision said, for the table.
    fn verdict<T>(result: Result<T, JournalError>, ok: impl FnOnce(T) -> String) -> String {
        match result {
            Ok(value) => ok(value),
            Err(JournalError::Busy { .. }) => "busy".into(),
            Err(JournalError::Finished { .. }) => "finished".into(),
            Err(JournalError::AlreadyTerminal { .. }) => "ended".into(),
            Err(JournalError::AlreadySucceeded { .. }) => "succeeded".into(),
            Err(JournalError::NoSessionHandle { .. }) => "no-session".into(),
            Err(JournalError::Invalid(_)) => "invalid".into(),
            Err(other) => format!("{other:?}"),
        }
    }

    fn continuation(c: Continuation) -> String {
        match c.orphan {
            Some(orphan) => format!("orphan {} -> continue from {}", orphan.previous, c.from),
            None => format!("continue from {}", c.from),
        }
    }

    /// A failed execution without side effects: the one outcome a step retry continues.
    const FAILED_CLEAN: &str = r#"{"code":"x","side_effects":"none"}"#;

    fn decide(state: State, event: Event) -> String {
        let id = "e";
        match event {
            Event::ContinueOwnerDead => verdict(
                continue_execution(id, state, readable(), Some(FAILED_CLEAN), dead),
                continuation,
            ),
            Event::ContinueOwnerAlive => verdict(
                continue_execution(id, state, readable(), Some(FAILED_CLEAN), alive),
                continuation,
            ),
            Event::ContinueOwnerForeign => verdict(
                continue_execution(id, state, readable(), Some(FAILED_CLEAN), foreign),
                continuation,
            ),
            Event::ContinueOwnerUnreadable => verdict(
                continue_execution(id, state, unreadable(), Some(FAILED_CLEAN), dead),
                continuation,
            ),
            Event::StartAttemptNext => {
                verdict(check_next_attempt(id, state, 1, 2), |()| "ok".into())
            }
            Event::StartAttemptSkipping => {
                verdict(check_next_attempt(id, state, 1, 3), |()| "ok".into())
            }
            Event::TransitionToCanceling => verdict(
                check_transition_target(State::Canceling)
                    .and_then(|()| transition_needed(id, 1, state, State::Canceling)),
                |write| if write { "write" } else { "nothing" }.into(),
            ),
            Event::TransitionToRunning => verdict(
                check_transition_target(State::Running)
                    .and_then(|()| transition_needed(id, 1, state, State::Running)),
                |write| if write { "write" } else { "nothing" }.into(),
            ),
            Event::RecordSession => verdict(check_attempt_open(id, 1, state), |()| "ok".into()),
            Event::FinishAttempt => verdict(
                check_outcome(State::Failed).and_then(|()| check_attempt_open(id, 1, state)),
                |()| "ok".into(),
            ),
            Event::FinishExecution => verdict(
                check_outcome(State::Failed).and_then(|()| check_execution_open(id, state, 1)),
                |()| "ok".into(),
            ),
            Event::RequestCancel => match cancel_note(state, "me", "now") {
                Some(note) => note,
                None => "already ended".into(),
            },
            Event::ResumeOwnerDead => verdict(
                take_over(id, state, readable(), dead).and_then(|orphan| {
                    let state = if orphan.is_some() {
                        State::Unknown
                    } else {
                        state
                    };
                    check_resumable(id, state, "b1", Some("b1"), Some((1, "s-1".into())))
                        .map(|(attempt, _)| (orphan.is_some(), attempt))
                }),
                |(orphan, attempt)| format!("resume attempt {attempt} orphan {orphan}"),
            ),
            Event::ResumeOwnerAlive => verdict(
                take_over(id, state, readable(), alive)
                    .and_then(|_| check_resumable(id, state, "b1", None, Some((1, "s-1".into())))),
                |(attempt, _)| format!("resume attempt {attempt}"),
            ),
            Event::RecordUnstarted => verdict(check_unstarted(id, Some(state)), |()| "ok".into()),
            Event::SettleOrphan => match settles_orphan(state, &readable(), &owner()) {
                true => "settle".into(),
                false => "leave".into(),
            },
            Event::Recover => {
                // Recovery reads only open rows; for them, a dead owner is an orphan.
                if state.is_terminal() {
                    "not read".into()
                } else {
                    format!("{:?}", recovery(&readable(), dead))
                }
            }
        }
    }

    /// Every state × every event: what the journal decides. Running and canceling
    /// rows differ only in the transition they are in already; the four outcomes
    /// refuse every write to the attempt and differ in what may continue or resume.
    #[test]
    fn every_state_and_event() {
        // Columns in the order of `EVENTS`.
        let open = |same_as_canceling: &'static str, same_as_running: &'static str| {
            [
                "finished", // an orphan becomes unknown, and unknown is not continued
                "busy",
                "busy",
                "invalid",
                "ok",
                "invalid",
                same_as_canceling,
                same_as_running,
                "ok",
                "ok",
                "ok",
                "cancel requested by me at now",
                "resume attempt 1 orphan true",
                "busy",
                "invalid",
                "settle",
                "Orphaned(\"owner pid 7 has exited\")",
            ]
        };
        let ended = |continues: &'static str, resumes: &'static str, resumes_dead: &'static str| {
            [
                continues,
                continues,
                continues,
                continues,
                "ended",
                "ended",
                "ended",
                "ended",
                "ended",
                "ended",
                "ended",
                "already ended",
                resumes_dead,
                resumes,
                "ok",
                "leave",
                "not read",
            ]
        };
        let resumes = "resume attempt 1";
        let resumes_dead = "resume attempt 1 orphan false";
        let table = [
            (State::Running, open("write", "nothing")),
            (State::Canceling, open("nothing", "write")),
            (
                State::Succeeded,
                ended("finished", "succeeded", "succeeded"),
            ),
            (
                State::Failed,
                ended("continue from failed", resumes, resumes_dead),
            ),
            (
                State::Canceled,
                ended("continue from canceled", resumes, resumes_dead),
            ),
            (State::Unknown, ended("finished", resumes, resumes_dead)),
        ];
        assert_eq!(
            table.map(|(state, _)| state),
            State::ALL,
            "one row per state"
        );
        for (state, row) in table {
            for (event, want) in EVENTS.iter().zip(row) {
                assert_eq!(decide(state, *event), want, "{state} × {event:?}");
            }
        }
    }
}
