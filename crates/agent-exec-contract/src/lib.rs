//! # agent-exec-contract
//!
//! One execution contract through which a program dispatches work to interchangeable
//! agent backends, with honest outcomes. This crate is the Rust form of the normative
//! Go file `contract_spec.go` (`shared/seeds/003_…`): its types, its error codes, the
//! backend trait, the resolver, and the journal port. It knows no process, no
//! database, no HTTP and no concrete backend.
//!
//! ## Design
//!
//! * [`types`] and [`error`]: every Go type, encoding to exactly the JSON of its
//!   struct tags (`execution_id`, `session_scope`, `tool_policy`, `budget`,
//!   `side_effects`, `err`, `usage`, …), `omitempty` where Go has it, `Files` in
//!   base64. The Go encoder's quirks (a zero deadline is written, not omitted; `null`
//!   for nil slices) are reproduced in [`wire`], which documents each decision.
//! * [`Backend`]: async, handed an [`ExecutionContext`] holding a [`Cancellation`]
//!   (a tokio-util token that remembers whether the caller or the deadline fired it)
//!   and a never-blocking, order-preserving [`EventSink`].
//! * [`Registry`]: canonical names, aliases (`pi-native` → `agent-native`, with a
//!   deprecation warning), and required capabilities checked against what a backend's
//!   probe *verified*, not what it declares.
//! * [`JournalHook`]: the port a durable journal implements.
//! * [`session`]: resume — the backend's own session handle, reported while an
//!   attempt runs ([`SessionReporter`]) and handed back on resume ([`ResumeFrom`]).
//! * [`request_json`]: a request handed over as Go's JSON from outside (`--request`),
//!   refused with the field at fault.
//!
//! ## Invariants (the Go file's seven, which every implementation keeps)
//!
//! 1. An execution id is unique per logical execution; step retries and controlled
//!    fallback reuse it and share one budget and one deadline.
//! 2. The outcome is one of succeeded / failed / canceled / unknown; unknown is never
//!    silently turned into succeeded or failed ([`Outcome::effective`] reads an
//!    unrecognised value as unknown).
//! 3. One retry layer each: steps — the caller; transport — the adapter, bounded;
//!    turn limit — the runtime.
//! 4. Cancellation reaches the model, tools and subprocesses; a backend that cannot
//!    confirm it reports [`CANCEL_REQUESTED`] and stays unknown.
//! 5. After side effects or an unknown outcome, no unconditional replay on another
//!    backend: the caller decides from [`Error::side_effects`].
//! 6. The transcript is not the product's chat history; a [`SessionScope`] isolates
//!    and grants nothing across sessions.
//! 7. Workspace path limits are not an OS sandbox.
//!
//! The conformance suite that checks these against a real backend lives in
//! the test-only crate `agent-exec-conformance`: most invariants are about the runtime's
//! handling of a backend (attempts, deadlines, process trees, deliverables), which
//! this crate deliberately does not know.
//!
//! ## Deliberately not here
//!
//! No stub backend: nothing on the production path can resolve to one. No process
//! handling, no path containment (the runtime does both), no retries.

pub mod backend;
pub mod error;
pub mod journal;
pub mod redact;
pub mod request_json;
pub mod resolver;
pub mod session;
pub mod types;
pub mod wire;

pub use backend::{Backend, CancelCause, Cancellation, EventSink, ExecutionContext, Verification};
pub use error::{CANCEL_REQUESTED, Error, ErrorCode, SideEffects};
pub use journal::{
    AttemptState, JournalError, JournalHook, PriorAttempts, ResumePoint, may_continue,
};
pub use request_json::{MAX_REQUEST_BYTES, RequestJsonError, decode_request};
pub use resolver::{
    AGENT_NATIVE, Alias, CacheMode, PI_NATIVE_ALIAS, Registry, ResolveError, Resolved,
    VerificationCache,
};
pub use session::{MAX_SESSION_HANDLE_BYTES, ResumeFrom, SessionReporter, check_session_handle};
pub use types::{
    BackendDescriptor, Capability, ContractBudget, ContractRequest, ContractResult, Event,
    EventKind, Message, Outcome, SessionScope, ToolPolicy, Usage, WorkspaceHandle,
};

/// Re-exported so backends and callers name the same token type.
pub use tokio_util::sync::CancellationToken;

/// Re-exported: deadlines in the contract's API are `time::OffsetDateTime`.
pub use time;
