//! The durable execution journal: SQLite by default, PostgreSQL for a fleet.
//!
//! # What it is for
//! Every execution that `agent-exec` runs is written here before anything else happens
//! and after everything else has happened: the execution id, each attempt (a step retry
//! or a controlled fallback reuses the id and gets the next attempt number), every state
//! transition, the outcome, the contract's `Error` and the token usage. `runs`,
//! `runs show` and resume read it back. [`Journal`] implements the contract's
//! `JournalHook` port, which is how the runtime writes to it.
//!
//! # Design
//! * One file by default: SQLite in WAL mode (readers never block the runner), every write
//!   one `BEGIN IMMEDIATE` transaction; the start of an execution is fsynced before any
//!   backend runs, later writes are crash-safe but not fsynced (see [`SqliteJournal`]). [`SqliteJournal`] is a
//!   synchronous API: its writes are short (one fsync at most) and callers on an async runtime may
//!   call it inline or through `spawn_blocking`.
//! * For a fleet, the same tables on PostgreSQL ([`PgJournal`], `tokio-postgres`, async).
//!   Not `sqlx`: its `sqlite` feature would link a second SQLite next to `rusqlite`.
//! * [`Journal`] is the one type callers hold; it chooses the store from a
//!   [`JournalLocation`] (a path, or a `postgres://` URL).
//!
//! # Invariants
//! * **Never a guess.** On open, every execution left `running`/`canceling` by a
//!   process that is provably gone becomes `unknown`, with error code
//!   `agent.unknown_outcome`, `side_effects: "possible"`, and a transition whose note says
//!   how we know the owner is gone. The owner is identified by host, boot id, pid and
//!   process start time (see [`owner`] for the decision and the lease not taken). An owner
//!   that is alive, or on another host, is left alone.
//! * A terminal state is never overwritten; only a new attempt under the same id moves the
//!   execution on, and the transition log keeps the history.
//! * Ids are data: they are only ever bound as SQL parameters, never spliced into SQL or
//!   used as paths. The journal stores what the caller gives it and does not interpret
//!   the contract's JSON beyond keeping it.
//! * Credentials never reach a message: PostgreSQL URLs are shown with the password cut.
//! * **Resume** (schema version 2): each attempt keeps the backend's session handle
//!   (`attempts.session_handle`, nullable), written the moment it is reported and only
//!   while the attempt runs. A resume ([`Journal::resume`], the port's
//!   `execution_resumed`) is one transaction: refused when the execution is not
//!   journaled, succeeded, running under a live owner, journaled on another backend,
//!   or has no handle on its backend; an orphan is marked `unknown` first; then it is
//!   claimed (owner = this process, `running`) with a transition naming the attempt
//!   whose session continues. [`Journal::resumable`] makes the same checks read only.
//!   A version-1 store is migrated in place on open; a newer one is refused.
//! * **Results kept** (schema version 3): the end of an execution keeps the result
//!   its caller got ([`KeptResult`]: the `ContractResult` JSON byte for byte, its
//!   deliverables within [`KEPT_FILES_CAP`]), and the runner may keep the tail of the
//!   output it streamed ([`OUTPUT_TAIL_CAP`]). A step retry or resume clears them
//!   until it ends. Versions 1 and 2 are migrated in place.
//! * **A cancel from another process** is a request recorded on the execution
//!   (`executions.cancel_request`) that the runner polls ([`Journal::cancel_request`]);
//!   see [`Journal::request_cancel`] for why not a signal.
//! * **One bad row is that row's problem.** Values are read back leniently; an open
//!   execution whose owner cannot be read (`owner_pid = -1`, text in an integer
//!   column) is left as it is with a warning naming it, and only an operation on that
//!   very execution is refused; every other command works.
//! * **Retention**: [`Journal::prune_ended_before`] deletes ended executions only.
//!
//! # Not done, deliberately
//! No automatic retention (pruning is asked for), no TLS for PostgreSQL (use a loopback server, socket or tunnel),
//! no heartbeat lease in the journal (so another host's orphaned attempts wait for an open
//! on that host — or, for fleet workers, for the fleet's lease, which `agent-exec-fleet`
//! keeps and settles through [`PgJournal::settle_orphan`]).

mod decide;
mod hook;
pub mod owner;
mod pg_connection;
mod postgres;
mod record;
mod sqlite;

use std::path::{Path, PathBuf};

pub use owner::ProcessIdentity;
pub use pg_connection::redact_url;
pub use pg_connection::{Notice, PgConnection};
pub use postgres::PgJournal;
pub use record::{
    AttemptRecord, CancelAsk, End, ExecutionRecord, ExecutionStart, ExecutionSummary,
    KEPT_FILES_CAP, KEPT_TEXT_CAP, KeptResult, OUTPUT_TAIL_CAP, Prior, Recovered, Resumable, State,
    TransitionRecord, Usage, tail_of,
};
pub use sqlite::SqliteJournal;

/// The hint of a refusal that another execution id would avoid. The journal does not
/// know how its caller was given the id, so it says it plainly; a front end replaces
/// exactly this text with its own way (`--execution-id`, a request's `execution_id`).
pub const NEW_ID_HINT: &str = "use a new execution id";

/// Everything that can go wrong reading or writing the journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("journal {location}: {source}")]
    Postgres {
        location: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("journal directory {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "journal {location} has schema version {found}, this agent-exec understands up to {supported}; hint: upgrade agent-exec"
    )]
    NewerSchema {
        location: String,
        found: i64,
        supported: i64,
    },
    #[error(
        "execution {execution_id:?} is still running in pid {pid} on {host}; hint: wait for it, or {NEW_ID_HINT}"
    )]
    Busy {
        execution_id: String,
        pid: u32,
        host: String,
    },
    #[error(
        "execution {execution_id:?} already ended {outcome} (side effects: {side_effects}); a step retry continues only a failed or canceled execution without side effects, so it is not run again; hint: {NEW_ID_HINT}"
    )]
    Finished {
        execution_id: String,
        outcome: String,
        side_effects: String,
    },
    #[error(
        "execution {execution_id:?} already succeeded: there is nothing to resume; hint: its result is in `agent-exec result {execution_id}` (everything about it: `agent-exec runs show {execution_id}`); for more work, start a new execution"
    )]
    AlreadySucceeded { execution_id: String },
    #[error(
        "execution {execution_id:?} has no session handle journaled for backend {backend} (the backend never reported one, or the runner died before it did), so it cannot be resumed inside the agent's conversation; hint: `agent-exec runs show {execution_id}` says what happened; start a new execution for the work that remains"
    )]
    NoSessionHandle {
        execution_id: String,
        backend: String,
    },
    #[error(
        "execution {execution_id:?} ran on backend {journaled}, not {requested}; resume continues the session on the backend that holds it"
    )]
    OtherBackend {
        execution_id: String,
        journaled: String,
        requested: String,
    },
    #[error("execution {0:?} is not in the journal")]
    NoSuchExecution(String),
    #[error("execution {execution_id:?} has no attempt {attempt}")]
    NoSuchAttempt { execution_id: String, attempt: u32 },
    #[error("execution {execution_id:?} attempt {attempt} is already {state}")]
    AlreadyTerminal {
        execution_id: String,
        attempt: u32,
        state: State,
    },
    #[error("journal: {0}")]
    Invalid(String),
}

/// Where a journal lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalLocation {
    Sqlite(PathBuf),
    Postgres(String),
}

impl JournalLocation {
    /// `postgres://…` and `postgresql://…` are PostgreSQL URLs; anything else is a path.
    pub fn parse(text: &str) -> JournalLocation {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            JournalLocation::Postgres(text.to_owned())
        } else {
            JournalLocation::Sqlite(PathBuf::from(text))
        }
    }

    /// The default: `$XDG_STATE_HOME/agent-exec/journal.sqlite3` (falling back to
    /// `~/.local/state`, then the platform data directory).
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(dirs::state_dir)
            .or_else(dirs::data_local_dir)?;
        Some(base.join("agent-exec").join("journal.sqlite3"))
    }
}

impl std::fmt::Display for JournalLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalLocation::Sqlite(path) => write!(f, "{}", path.display()),
            JournalLocation::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
}

/// Runs one operation on whichever store this journal is: the SQLite store's methods
/// are synchronous, PostgreSQL's async; both execute what `decide` decided. The one
/// place `Journal` tells its stores apart.
macro_rules! on_store {
    ($journal:expr, $j:ident => $call:expr) => {
        match $journal {
            Journal::Sqlite($j) => $call,
            Journal::Postgres($j) => $call.await,
        }
    };
}

/// The journal, on either store.
#[derive(Debug)]
pub enum Journal {
    Sqlite(SqliteJournal),
    Postgres(PgJournal),
}

impl Journal {
    /// Opens the journal and recovers orphaned attempts; returns what was recovered.
    pub async fn open(
        location: &JournalLocation,
    ) -> Result<(Journal, Vec<Recovered>), JournalError> {
        match location {
            JournalLocation::Sqlite(path) => {
                let (journal, recovered) = SqliteJournal::open(path)?;
                Ok((Journal::Sqlite(journal), recovered))
            }
            JournalLocation::Postgres(url) => {
                let (journal, recovered) = PgJournal::open(url).await?;
                Ok((Journal::Postgres(journal), recovered))
            }
        }
    }

    /// Opens an SQLite journal at `path` (no runtime needed).
    pub fn open_sqlite(path: &Path) -> Result<(Journal, Vec<Recovered>), JournalError> {
        let (journal, recovered) = SqliteJournal::open(path)?;
        Ok((Journal::Sqlite(journal), recovered))
    }

    /// The PostgreSQL journal, when that is the store (the fleet needs its extra
    /// operations; an SQLite journal cannot be shared by machines).
    pub fn as_postgres(&self) -> Option<&PgJournal> {
        match self {
            Journal::Postgres(j) => Some(j),
            Journal::Sqlite(_) => None,
        }
    }

    pub async fn start_execution(&self, start: &ExecutionStart<'_>) -> Result<Prior, JournalError> {
        on_store!(self, j => j.start_execution(start))
    }

    pub async fn start_attempt(
        &self,
        execution_id: &str,
        attempt: u32,
        backend: &str,
    ) -> Result<(), JournalError> {
        on_store!(self, j => j.start_attempt(execution_id, attempt, backend))
    }

    pub async fn transition(
        &self,
        execution_id: &str,
        attempt: u32,
        to: State,
        note: Option<&str>,
    ) -> Result<(), JournalError> {
        on_store!(self, j => j.transition(execution_id, attempt, to, note))
    }

    pub async fn finish_attempt(
        &self,
        execution_id: &str,
        attempt: u32,
        end: &End<'_>,
    ) -> Result<(), JournalError> {
        on_store!(self, j => j.finish_attempt(execution_id, attempt, end))
    }

    pub async fn finish_execution(
        &self,
        execution_id: &str,
        end: &End<'_>,
    ) -> Result<(), JournalError> {
        self.finish_execution_kept(execution_id, end, None).await
    }

    /// [`Journal::finish_execution`], keeping the result the caller got (what the
    /// runtime's `execution_finished` does).
    pub async fn finish_execution_kept(
        &self,
        execution_id: &str,
        end: &End<'_>,
        kept: Option<&KeptResult>,
    ) -> Result<(), JournalError> {
        on_store!(self, j => j.finish_execution_kept(execution_id, end, kept))
    }

    /// Asks the process running `execution_id` to cancel it; `by` says who asks
    /// (kept in the request and the transition log).
    ///
    /// Decision: a request recorded in the journal, which the runner polls, not a
    /// signal to the owner's pid. The journal is the one place both processes
    /// already share: the request works whatever user the canceller is (write
    /// access to the journal is the permission), is on record (`runs show` says who
    /// asked and when), cannot hit a reused pid, and does not depend on the runner's
    /// signal handler being installed (a SIGTERM that arrives first kills the runner
    /// outright). The cost: the runner reads one row every
    /// poll interval while it runs, and a cancel takes up to that long to act.
    pub async fn request_cancel(
        &self,
        execution_id: &str,
        by: &str,
    ) -> Result<CancelAsk, JournalError> {
        on_store!(self, j => j.request_cancel(execution_id, by))
    }

    /// The cancel request recorded for `execution_id` while it is running, if any.
    pub async fn cancel_request(&self, execution_id: &str) -> Result<Option<String>, JournalError> {
        on_store!(self, j => j.cancel_request(execution_id))
    }

    /// Keeps the last [`OUTPUT_TAIL_CAP`] bytes of `output`, the output the execution
    /// streamed.
    pub async fn record_output_tail(
        &self,
        execution_id: &str,
        output: &str,
    ) -> Result<(), JournalError> {
        on_store!(self, j => j.record_output_tail(execution_id, output))
    }

    /// Deletes the executions that ended before `cutoff` (with their attempts and
    /// transitions); running ones are kept whatever their age. Returns how many.
    pub async fn prune_ended_before(
        &self,
        cutoff: time::OffsetDateTime,
    ) -> Result<u64, JournalError> {
        let cutoff = rfc3339_fixed(cutoff);
        on_store!(self, j => j.prune_ended_before(&cutoff))
    }

    /// Records the session handle attempt `attempt` reported (checked again with
    /// `check_session_handle`: a refused one is never stored). The attempt must still
    /// be running.
    pub async fn record_session(
        &self,
        execution_id: &str,
        attempt: u32,
        session: &str,
    ) -> Result<(), JournalError> {
        on_store!(self, j => j.record_session(execution_id, attempt, session))
    }

    /// Whether `execution_id` could be resumed now, and on which backend and session:
    /// the checks [`JournalHook::execution_resumed`](agent_exec_contract::JournalHook)
    /// makes, read only (nothing is claimed or marked). A caller uses it to refuse
    /// early — before resolving and probing the backend; the claim checks again.
    pub async fn resumable(&self, execution_id: &str) -> Result<Resumable<()>, JournalError> {
        let ignore = |_: Option<&str>| Ok(());
        on_store!(self, j => j.resume(execution_id, None, false, ignore))
    }

    /// Claims `execution_id` for a resume on `backend` in one transaction (see
    /// [`JournalHook::execution_resumed`](agent_exec_contract::JournalHook)); `parse`
    /// turns the stored request into what the caller needs, inside the transaction,
    /// so a request that cannot be read refuses before anything is claimed.
    pub async fn resume<T>(
        &self,
        execution_id: &str,
        backend: &str,
        parse: impl FnOnce(Option<&str>) -> Result<T, JournalError> + Send,
    ) -> Result<Resumable<T>, JournalError> {
        on_store!(self, j => j.resume(execution_id, Some(backend), true, parse))
    }

    pub async fn list(&self, limit: u32) -> Result<Vec<ExecutionSummary>, JournalError> {
        on_store!(self, j => j.list(limit))
    }

    pub async fn show(&self, execution_id: &str) -> Result<Option<ExecutionRecord>, JournalError> {
        on_store!(self, j => j.show(execution_id))
    }

    pub async fn recover(&self) -> Result<Vec<Recovered>, JournalError> {
        on_store!(self, j => j.recover())
    }
}

/// UTC, fixed width (microseconds, `Z`), so stored timestamps also sort as text.
pub(crate) fn now_rfc3339() -> String {
    rfc3339_fixed(time::OffsetDateTime::now_utc())
}

/// `at` as the journal stores timestamps (see [`now_rfc3339`]).
fn rfc3339_fixed(at: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    at.to_offset(time::UtcOffset::UTC)
        .format(&format)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00.000000Z"))
}

/// Says that recovery left an open execution alone because its owner columns cannot
/// be read (a warning on stderr through `tracing`, which the CLI shows by default).
pub(crate) fn warn_unjudged(location: &str, execution_id: &str, problem: &str) {
    tracing::warn!(
        "journal {location}: execution {execution_id:?} is left as it is: {problem}, so whether its runner lives cannot be told; hint: if no agent-exec process runs it, repair or delete that row"
    );
}
