//! Scenarios every journal store must pass, run against SQLite and PostgreSQL alike.
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use agent_exec_contract::{
    ContractBudget, ContractRequest, ContractResult, Error, ErrorCode, JournalHook, Outcome,
    SideEffects,
};
use agent_exec_journal::{
    CancelAsk, End, ExecutionStart, Journal, JournalError, JournalLocation, KEPT_FILES_CAP,
    OUTPUT_TAIL_CAP, State, Usage,
};

/// The env var that turns the test binary into a child "runner" (see [`spawn_runner`]).
pub const CHILD_ENV: &str = "AGENT_EXEC_JOURNAL_TEST_CHILD";

fn start<'a>(id: &'a str, backend: &'a str) -> ExecutionStart<'a> {
    ExecutionStart {
        execution_id: id,
        backend,
        request_json: Some(r#"{"execution_id":"x","prompt":"hello"}"#),
        deadline: Some("2030-01-02T03:04:05Z"),
    }
}

/// Starts the execution (if new) and its next attempt, as the runtime does.
async fn begin(journal: &Journal, id: &str, backend: &str) -> u32 {
    let prior = journal.start_execution(&start(id, backend)).await.unwrap();
    let attempt = prior.attempts + 1;
    journal.start_attempt(id, attempt, backend).await.unwrap();
    attempt
}

fn end(outcome: State, code: Option<&'static str>, usage: (u64, u64)) -> End<'static> {
    End {
        outcome,
        error_json: code.map(|_| r#"{"code":"agent.provider_unavailable","side_effects":"none"}"#),
        error_code: code,
        usage: Usage {
            prompt_tokens: usage.0,
            completion_tokens: usage.1,
        },
        cancel_requested: false,
    }
}

pub async fn lifecycle_is_recorded_in_order(journal: &Journal) {
    let attempt = begin(journal, "life-1", "command").await;
    assert_eq!(attempt, 1);
    journal
        .transition("life-1", 1, State::Running, Some("no change"))
        .await
        .unwrap();
    journal
        .transition("life-1", 1, State::Canceling, Some("ctrl-c"))
        .await
        .unwrap();
    journal
        .finish_attempt("life-1", 1, &end(State::Canceled, None, (3, 4)))
        .await
        .unwrap();
    journal
        .finish_execution("life-1", &end(State::Canceled, None, (0, 0)))
        .await
        .unwrap();

    let record = journal.show("life-1").await.unwrap().expect("recorded");
    assert_eq!(record.summary.state, State::Canceled);
    assert!(record.summary.cancel_requested);
    assert_eq!(
        record.summary.usage.prompt_tokens, 3,
        "usage is the attempts' sum"
    );
    assert_eq!(record.summary.usage.completion_tokens, 4);
    assert_eq!(
        record.summary.deadline.as_deref(),
        Some("2030-01-02T03:04:05Z")
    );
    let path: Vec<_> = record
        .transitions
        .iter()
        .map(|t| (t.attempt, t.from, t.to))
        .collect();
    assert_eq!(
        path,
        vec![
            (0, None, State::Running),
            (1, None, State::Running),
            (1, Some(State::Running), State::Canceling),
            (1, Some(State::Canceling), State::Canceled),
            (1, Some(State::Canceling), State::Canceled),
        ],
        "a transition to the same state records nothing"
    );
    assert_eq!(record.transitions[2].note.as_deref(), Some("ctrl-c"));
    assert_eq!(record.request.unwrap()["prompt"], "hello");
    assert_eq!(record.attempts.len(), 1);
    assert_eq!(record.attempts[0].owner.pid, std::process::id());
    assert_eq!(record.owner.pid, std::process::id());
    assert!(journal.show("nope").await.unwrap().is_none());
}

pub async fn retries_reuse_the_id_and_sum_usage(journal: &Journal) {
    begin(journal, "retry-1", "openai").await;
    let failed = end(State::Failed, Some("agent.provider_unavailable"), (10, 0));
    journal.finish_attempt("retry-1", 1, &failed).await.unwrap();
    journal.finish_execution("retry-1", &failed).await.unwrap();
    let listed = journal.list(10).await.unwrap();
    let row = listed.iter().find(|r| r.execution_id == "retry-1").unwrap();
    assert_eq!(
        row.error_code.as_deref(),
        Some("agent.provider_unavailable")
    );
    assert_eq!(row.state, State::Failed);

    // A step retry, possibly from another process: the prior attempts come back.
    let later = ExecutionStart {
        deadline: Some("2099-01-01T00:00:00Z"),
        ..start("retry-1", "command")
    };
    let prior = journal.start_execution(&later).await.unwrap();
    assert_eq!(prior.attempts, 1);
    assert_eq!(prior.usage.prompt_tokens, 10);
    assert_eq!(
        prior.deadline.as_deref(),
        Some("2030-01-02T03:04:05Z"),
        "the first deadline is kept for every attempt"
    );
    let skipped = journal.start_attempt("retry-1", 3, "command").await;
    assert!(
        matches!(skipped, Err(JournalError::Invalid(_))),
        "{skipped:?}"
    );
    journal
        .start_attempt("retry-1", 2, "command")
        .await
        .unwrap();
    journal
        .finish_attempt("retry-1", 2, &end(State::Succeeded, None, (5, 7)))
        .await
        .unwrap();
    journal
        .finish_execution("retry-1", &end(State::Succeeded, None, (0, 0)))
        .await
        .unwrap();
    let record = journal.show("retry-1").await.unwrap().unwrap();
    assert_eq!(record.summary.attempts, 2);
    assert_eq!(record.summary.backend, "command");
    assert_eq!(record.summary.state, State::Succeeded);
    assert_eq!(record.summary.error_code, None);
    assert_eq!(record.summary.usage.prompt_tokens, 15);
    assert_eq!(record.summary.usage.completion_tokens, 7);
    assert_eq!(record.attempts[0].state, State::Failed);
    assert_eq!(record.attempts[1].state, State::Succeeded);
    assert_eq!(record.error, None);
}

pub async fn terminal_states_are_never_overwritten(journal: &Journal) {
    begin(journal, "term-1", "command").await;
    let ok = end(State::Succeeded, None, (0, 0));
    journal.finish_attempt("term-1", 1, &ok).await.unwrap();
    journal.finish_execution("term-1", &ok).await.unwrap();
    let again = journal
        .finish_attempt("term-1", 1, &end(State::Failed, None, (0, 0)))
        .await;
    assert!(
        matches!(again, Err(JournalError::AlreadyTerminal { .. })),
        "{again:?}"
    );
    let again = journal
        .finish_execution("term-1", &end(State::Unknown, None, (0, 0)))
        .await;
    assert!(
        matches!(again, Err(JournalError::AlreadyTerminal { .. })),
        "{again:?}"
    );
    let late = journal
        .transition("term-1", 1, State::Canceling, None)
        .await;
    assert!(
        matches!(late, Err(JournalError::AlreadyTerminal { .. })),
        "{late:?}"
    );
    let not_outcome = journal
        .finish_attempt("term-1", 1, &end(State::Running, None, (0, 0)))
        .await;
    assert!(matches!(not_outcome, Err(JournalError::Invalid(_))));
    let missing = journal
        .transition("term-1", 9, State::Canceling, None)
        .await;
    assert!(matches!(missing, Err(JournalError::NoSuchAttempt { .. })));
    let no_execution = journal.start_attempt("never-started", 1, "command").await;
    assert!(matches!(
        no_execution,
        Err(JournalError::NoSuchExecution(_))
    ));
    assert_eq!(
        journal.show("term-1").await.unwrap().unwrap().summary.state,
        State::Succeeded
    );
}

/// The runtime's view: the contract's `JournalHook` port with real contract results.
pub async fn the_hook_records_contract_results(journal: &Journal) {
    let hook: &dyn JournalHook = journal;
    let deadline = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let request = ContractRequest {
        execution_id: "hook-1".into(),
        prompt: "write the file".into(),
        budget: ContractBudget {
            deadline: Some(deadline.replace_nanosecond(0).unwrap()),
            ..Default::default()
        },
        ..Default::default()
    };
    let now = time::OffsetDateTime::now_utc();
    let prior = hook
        .execution_started("command", &request, now)
        .await
        .unwrap();
    assert_eq!(prior.attempts, 0);
    hook.attempt_started("hook-1", 1, "command", now)
        .await
        .unwrap();
    hook.transition(
        "hook-1",
        1,
        agent_exec_contract::AttemptState::Canceling,
        "deadline",
        now,
    )
    .await
    .unwrap();
    let mut result = ContractResult::with_error(
        Outcome::Unknown,
        Error::new(
            ErrorCode::DeadlineExceeded,
            "cancel_requested: the tree did not exit",
            SideEffects::Possible,
        ),
    );
    result.usage.prompt_tokens = 12;
    hook.attempt_finished("hook-1", 1, &result, now)
        .await
        .unwrap();
    hook.execution_finished("hook-1", &result, now)
        .await
        .unwrap();

    let record = journal.show("hook-1").await.unwrap().unwrap();
    assert_eq!(record.summary.state, State::Unknown);
    assert!(record.summary.cancel_requested);
    assert_eq!(
        record.summary.error_code.as_deref(),
        Some("agent.deadline_exceeded")
    );
    assert_eq!(record.error.as_ref().unwrap()["side_effects"], "possible");
    assert_eq!(record.summary.usage.prompt_tokens, 12);
    assert_eq!(record.request.as_ref().unwrap()["execution_id"], "hook-1");

    // An unknown outcome with possible side effects is not continued: the hook
    // refuses, naming the id, outcome and side effects, and records nothing.
    let retry = ContractRequest {
        budget: ContractBudget::default(),
        ..request.clone()
    };
    let refused = hook.execution_started("command", &retry, now).await;
    let message = refused.unwrap_err().to_string();
    for needle in ["hook-1", "unknown", "side effects: possible"] {
        assert!(message.contains(needle), "{message}");
    }
    let record = journal.show("hook-1").await.unwrap().unwrap();
    assert_eq!(record.summary.state, State::Unknown);
    assert_eq!(record.summary.attempts, 1);

    // A failed step without side effects: a step retry through the hook gets the
    // same deadline and the spent usage back.
    let request = ContractRequest {
        execution_id: "hook-2".into(),
        ..request
    };
    hook.execution_started("command", &request, now)
        .await
        .unwrap();
    hook.attempt_started("hook-2", 1, "command", now)
        .await
        .unwrap();
    let mut failed = ContractResult::failed(Error::new(
        ErrorCode::ProviderUnavailable,
        "429",
        SideEffects::None,
    ));
    failed.usage.prompt_tokens = 12;
    hook.attempt_finished("hook-2", 1, &failed, now)
        .await
        .unwrap();
    hook.execution_finished("hook-2", &failed, now)
        .await
        .unwrap();
    let retry = ContractRequest {
        budget: ContractBudget::default(),
        ..request.clone()
    };
    let prior = hook
        .execution_started("command", &retry, now)
        .await
        .unwrap();
    assert_eq!(prior.attempts, 1);
    assert_eq!(prior.usage.prompt_tokens, 12);
    assert_eq!(prior.deadline, request.budget.deadline);
}

/// No replay after side effects: only a failed or canceled execution that touched
/// nothing is continued under its id; the others are refused and left as they were.
pub async fn a_finished_execution_is_not_run_again(journal: &Journal) {
    let none = r#"{"code":"agent.canceled","side_effects":"none"}"#;
    let possible = r#"{"code":"agent.canceled","side_effects":"possible"}"#;
    for (id, outcome, error_json, allowed) in [
        ("again-ok", State::Succeeded, None, false),
        ("again-unknown", State::Unknown, Some(possible), false),
        ("again-unknown-bare", State::Unknown, None, false),
        ("again-failed-effects", State::Failed, Some(possible), false),
        (
            "again-canceled-effects",
            State::Canceled,
            Some(possible),
            false,
        ),
        ("again-canceled-clean", State::Canceled, Some(none), true),
        ("again-failed-clean", State::Failed, Some(none), true),
    ] {
        begin(journal, id, "command").await;
        let end = End {
            outcome,
            error_json,
            error_code: error_json.map(|_| "agent.canceled"),
            usage: Usage::default(),
            cancel_requested: false,
        };
        journal.finish_attempt(id, 1, &end).await.unwrap();
        journal.finish_execution(id, &end).await.unwrap();
        let before = journal.show(id).await.unwrap().unwrap().transitions.len();
        let again = journal.start_execution(&start(id, "command")).await;
        let record = journal.show(id).await.unwrap().unwrap();
        if allowed {
            assert_eq!(again.unwrap().attempts, 1, "{id}");
            assert_eq!(record.summary.state, State::Running, "{id}");
            continue;
        }
        match again {
            Err(JournalError::Finished {
                execution_id,
                outcome: shown,
                side_effects,
            }) => {
                assert_eq!(execution_id, id);
                assert_eq!(shown, outcome.as_str(), "{id}");
                let expected = if outcome == State::Succeeded {
                    "none"
                } else {
                    "possible"
                };
                assert_eq!(side_effects, expected, "{id}");
            }
            other => panic!("{id}: expected a refusal, got {other:?}"),
        }
        assert_eq!(record.summary.state, outcome, "{id}: left as it was");
        assert_eq!(record.transitions.len(), before, "{id}: nothing recorded");
    }
}

pub async fn a_live_owner_is_left_alone(location: &JournalLocation) {
    let (first, _) = Journal::open(location).await.unwrap();
    begin(&first, "live-1", "command").await;
    // A second open from a live process (this one) must not touch the running attempt.
    let (second, recovered) = Journal::open(location).await.unwrap();
    assert!(recovered.iter().all(|r| r.execution_id != "live-1"));
    assert_eq!(
        second.show("live-1").await.unwrap().unwrap().summary.state,
        State::Running
    );
    let busy = second.start_execution(&start("live-1", "command")).await;
    assert!(matches!(busy, Err(JournalError::Busy { .. })), "{busy:?}");
}

/// Starts the test binary as a child runner that opens `location`, starts an attempt of
/// `execution_id`, optionally requests a cancel, says so and then blocks forever.
pub fn spawn_runner(test_name: &str, location: &str, execution_id: &str, cancel: bool) -> Child {
    spawn_runner_with_session(test_name, location, execution_id, cancel, "")
}

/// [`spawn_runner`], whose attempt also reports `session` (when not empty) before it
/// says it started.
pub fn spawn_runner_with_session(
    test_name: &str,
    location: &str,
    execution_id: &str,
    cancel: bool,
    session: &str,
) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
        .env(
            CHILD_ENV,
            format!("{location}\n{execution_id}\n{cancel}\n{session}"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .expect("child runner exited before starting")
            .unwrap();
        if line.contains("RUNNER-STARTED") {
            break;
        }
    }
    child
}

/// The child side of [`spawn_runner`]; returns immediately when not a child.
pub async fn run_as_child_if_asked() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.split('\n');
    let location = JournalLocation::parse(parts.next().unwrap());
    let id = parts.next().unwrap().to_owned();
    let cancel = parts.next() == Some("true");
    let session = parts.next().filter(|s| !s.is_empty()).map(str::to_owned);
    let (journal, _) = Journal::open(&location).await.unwrap();
    let attempt = begin(&journal, &id, "command").await;
    if let Some(session) = session {
        journal
            .record_session(&id, attempt, &session)
            .await
            .unwrap();
    }
    if cancel {
        journal
            .transition(&id, attempt, State::Canceling, None)
            .await
            .unwrap();
    }
    println!("RUNNER-STARTED");
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    }
}

pub async fn a_killed_runner_leaves_unknown(
    test_name: &str,
    location: &JournalLocation,
    raw: &str,
) {
    let mut plain = spawn_runner(test_name, raw, "killed-1", false);
    let mut canceling = spawn_runner(test_name, raw, "killed-2", true);
    {
        let (journal, _) = Journal::open(location).await.unwrap();
        assert_eq!(
            journal
                .show("killed-1")
                .await
                .unwrap()
                .unwrap()
                .summary
                .state,
            State::Running,
            "a running child's execution must stay running"
        );
    }
    plain.kill().unwrap(); // SIGKILL: no destructor, no last write
    canceling.kill().unwrap();
    plain.wait().unwrap();
    canceling.wait().unwrap();

    let (journal, recovered) = Journal::open(location).await.unwrap();
    let mut ids: Vec<_> = recovered.iter().map(|r| r.execution_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["killed-1", "killed-2"]);
    let one = journal.show("killed-1").await.unwrap().unwrap();
    assert_eq!(one.summary.state, State::Unknown);
    assert_eq!(one.attempts[0].state, State::Unknown);
    assert_eq!(
        one.summary.error_code.as_deref(),
        Some("agent.unknown_outcome")
    );
    assert_eq!(one.error.as_ref().unwrap()["side_effects"], "possible");
    let last = one.transitions.last().unwrap();
    assert_eq!((last.from, last.to), (Some(State::Running), State::Unknown));
    assert!(
        last.note.as_deref().unwrap().contains("has exited"),
        "{last:?}"
    );
    let two = journal.show("killed-2").await.unwrap().unwrap();
    assert_eq!(two.summary.state, State::Unknown);
    assert!(
        two.summary.cancel_requested,
        "cancel_requested must survive recovery"
    );

    // Recovery is idempotent; an unknown outcome is not run again under its id.
    let (journal, again) = Journal::open(location).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    let refused = journal.start_execution(&start("killed-1", "command")).await;
    assert!(
        matches!(&refused, Err(JournalError::Finished { side_effects, .. }) if side_effects == "possible"),
        "{refused:?}"
    );
}

/// A request as the runtime journals it (the hook writes the contract's Go JSON).
fn hook_request(id: &str) -> ContractRequest {
    ContractRequest {
        execution_id: id.into(),
        prompt: "the original task".into(),
        workspace: agent_exec_contract::WorkspaceHandle {
            root: "/tmp".into(),
            writable: Vec::new(),
        },
        budget: ContractBudget {
            max_prompt_tokens: 1000,
            deadline: Some(
                time::OffsetDateTime::now_utc()
                    .replace_nanosecond(0)
                    .unwrap()
                    + time::Duration::hours(1),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Through the hook, as the runtime does: execution + attempt 1 on `backend`,
/// optionally reporting `session`, ended with `result` (`None`: left running).
async fn hook_attempt(
    journal: &Journal,
    id: &str,
    backend: &str,
    session: Option<&str>,
    result: Option<&ContractResult>,
) -> ContractRequest {
    let hook: &dyn JournalHook = journal;
    let now = time::OffsetDateTime::now_utc();
    let request = hook_request(id);
    hook.execution_started(backend, &request, now)
        .await
        .unwrap();
    hook.attempt_started(id, 1, backend, now).await.unwrap();
    if let Some(session) = session {
        hook.session_reported(id, 1, session, now).await.unwrap();
    }
    if let Some(result) = result {
        hook.attempt_finished(id, 1, result, now).await.unwrap();
        hook.execution_finished(id, result, now).await.unwrap();
    }
    request
}

fn unknown_result() -> ContractResult {
    let mut result = ContractResult::with_error(
        Outcome::Unknown,
        Error::new(
            ErrorCode::UnknownOutcome,
            "stream cut",
            SideEffects::Possible,
        ),
    );
    result.usage.prompt_tokens = 40;
    result
}

/// Session handles are kept per attempt (the last report counts, only while the
/// attempt runs, only ids), and a resume claims the execution: the request back as
/// it was journaled, the prior attempts, usage and deadline, a transition saying
/// where it resumed from, and this process as the owner.
pub async fn sessions_are_journaled_and_resume_claims(journal: &Journal) {
    let hook: &dyn JournalHook = journal;
    let now = time::OffsetDateTime::now_utc();
    let request = hook_attempt(journal, "sess-1", "codex", Some("thread-a"), None).await;
    hook.session_reported("sess-1", 1, "thread-b", now)
        .await
        .unwrap();
    let bad = hook.session_reported("sess-1", 1, "../etc", now).await;
    assert!(bad.is_err(), "a handle that is no id is refused: {bad:?}");
    let missing = journal.record_session("sess-1", 9, "thread-c").await;
    assert!(
        matches!(missing, Err(JournalError::NoSuchAttempt { .. })),
        "{missing:?}"
    );
    let result = unknown_result();
    hook.attempt_finished("sess-1", 1, &result, now)
        .await
        .unwrap();
    hook.execution_finished("sess-1", &result, now)
        .await
        .unwrap();
    let late = journal.record_session("sess-1", 1, "thread-late").await;
    assert!(
        matches!(late, Err(JournalError::AlreadyTerminal { .. })),
        "a settled attempt keeps its handle: {late:?}"
    );
    let record = journal.show("sess-1").await.unwrap().unwrap();
    assert_eq!(
        record.attempts[0].session_handle.as_deref(),
        Some("thread-b"),
        "the last report counts"
    );
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(json["attempts"][0]["session_handle"], "thread-b");

    // Read only: what a resume would continue, nothing changed.
    let before = journal.show("sess-1").await.unwrap().unwrap();
    let candidate = journal.resumable("sess-1").await.unwrap();
    assert_eq!(
        (candidate.backend.as_str(), candidate.session.as_str()),
        ("codex", "thread-b")
    );
    assert_eq!(journal.show("sess-1").await.unwrap().unwrap(), before);

    let point = hook
        .execution_resumed("sess-1", "codex", now)
        .await
        .unwrap();
    assert_eq!(point.request, request, "the journaled request comes back");
    assert_eq!(point.backend, "codex");
    assert_eq!(
        (point.session.as_str(), point.session_attempt),
        ("thread-b", 1)
    );
    assert_eq!(point.prior.attempts, 1);
    assert_eq!(point.prior.usage.prompt_tokens, 40);
    assert_eq!(point.prior.deadline, request.budget.deadline);
    let record = journal.show("sess-1").await.unwrap().unwrap();
    assert_eq!(record.summary.state, State::Running);
    assert_eq!(record.summary.error_code, None);
    assert_eq!(record.owner.pid, std::process::id());
    let last = record.transitions.last().unwrap();
    assert_eq!(
        (last.attempt, last.from, last.to, last.note.as_deref()),
        (
            1,
            Some(State::Unknown),
            State::Running,
            Some("execution resumed from attempt 1's session")
        )
    );
    // Claimed by a live process (this one): a second resume is busy.
    let busy = hook.execution_resumed("sess-1", "codex", now).await;
    assert!(busy.unwrap_err().to_string().contains("still running"));
    // The resumed attempt is the next one, and keeps its own handle.
    hook.attempt_started("sess-1", 2, "codex", now)
        .await
        .unwrap();
    hook.session_reported("sess-1", 2, "thread-b", now)
        .await
        .unwrap();
    let ok = ContractResult::succeeded("done");
    hook.attempt_finished("sess-1", 2, &ok, now).await.unwrap();
    hook.execution_finished("sess-1", &ok, now).await.unwrap();
    let record = journal.show("sess-1").await.unwrap().unwrap();
    assert_eq!(record.summary.state, State::Succeeded);
    assert_eq!(record.summary.attempts, 2);
    let handles: Vec<_> = record
        .attempts
        .iter()
        .map(|a| a.session_handle.as_deref())
        .collect();
    assert_eq!(handles, [Some("thread-b"), Some("thread-b")]);
}

/// Every refusal of a resume names the execution and leaves it as it was.
pub async fn resume_refusals(journal: &Journal) {
    let hook: &dyn JournalHook = journal;
    let now = time::OffsetDateTime::now_utc();
    hook_attempt(
        journal,
        "ref-ok",
        "codex",
        Some("thread-ok"),
        Some(&ContractResult::succeeded("done")),
    )
    .await;
    hook_attempt(journal, "ref-none", "codex", None, Some(&unknown_result())).await;
    hook_attempt(journal, "ref-live", "codex", Some("thread-live"), None).await;
    hook_attempt(
        journal,
        "ref-other",
        "codex",
        Some("thread-o"),
        Some(&unknown_result()),
    )
    .await;
    for (id, backend, expected) in [
        ("ref-ok", "codex", "already succeeded"),
        (
            "ref-none",
            "codex",
            "has no session handle journaled for backend codex",
        ),
        ("ref-live", "codex", "is still running in pid"),
        (
            "ref-other",
            "claude-code",
            "ran on backend codex, not claude-code",
        ),
        ("ref-missing", "codex", "is not in the journal"),
    ] {
        let before = journal.show(id).await.unwrap();
        let refused = hook.execution_resumed(id, backend, now).await;
        let message = refused.unwrap_err().to_string();
        assert!(
            message.contains(expected) && message.contains(id),
            "{id}: {message}"
        );
        assert_eq!(
            journal.show(id).await.unwrap(),
            before,
            "{id}: left as it was"
        );
        if backend == "codex" {
            let early = journal.resumable(id).await.unwrap_err().to_string();
            assert!(early.contains(expected), "{id}: read-only check: {early}");
        }
    }
    let typed = journal.resumable("ref-ok").await;
    assert!(
        matches!(typed, Err(JournalError::AlreadySucceeded { .. })),
        "{typed:?}"
    );
    let typed = journal.resumable("ref-none").await;
    assert!(
        matches!(typed, Err(JournalError::NoSessionHandle { .. })),
        "{typed:?}"
    );
}

/// A runner killed with SIGKILL right after its backend reported a handle leaves
/// the handle behind; a resume from a journal opened while the runner was alive
/// (so recovery on open did not see it die) marks it `unknown` first, then claims it.
pub async fn a_killed_runner_can_be_resumed(
    test_name: &str,
    location: &JournalLocation,
    raw: &str,
) {
    let mut child = spawn_runner_with_session(test_name, raw, "killed-res", false, "thread-k");
    let (journal, _) = Journal::open(location).await.unwrap();
    let alive = journal.resumable("killed-res").await;
    assert!(
        matches!(alive, Err(JournalError::Busy { .. })),
        "a live runner's execution is busy: {alive:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let record = journal.show("killed-res").await.unwrap().unwrap();
    assert_eq!(
        record.summary.state,
        State::Running,
        "nobody recovered it yet"
    );
    assert_eq!(
        record.attempts[0].session_handle.as_deref(),
        Some("thread-k"),
        "the handle survived the SIGKILL"
    );
    let hook: &dyn JournalHook = &journal;
    let point = hook
        .execution_resumed("killed-res", "command", time::OffsetDateTime::now_utc())
        .await
        .unwrap();
    assert_eq!(point.session, "thread-k");
    let record = journal.show("killed-res").await.unwrap().unwrap();
    let path: Vec<_> = record
        .transitions
        .iter()
        .rev()
        .take(2)
        .map(|t| (t.from, t.to))
        .collect();
    assert_eq!(
        path,
        [
            (Some(State::Unknown), State::Running),
            (Some(State::Running), State::Unknown)
        ],
        "marked unknown first, then resumed"
    );
    assert_eq!(record.attempts[0].state, State::Unknown);
    assert_eq!(record.summary.state, State::Running);
}

/// Runs `id` through the hook to its end with `result`, as the runtime does.
async fn run_to_end(journal: &Journal, id: &str, result: &ContractResult) {
    let hook: &dyn JournalHook = journal;
    let now = time::OffsetDateTime::now_utc();
    let request = ContractRequest {
        execution_id: id.into(),
        prompt: "p".into(),
        ..Default::default()
    };
    hook.execution_started("command", &request, now)
        .await
        .unwrap();
    hook.attempt_started(id, 1, "command", now).await.unwrap();
    hook.attempt_finished(id, 1, result, now).await.unwrap();
    hook.execution_finished(id, result, now).await.unwrap();
}

/// Starts `id` and its first attempt (for a store test that then edits the row).
pub async fn begin_running(journal: &Journal, id: &str) {
    begin(journal, id, "command").await;
}

pub async fn results_are_kept_byte_for_byte(journal: &Journal) {
    let mut result = ContractResult::with_error(
        Outcome::Failed,
        Error::new(ErrorCode::ProviderRejected, "exit 3", SideEffects::None),
    );
    result.execution_id = "kept-1".into();
    result.text = "partial answer\n".into();
    result.files.insert("out/a.txt".into(), b"hello".to_vec());
    result.logs = "the program's stderr tail\n".into();
    result.usage.prompt_tokens = 7;
    run_to_end(journal, "kept-1", &result).await;
    let record = journal.show("kept-1").await.unwrap().unwrap();
    assert_eq!(
        record.result_text.as_deref(),
        Some(serde_json::to_string(&result).unwrap().as_str()),
        "the result JSON exactly as the caller got it"
    );
    let json = record.result.as_ref().unwrap();
    assert_eq!(json["files"]["out/a.txt"], "aGVsbG8=");
    assert_eq!(json["logs"], "the program's stderr tail\n");
    assert_eq!(record.result_note, None);

    // Deliverables over the cap: those that fit are kept, the rest named.
    let mut big = ContractResult::succeeded("done");
    big.files.insert("a.small".into(), vec![1; 10]);
    big.files.insert("b.huge".into(), vec![2; KEPT_FILES_CAP]);
    run_to_end(journal, "kept-2", &big).await;
    let record = journal.show("kept-2").await.unwrap().unwrap();
    let kept: ContractResult =
        serde_json::from_str(record.result_text.as_deref().unwrap()).unwrap();
    assert_eq!(kept.files.keys().collect::<Vec<_>>(), ["a.small"]);
    assert_eq!(kept.text, "done");
    let note = record.result_note.unwrap();
    assert!(
        note.contains(&format!("b.huge ({KEPT_FILES_CAP} bytes)")),
        "{note}"
    );

    // The streamed output's tail, bounded.
    let output = "x".repeat(OUTPUT_TAIL_CAP) + "the end";
    journal.record_output_tail("kept-2", &output).await.unwrap();
    let tail = journal
        .show("kept-2")
        .await
        .unwrap()
        .unwrap()
        .output_tail
        .unwrap();
    assert_eq!(tail.len(), OUTPUT_TAIL_CAP);
    assert!(tail.ends_with("the end"));

    // A step retry runs without the old result until it ends with its own.
    journal
        .start_execution(&start("kept-1", "command"))
        .await
        .unwrap();
    let record = journal.show("kept-1").await.unwrap().unwrap();
    assert_eq!(record.result_text, None);
    assert_eq!(record.result, None);
}

pub async fn prune_deletes_only_ended_executions(journal: &Journal) {
    run_to_end(journal, "old-done", &ContractResult::succeeded("x")).await;
    begin(journal, "still-running", "command").await;
    let now = time::OffsetDateTime::now_utc();
    assert_eq!(
        journal
            .prune_ended_before(now - time::Duration::hours(1))
            .await
            .unwrap(),
        0,
        "nothing ended that long ago"
    );
    let ended = journal
        .list(1000)
        .await
        .unwrap()
        .iter()
        .filter(|s| s.state.is_terminal())
        .count() as u64;
    assert!(ended >= 1);
    assert_eq!(
        journal
            .prune_ended_before(now + time::Duration::hours(1))
            .await
            .unwrap(),
        ended
    );
    assert!(journal.show("old-done").await.unwrap().is_none());
    assert_eq!(
        journal
            .show("still-running")
            .await
            .unwrap()
            .unwrap()
            .summary
            .state,
        State::Running,
        "a running execution is never pruned"
    );
    // Its attempts and transitions went with it: the id starts afresh.
    assert_eq!(begin(journal, "old-done", "command").await, 1);
    let record = journal.show("old-done").await.unwrap().unwrap();
    assert_eq!(record.transitions.len(), 2);
}

pub async fn cancel_requests_reach_the_runner(journal: &Journal) {
    begin(journal, "cancel-me", "command").await;
    assert_eq!(journal.cancel_request("cancel-me").await.unwrap(), None);
    let asked = journal.request_cancel("cancel-me", "a test").await.unwrap();
    assert!(
        matches!(&asked, CancelAsk::Recorded { owner } if owner.pid == std::process::id()),
        "{asked:?}"
    );
    let seen = journal.cancel_request("cancel-me").await.unwrap().unwrap();
    assert!(seen.starts_with("cancel requested by a test at "), "{seen}");
    // A second request keeps the first one's words.
    journal
        .request_cancel("cancel-me", "someone else")
        .await
        .unwrap();
    assert_eq!(
        journal
            .cancel_request("cancel-me")
            .await
            .unwrap()
            .as_deref(),
        Some(seen.as_str())
    );
    let record = journal.show("cancel-me").await.unwrap().unwrap();
    assert_eq!(record.cancel_request.as_deref(), Some(seen.as_str()));
    assert!(
        record
            .transitions
            .iter()
            .any(|t| t.note.as_deref() == Some(seen.as_str()))
    );
    // Once it ended there is nothing to cancel, and no request is seen.
    journal
        .finish_attempt("cancel-me", 1, &end(State::Canceled, None, (0, 0)))
        .await
        .unwrap();
    journal
        .finish_execution("cancel-me", &end(State::Canceled, None, (0, 0)))
        .await
        .unwrap();
    assert_eq!(
        journal.request_cancel("cancel-me", "late").await.unwrap(),
        CancelAsk::AlreadyEnded(State::Canceled)
    );
    assert_eq!(journal.cancel_request("cancel-me").await.unwrap(), None);
    assert!(matches!(
        journal.request_cancel("nobody", "t").await,
        Err(JournalError::NoSuchExecution(_))
    ));
}

/// After the store test set execution `bad-owner`'s owner pid to -1: the journal
/// opens, everything else works, and only that row's own operations are refused.
pub async fn a_bad_owner_row_is_that_rows_problem(location: &JournalLocation) {
    let (journal, recovered) = Journal::open(location).await.unwrap();
    assert!(recovered.is_empty(), "nothing guessed: {recovered:?}");
    assert!(journal.recover().await.unwrap().is_empty());
    let attempt = begin(&journal, "good-1", "command").await;
    journal
        .finish_attempt("good-1", attempt, &end(State::Succeeded, None, (1, 1)))
        .await
        .unwrap();
    journal
        .finish_execution("good-1", &end(State::Succeeded, None, (0, 0)))
        .await
        .unwrap();
    let listed: Vec<_> = journal
        .list(10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.execution_id, s.state))
        .collect();
    assert!(listed.contains(&("bad-owner".into(), State::Running)));
    assert!(listed.contains(&("good-1".into(), State::Succeeded)));
    let bad = journal.show("bad-owner").await.unwrap().unwrap();
    assert_eq!(bad.summary.state, State::Running, "left as it is");
    assert_eq!(bad.owner.pid, 0, "shown as no pid");
    let err = journal
        .start_execution(&start("bad-owner", "command"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("owner_pid -1 is not a process id"),
        "{err}"
    );
}
