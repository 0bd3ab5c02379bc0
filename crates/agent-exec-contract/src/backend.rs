//! The backend trait and what an execution is handed besides its request.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use futures::channel::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::{ResumeFrom, SessionReporter};
use crate::types::{BackendDescriptor, Capability, ContractRequest, ContractResult, Event, Usage};

/// One agent backend (Go `ContractBackend`).
///
/// An implementation must:
/// * return promptly once [`ExecutionContext::cancellation`] fires, with `canceled`
///   only when it has *confirmed* the work stopped (model request, tools and every
///   subprocess), else `unknown` with a reason starting with
///   [`crate::CANCEL_REQUESTED`];
/// * always return a result — there is no `Result` around it: a business end state is
///   an outcome, not a Rust error;
/// * hold no mutable session state across executions (connection pools are fine);
/// * never widen the tool policy, nor read outside the workspace root.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Identity and the capabilities the backend *declares*. What counts for
    /// resolution is what [`Backend::verify`] confirms.
    fn descriptor(&self) -> BackendDescriptor;

    /// Probes the backend (program present, version, speaks the expected format)
    /// and reports which declared capabilities are verified. Must not run an agent.
    async fn verify(&self) -> Verification;

    /// Probes what `request` asks for, under the probe's own execution id. The
    /// default runs [`Backend::verify`] (every declared capability; no tokens to
    /// report). A backend whose probes cost (a paid model request each) overrides it:
    /// it always proves the backend is there and speaks its format, proves every
    /// capability in [`ProbeRequest::required`], and may leave the other declared
    /// capabilities unproven — neither verified nor a problem.
    async fn probe(&self, request: &ProbeRequest) -> Probe {
        let _ = request;
        Probe {
            verification: self.verify().await,
            usage: Usage::default(),
        }
    }

    /// A fingerprint of everything [`Backend::verify`] depends on (program file,
    /// configuration, adapter version), for a [`crate::VerificationCache`]: while the
    /// key is unchanged, a past verification stands for a new probe, for what it
    /// verified. `None` (the default): never cached, every process probes. The key may
    /// be stored in clear, so it must hold no credential: hash anything secret.
    fn verification_key(&self) -> Option<String> {
        None
    }

    /// Runs one attempt of `request`.
    async fn execute(&self, request: &ContractRequest, ctx: ExecutionContext) -> ContractResult;
}

/// What a probe established about a backend.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verification {
    /// Capabilities confirmed by the probe (a subset of the declared ones).
    pub verified: Vec<Capability>,
    /// Version the probe saw (program `--version`, server model id, ...).
    pub adapter_version: String,
    /// Why a declared capability is not verified, with what to install or fix.
    pub problems: Vec<String>,
}

impl Verification {
    /// A probe that failed for `problem`: nothing is verified.
    pub fn failed(problem: impl Into<String>) -> Self {
        Verification {
            verified: Vec::new(),
            adapter_version: String::new(),
            problems: vec![problem.into()],
        }
    }
}

/// What a probe is asked for ([`Backend::probe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRequest {
    /// The probe's own execution id ([`probe_execution_id`]): what the probe sends
    /// where a run would send its id (a provider's request header). Never a run's id,
    /// never empty.
    pub execution_id: String,
    /// `None`: every declared capability (`agent-exec backends --verify`).
    /// `Some(caps)`: what a run requires.
    pub required: Option<Vec<Capability>>,
}

/// What a probe established, and what it cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    pub verification: Verification,
    /// Tokens the probe's own requests spent (zero for a probe that calls no model).
    pub usage: Usage,
}

/// A fresh probe execution id: `verify-` and a UUIDv7, so a provider's logs tell a
/// probe from a run and probes apart from each other.
pub fn probe_execution_id() -> String {
    format!("verify-{}", uuid::Uuid::now_v7())
}

/// Why an execution was asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelCause {
    /// The caller canceled (Ctrl-C, a parent task, ...): code `agent.canceled`.
    Caller,
    /// The shared deadline passed: code `agent.deadline_exceeded`.
    Deadline,
}

/// A cancellation token that remembers the first cause it was fired for.
#[derive(Debug, Clone, Default)]
pub struct Cancellation {
    token: CancellationToken,
    cause: Arc<OnceLock<CancelCause>>,
}

impl Cancellation {
    /// A fresh, unfired cancellation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the cancellation; the first cause wins.
    pub fn cancel(&self, cause: CancelCause) {
        let _ = self.cause.set(cause);
        self.token.cancel();
    }

    /// Whether it has fired.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves when it fires.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    /// The cause, once fired. A token cancelled from outside (through
    /// [`Cancellation::token`]) counts as the caller's.
    pub fn cause(&self) -> Option<CancelCause> {
        if !self.token.is_cancelled() {
            return None;
        }
        Some(self.cause.get().copied().unwrap_or(CancelCause::Caller))
    }

    /// The underlying token, for code that composes tokio-util tokens.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// A child: fires when the parent fires (with the parent's cause), and can be
    /// fired alone without touching the parent.
    pub fn child(&self) -> Cancellation {
        Cancellation {
            token: self.token.child_token(),
            cause: Arc::clone(&self.cause),
        }
    }
}

/// Where a backend sends events: in order, never blocking.
///
/// Decision: an unbounded channel drained by a consumer task, not a bounded one
/// with a drop or coalesce policy. Events are the execution's own output, already
/// bounded by what the backend reads (and the text it accumulates anyway), and
/// dropping a frame would make the stream lie; a bounded channel would make a slow
/// consumer stall the agent. `emit` therefore never waits and never loses an event
/// while the receiver lives; after the receiver is gone, events are discarded.
#[derive(Debug, Clone)]
pub struct EventSink {
    sender: Option<mpsc::UnboundedSender<Event>>,
}

impl EventSink {
    /// A sink and its receiving end.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<Event>) {
        let (sender, receiver) = mpsc::unbounded();
        (
            EventSink {
                sender: Some(sender),
            },
            receiver,
        )
    }

    /// A sink that drops everything (the caller asked for no process stream).
    pub fn discard() -> EventSink {
        EventSink { sender: None }
    }

    /// Sends `event` without blocking.
    pub fn emit(&self, event: Event) {
        if let Some(sender) = &self.sender {
            // A closed receiver means nobody listens any more; not an error of the run.
            let _ = sender.unbounded_send(event);
        }
    }
}

/// Everything an attempt gets besides its request.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// Fires on caller cancel or on the shared deadline.
    pub cancellation: Cancellation,
    /// Process events.
    pub events: EventSink,
    /// 1-based attempt number within the execution (same `execution_id`).
    pub attempt: u32,
    /// Where the backend reports its program's session handle, as soon as its stream
    /// shows it (see [`crate::session`]). A backend that declares `resume` must.
    pub session: SessionReporter,
    /// Set when the caller resumes the execution: continue this session instead of
    /// starting one. Only ever set for a backend that verified `resume`.
    pub resume: Option<ResumeFrom>,
}

impl ExecutionContext {
    /// A context for a single first attempt, with its own cancellation.
    pub fn new(events: EventSink) -> Self {
        ExecutionContext {
            cancellation: Cancellation::new(),
            events,
            attempt: 1,
            session: SessionReporter::discard(),
            resume: None,
        }
    }
}
