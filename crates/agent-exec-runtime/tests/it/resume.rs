#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! Resume in the runtime: session handles journaled as they arrive, and
//! `Runtime::resume` — one attempt, same id, the execution's deadline and budget —
//! with an in-test backend that records what it was handed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_exec_conformance::RecordingJournal;
use agent_exec_contract::*;
use agent_exec_runtime::{ResumeOptions, RunOptions, Runtime};
use async_trait::async_trait;
use time::OffsetDateTime;

/// What one `execute` call saw.
#[derive(Debug, Clone)]
struct Seen {
    request: ContractRequest,
    attempt: u32,
    resume: Option<ResumeFrom>,
}

type Behaviour = dyn Fn(&ExecutionContext) -> ContractResult + Send + Sync;

/// A backend that reports `handle` (if any), then waits for `release` (if set), then
/// answers with `behaviour`.
struct Sessioned {
    verified: Vec<Capability>,
    handle: Option<&'static str>,
    release: Option<Arc<tokio::sync::Notify>>,
    /// Keeps a clone of the reporter alive in a task after `execute` returned.
    leak_reporter: bool,
    behaviour: Box<Behaviour>,
    seen: Mutex<Vec<Seen>>,
    calls: AtomicUsize,
}

impl Sessioned {
    fn new(verified: Vec<Capability>, handle: Option<&'static str>) -> Sessioned {
        Sessioned {
            verified,
            handle,
            release: None,
            leak_reporter: false,
            behaviour: Box::new(|_| ContractResult::succeeded("done")),
            seen: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
        }
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl Backend for Sessioned {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: "sessioned".into(),
            capabilities: Capability::KNOWN.to_vec(),
            adapter_version: String::new(),
        }
    }
    async fn verify(&self) -> Verification {
        Verification {
            verified: self.verified.clone(),
            ..Default::default()
        }
    }
    async fn execute(&self, request: &ContractRequest, ctx: ExecutionContext) -> ContractResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(Seen {
            request: request.clone(),
            attempt: ctx.attempt,
            resume: ctx.resume.clone(),
        });
        if let Some(handle) = self.handle {
            ctx.session.report(handle).unwrap();
        }
        if self.leak_reporter {
            let reporter = ctx.session.clone();
            tokio::spawn(async move {
                let _held = reporter;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            });
        }
        if let Some(release) = &self.release {
            release.notified().await;
        }
        (self.behaviour)(&ctx)
    }
}

async fn resolved(backend: Arc<Sessioned>) -> Resolved {
    let mut registry = Registry::new();
    registry.register(backend).unwrap();
    registry.resolve("sessioned", &[]).await.unwrap()
}

fn request(ws: &tempfile::TempDir, id: &str) -> ContractRequest {
    ContractRequest {
        execution_id: id.into(),
        prompt: "the original task".into(),
        workspace: WorkspaceHandle {
            root: ws.path().display().to_string(),
            writable: vec![],
        },
        ..Default::default()
    }
}

fn point(request: ContractRequest, prior: PriorAttempts) -> ResumePoint {
    ResumePoint {
        request,
        backend: "sessioned".into(),
        session: "thread-7".into(),
        session_attempt: 1,
        prior,
    }
}

#[tokio::test]
async fn a_handle_is_journaled_while_the_attempt_still_runs() {
    let ws = tempfile::tempdir().unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    let mut backend = Sessioned::new(vec![Capability::Resume], Some("thread-7"));
    backend.release = Some(release.clone());
    let backend = resolved(Arc::new(backend)).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let run = tokio::spawn({
        let request = request(&ws, "live-1");
        async move { runtime.run(request, &backend, RunOptions::default()).await }
    });
    // The backend is blocked until released: the handle must already be journaled,
    // as a runner killed now would leave it.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while journal.sessions().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the handle was not journaled while the attempt ran"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        journal.sessions(),
        vec![("live-1".to_owned(), 1, "thread-7".to_owned())]
    );
    assert_eq!(
        journal.states_of("live-1"),
        [AttemptState::Running],
        "the attempt had not ended when its handle was journaled"
    );
    release.notify_one();
    let result = run.await.unwrap();
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(
        journal.states_of("live-1"),
        [AttemptState::Running, AttemptState::Succeeded]
    );
}

#[tokio::test]
async fn a_reporter_kept_alive_by_the_backend_does_not_hold_up_the_attempt() {
    let ws = tempfile::tempdir().unwrap();
    let mut backend = Sessioned::new(vec![Capability::Resume], Some("thread-8"));
    backend.leak_reporter = true;
    let backend = resolved(Arc::new(backend)).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        runtime.run(request(&ws, "leak-1"), &backend, RunOptions::default()),
    )
    .await
    .expect("the attempt waited for a reporter the backend kept");
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(journal.sessions().len(), 1);
}

#[tokio::test]
async fn a_journal_that_cannot_keep_handles_is_noted_in_the_logs() {
    // The port's default `session_reported` records nothing and succeeds; a journal
    // that fails to record one says so, and the run itself goes on.
    struct NoSessions(RecordingJournal);
    #[async_trait]
    impl JournalHook for NoSessions {
        async fn execution_started(
            &self,
            b: &str,
            r: &ContractRequest,
            at: OffsetDateTime,
        ) -> Result<PriorAttempts, JournalError> {
            self.0.execution_started(b, r, at).await
        }
        async fn attempt_started(
            &self,
            id: &str,
            n: u32,
            b: &str,
            at: OffsetDateTime,
        ) -> Result<(), JournalError> {
            self.0.attempt_started(id, n, b, at).await
        }
        async fn transition(
            &self,
            id: &str,
            n: u32,
            s: AttemptState,
            note: &str,
            at: OffsetDateTime,
        ) -> Result<(), JournalError> {
            self.0.transition(id, n, s, note, at).await
        }
        async fn attempt_finished(
            &self,
            id: &str,
            n: u32,
            r: &ContractResult,
            at: OffsetDateTime,
        ) -> Result<(), JournalError> {
            self.0.attempt_finished(id, n, r, at).await
        }
        async fn execution_finished(
            &self,
            id: &str,
            r: &ContractResult,
            at: OffsetDateTime,
        ) -> Result<(), JournalError> {
            self.0.execution_finished(id, r, at).await
        }
        async fn session_reported(
            &self,
            _: &str,
            _: u32,
            _: &str,
            _: OffsetDateTime,
        ) -> Result<(), JournalError> {
            Err(JournalError("disk full".into()))
        }
    }
    let ws = tempfile::tempdir().unwrap();
    let backend = resolved(Arc::new(Sessioned::new(vec![], Some("thread-9")))).await;
    let runtime = Runtime::new().with_journal(Arc::new(NoSessions(RecordingJournal::default())));
    let result = runtime
        .run(request(&ws, "nosess-1"), &backend, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert!(
        result
            .logs
            .contains("session handle of attempt 1 was not recorded: journal: disk full"),
        "{}",
        result.logs
    );
}

#[tokio::test]
async fn resume_continues_the_session_as_the_next_attempt_of_the_same_execution() {
    let ws = tempfile::tempdir().unwrap();
    let backend = Arc::new(Sessioned::new(vec![Capability::Resume], Some("thread-7b")));
    let resolved = resolved(backend.clone()).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let execution_deadline = (OffsetDateTime::now_utc() + time::Duration::minutes(10))
        .replace_nanosecond(0)
        .unwrap();
    let mut original = request(&ws, "res-1");
    original.budget.max_prompt_tokens = 1_000;
    original.budget.max_completion_tokens = 500;
    original.budget.deadline = Some(execution_deadline);
    *journal.resume_point.lock().unwrap() = Some(point(
        original.clone(),
        PriorAttempts {
            attempts: 1,
            usage: Usage {
                prompt_tokens: 300,
                completion_tokens: 100,
            },
            deadline: Some(execution_deadline),
        },
    ));
    let options = ResumeOptions {
        // Later than the execution's: must not extend it.
        deadline: Some(execution_deadline + time::Duration::hours(1)),
        ..Default::default()
    };
    let result = runtime
        .resume("res-1", "please continue", &resolved, options)
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(
        result.usage,
        Usage {
            prompt_tokens: 300,
            completion_tokens: 100
        },
        "usage is the execution's total"
    );
    assert_eq!(journal.resumed(), [("res-1".into(), "sessioned".into())]);
    let seen = backend.seen();
    assert_eq!(seen.len(), 1, "one attempt");
    let seen = &seen[0];
    assert_eq!(seen.attempt, 2, "numbered after the journaled attempt");
    assert_eq!(seen.request.execution_id, "res-1");
    assert_eq!(seen.request.prompt, "please continue");
    assert_eq!(
        seen.resume,
        Some(ResumeFrom {
            session: "thread-7".into(),
            attempt: 1,
            original_prompt: "the original task".into(),
        })
    );
    assert_eq!(seen.request.budget.deadline, Some(execution_deadline));
    assert_eq!(
        (
            seen.request.budget.max_prompt_tokens,
            seen.request.budget.max_completion_tokens
        ),
        (700, 400),
        "the budget left after the earlier attempts"
    );
    assert_eq!(
        seen.request.workspace, original.workspace,
        "everything else is the journaled request"
    );
    assert_eq!(
        journal.attempts(),
        [("res-1".into(), 2, "sessioned".into())]
    );
    // The resumed attempt's own handle is journaled as attempt 2's.
    assert_eq!(
        journal.sessions(),
        [("res-1".into(), 2, "thread-7b".into())]
    );
    let finished = journal.finished.lock().unwrap().clone();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0].1.outcome, Outcome::Succeeded);
}

#[tokio::test]
async fn a_shorter_caller_deadline_applies() {
    let ws = tempfile::tempdir().unwrap();
    let backend = Arc::new(Sessioned::new(vec![Capability::Resume], None));
    let resolved = resolved(backend.clone()).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let late = OffsetDateTime::now_utc() + time::Duration::hours(2);
    let soon = (OffsetDateTime::now_utc() + time::Duration::minutes(3))
        .replace_nanosecond(0)
        .unwrap();
    let mut original = request(&ws, "res-2");
    original.budget.deadline = Some(late);
    *journal.resume_point.lock().unwrap() = Some(point(
        original,
        PriorAttempts {
            attempts: 1,
            deadline: Some(late),
            ..Default::default()
        },
    ));
    let options = ResumeOptions {
        deadline: Some(soon),
        ..Default::default()
    };
    let result = runtime.resume("res-2", "go on", &resolved, options).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(backend.seen()[0].request.budget.deadline, Some(soon));
}

#[tokio::test]
async fn a_resumed_attempt_is_never_retried_and_its_failure_says_side_effects_possible() {
    let ws = tempfile::tempdir().unwrap();
    let mut backend = Sessioned::new(vec![Capability::Resume], None);
    backend.behaviour = Box::new(|_| {
        ContractResult::failed(Error::new(
            ErrorCode::ProviderUnavailable,
            "503",
            SideEffects::None,
        ))
    });
    let backend = Arc::new(backend);
    let resolved = resolved(backend.clone()).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    *journal.resume_point.lock().unwrap() = Some(point(
        request(&ws, "res-3"),
        PriorAttempts {
            attempts: 1,
            ..Default::default()
        },
    ));
    let result = runtime
        .resume("res-3", "go on", &resolved, ResumeOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ProviderUnavailable);
    assert_eq!(
        err.side_effects,
        SideEffects::Possible,
        "the conversation it continued may have acted: no replay licensed"
    );
    assert!(
        result.logs.contains("resumed from attempt 1's session"),
        "{}",
        result.logs
    );
    assert_eq!(backend.calls.load(Ordering::SeqCst), 1, "no step retry");
    let finished = journal.finished.lock().unwrap().clone();
    assert_eq!(
        finished[0].1.err.as_ref().unwrap().side_effects,
        SideEffects::Possible,
        "the journal keeps the raised side effects"
    );
}

#[tokio::test]
async fn a_backend_without_verified_resume_is_refused_before_the_journal_is_asked() {
    let ws = tempfile::tempdir().unwrap();
    let backend = Arc::new(Sessioned::new(vec![Capability::Text], None));
    let resolved = resolved(backend.clone()).await;
    let journal = Arc::new(RecordingJournal::default());
    *journal.resume_point.lock().unwrap() =
        Some(point(request(&ws, "res-4"), PriorAttempts::default()));
    let runtime = Runtime::new().with_journal(journal.clone());
    let result = runtime
        .resume("res-4", "go on", &resolved, ResumeOptions::default())
        .await;
    let err = result.err.as_ref().unwrap();
    assert_eq!(
        (err.code.clone(), err.side_effects),
        (ErrorCode::MissingCapability, SideEffects::None),
        "{result:?}"
    );
    assert!(err.reason.contains("has not verified `resume`"), "{err:?}");
    assert!(journal.resumed().is_empty(), "the journal claimed nothing");
    assert_eq!(backend.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn what_the_journal_refuses_dispatches_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let backend = Arc::new(Sessioned::new(vec![Capability::Resume], None));
    let resolved = resolved(backend.clone()).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    // Not journaled.
    let result = runtime
        .resume("res-5", "go on", &resolved, ResumeOptions::default())
        .await;
    let err = result.err.as_ref().unwrap();
    assert_eq!(
        (err.code.clone(), err.side_effects),
        (ErrorCode::Internal, SideEffects::None)
    );
    assert!(
        err.reason.starts_with("not resumed: journal: ") && err.reason.contains("res-5"),
        "{err:?}"
    );
    // Journaled on another backend: the journal refuses inside its transaction.
    let mut elsewhere = point(request(&ws, "res-5"), PriorAttempts::default());
    elsewhere.backend = "codex".into();
    *journal.resume_point.lock().unwrap() = Some(elsewhere);
    let result = runtime
        .resume("res-5", "go on", &resolved, ResumeOptions::default())
        .await;
    assert!(
        result
            .err
            .as_ref()
            .unwrap()
            .reason
            .contains("ran on backend `codex`, not `sessioned`"),
        "{result:?}"
    );
    assert_eq!(backend.calls.load(Ordering::SeqCst), 0);
    assert!(journal.attempts().is_empty());
    assert!(
        journal.finished.lock().unwrap().is_empty(),
        "a refusal writes no outcome"
    );
    // No journal at all, and an empty continuation.
    let result = Runtime::new()
        .resume("res-5", "go on", &resolved, ResumeOptions::default())
        .await;
    assert!(
        result.err.as_ref().unwrap().reason.contains("has none"),
        "{result:?}"
    );
    let result = runtime
        .resume("res-5", "  ", &resolved, ResumeOptions::default())
        .await;
    assert!(
        result.err.as_ref().unwrap().reason.contains("empty"),
        "{result:?}"
    );
    assert_eq!(backend.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn structured_output_is_validated_on_the_resumed_attempt_too() {
    let ws = tempfile::tempdir().unwrap();
    let mut backend = Sessioned::new(vec![Capability::Resume, Capability::StructuredOutput], None);
    backend.behaviour = Box::new(|_| ContractResult::succeeded("not json"));
    let backend = Arc::new(backend);
    let resolved = resolved(backend.clone()).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let mut original = request(&ws, "res-6");
    original.output_schema = Some(serde_json::json!({"type": "object"}));
    *journal.resume_point.lock().unwrap() = Some(point(
        original,
        PriorAttempts {
            attempts: 1,
            ..Default::default()
        },
    ));
    let result = runtime
        .resume("res-6", "go on", &resolved, ResumeOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::MissingDeliverable);
    assert_eq!(err.side_effects, SideEffects::Possible);
    assert!(result.text.is_empty());
}
