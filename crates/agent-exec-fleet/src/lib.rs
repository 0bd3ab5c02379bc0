//! # agent-exec-fleet
//!
//! `agent-exec` across machines: executions submitted from anywhere, run by a pool of
//! workers, on PostgreSQL — the server the fleet journal already uses — with the
//! contract's guarantees intact.
//!
//! ## Design
//! * **The queue is a library's, not ours.** `graphile_worker` (Rust port of
//!   Graphile Worker; `SKIP LOCKED` claims, LISTEN/NOTIFY wake-ups) over
//!   `tokio-postgres`, in its own schema [`db::QUEUE_SCHEMA`]. We configure away what
//!   the contract forbids: one attempt per job (`max_attempts = 1`, the handler always
//!   reports success to the queue), no dead-worker recovery (the library's would
//!   re-queue), a shutdown grace period the queue never reaches.
//! * **Routing by verified capability** with the queue's flag allowlist
//!   ([`flags`]).
//! * **The journal stays the record of truth** (`agent-exec-journal`, unchanged
//!   tables): the worker runs each job through the same `Runtime` as `run`, so
//!   attempts, transitions, outcomes and owners are journaled as for a local run.
//!   The fleet's own tables ([`store`]) hold what the journal does not: the queue state,
//!   the full result (text, files, logs), the events, the workers and their leases.
//! * **A dead worker's job is `unknown`, never retried** ([`sweep`]): a lease (a
//!   heartbeat every [`HEARTBEAT`], expired after [`LEASE`]) proves a worker gone
//!   across hosts; on its own host the journal's owner check proves it at once.
//! * Submit and cancel are one transaction each ([`submit`]): nothing half-enqueued,
//!   and a queued job is either removed or claimed, never both.
//!
//! ## Invariants
//! * An execution id is queued or running at most once in the fleet.
//! * No job runs twice: one queue attempt, and a start fenced by the fleet row.
//! * `unknown` is never turned into anything else; a late worker cannot overwrite
//!   what a sweep settled (its writes are fenced by worker id and state).
//!
//! ## Deliberately not done
//! * No re-verification of a running worker's backends (restart it after an upgrade).
//! * No TLS (as the journal): loopback, a Unix socket or a tunnel.
//! * No retention of finished jobs and events.

mod db;
mod error;
pub mod flags;
mod store;
pub mod submit;
pub mod sweep;
pub mod wait;
mod wake;
pub mod worker;

use std::time::Duration;

pub use db::{CANCEL_CHANNEL, CONNECT_TIMEOUT, DONE_CHANNEL, FleetDb, QUEUE_SCHEMA};
pub use error::FleetError;
pub use store::{JobRow, JobState, WorkerRow, WorkerState};
pub use submit::{CancelOutcome, cancel, submit};
pub use wait::{WaitEnd, wait};
pub use worker::{DEFAULT_POLL_INTERVAL, WorkerSettings, advertise, run_worker};

/// How often a worker renews its lease.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A worker whose lease is older than this is gone. With sweeps every few seconds a
/// dead worker's executions are `unknown` well within a minute of its death.
pub const LEASE: Duration = Duration::from_secs(20);
