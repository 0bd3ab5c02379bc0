//! # agent-exec-conformance
//!
//! The conformance suite: the contract's seven invariants — and the two extensions,
//! structured output and resume — as tests that any backend runs through the runtime.
//! A test-only crate (a dev-dependency, never a dependency of production code): it
//! asserts and panics, and brings `tempfile` with it.
//!
//! A backend's test crate implements [`Harness`] — "give me a backend that behaves
//! like this [`Scenario`]" (a script for `command`, a scripted server for `openai`)
//! — and expands [`conformance_tests!`](crate::conformance_tests), which generates one
//! `#[tokio::test]` per invariant:
//!
//! ```ignore
//! agent_exec_conformance::conformance_tests!(MyHarness::new());
//! ```
//!
//! Each check runs real executions through [`Runtime::run`] with an in-memory
//! [`RecordingJournal`], in a fresh workspace, and panics with a message naming the
//! invariant when the backend (or the runtime around it) breaks it. Checks that need
//! files run only for a backend that declares `files`; everything else runs for all.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_exec_contract::{
    AttemptState, Backend, CANCEL_REQUESTED, CancelCause, Cancellation, Capability,
    ContractRequest, ContractResult, ErrorCode, JournalError, JournalHook, Message, Outcome,
    PriorAttempts, Registry, Resolved, ResumePoint, SessionScope, SideEffects, Usage,
    WorkspaceHandle,
};
use async_trait::async_trait;
use time::OffsetDateTime;

use agent_exec_runtime::executor::{ResumeOptions, RunOptions, Runtime};

/// How a backend under test must behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Succeeds; its text contains the prompt.
    Echo,
    /// Succeeds with no text at all.
    Silent,
    /// Fails cleanly (non-zero exit, HTTP 4xx, ...) without touching the workspace.
    Fail,
    /// Dies without a final result (killed by a signal, stream cut mid-way).
    Crash,
    /// Runs until canceled (and, where it can, starts child processes).
    Hang,
    /// Writes the prompt into every target, then succeeds. Files backends only.
    WriteTarget,
    /// Writes a file into the workspace, then fails. Files backends only.
    WriteThenFail,
}

/// What a backend's test crate supplies.
pub trait Harness: Send + Sync {
    /// A backend registered under `name` that behaves like `scenario`.
    fn backend(&self, name: &str, scenario: Scenario) -> Arc<dyn Backend>;
    /// Execution ids of every agent invocation so far, in order (`None` if the
    /// backend cannot be observed that way).
    fn invocations(&self) -> Option<Vec<String>>;
    /// Processes still alive that belong to `execution_id` (`None` if not
    /// observable, e.g. a backend that starts no process).
    fn leftover_processes(&self, execution_id: &str) -> Option<usize>;
}

/// An in-memory [`JournalHook`] that records every call. It is the port's reference
/// implementation for tests; a durable journal lives in `agent-exec-journal`.
#[derive(Debug, Default)]
pub struct RecordingJournal {
    /// What a fresh `execution_started` returns (to simulate earlier attempts).
    pub prior: Mutex<PriorAttempts>,
    /// `(execution_id, attempt, backend)` per `attempt_started`.
    pub attempts: Mutex<Vec<(String, u32, String)>>,
    /// `(execution_id, attempt, state)` per transition, terminal states included.
    pub states: Mutex<Vec<(String, u32, AttemptState)>>,
    /// `(execution_id, attempt, state, note)` per non-terminal `transition`.
    pub notes: Mutex<Vec<(String, u32, AttemptState, String)>>,
    /// Final results per `execution_finished`.
    pub finished: Mutex<Vec<(String, ContractResult)>>,
    /// `(execution_id, attempt, handle)` per `session_reported`.
    pub sessions: Mutex<Vec<(String, u32, String)>>,
    /// What `execution_resumed` hands back (`None`: it refuses, as a journal without
    /// that execution would).
    pub resume_point: Mutex<Option<ResumePoint>>,
    /// `(execution_id, backend)` per `execution_resumed` call, refused or not.
    pub resumed: Mutex<Vec<(String, String)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RecordingJournal {
    /// Attempts recorded so far.
    pub fn attempts(&self) -> Vec<(String, u32, String)> {
        lock(&self.attempts).clone()
    }
    /// Transitions recorded so far.
    pub fn states(&self) -> Vec<(String, u32, AttemptState)> {
        lock(&self.states).clone()
    }
    /// States recorded for `execution_id`, in order, terminal states included.
    pub fn states_of(&self, execution_id: &str) -> Vec<AttemptState> {
        lock(&self.states)
            .iter()
            .filter(|(id, _, _)| id == execution_id)
            .map(|(_, _, state)| *state)
            .collect()
    }
    /// Non-terminal transitions with their notes.
    pub fn notes(&self) -> Vec<(String, u32, AttemptState, String)> {
        lock(&self.notes).clone()
    }
    /// Session handles reported so far.
    pub fn sessions(&self) -> Vec<(String, u32, String)> {
        lock(&self.sessions).clone()
    }
    /// `execution_resumed` calls so far.
    pub fn resumed(&self) -> Vec<(String, String)> {
        lock(&self.resumed).clone()
    }
}

#[async_trait]
impl JournalHook for RecordingJournal {
    async fn execution_started(
        &self,
        _backend: &str,
        _request: &ContractRequest,
        _at: OffsetDateTime,
    ) -> Result<PriorAttempts, JournalError> {
        Ok(lock(&self.prior).clone())
    }
    async fn attempt_started(
        &self,
        execution_id: &str,
        attempt: u32,
        backend: &str,
        _at: OffsetDateTime,
    ) -> Result<(), JournalError> {
        lock(&self.attempts).push((execution_id.into(), attempt, backend.into()));
        Ok(())
    }
    async fn transition(
        &self,
        execution_id: &str,
        attempt: u32,
        state: AttemptState,
        note: &str,
        _at: OffsetDateTime,
    ) -> Result<(), JournalError> {
        lock(&self.states).push((execution_id.into(), attempt, state));
        lock(&self.notes).push((execution_id.into(), attempt, state, note.into()));
        Ok(())
    }
    async fn attempt_finished(
        &self,
        execution_id: &str,
        attempt: u32,
        result: &ContractResult,
        _at: OffsetDateTime,
    ) -> Result<(), JournalError> {
        let state = match result.outcome.effective() {
            Outcome::Succeeded => AttemptState::Succeeded,
            Outcome::Failed => AttemptState::Failed,
            Outcome::Canceled => AttemptState::Canceled,
            _ => AttemptState::Unknown,
        };
        lock(&self.states).push((execution_id.into(), attempt, state));
        Ok(())
    }
    async fn execution_finished(
        &self,
        execution_id: &str,
        result: &ContractResult,
        _at: OffsetDateTime,
    ) -> Result<(), JournalError> {
        lock(&self.finished).push((execution_id.into(), result.clone()));
        Ok(())
    }
    async fn session_reported(
        &self,
        execution_id: &str,
        attempt: u32,
        session: &str,
        _at: OffsetDateTime,
    ) -> Result<(), JournalError> {
        lock(&self.sessions).push((execution_id.into(), attempt, session.into()));
        Ok(())
    }
    async fn execution_resumed(
        &self,
        execution_id: &str,
        backend: &str,
        _at: OffsetDateTime,
    ) -> Result<ResumePoint, JournalError> {
        lock(&self.resumed).push((execution_id.into(), backend.into()));
        match lock(&self.resume_point).clone() {
            Some(point) if point.backend == backend => Ok(point),
            Some(point) => Err(JournalError(format!(
                "execution {execution_id:?} ran on backend `{}`, not `{backend}`",
                point.backend
            ))),
            None => Err(JournalError(format!(
                "execution {execution_id:?} is not in the journal"
            ))),
        }
    }
}

/// A workspace for one check, removed when dropped.
pub struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// A fresh, empty workspace.
    pub fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temp dir: {e}")),
        }
    }
    /// Its root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
    /// A request for `prompt` in this workspace.
    pub fn request(&self, execution_id: &str, prompt: &str) -> ContractRequest {
        ContractRequest {
            execution_id: execution_id.into(),
            prompt: prompt.into(),
            workspace: WorkspaceHandle {
                root: self.root().display().to_string(),
                writable: Vec::new(),
            },
            ..Default::default()
        }
    }
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

async fn resolve(h: &dyn Harness, name: &str, scenario: Scenario) -> Resolved {
    let mut registry = Registry::new();
    registry
        .register(h.backend(name, scenario))
        .unwrap_or_else(|e| panic!("register {name}: {e}"));
    registry
        .resolve(name, &[])
        .await
        .unwrap_or_else(|e| panic!("resolve {name}: {e}"))
}

fn declares(resolved: &Resolved, capability: &Capability) -> bool {
    resolved.backend.descriptor().has(capability)
}

/// An execution id no other run of any suite has: the process, the clock and a count,
/// because several backends' suites may share one test process and leftovers are
/// counted by id.
fn unique_id(tag: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "conf-{tag}-{}-{}-{}",
        std::process::id(),
        OffsetDateTime::now_utc().unix_timestamp_nanos(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn count_of(h: &dyn Harness, id: &str) -> Option<usize> {
    h.invocations()
        .map(|ids| ids.iter().filter(|seen| *seen == id).count())
}

/// Invariant 1: step retries reuse the execution id and share one deadline and one
/// budget — including with attempts an earlier process left in the journal.
pub async fn invariant_1_execution_id_budget_deadline_shared(h: &dyn Harness) {
    let ws = Workspace::new();
    let failing = resolve(h, "conf-fail", Scenario::Fail).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let id = unique_id("inv1");
    let mut request = ws.request(&id, "retry me");
    request.budget.deadline = Some(OffsetDateTime::now_utc() + time::Duration::minutes(5));
    let options = RunOptions {
        step_retries: 2,
        ..Default::default()
    };
    let result = runtime.run(request.clone(), &failing, options).await;
    assert_eq!(result.outcome, Outcome::Failed, "inv 1: {result:?}");
    let attempts = journal.attempts();
    assert_eq!(
        attempts,
        (1..=3)
            .map(|n| (id.clone(), n, "conf-fail".to_owned()))
            .collect::<Vec<_>>(),
        "inv 1: three attempts under one id, numbered 1..3"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(
            n, 3,
            "inv 1: the backend saw the same execution id on each attempt"
        );
    }

    // A step retry in a later process: the journal says an earlier attempt set a
    // deadline that has passed. The new, later deadline must not extend it.
    *lock(&journal.prior) = PriorAttempts {
        attempts: 3,
        usage: Usage::default(),
        deadline: Some(OffsetDateTime::now_utc() - time::Duration::seconds(1)),
    };
    let echo = resolve(h, "conf-echo", Scenario::Echo).await;
    let late = runtime
        .run(request.clone(), &echo, RunOptions::default())
        .await;
    let err = late.err.as_ref().expect("inv 1: an error");
    assert_eq!(
        err.code,
        ErrorCode::DeadlineExceeded,
        "inv 1: shared deadline: {late:?}"
    );
    assert_eq!(
        err.side_effects,
        SideEffects::None,
        "inv 1: nothing was dispatched"
    );
    assert_eq!(
        journal.attempts().len(),
        3,
        "inv 1: no attempt after the shared deadline"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(n, 3, "inv 1: no dispatch after the shared deadline");
    }

    // The same retry while the earlier deadline still holds: it runs, numbered 4.
    lock(&journal.prior).deadline = Some(OffsetDateTime::now_utc() + time::Duration::minutes(5));
    let retried = runtime
        .run(request.clone(), &echo, RunOptions::default())
        .await;
    assert_eq!(retried.outcome, Outcome::Succeeded, "inv 1: {retried:?}");
    assert_eq!(
        journal.attempts().last(),
        Some(&(id.clone(), 4, "conf-echo".to_owned())),
        "inv 1: attempt numbering continues under the same id"
    );

    // Shared budget: earlier attempts spent it all.
    *lock(&journal.prior) = PriorAttempts {
        attempts: 5,
        usage: Usage {
            prompt_tokens: 100,
            completion_tokens: 0,
        },
        deadline: None,
    };
    request.budget.deadline = None;
    request.budget.max_prompt_tokens = 100;
    let spent = runtime.run(request, &echo, RunOptions::default()).await;
    assert_eq!(
        spent.err.as_ref().map(|e| e.code.clone()),
        Some(ErrorCode::BudgetExceeded),
        "inv 1: shared budget: {spent:?}"
    );
    assert_eq!(
        spent.usage.prompt_tokens, 100,
        "inv 1: usage is the execution's total"
    );
}

/// Invariant 2: four outcomes; success carries no error, every other outcome one;
/// a crash is unknown with side effects possible, never failed or succeeded.
pub async fn invariant_2_honest_outcomes(h: &dyn Harness) {
    let ws = Workspace::new();
    let runtime = Runtime::new();
    let echo = resolve(h, "conf-echo", Scenario::Echo).await;
    let prompt = "conformance-echo-7f3a";
    let ok = runtime
        .run(
            ws.request(&unique_id("inv2a"), prompt),
            &echo,
            RunOptions::default(),
        )
        .await;
    assert_eq!(ok.outcome, Outcome::Succeeded, "inv 2: {ok:?}");
    assert!(ok.err.is_none(), "inv 2: success carries no error");
    assert!(ok.text.contains(prompt), "inv 2: echo text {:?}", ok.text);
    let wire = serde_json::to_value(&ok).unwrap_or_default();
    let back: ContractResult =
        serde_json::from_value(wire).unwrap_or_else(|e| panic!("inv 2: round trip: {e}"));
    assert_eq!(back, ok, "inv 2: the result survives its own JSON");

    let failing = resolve(h, "conf-fail", Scenario::Fail).await;
    let failed = runtime
        .run(
            ws.request(&unique_id("inv2b"), "x"),
            &failing,
            RunOptions::default(),
        )
        .await;
    assert_eq!(failed.outcome, Outcome::Failed, "inv 2: {failed:?}");
    assert!(failed.err.is_some(), "inv 2: failure carries an error");

    let crashing = resolve(h, "conf-crash", Scenario::Crash).await;
    let crashed = runtime
        .run(
            ws.request(&unique_id("inv2c"), "x"),
            &crashing,
            RunOptions::default(),
        )
        .await;
    assert_eq!(
        crashed.outcome,
        Outcome::Unknown,
        "inv 2: a crash is unknown: {crashed:?}"
    );
    assert_eq!(
        crashed.err.as_ref().map(|e| e.side_effects),
        Some(SideEffects::Possible),
        "inv 2: unknown means side effects possible"
    );
}

/// Invariant 3: the runtime and backend add no retries of their own.
pub async fn invariant_3_one_retry_layer(h: &dyn Harness) {
    let ws = Workspace::new();
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let failing = resolve(h, "conf-fail", Scenario::Fail).await;
    let id = unique_id("inv3");
    let result = runtime
        .run(ws.request(&id, "once"), &failing, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "inv 3: {result:?}");
    assert_eq!(
        journal.attempts().len(),
        1,
        "inv 3: exactly one attempt without step retries"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(n, 1, "inv 3: the backend invoked the agent exactly once");
    }
}

/// Invariant 4: cancel (caller or deadline) reaches every process; the outcome is
/// canceled only when confirmed, else unknown with cancel_requested.
pub async fn invariant_4_cancellation_reaches_everything(h: &dyn Harness) {
    let ws = Workspace::new();
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let hanging = resolve(h, "conf-hang", Scenario::Hang).await;
    let cancel_verified = hanging.verification.verified.contains(&Capability::Cancel);

    for cause in [CancelCause::Caller, CancelCause::Deadline] {
        let id = unique_id("inv4");
        let mut request = ws.request(&id, "hang");
        let cancellation = Cancellation::new();
        if cause == CancelCause::Deadline {
            request.budget.deadline =
                Some(OffsetDateTime::now_utc() + time::Duration::milliseconds(700));
        } else {
            let trigger = cancellation.clone();
            let probe_id = id.clone();
            let seen = move || count_of(h, &probe_id);
            // Cancel once the agent is running (or after a fixed delay if the
            // backend cannot be observed).
            let started = async {
                for _ in 0..500 {
                    if seen().is_none_or(|n| n > 0) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                trigger.cancel(CancelCause::Caller);
            };
            let options = RunOptions {
                cancellation: cancellation.clone(),
                ..Default::default()
            };
            let (result, ()) = tokio::join!(runtime.run(request, &hanging, options), started);
            check_cancel(h, &id, &result, cause, cancel_verified);
            check_cancel_history(&journal, &id, &result);
            continue;
        }
        let options = RunOptions {
            cancellation,
            ..Default::default()
        };
        let result = tokio::time::timeout(
            Duration::from_secs(60),
            runtime.run(request, &hanging, options),
        )
        .await
        .unwrap_or_else(|_| panic!("inv 4: the deadline did not end the run"));
        check_cancel(h, &id, &result, cause, cancel_verified);
        check_cancel_history(&journal, &id, &result);
    }
}

/// The journal saw the cancel of this very execution, between `running` and the
/// terminal state that matches the result — whichever of the cancel and the
/// backend's return the runtime noticed first.
fn check_cancel_history(journal: &RecordingJournal, id: &str, result: &ContractResult) {
    let terminal = match result.outcome {
        Outcome::Canceled => AttemptState::Canceled,
        _ => AttemptState::Unknown,
    };
    assert_eq!(
        journal.states_of(id),
        [AttemptState::Running, AttemptState::Canceling, terminal],
        "inv 4: the journal saw the cancel of {id}: {result:?}"
    );
}

fn check_cancel(
    h: &dyn Harness,
    id: &str,
    result: &ContractResult,
    cause: CancelCause,
    cancel_verified: bool,
) {
    let err = result
        .err
        .as_ref()
        .unwrap_or_else(|| panic!("inv 4: no error: {result:?}"));
    let expected = match cause {
        CancelCause::Caller => ErrorCode::Canceled,
        CancelCause::Deadline => ErrorCode::DeadlineExceeded,
    };
    assert_eq!(err.code, expected, "inv 4: {result:?}");
    match result.outcome {
        Outcome::Canceled => {
            assert!(
                cancel_verified,
                "inv 4: canceled claimed without verified cancel"
            );
            if let Some(left) = h.leftover_processes(id) {
                assert_eq!(left, 0, "inv 4: processes left after a confirmed cancel");
            }
        }
        Outcome::Unknown => assert!(
            err.reason.starts_with(CANCEL_REQUESTED),
            "inv 4: unknown after cancel must say cancel_requested: {result:?}"
        ),
        _ => panic!("inv 4: a canceled run is canceled or unknown: {result:?}"),
    }
}

/// Invariant 5: fallback only after a failure with no side effects; never after
/// files were written.
pub async fn invariant_5_no_replay_after_side_effects(h: &dyn Harness) {
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let failing = resolve(h, "conf-fail", Scenario::Fail).await;
    let echo = resolve(h, "conf-echo", Scenario::Echo).await;

    let ws = Workspace::new();
    let id = unique_id("inv5a");
    let options = RunOptions {
        fallback: Some(echo.clone()),
        ..Default::default()
    };
    let result = runtime
        .run(ws.request(&id, "fall back"), &failing, options)
        .await;
    assert_eq!(
        result.outcome,
        Outcome::Succeeded,
        "inv 5: clean failure falls back: {result:?}"
    );
    let attempts: Vec<_> = journal
        .attempts()
        .into_iter()
        .filter(|a| a.0 == id)
        .collect();
    assert_eq!(
        attempts,
        vec![
            (id.clone(), 1, "conf-fail".into()),
            (id.clone(), 2, "conf-echo".into())
        ],
        "inv 5: the fallback runs under the same id"
    );

    if !declares(&failing, &Capability::Files) {
        return;
    }
    let ws = Workspace::new();
    let writer = resolve(h, "conf-write-fail", Scenario::WriteThenFail).await;
    let id = unique_id("inv5b");
    let options = RunOptions {
        fallback: Some(echo),
        step_retries: 1,
        ..Default::default()
    };
    let result = runtime
        .run(ws.request(&id, "write then fail"), &writer, options)
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "inv 5: {result:?}");
    assert_eq!(
        result.err.as_ref().map(|e| e.side_effects),
        Some(SideEffects::Possible),
        "inv 5: a written file is a side effect"
    );
    let attempts = journal.attempts().into_iter().filter(|a| a.0 == id).count();
    assert_eq!(
        attempts, 1,
        "inv 5: neither retried nor replayed after side effects"
    );
}

/// Invariant 6: one session's context never shows up in another's execution.
pub async fn invariant_6_session_scope_isolates(h: &dyn Harness) {
    let ws = Workspace::new();
    let runtime = Runtime::new();
    let echo = resolve(h, "conf-echo", Scenario::Echo).await;
    let mut first = ws.request(&unique_id("inv6a"), "first session prompt sec-A-91c2");
    first.session_scope = SessionScope {
        tenant: "t".into(),
        project: "p".into(),
        session: "A".into(),
    };
    first.context = vec![Message {
        role: "user".into(),
        content: "context-only-sec-A-55e1".into(),
    }];
    let a = runtime.run(first, &echo, RunOptions::default()).await;
    assert_eq!(a.outcome, Outcome::Succeeded, "inv 6: {a:?}");
    let mut second = ws.request(&unique_id("inv6b"), "second session prompt");
    second.session_scope.session = "B".into();
    let b = runtime.run(second, &echo, RunOptions::default()).await;
    assert_eq!(b.outcome, Outcome::Succeeded, "inv 6: {b:?}");
    for leaked in ["sec-A-91c2", "context-only-sec-A-55e1"] {
        assert!(
            !b.text.contains(leaked) && !b.logs.contains(leaked),
            "inv 6: session A's {leaked} leaked into session B"
        );
    }
}

/// Invariant 7 (and the contract's refusals): deliverables only from inside the
/// root; a symlink out is refused and its bytes never returned; missing and empty
/// outputs and missing capabilities are named errors.
pub async fn invariant_7_workspace_paths_and_refusals(h: &dyn Harness) {
    let runtime = Runtime::new();
    let echo = resolve(h, "conf-echo", Scenario::Echo).await;
    let outside = Workspace::new();
    let secret = "TOP-SECRET-outside-4d1e";
    std::fs::write(outside.root().join("secret.txt"), secret)
        .unwrap_or_else(|e| panic!("write secret: {e}"));

    let ws = Workspace::new();
    std::os::unix::fs::symlink(outside.root(), ws.root().join("escape"))
        .unwrap_or_else(|e| panic!("symlink: {e}"));
    std::os::unix::fs::symlink(outside.root().join("secret.txt"), ws.root().join("link.md"))
        .unwrap_or_else(|e| panic!("symlink: {e}"));
    for target in ["escape/secret.txt", "link.md", "../secret.txt", "escape"] {
        let mut request = ws.request(&unique_id("inv7a"), "x");
        request.targets = vec![target.into()];
        let result = runtime.run(request, &echo, RunOptions::default()).await;
        assert_eq!(
            result.err.as_ref().map(|e| e.code.clone()),
            Some(ErrorCode::PathOutsideWorkspace),
            "inv 7: target {target}: {result:?}"
        );
        assert!(result.files.is_empty(), "inv 7: no bytes for {target}");
        let wire = serde_json::to_string(&result).unwrap_or_default();
        assert!(
            !wire.contains(secret) && !wire.contains("VE9QLVNFQ1JFVC"),
            "inv 7: secret leaked"
        );
    }

    let mut request = ws.request(&unique_id("inv7b"), "x");
    request.targets = vec!["never-written.md".into()];
    let missing = runtime.run(request, &echo, RunOptions::default()).await;
    assert_eq!(
        missing.err.as_ref().map(|e| e.code.clone()),
        Some(ErrorCode::MissingDeliverable),
        "inv 7: {missing:?}"
    );

    let silent = resolve(h, "conf-silent", Scenario::Silent).await;
    let mut request = ws.request(&unique_id("inv7c"), "say nothing");
    request.required = vec![Capability::Text];
    let empty = runtime.run(request, &silent, RunOptions::default()).await;
    assert_eq!(
        empty.err.as_ref().map(|e| e.code.clone()),
        Some(ErrorCode::EmptyOutput),
        "inv 7: {empty:?}"
    );

    // A capability this backend has not verified (resume, until a backend does) is
    // refused by the resolver, never degraded.
    if let Some(missing) = Capability::KNOWN
        .iter()
        .find(|c| !echo.verification.verified.contains(c))
    {
        let mut registry = Registry::new();
        registry
            .register(h.backend("conf-echo", Scenario::Echo))
            .unwrap_or_else(|e| panic!("register: {e}"));
        let refusal = registry
            .resolve("conf-echo", std::slice::from_ref(missing))
            .await
            .err()
            .unwrap_or_else(|| panic!("inv 7: `{missing}` is not verified, yet resolved"));
        assert_eq!(
            refusal.to_contract_error().code,
            ErrorCode::MissingCapability
        );
    }

    if declares(&echo, &Capability::Files) {
        let ws = Workspace::new();
        let writer = resolve(h, "conf-write", Scenario::WriteTarget).await;
        let mut request = ws.request(&unique_id("inv7d"), "deliverable body 3c9b");
        request.targets = vec!["reply.md".into()];
        let result = runtime.run(request, &writer, RunOptions::default()).await;
        assert_eq!(result.outcome, Outcome::Succeeded, "inv 7: {result:?}");
        let body = result
            .files
            .get("reply.md")
            .map(|b| String::from_utf8_lossy(b).into_owned());
        assert!(
            body.as_deref()
                .is_some_and(|b| b.contains("deliverable body 3c9b")),
            "inv 7: the deliverable is returned: {body:?}"
        );
    }
}

/// Structured output (the `output_schema` extension) is validated by the runtime, not
/// trusted: even a backend whose probe verified `structured-output` has its answer
/// checked, and a text that does not match is `failed` (`agent.missing_deliverable`,
/// the validator's reason, no text); a backend without the verified capability, or a
/// schema that is itself invalid, is refused before anything is dispatched.
pub async fn structured_output_is_validated_by_the_runtime(h: &dyn Harness) {
    let ws = Workspace::new();
    let runtime = Runtime::new();
    let mut echo = resolve(h, "conf-echo", Scenario::Echo).await;
    let prompt = "conformance-structured-5e2a";
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"]
    });

    // Without the verified capability: refused, nothing dispatched.
    echo.verification
        .verified
        .retain(|c| *c != Capability::StructuredOutput);
    let id = unique_id("so-a");
    let mut request = ws.request(&id, prompt);
    request.output_schema = Some(schema.clone());
    let refused = runtime
        .run(request.clone(), &echo, RunOptions::default())
        .await;
    assert_eq!(
        refused
            .err
            .as_ref()
            .map(|e| (e.code.clone(), e.side_effects)),
        Some((ErrorCode::MissingCapability, SideEffects::None)),
        "structured output: {refused:?}"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(n, 0, "structured output: refused, yet dispatched");
    }

    // A backend that claims it (whatever its probe says): its echo, which is not a
    // JSON object with an integer `answer`, is rejected by the runtime.
    echo.verification
        .verified
        .push(Capability::StructuredOutput);
    let id = unique_id("so-b");
    request.execution_id = id.clone();
    let rejected = runtime
        .run(request.clone(), &echo, RunOptions::default())
        .await;
    assert_eq!(
        rejected.outcome,
        Outcome::Failed,
        "structured output: an answer that does not match is failed: {rejected:?}"
    );
    let err = rejected.err.as_ref().expect("structured output: an error");
    assert_eq!(err.code, ErrorCode::MissingDeliverable, "{rejected:?}");
    assert!(
        err.reason.contains("output_schema"),
        "structured output: the validator's reason: {rejected:?}"
    );
    assert!(
        rejected.text.is_empty(),
        "structured output: the rejected text is not the answer"
    );

    // A schema that is no schema: refused before anything runs.
    let id = unique_id("so-c");
    request.execution_id = id.clone();
    request.output_schema = Some(serde_json::json!({"type": "no-such-type"}));
    let invalid = runtime.run(request, &echo, RunOptions::default()).await;
    assert_eq!(invalid.outcome, Outcome::Failed, "{invalid:?}");
    assert_eq!(
        invalid.err.as_ref().map(|e| e.side_effects),
        Some(SideEffects::None),
        "{invalid:?}"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(n, 0, "structured output: invalid schema, yet dispatched");
    }
}

/// Resume (issue 12 §1) keeps the execution: the resumed attempt runs under the same
/// execution id, numbered after the earlier ones, inside the session the backend
/// reported, with the execution's deadline (a later caller deadline does not extend
/// it) and what is left of its budget; and it is one attempt, never retried. A backend
/// that has not verified `resume` is refused before the journal is asked or anything
/// is dispatched.
pub async fn resume_keeps_the_execution(h: &dyn Harness) {
    let ws = Workspace::new();
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let echo = resolve(h, "conf-echo", Scenario::Echo).await;
    let id = unique_id("resume");
    let continuation = "conformance-continue-81d4";

    if !echo.verification.verified.contains(&Capability::Resume) {
        let refused = runtime
            .resume(&id, continuation, &echo, ResumeOptions::default())
            .await;
        assert_eq!(
            refused
                .err
                .as_ref()
                .map(|e| (e.code.clone(), e.side_effects)),
            Some((ErrorCode::MissingCapability, SideEffects::None)),
            "resume: a backend without verified resume is refused: {refused:?}"
        );
        assert!(
            journal.resumed().is_empty(),
            "resume: refused, yet the journal was asked to claim the execution"
        );
        if let Some(n) = count_of(h, &id) {
            assert_eq!(n, 0, "resume: refused, yet dispatched");
        }
        return;
    }

    // The first attempt is interrupted (what a resume is for: a succeeded execution is
    // never resumed, and a backend may drop its session after a success), and a
    // backend that verified resume reported its session handle before it died.
    let interrupted = resolve(h, &echo.name, Scenario::Crash).await;
    let mut request = ws.request(&id, "conformance-first-2b7e");
    let deadline = OffsetDateTime::now_utc() + time::Duration::minutes(5);
    request.budget.deadline = Some(deadline);
    request.budget.max_prompt_tokens = 1_000_000;
    let first = runtime
        .run(request.clone(), &interrupted, RunOptions::default())
        .await;
    assert_eq!(first.outcome, Outcome::Unknown, "resume: {first:?}");
    let Some((_, session_attempt, session)) = journal
        .sessions()
        .into_iter()
        .find(|(seen, _, _)| *seen == id)
    else {
        panic!("resume: a backend that verified resume reported no session handle");
    };
    assert_eq!(
        session_attempt, 1,
        "resume: the handle belongs to attempt 1"
    );

    // Resume as a later process would, from what the journal kept.
    let point = ResumePoint {
        request: request.clone(),
        backend: echo.name.clone(),
        session: session.clone(),
        session_attempt,
        prior: PriorAttempts {
            attempts: 1,
            usage: first.usage,
            deadline: Some(deadline),
        },
    };
    *lock(&journal.resume_point) = Some(point.clone());
    let options = ResumeOptions {
        deadline: Some(deadline + time::Duration::hours(1)),
        ..Default::default()
    };
    let resumed = runtime.resume(&id, continuation, &echo, options).await;
    assert_eq!(resumed.outcome, Outcome::Succeeded, "resume: {resumed:?}");
    assert!(
        resumed.text.contains(continuation),
        "resume: the continuation prompt reached the backend: {:?}",
        resumed.text
    );
    assert_eq!(
        journal
            .attempts()
            .into_iter()
            .filter(|a| a.0 == id)
            .collect::<Vec<_>>(),
        vec![
            (id.clone(), 1, echo.name.clone()),
            (id.clone(), 2, echo.name.clone())
        ],
        "resume: the resumed attempt is attempt 2 of the same execution"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(n, 2, "resume: the backend saw the same execution id twice");
    }

    // The execution's deadline holds: passed, the resume dispatches nothing, even with
    // a later deadline of the caller's.
    *lock(&journal.resume_point) = Some(ResumePoint {
        prior: PriorAttempts {
            attempts: 2,
            deadline: Some(OffsetDateTime::now_utc() - time::Duration::seconds(1)),
            ..point.prior.clone()
        },
        ..point.clone()
    });
    let options = ResumeOptions {
        deadline: Some(OffsetDateTime::now_utc() + time::Duration::hours(1)),
        ..Default::default()
    };
    let late = runtime.resume(&id, continuation, &echo, options).await;
    assert_eq!(
        late.err.as_ref().map(|e| e.code.clone()),
        Some(ErrorCode::DeadlineExceeded),
        "resume: the execution's deadline: {late:?}"
    );
    // And its budget: spent by earlier attempts, nothing is dispatched.
    *lock(&journal.resume_point) = Some(ResumePoint {
        prior: PriorAttempts {
            attempts: 2,
            usage: Usage {
                prompt_tokens: 1_000_000,
                completion_tokens: 0,
            },
            deadline: None,
        },
        ..point
    });
    let spent = runtime
        .resume(&id, continuation, &echo, ResumeOptions::default())
        .await;
    assert_eq!(
        spent.err.as_ref().map(|e| e.code.clone()),
        Some(ErrorCode::BudgetExceeded),
        "resume: the execution's budget: {spent:?}"
    );
    for refused in [&late, &spent] {
        assert_eq!(
            refused.err.as_ref().map(|e| e.side_effects),
            Some(SideEffects::Possible),
            "resume: a resumed execution that did not succeed may have acted: {refused:?}"
        );
    }
    assert_eq!(
        journal.attempts().into_iter().filter(|a| a.0 == id).count(),
        2,
        "resume: nothing dispatched after the deadline or the budget"
    );
    if let Some(n) = count_of(h, &id) {
        assert_eq!(
            n, 2,
            "resume: nothing dispatched after the deadline or the budget"
        );
    }
}

/// Generates one `#[tokio::test]` per invariant for the harness built by `$make`.
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            use $crate as c;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_1_execution_id_budget_deadline_shared() {
                c::invariant_1_execution_id_budget_deadline_shared(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_2_honest_outcomes() {
                c::invariant_2_honest_outcomes(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_3_one_retry_layer() {
                c::invariant_3_one_retry_layer(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_4_cancellation_reaches_everything() {
                c::invariant_4_cancellation_reaches_everything(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_5_no_replay_after_side_effects() {
                c::invariant_5_no_replay_after_side_effects(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_6_session_scope_isolates() {
                c::invariant_6_session_scope_isolates(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn invariant_7_workspace_paths_and_refusals() {
                c::invariant_7_workspace_paths_and_refusals(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn structured_output_is_validated_by_the_runtime() {
                c::structured_output_is_validated_by_the_runtime(&$make).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn resume_keeps_the_execution() {
                c::resume_keeps_the_execution(&$make).await
            }
        }
    };
}
