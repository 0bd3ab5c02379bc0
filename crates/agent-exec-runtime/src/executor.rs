//! Running an execution: attempts under one execution id, one deadline and one
//! budget; honest outcomes; side-effect tracking; deliverables; the journal.
//!
//! [`Runtime::run`] starts (or step-retries) an execution; [`Runtime::resume`]
//! continues one inside its backend's own session. Both go through the same loop
//! (`drive`) and the same attempt code: resume is a plan of exactly one attempt with
//! no retry and no fallback (invariant 5: continuing is the caller's decision, and
//! the runtime adds nothing to it).

use std::sync::Arc;
use std::time::Duration;

use agent_exec_contract::{
    AttemptState, CANCEL_REQUESTED, CancelCause, Cancellation, Capability, ContractRequest,
    ContractResult, Error, ErrorCode, EventKind, EventSink, ExecutionContext, JournalHook, Outcome,
    PriorAttempts, Resolved, ResumeFrom, SessionReporter, SideEffects, Usage,
};
use futures::StreamExt as _;
use futures::channel::mpsc::UnboundedReceiver;
use time::OffsetDateTime;

use crate::deliverables;
use crate::structured;
use crate::workspace::{Changes, Snapshot};

/// How long the runtime waits for a backend to return after a cancel before it stops
/// waiting and reports `unknown` with `cancel_requested`. Must exceed a backend's own
/// grace + kill wait.
pub const DEFAULT_CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs executions. Cheap to clone; holds no per-execution state.
#[derive(Clone)]
pub struct Runtime {
    journal: Option<Arc<dyn JournalHook>>,
    cancel_timeout: Duration,
}

/// How one execution is to be run.
pub struct RunOptions {
    /// Where the caller wants events (in order; never blocks the run).
    pub events: EventSink,
    /// Fired by the caller to cancel; the deadline fires a child of it.
    pub cancellation: Cancellation,
    /// Extra attempts on the same backend after a failure with side effects `none`.
    /// These are the *caller's* step retries (invariant 3); the runtime adds none.
    pub step_retries: u32,
    /// Another backend to try once, under the same id, deadline and budget — only
    /// after a failure whose side effects are `none` (invariant 5).
    pub fallback: Option<Resolved>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            events: EventSink::discard(),
            cancellation: Cancellation::new(),
            step_retries: 0,
            fallback: None,
        }
    }
}

/// How a resumed execution is to be run. There is no retry or fallback to set: a
/// resume is one attempt, on the backend that holds the session.
pub struct ResumeOptions {
    /// Where the caller wants events (in order; never blocks the run).
    pub events: EventSink,
    /// Fired by the caller to cancel; the deadline fires a child of it.
    pub cancellation: Cancellation,
    /// The caller's deadline for this resume. It may only shorten the execution's
    /// own (journaled) deadline, never extend it (invariant 1).
    pub deadline: Option<OffsetDateTime>,
}

impl Default for ResumeOptions {
    fn default() -> Self {
        ResumeOptions {
            events: EventSink::discard(),
            cancellation: Cancellation::new(),
            deadline: None,
        }
    }
}

/// What the attempt loop may do: one shape for `run` and `resume`, so both share
/// the loop, the attempt and the journaling.
struct Plan<'a> {
    events: &'a EventSink,
    cancellation: &'a Cancellation,
    step_retries: u32,
    fallback: Option<&'a Resolved>,
    /// Set for a resumed execution: its one attempt continues this session.
    resume: Option<ResumeFrom>,
}

impl Default for Runtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Runtime {
    /// A runtime without a journal.
    pub fn new() -> Self {
        Runtime {
            journal: None,
            cancel_timeout: DEFAULT_CANCEL_TIMEOUT,
        }
    }

    /// Records every execution in `journal`.
    pub fn with_journal(mut self, journal: Arc<dyn JournalHook>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Changes how long a canceled backend may take to return.
    pub fn with_cancel_timeout(mut self, timeout: Duration) -> Self {
        self.cancel_timeout = timeout;
        self
    }

    /// Runs `request` on `primary` (then retries / fallback per `options`) and
    /// returns the execution's one terminal result. Never panics on backend output;
    /// never returns without a result.
    pub async fn run(
        &self,
        request: ContractRequest,
        primary: &Resolved,
        options: RunOptions,
    ) -> ContractResult {
        if request.execution_id.trim().is_empty() {
            return refused(
                ErrorCode::Internal,
                "execution_id is empty; the caller must choose one (and reuse it for retries)",
            );
        }
        // Structured output: the schema is compiled once, before anything is journaled
        // or dispatched; a schema that is itself invalid is the caller's mistake.
        let schema = match compile_schema(&request) {
            Ok(schema) => schema,
            Err(why) => return refused(ErrorCode::Internal, format!("not started: {why}")),
        };
        let prior = match &self.journal {
            None => Default::default(),
            Some(journal) => {
                match journal
                    .execution_started(&primary.name, &request, now())
                    .await
                {
                    Ok(prior) => prior,
                    // Also how a refusal to continue a finished execution
                    // (`may_continue`) arrives: it names the id, outcome and side
                    // effects.
                    Err(e) => return refused(ErrorCode::Internal, format!("not started: {e}")),
                }
            }
        };
        let plan = Plan {
            events: &options.events,
            cancellation: &options.cancellation,
            step_retries: options.step_retries,
            fallback: options.fallback.as_ref(),
            resume: None,
        };
        self.drive(request, primary, prior, schema, plan).await
    }

    /// Resumes execution `execution_id` on `backend`, inside the session an earlier
    /// attempt's backend reported, with `continuation` as the prompt of the new
    /// attempt. The caller decides to resume (invariant 5); the runtime runs exactly
    /// one attempt — no step retry, no fallback — journaled as the next attempt of the
    /// same execution, under the execution's deadline (`options.deadline` may only
    /// shorten it) and what is left of its token budget.
    ///
    /// Refused before anything is journaled or dispatched (`failed`, side effects
    /// `none`): without a journal; when `backend` has not *verified* `resume`
    /// (`agent.missing_capability`, as the resolver refuses a missing capability); and
    /// whatever the journal refuses in the transaction that claims the execution — not
    /// journaled, succeeded, still running under a live owner, no session handle, or
    /// journaled on another backend (`agent.internal`, as `run` reports the journal's
    /// refusals: the contract has no "invalid request" code, and an unknown code would
    /// read as `unknown` — "side effects may have happened" — to Go consumers).
    ///
    /// Once claimed, a result that is not `succeeded` always says side effects
    /// `possible`: the conversation it continues has already acted, and `none` would
    /// license a step retry or a fallback that replays it.
    pub async fn resume(
        &self,
        execution_id: &str,
        continuation: &str,
        backend: &Resolved,
        options: ResumeOptions,
    ) -> ContractResult {
        if execution_id.trim().is_empty() {
            return refused(
                ErrorCode::Internal,
                "execution_id is empty: nothing to resume",
            );
        }
        if continuation.trim().is_empty() {
            return refused(
                ErrorCode::Internal,
                "not resumed: the continuation prompt is empty",
            );
        }
        if !backend.verification.verified.contains(&Capability::Resume) {
            return refused(
                ErrorCode::MissingCapability,
                format!(
                    "not resumed: backend `{}` has not verified `resume`; nothing was dispatched",
                    backend.name
                ),
            );
        }
        let Some(journal) = &self.journal else {
            return refused(
                ErrorCode::Internal,
                "not resumed: resume reads the execution from a journal, and this runtime has none",
            );
        };
        let point = match journal
            .execution_resumed(execution_id, &backend.name, now())
            .await
        {
            Ok(point) => point,
            Err(e) => return refused(ErrorCode::Internal, format!("not resumed: {e}")),
        };
        // The journal has claimed the execution for this process: from here every path
        // ends in `execution_finished` (in `drive`), never in a bare return.
        let mut request = point.request;
        request.execution_id = execution_id.to_owned();
        let original_prompt = std::mem::replace(&mut request.prompt, continuation.to_owned());
        request.budget.deadline = earliest(request.budget.deadline, options.deadline);
        let resume = ResumeFrom {
            session: point.session,
            attempt: point.session_attempt,
            original_prompt,
        };
        let schema = match compile_schema(&request) {
            Ok(schema) => schema,
            Err(why) => {
                // Compiled when the execution started; failing now means the journaled
                // request is not what was run. Settled like any resumed failure.
                let mut result = ContractResult::failed(Error::new(
                    ErrorCode::Internal,
                    format!("not resumed: the journaled request's {why}"),
                    SideEffects::Possible,
                ));
                self.finish(execution_id, &mut result).await;
                return result;
            }
        };
        let plan = Plan {
            events: &options.events,
            cancellation: &options.cancellation,
            step_retries: 0,
            fallback: None,
            resume: Some(resume),
        };
        self.drive(request, backend, point.prior, schema, plan)
            .await
    }

    /// The attempt loop of one execution, after the journal has recorded its start
    /// (or its resume): one deadline for every attempt, retries and fallback only as
    /// `plan` allows and only after a failure without side effects, then the end.
    async fn drive(
        &self,
        mut request: ContractRequest,
        primary: &Resolved,
        prior: PriorAttempts,
        schema: Option<structured::Schema>,
        plan: Plan<'_>,
    ) -> ContractResult {
        // One deadline for all attempts, including attempts made by earlier processes.
        request.budget.deadline = earliest(request.budget.deadline, prior.deadline);
        let watchdog = request.budget.deadline.map(|deadline| {
            let cancellation = plan.cancellation.clone();
            tokio::spawn(async move {
                let wait = (deadline - now()).max(time::Duration::ZERO);
                tokio::time::sleep(wait.unsigned_abs()).await;
                cancellation.cancel(CancelCause::Deadline);
            })
        });

        let mut usage = prior.usage;
        let mut attempt = prior.attempts;
        let mut retries_left = plan.step_retries;
        let mut backend = primary;
        let mut fell_back = false;
        let result = loop {
            attempt = attempt.saturating_add(1);
            let result = match self.preflight(&request, backend, usage, plan.cancellation) {
                Err(refusal) => *refusal,
                Ok(attempt_request) => {
                    self.attempt(&attempt_request, backend, attempt, &plan, schema.as_ref())
                        .await
                }
            };
            usage = usage.plus(result.usage);
            if !replay_allowed(&result) || plan.cancellation.is_cancelled() {
                break result;
            }
            if retries_left > 0 {
                retries_left -= 1;
                continue;
            }
            match plan.fallback {
                Some(fallback) if !fell_back => {
                    fell_back = true;
                    backend = fallback;
                }
                _ => break result,
            }
        };
        if let Some(watchdog) = watchdog {
            watchdog.abort();
        }
        let mut result = result;
        result.usage = usage;
        if let Some(resume) = &plan.resume {
            resumed_side_effects(&mut result, resume);
        }
        self.finish(&request.execution_id, &mut result).await;
        result
    }

    /// Names the result's execution and records its end; a failure to record it is
    /// noted in `logs`.
    async fn finish(&self, execution_id: &str, result: &mut ContractResult) {
        result.execution_id = execution_id.to_owned();
        if let Some(journal) = &self.journal
            && let Err(e) = journal
                .execution_finished(execution_id, result, now())
                .await
        {
            append_log(result, &format!("journal: end not recorded: {e}"));
        }
    }

    /// Checks what must hold before dispatching an attempt and returns the request
    /// the attempt sees (its token budget reduced by what earlier attempts spent).
    fn preflight(
        &self,
        request: &ContractRequest,
        backend: &Resolved,
        spent: Usage,
        cancellation: &Cancellation,
    ) -> Result<ContractRequest, Box<ContractResult>> {
        // A schema asks the backend for structured output; one that has not verified it
        // would be handed a request it cannot honour (the runtime would still catch
        // the answer, but the program was never asked).
        if request.output_schema.is_some()
            && !backend
                .verification
                .verified
                .contains(&Capability::StructuredOutput)
        {
            return Err(Box::new(ContractResult::failed(Error::new(
                ErrorCode::MissingCapability,
                format!(
                    "backend `{}` has not verified `structured-output`, and the request has an output_schema",
                    backend.name
                ),
                SideEffects::None,
            ))));
        }
        // The watchdog task may not have run yet: a deadline already past is checked
        // here, so nothing is dispatched after it.
        if request.budget.deadline.is_some_and(|d| d <= now()) {
            cancellation.cancel(CancelCause::Deadline);
        }
        if let Some(cause) = cancellation.cause() {
            let (outcome_code, why) = match cause {
                CancelCause::Deadline => (ErrorCode::DeadlineExceeded, "the deadline passed"),
                CancelCause::Caller => (ErrorCode::Canceled, "the caller canceled"),
            };
            return Err(Box::new(ContractResult::with_error(
                Outcome::Canceled,
                Error::new(
                    outcome_code,
                    format!("{why} before the attempt was dispatched"),
                    SideEffects::None,
                ),
            )));
        }
        let mut attempt_request = request.clone();
        let budget = &mut attempt_request.budget;
        for (limit, used, what) in [
            (&mut budget.max_prompt_tokens, spent.prompt_tokens, "prompt"),
            (
                &mut budget.max_completion_tokens,
                spent.completion_tokens,
                "completion",
            ),
        ] {
            if *limit == 0 {
                continue;
            }
            if used >= *limit {
                return Err(Box::new(ContractResult::failed(Error::new(
                    ErrorCode::BudgetExceeded,
                    format!(
                        "{what} tokens spent by earlier attempts ({used}) reach the budget ({limit})"
                    ),
                    SideEffects::None,
                ))));
            }
            *limit -= used;
        }
        Ok(attempt_request)
    }

    async fn attempt(
        &self,
        request: &ContractRequest,
        backend: &Resolved,
        attempt: u32,
        plan: &Plan<'_>,
        schema: Option<&structured::Schema>,
    ) -> ContractResult {
        let id = &request.execution_id;
        if let Some(journal) = &self.journal {
            if let Err(e) = journal
                .attempt_started(id, attempt, &backend.name, now())
                .await
            {
                return ContractResult::failed(Error::new(
                    ErrorCode::Internal,
                    format!("attempt not started: cannot record it: {e}"),
                    SideEffects::None,
                ));
            }
            self.note(id, attempt, AttemptState::Running, &backend.name)
                .await;
        }
        let root = (!request.workspace.root.is_empty())
            .then(|| std::path::PathBuf::from(&request.workspace.root));
        let before = snapshot(root.clone()).await;

        // Events: backend → our channel → consumer task → caller's sink, in order.
        let (sink, receiver) = EventSink::channel();
        let (close, closed) = tokio::sync::oneshot::channel::<()>();
        let forward_to = plan.events.clone();
        let consumer = tokio::spawn(async move {
            let mut tools = Vec::new();
            let mut events = Drain::new(receiver, closed);
            while let Some(event) = events.next().await {
                if event.kind == EventKind::ToolExecStart {
                    tools.push(event.tool.clone());
                }
                forward_to.emit(event);
            }
            tools
        });
        // Session handles: backend → channel → recorder task → journal, each written
        // the moment it arrives (not at the attempt's end), so a runner killed with
        // SIGKILL a moment later still leaves the handle behind. The recorder is
        // joined before `attempt_finished`, so a handle never lands after its attempt
        // is settled.
        let (session, sessions) = self.session_recorder(id, attempt);

        let cancellation = plan.cancellation.child();
        let ctx = ExecutionContext {
            cancellation: cancellation.clone(),
            events: sink,
            attempt,
            session,
            resume: plan.resume.clone(),
        };
        let execution = backend.backend.execute(request, ctx);
        tokio::pin!(execution);
        // The journal must show `canceling` for every attempt whose cancellation fired
        // before its outcome was settled, whoever noticed first. Two orderings need
        // care, and each has its own guard:
        // * cancel fired, then both branches are ready at the next poll: `biased`
        //   polls the cancel branch first, so it wins deterministically (an unbiased
        //   select picked at random, and lost the `canceling` row about half the time
        //   the backend's own teardown finished within that poll);
        // * cancel fired *while* the backend was being polled (the deadline watchdog
        //   runs on another worker) and the backend returned in that same poll: the
        //   cancel branch had already been seen pending, so the state is checked again
        //   once the result is in hand, before it is settled.
        // Decision: a cancel that lands after the backend produced its result but
        // before the runtime settled it is still recorded — the request was made
        // while the attempt was unsettled, and `settle` reads the cause at the same
        // point — rather than guessing, from timing we cannot observe, whether the
        // backend saw it. The outcome is whatever the backend reported (a success
        // stays a success); only the history gains the request.
        let mut canceling_recorded = false;
        let mut result = tokio::select! {
            biased;
            _ = cancellation.cancelled() => {
                canceling_recorded = true;
                self.note(id, attempt, AttemptState::Canceling, cause_text(cancellation.cause())).await;
                match tokio::time::timeout(self.cancel_timeout, &mut execution).await {
                    Ok(result) => result,
                    Err(_) => ContractResult::with_error(Outcome::Unknown, Error::new(
                        cause_code(cancellation.cause()),
                        format!("{CANCEL_REQUESTED}: backend `{}` did not return within {:?} after the cancel", backend.name, self.cancel_timeout),
                        SideEffects::Possible,
                    )),
                }
            }
            result = &mut execution => result,
        };
        // Read once: the cause `settle` uses and the `canceling` row must agree.
        let cause = cancellation.cause();
        if !canceling_recorded && let Some(cause) = cause {
            self.note(
                id,
                attempt,
                AttemptState::Canceling,
                cause_text_returned(cause),
            )
            .await;
        }
        let _ = close.send(());
        let tools = consumer.await.unwrap_or_default();
        for problem in sessions.finish().await {
            append_log(&mut result, &problem);
        }
        let after = snapshot(root.clone()).await;
        let changes = match (&before, &after) {
            (Some(before), Some(after)) => Some(after.changes_since(before)),
            _ => None,
        };

        settle(
            &mut result,
            request,
            backend,
            cause,
            changes.as_ref(),
            &tools,
            schema,
        );
        if let Some(journal) = &self.journal
            && let Err(e) = journal.attempt_finished(id, attempt, &result, now()).await
        {
            append_log(
                &mut result,
                &format!("journal: attempt end not recorded: {e}"),
            );
        }
        result
    }

    /// The reporter handed to the backend, and the task that journals what it reports.
    fn session_recorder(&self, id: &str, attempt: u32) -> (SessionReporter, SessionRecorder) {
        let Some(journal) = self.journal.clone() else {
            return (SessionReporter::discard(), SessionRecorder(None));
        };
        let (reporter, receiver) = SessionReporter::channel();
        let (close, closed) = tokio::sync::oneshot::channel::<()>();
        let id = id.to_owned();
        let task = tokio::spawn(async move {
            let mut problems = Vec::new();
            let mut handles = Drain::new(receiver, closed);
            while let Some(handle) = handles.next().await {
                if let Err(e) = journal.session_reported(&id, attempt, &handle, now()).await {
                    tracing::warn!(execution_id = id, attempt, %e, "session handle not journaled");
                    problems.push(format!(
                        "journal: the session handle of attempt {attempt} was not recorded: {e}"
                    ));
                }
            }
            problems
        });
        (reporter, SessionRecorder(Some((close, task))))
    }

    async fn note(&self, id: &str, attempt: u32, state: AttemptState, note: &str) {
        if let Some(journal) = &self.journal
            && let Err(e) = journal.transition(id, attempt, state, note, now()).await
        {
            tracing::warn!(execution_id = id, attempt, %e, "journal transition not recorded");
        }
    }
}

/// The running recorder of one attempt's session handles.
struct SessionRecorder(
    Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Vec<String>>,
    )>,
);

impl SessionRecorder {
    /// Records what is still buffered, then stops; returns what could not be recorded.
    async fn finish(self) -> Vec<String> {
        let Some((close, task)) = self.0 else {
            return Vec::new();
        };
        let _ = close.send(());
        task.await.unwrap_or_default()
    }
}

/// A receiver read until its senders are gone or `closed` fires; then what is
/// already buffered is still taken and anything later refused. A backend may keep a
/// sender alive in a task of its own after it returned: the attempt must not wait
/// for that.
struct Drain<T> {
    receiver: UnboundedReceiver<T>,
    closed: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl<T> Drain<T> {
    fn new(receiver: UnboundedReceiver<T>, closed: tokio::sync::oneshot::Receiver<()>) -> Self {
        Drain {
            receiver,
            closed: Some(closed),
        }
    }

    async fn next(&mut self) -> Option<T> {
        if let Some(closed) = &mut self.closed {
            tokio::select! {
                biased;
                item = self.receiver.next() => return item,
                _ = closed => {
                    // The attempt returned: take what is buffered, refuse the rest.
                    self.receiver.close();
                    self.closed = None;
                }
            }
        }
        self.receiver.next().await
    }
}

/// A refusal before anything was journaled or dispatched.
fn refused(code: ErrorCode, reason: impl Into<String>) -> ContractResult {
    ContractResult::failed(Error::new(code, reason, SideEffects::None))
}

/// The request's `output_schema`, compiled (or why it is no schema).
fn compile_schema(request: &ContractRequest) -> Result<Option<structured::Schema>, String> {
    request
        .output_schema
        .as_ref()
        .map(structured::check_schema)
        .transpose()
}

/// The earlier of two optional deadlines.
fn earliest(a: Option<OffsetDateTime>, b: Option<OffsetDateTime>) -> Option<OffsetDateTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A resumed execution that did not succeed may have acted in any attempt of the
/// conversation it continued, so its side effects are `possible` whatever the last
/// attempt saw (a `none` would license a replay after side effects, invariant 5).
fn resumed_side_effects(result: &mut ContractResult, resume: &ResumeFrom) {
    if result.outcome == Outcome::Succeeded {
        return;
    }
    if let Some(err) = result.err.as_mut()
        && err.side_effects != SideEffects::Possible
    {
        err.side_effects = SideEffects::Possible;
        let note = format!(
            "side effects: possible — this execution was resumed from attempt {}'s session, which may have acted",
            resume.attempt
        );
        append_log(result, &note);
    }
}

/// Whether the result allows replaying the work (a step retry or a fallback): only
/// a failure confirmed to have had no side effects.
pub fn replay_allowed(result: &ContractResult) -> bool {
    result.outcome == Outcome::Failed
        && result
            .err
            .as_ref()
            .is_some_and(|e| e.side_effects == SideEffects::None)
}

/// Turns what the backend said into what the contract allows the runtime to say.
fn settle(
    result: &mut ContractResult,
    request: &ContractRequest,
    backend: &Resolved,
    cause: Option<CancelCause>,
    changes: Option<&Changes>,
    tools: &[String],
    schema: Option<&structured::Schema>,
) {
    let mut observed = Vec::new();
    if let Some(changes) = changes {
        if !changes.paths.is_empty() {
            let shown: Vec<String> = changes
                .paths
                .iter()
                .take(20)
                .map(|p| p.display().to_string())
                .collect();
            let more = changes.paths.len().saturating_sub(shown.len());
            let tail = if more > 0 {
                format!(" (+{more} more)")
            } else {
                String::new()
            };
            observed.push(format!("workspace changed: {}{tail}", shown.join(", ")));
        }
        if let Some(why) = &changes.inconclusive {
            observed.push(format!("workspace changes unknown: {why}"));
        }
    }
    if !tools.is_empty() {
        observed.push(format!("tools run: {}", tools.join(", ")));
    }
    for line in &observed {
        append_log(result, line);
    }
    let effects = if observed.is_empty() {
        SideEffects::None
    } else {
        SideEffects::Possible
    };

    result.outcome = result.outcome.effective();
    match result.outcome {
        Outcome::Succeeded => {
            if let Some(err) = result.err.take() {
                result.outcome = Outcome::Unknown;
                result.err = Some(Error::new(
                    ErrorCode::UnknownOutcome,
                    format!("backend reported success together with an error ({err})"),
                    SideEffects::Possible,
                ));
                return;
            }
            if request.required.contains(&Capability::Text) && result.text.trim().is_empty() {
                fail(
                    result,
                    ErrorCode::EmptyOutput,
                    "the backend returned no text, and text is required".into(),
                    effects,
                );
                return;
            }
            if let Some(schema) = schema
                && let Err(why) = schema.check_text(&result.text)
            {
                // Not returned: a failed run's text is not its answer (see `structured`).
                let size = result.text.len();
                result.text.clear();
                append_log(
                    result,
                    &format!(
                        "structured output rejected: the final text ({size} bytes) is not returned"
                    ),
                );
                fail(result, ErrorCode::MissingDeliverable, why, effects);
                return;
            }
            if !request.targets.is_empty() {
                let Some(root) =
                    (!request.workspace.root.is_empty()).then_some(&request.workspace.root)
                else {
                    fail(
                        result,
                        ErrorCode::PathOutsideWorkspace,
                        "targets were requested but the workspace has no root".into(),
                        effects,
                    );
                    return;
                };
                match deliverables::read_targets(
                    std::path::Path::new(root),
                    &request.targets,
                    effects,
                ) {
                    Ok(files) => result.files = files,
                    Err(err) => {
                        result.files.clear();
                        result.outcome = Outcome::Failed;
                        result.err = Some(err);
                    }
                }
            }
        }
        Outcome::Failed => {
            let err = result.err.get_or_insert_with(|| {
                Error::new(
                    ErrorCode::Internal,
                    format!("backend `{}` failed without saying why", backend.name),
                    effects,
                )
            });
            raise(&mut err.side_effects, effects);
            result.files.clear();
        }
        Outcome::Canceled => {
            let cancel_verified = backend.verification.verified.contains(&Capability::Cancel);
            let err = result
                .err
                .get_or_insert_with(|| Error::new(cause_code(cause), "canceled", effects));
            raise(&mut err.side_effects, effects);
            if cause == Some(CancelCause::Deadline) && err.code == ErrorCode::Canceled {
                err.code = ErrorCode::DeadlineExceeded;
            }
            if !cancel_verified {
                // Invariant 4: without verified cancellation, "canceled" is a claim we
                // cannot stand behind.
                result.outcome = Outcome::Unknown;
                err.side_effects = SideEffects::Possible;
                err.reason = format!(
                    "{CANCEL_REQUESTED}: backend `{}` has no verified cancel capability ({})",
                    backend.name, err.reason
                );
            }
            result.files.clear();
        }
        _ => {
            // Unknown (and anything unrecognised, already mapped to unknown).
            result.outcome = Outcome::Unknown;
            let err = result.err.get_or_insert_with(|| {
                Error::new(
                    ErrorCode::UnknownOutcome,
                    "the backend could not confirm the outcome",
                    SideEffects::Possible,
                )
            });
            err.side_effects = SideEffects::Possible;
            if cause == Some(CancelCause::Deadline) && err.code == ErrorCode::Canceled {
                err.code = ErrorCode::DeadlineExceeded;
            }
            result.files.clear();
        }
    }
}

fn fail(result: &mut ContractResult, code: ErrorCode, reason: String, effects: SideEffects) {
    result.outcome = Outcome::Failed;
    result.files.clear();
    result.err = Some(Error::new(code, reason, effects));
}

/// Side effects only ever go up: observed effects override a backend's "none".
fn raise(current: &mut SideEffects, observed: SideEffects) {
    if observed == SideEffects::Possible {
        *current = SideEffects::Possible;
    }
}

/// The error code for a cancel with `cause`.
pub fn cause_code(cause: Option<CancelCause>) -> ErrorCode {
    match cause {
        Some(CancelCause::Deadline) => ErrorCode::DeadlineExceeded,
        _ => ErrorCode::Canceled,
    }
}

fn cause_text(cause: Option<CancelCause>) -> &'static str {
    match cause {
        Some(CancelCause::Deadline) => "deadline exceeded",
        _ => "canceled by the caller",
    }
}

/// The note for a cancel first seen once the backend had already returned.
fn cause_text_returned(cause: CancelCause) -> &'static str {
    match cause {
        CancelCause::Deadline => "deadline exceeded (as the backend returned)",
        CancelCause::Caller => "canceled by the caller (as the backend returned)",
    }
}

fn append_log(result: &mut ContractResult, line: &str) {
    if !result.logs.is_empty() && !result.logs.ends_with('\n') {
        result.logs.push('\n');
    }
    result.logs.push_str(line);
}

async fn snapshot(root: Option<std::path::PathBuf>) -> Option<Snapshot> {
    let root = root?;
    // A small workspace is walked right here: handing it to the blocking pool costs two
    // thread hand-offs, more than the walk itself (and on a loaded machine each hand-off
    // can wait for a CPU). A big one goes to the blocking pool, so no runtime thread
    // stalls on it; the partial walk is thrown away.
    if let Some(snapshot) = Snapshot::take_small(&root, crate::workspace::INLINE_ENTRIES) {
        return Some(snapshot);
    }
    tokio::task::spawn_blocking(move || Snapshot::take(&root))
        .await
        .ok()
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}
