//! Scenarios every journal store must pass, run against SQLite and PostgreSQL alike.
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use agent_exec_journal::{
    AttemptEnd, AttemptStart, Journal, JournalError, JournalLocation, State, Usage,
};

/// The env var that turns the test binary into a child "runner" (see [`spawn_runner`]).
pub const CHILD_ENV: &str = "AGENT_EXEC_JOURNAL_TEST_CHILD";

fn start<'a>(id: &'a str, backend: &'a str) -> AttemptStart<'a> {
    AttemptStart {
        execution_id: id,
        backend,
        request_json: Some(r#"{"execution_id":"x","prompt":"hello"}"#),
    }
}

fn end(outcome: State, code: Option<&'static str>, usage: (u64, u64)) -> AttemptEnd<'static> {
    AttemptEnd {
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
    let attempt = journal
        .start_attempt(&start("life-1", "command"))
        .await
        .unwrap();
    assert_eq!(attempt, 1);
    journal
        .transition("life-1", 1, State::CancelRequested, Some("ctrl-c"))
        .await
        .unwrap();
    journal
        .finish_attempt("life-1", 1, &end(State::Canceled, None, (3, 4)))
        .await
        .unwrap();

    let record = journal.show("life-1").await.unwrap().expect("recorded");
    assert_eq!(record.summary.state, State::Canceled);
    assert!(record.summary.cancel_requested);
    assert_eq!(record.summary.usage.prompt_tokens, 3);
    assert_eq!(record.summary.usage.completion_tokens, 4);
    let path: Vec<_> = record.transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        path,
        vec![
            (None, State::Running),
            (Some(State::Running), State::CancelRequested),
            (Some(State::CancelRequested), State::Canceled),
        ]
    );
    assert_eq!(record.transitions[1].note.as_deref(), Some("ctrl-c"));
    assert_eq!(record.request.unwrap()["prompt"], "hello");
    assert_eq!(record.attempts.len(), 1);
    assert_eq!(record.attempts[0].owner.pid, std::process::id());
    assert!(journal.show("nope").await.unwrap().is_none());
}

pub async fn retries_reuse_the_id_and_sum_usage(journal: &Journal) {
    journal
        .start_attempt(&start("retry-1", "openai"))
        .await
        .unwrap();
    journal
        .finish_attempt(
            "retry-1",
            1,
            &end(State::Failed, Some("agent.provider_unavailable"), (10, 0)),
        )
        .await
        .unwrap();
    let listed = journal.list(10).await.unwrap();
    let row = listed.iter().find(|r| r.execution_id == "retry-1").unwrap();
    assert_eq!(
        row.error_code.as_deref(),
        Some("agent.provider_unavailable")
    );

    let second = journal
        .start_attempt(&start("retry-1", "command"))
        .await
        .unwrap();
    assert_eq!(second, 2);
    journal
        .finish_attempt("retry-1", 2, &end(State::Succeeded, None, (5, 7)))
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
    journal
        .start_attempt(&start("term-1", "command"))
        .await
        .unwrap();
    journal
        .finish_attempt("term-1", 1, &end(State::Succeeded, None, (0, 0)))
        .await
        .unwrap();
    let again = journal
        .finish_attempt("term-1", 1, &end(State::Failed, None, (0, 0)))
        .await;
    assert!(
        matches!(again, Err(JournalError::AlreadyTerminal { .. })),
        "{again:?}"
    );
    let late = journal
        .transition("term-1", 1, State::CancelRequested, None)
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
        .transition("term-1", 9, State::CancelRequested, None)
        .await;
    assert!(matches!(missing, Err(JournalError::NoSuchAttempt { .. })));
    assert_eq!(
        journal.show("term-1").await.unwrap().unwrap().summary.state,
        State::Succeeded
    );
}

pub async fn a_live_owner_is_left_alone(location: &JournalLocation) {
    let (first, _) = Journal::open(location).await.unwrap();
    first
        .start_attempt(&start("live-1", "command"))
        .await
        .unwrap();
    // A second open from a live process (this one) must not touch the running attempt.
    let (second, recovered) = Journal::open(location).await.unwrap();
    assert!(recovered.iter().all(|r| r.execution_id != "live-1"));
    assert_eq!(
        second.show("live-1").await.unwrap().unwrap().summary.state,
        State::Running
    );
    let busy = second.start_attempt(&start("live-1", "command")).await;
    assert!(matches!(busy, Err(JournalError::Busy { .. })), "{busy:?}");
}

/// Starts the test binary as a child runner that opens `location`, starts an attempt of
/// `execution_id`, optionally requests a cancel, says "started" and then blocks forever.
pub fn spawn_runner(test_name: &str, location: &str, execution_id: &str, cancel: bool) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{location}\n{execution_id}\n{cancel}"))
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
    let (journal, _) = Journal::open(&location).await.unwrap();
    let attempt = journal.start_attempt(&start(&id, "command")).await.unwrap();
    if cancel {
        journal
            .transition(&id, attempt, State::CancelRequested, None)
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
            "a running child's attempt must stay running"
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

    // Recovery is idempotent, and the execution can be retried under the same id.
    let (journal, again) = Journal::open(location).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(
        journal
            .start_attempt(&start("killed-1", "command"))
            .await
            .unwrap(),
        2
    );
}
