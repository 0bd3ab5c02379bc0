#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! The runtime's settling rules, with in-test backends that misbehave on purpose.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_exec_conformance::RecordingJournal;
use agent_exec_contract::*;
use agent_exec_runtime::{RunOptions, Runtime};
use async_trait::async_trait;
use futures::StreamExt as _;

type Behaviour = dyn Fn(&ExecutionContext) -> Option<ContractResult> + Send + Sync;

/// A backend whose `execute` is a closure; `None` means "hang until canceled, then
/// (if `honours_cancel`) return canceled, else never return".
struct Fake {
    verified: Vec<Capability>,
    behaviour: Box<Behaviour>,
    honours_cancel: bool,
    calls: AtomicUsize,
}

impl Fake {
    fn new(
        verified: Vec<Capability>,
        behaviour: impl Fn(&ExecutionContext) -> Option<ContractResult> + Send + Sync + 'static,
    ) -> Fake {
        Fake {
            verified,
            behaviour: Box::new(behaviour),
            honours_cancel: true,
            calls: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl Backend for Fake {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: "fake".into(),
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
    async fn execute(&self, _: &ContractRequest, ctx: ExecutionContext) -> ContractResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(result) = (self.behaviour)(&ctx) {
            return result;
        }
        ctx.cancellation.cancelled().await;
        if !self.honours_cancel {
            futures::future::pending::<()>().await;
        }
        ContractResult::with_error(
            Outcome::Canceled,
            Error::new(ErrorCode::Canceled, "stopped", SideEffects::None),
        )
    }
}

async fn resolved(fake: Arc<Fake>) -> Resolved {
    let mut registry = Registry::new();
    registry.register(fake).unwrap();
    registry.resolve("fake", &[]).await.unwrap()
}

fn request(ws: &tempfile::TempDir) -> ContractRequest {
    ContractRequest {
        execution_id: "e1".into(),
        prompt: "p".into(),
        workspace: WorkspaceHandle {
            root: ws.path().display().to_string(),
            writable: vec![],
        },
        ..Default::default()
    }
}

async fn cancel_soon(cancellation: Cancellation) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancellation.cancel(CancelCause::Caller);
}

#[tokio::test]
async fn canceled_without_verified_cancel_is_unknown_with_cancel_requested() {
    let ws = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![Capability::Text], |_| None));
    let backend = resolved(fake).await;
    let options = RunOptions::default();
    let trigger = options.cancellation.clone();
    let runtime = Runtime::new();
    let (result, ()) = tokio::join!(
        runtime.run(request(&ws), &backend, options),
        cancel_soon(trigger)
    );
    assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
    let err = result.err.unwrap();
    assert!(err.cancel_requested(), "{}", err.reason);
    assert_eq!(err.side_effects, SideEffects::Possible);
}

#[tokio::test]
async fn canceled_with_verified_cancel_stays_canceled() {
    let ws = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![Capability::Cancel], |_| None));
    let backend = resolved(fake).await;
    let options = RunOptions::default();
    let trigger = options.cancellation.clone();
    let runtime = Runtime::new();
    let (result, ()) = tokio::join!(
        runtime.run(request(&ws), &backend, options),
        cancel_soon(trigger)
    );
    assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
    assert_eq!(result.err.unwrap().side_effects, SideEffects::None);
}

#[tokio::test]
async fn a_backend_that_ignores_cancel_is_abandoned_as_unknown() {
    let ws = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(vec![Capability::Cancel], |_| None);
    fake.honours_cancel = false;
    let backend = resolved(Arc::new(fake)).await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new()
        .with_journal(journal.clone())
        .with_cancel_timeout(Duration::from_millis(200));
    let mut req = request(&ws);
    req.budget.deadline = Some(time::OffsetDateTime::now_utc() + time::Duration::milliseconds(100));
    let result = runtime.run(req, &backend, RunOptions::default()).await;
    assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::DeadlineExceeded);
    assert!(err.cancel_requested(), "{}", err.reason);
    let states: Vec<AttemptState> = journal.states().into_iter().map(|s| s.2).collect();
    assert_eq!(
        states,
        [
            AttemptState::Running,
            AttemptState::Canceling,
            AttemptState::Unknown
        ]
    );
}

/// The note of the one `canceling` transition recorded for `journal`'s only attempt,
/// after checking the whole history is `running → canceling → terminal`.
fn canceling_note(journal: &RecordingJournal, terminal: AttemptState) -> String {
    assert_eq!(
        journal.states_of("e1"),
        [AttemptState::Running, AttemptState::Canceling, terminal],
        "{:?}",
        journal.notes()
    );
    let notes = journal.notes();
    let canceling: Vec<&String> = notes
        .iter()
        .filter(|n| n.2 == AttemptState::Canceling)
        .map(|n| &n.3)
        .collect();
    assert_eq!(canceling.len(), 1, "{notes:?}");
    canceling[0].clone()
}

/// Regression: a backend that returns the moment it sees the cancel used to race the
/// runtime's own cancel branch (an unbiased select), and about half the time the
/// journal never heard of the cancel. Both are ready at the same poll here, every
/// time; the cancel branch must win, so `canceling` is written before the backend's
/// result is taken. Repeated because the old bug lost the coin toss only sometimes.
#[tokio::test]
async fn a_backend_returning_at_the_cancel_still_leaves_canceling_first() {
    let ws = tempfile::tempdir().unwrap();
    let backend = resolved(Arc::new(Fake::new(vec![Capability::Cancel], |_| None))).await;
    for _ in 0..24 {
        let journal = Arc::new(RecordingJournal::default());
        let runtime = Runtime::new().with_journal(journal.clone());
        let options = RunOptions::default();
        let trigger = options.cancellation.clone();
        let (result, ()) = tokio::join!(
            runtime.run(request(&ws), &backend, options),
            cancel_soon(trigger)
        );
        assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
        let note = canceling_note(&journal, AttemptState::Canceled);
        assert_eq!(
            note, "canceled by the caller",
            "recorded by the cancel branch"
        );
    }
}

/// Regression, the other ordering, made deterministic: the cancel fires *while the
/// backend is being polled* (as the deadline watchdog on another worker can) and the
/// backend returns in that same poll, so the runtime's cancel branch was already seen
/// pending. The runtime still records `canceling` before the terminal state, says in
/// the note that it learnt of the cancel as the backend returned, and settles with
/// the cancel's cause.
#[tokio::test]
async fn a_cancel_landing_as_the_backend_returns_is_still_journaled() {
    let ws = tempfile::tempdir().unwrap();
    let options = RunOptions::default();
    let watchdog = options.cancellation.clone();
    let backend = resolved(Arc::new(Fake::new(vec![Capability::Cancel], move |_| {
        watchdog.cancel(CancelCause::Deadline);
        Some(ContractResult::with_error(
            Outcome::Canceled,
            Error::new(ErrorCode::Canceled, "stopped", SideEffects::None),
        ))
    })))
    .await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let result = runtime.run(request(&ws), &backend, options).await;
    assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
    assert_eq!(result.err.unwrap().code, ErrorCode::DeadlineExceeded);
    let note = canceling_note(&journal, AttemptState::Canceled);
    assert_eq!(note, "deadline exceeded (as the backend returned)");

    // A success that the cancel arrived too late to stop stays a success; only the
    // history gains the request.
    let options = RunOptions::default();
    let caller = options.cancellation.clone();
    let backend = resolved(Arc::new(Fake::new(vec![Capability::Cancel], move |_| {
        caller.cancel(CancelCause::Caller);
        Some(ContractResult::succeeded("done anyway"))
    })))
    .await;
    let journal = Arc::new(RecordingJournal::default());
    let runtime = Runtime::new().with_journal(journal.clone());
    let result = runtime.run(request(&ws), &backend, options).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, "done anyway");
    let note = canceling_note(&journal, AttemptState::Succeeded);
    assert_eq!(note, "canceled by the caller (as the backend returned)");
}

#[tokio::test]
async fn unrecognised_outcome_and_success_with_error_are_unknown() {
    let ws = tempfile::tempdir().unwrap();
    let weird = resolved(Arc::new(Fake::new(vec![], |_| {
        Some(ContractResult {
            outcome: Outcome::Other("partial".into()),
            ..ContractResult::succeeded("t")
        })
    })))
    .await;
    let result = Runtime::new()
        .run(request(&ws), &weird, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Unknown);
    assert_eq!(result.err.unwrap().code, ErrorCode::UnknownOutcome);

    let contradictory = resolved(Arc::new(Fake::new(vec![], |_| {
        Some(ContractResult {
            err: Some(Error::new(ErrorCode::Internal, "oops", SideEffects::None)),
            ..ContractResult::succeeded("t")
        })
    })))
    .await;
    let result = Runtime::new()
        .run(request(&ws), &contradictory, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Unknown);
}

#[tokio::test]
async fn a_tool_run_makes_side_effects_possible_and_blocks_fallback() {
    let ws = tempfile::tempdir().unwrap();
    let tooling = Arc::new(Fake::new(vec![], |ctx| {
        ctx.events.emit(Event {
            kind: EventKind::ToolExecStart,
            text: String::new(),
            tool: "http_post".into(),
            detail: String::new(),
        });
        Some(ContractResult::failed(Error::new(
            ErrorCode::ProviderRejected,
            "no",
            SideEffects::None,
        )))
    }));
    let backend = resolved(tooling).await;
    let fallback_fake = Arc::new(Fake::new(vec![], |_| {
        Some(ContractResult::succeeded("fallback"))
    }));
    let fallback = resolved(fallback_fake.clone()).await;
    let options = RunOptions {
        fallback: Some(fallback),
        step_retries: 3,
        ..Default::default()
    };
    let result = Runtime::new().run(request(&ws), &backend, options).await;
    assert_eq!(result.outcome, Outcome::Failed);
    assert_eq!(result.err.unwrap().side_effects, SideEffects::Possible);
    assert!(
        result.logs.contains("tools run: http_post"),
        "{}",
        result.logs
    );
    assert_eq!(fallback_fake.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn every_event_arrives_in_order_before_run_returns() {
    let ws = tempfile::tempdir().unwrap();
    let chatty = Arc::new(Fake::new(vec![], |ctx| {
        for i in 0..20_000 {
            ctx.events.emit(Event::text_delta(i.to_string()));
        }
        Some(ContractResult::succeeded("done"))
    }));
    let backend = resolved(chatty).await;
    let (sink, receiver) = EventSink::channel();
    let options = RunOptions {
        events: sink,
        ..Default::default()
    };
    let result = Runtime::new().run(request(&ws), &backend, options).await;
    assert_eq!(result.outcome, Outcome::Succeeded);
    // The runtime dropped its sender copies: the stream ends, and holds everything.
    let texts: Vec<String> = receiver.map(|e| e.text).collect().await;
    assert_eq!(texts.len(), 20_000);
    assert!(texts.iter().enumerate().all(|(i, t)| *t == i.to_string()));
}

#[tokio::test]
async fn empty_execution_id_is_refused_before_dispatch() {
    let ws = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![], |_| Some(ContractResult::succeeded("x"))));
    let backend = resolved(fake.clone()).await;
    let mut req = request(&ws);
    req.execution_id = " ".into();
    let result = Runtime::new()
        .run(req, &backend, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
}

/// A journal that cannot record anything (a full disk, a dropped database).
struct BrokenJournal;

#[async_trait]
impl JournalHook for BrokenJournal {
    async fn execution_started(
        &self,
        _: &str,
        _: &ContractRequest,
        _: time::OffsetDateTime,
    ) -> Result<PriorAttempts, JournalError> {
        Err(JournalError("disk full".into()))
    }
    async fn attempt_started(
        &self,
        _: &str,
        _: u32,
        _: &str,
        _: time::OffsetDateTime,
    ) -> Result<(), JournalError> {
        Err(JournalError("disk full".into()))
    }
    async fn transition(
        &self,
        _: &str,
        _: u32,
        _: AttemptState,
        _: &str,
        _: time::OffsetDateTime,
    ) -> Result<(), JournalError> {
        Err(JournalError("disk full".into()))
    }
    async fn attempt_finished(
        &self,
        _: &str,
        _: u32,
        _: &ContractResult,
        _: time::OffsetDateTime,
    ) -> Result<(), JournalError> {
        Err(JournalError("disk full".into()))
    }
    async fn execution_finished(
        &self,
        _: &str,
        _: &ContractResult,
        _: time::OffsetDateTime,
    ) -> Result<(), JournalError> {
        Err(JournalError("disk full".into()))
    }
}

#[tokio::test]
async fn an_unrecordable_execution_is_not_started() {
    let ws = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![], |_| Some(ContractResult::succeeded("x"))));
    let backend = resolved(fake.clone()).await;
    let result = Runtime::new()
        .with_journal(Arc::new(BrokenJournal))
        .run(request(&ws), &backend, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed);
    let err = result.err.unwrap();
    assert_eq!(
        (err.code, err.side_effects),
        (ErrorCode::Internal, SideEffects::None)
    );
    assert!(err.reason.contains("disk full"), "{}", err.reason);
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        0,
        "fail closed: nothing dispatched"
    );
}

#[tokio::test]
async fn each_attempt_sees_the_budget_left_by_the_previous_ones() {
    let ws = tempfile::tempdir().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Spender(Arc<std::sync::Mutex<Vec<u64>>>);
    #[async_trait]
    impl Backend for Spender {
        fn descriptor(&self) -> BackendDescriptor {
            BackendDescriptor {
                name: "fake".into(),
                ..Default::default()
            }
        }
        async fn verify(&self) -> Verification {
            Verification::default()
        }
        async fn execute(&self, request: &ContractRequest, _: ExecutionContext) -> ContractResult {
            self.0
                .lock()
                .unwrap()
                .push(request.budget.max_prompt_tokens);
            let mut result = ContractResult::failed(Error::new(
                ErrorCode::ProviderRejected,
                "no",
                SideEffects::None,
            ));
            result.usage = Usage {
                prompt_tokens: 30,
                completion_tokens: 1,
            };
            result
        }
    }
    let mut registry = Registry::new();
    registry.register(Arc::new(Spender(seen.clone()))).unwrap();
    let backend = registry.resolve("fake", &[]).await.unwrap();
    let mut req = request(&ws);
    req.budget.max_prompt_tokens = 100;
    let options = RunOptions {
        step_retries: 5,
        ..Default::default()
    };
    let result = Runtime::new().run(req, &backend, options).await;
    assert_eq!(*seen.lock().unwrap(), vec![100, 70, 40, 10]);
    assert_eq!(result.err.unwrap().code, ErrorCode::BudgetExceeded);
    assert_eq!(result.usage.prompt_tokens, 120);
}

fn with_schema(ws: &tempfile::TempDir) -> ContractRequest {
    let mut request = request(ws);
    request.output_schema = Some(serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    }));
    request
}

#[tokio::test]
async fn structured_output_that_matches_succeeds_with_the_json_as_text() {
    let ws = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![Capability::StructuredOutput], |_| {
        Some(ContractResult::succeeded(r#"{"n": 4}"#))
    }));
    let result = Runtime::new()
        .run(
            with_schema(&ws),
            &resolved(fake).await,
            RunOptions::default(),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, r#"{"n": 4}"#);
}

#[tokio::test]
async fn structured_output_that_does_not_match_is_failed_with_observed_effects() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().to_owned();
    // The backend "succeeds", after writing a file, with an answer of the wrong shape.
    let fake = Arc::new(Fake::new(vec![Capability::StructuredOutput], move |_| {
        std::fs::write(root.join("touched"), "x").unwrap();
        Some(ContractResult::succeeded(r#"{"n": "four"}"#))
    }));
    let result = Runtime::new()
        .run(
            with_schema(&ws),
            &resolved(fake).await,
            RunOptions::default(),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::MissingDeliverable);
    assert_eq!(
        err.side_effects,
        SideEffects::Possible,
        "the file write was observed"
    );
    assert!(
        err.reason.contains("/n") && err.reason.contains("integer"),
        "{}",
        err.reason
    );
    assert!(result.text.is_empty());
    assert!(result.logs.contains("not returned"), "{}", result.logs);
}

#[tokio::test]
async fn structured_output_needs_the_verified_capability_and_a_valid_schema() {
    let ws = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::new(vec![Capability::Text], |_| {
        Some(ContractResult::succeeded(r#"{"n": 4}"#))
    }));
    let backend = resolved(fake.clone()).await;
    let result = Runtime::new()
        .run(with_schema(&ws), &backend, RunOptions::default())
        .await;
    assert_eq!(
        result.err.as_ref().map(|e| e.code.clone()),
        Some(ErrorCode::MissingCapability),
        "{result:?}"
    );
    let mut bad = with_schema(&ws);
    bad.output_schema = Some(serde_json::json!({"required": "n"}));
    let result = Runtime::new()
        .run(bad, &backend, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    assert!(
        result
            .err
            .as_ref()
            .unwrap()
            .reason
            .contains("not a valid JSON Schema"),
        "{result:?}"
    );
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        0,
        "nothing was dispatched"
    );
}
