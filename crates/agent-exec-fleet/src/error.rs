//! Everything the fleet can refuse or fail at, each with the words a user needs.

use agent_exec_journal::JournalError;

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The database did not answer (or not in time). The location is redacted.
    #[error(
        "journal {location}: cannot connect: {reason}; hint: is PostgreSQL running and the URL right?"
    )]
    Connect { location: String, reason: String },
    #[error("journal {location}: {source}")]
    Postgres {
        location: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error(
        "journal {location}: the fleet tables have schema version {found}, this agent-exec understands up to {supported}; hint: upgrade agent-exec"
    )]
    NewerSchema {
        location: String,
        found: i64,
        supported: i64,
    },
    #[error("journal {location}: the job queue: {reason}")]
    Queue { location: String, reason: String },
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(
        "the fleet needs a postgres:// journal URL (an SQLite file cannot be shared by machines)"
    )]
    NotPostgres,
    #[error(
        "unknown backend `{name}`: no worker of this fleet has advertised it{}",
        if known.is_empty() { "; hint: start `agent-exec worker --journal URL` first".to_owned() } else { format!("; known: {}", known.join(", ")) }
    )]
    UnknownBackend { name: String, known: Vec<String> },
    #[error(
        "execution {execution_id:?} is already {state} in the fleet; it is not submitted twice; hint: `agent-exec wait {execution_id}`, or {}",
        agent_exec_journal::NEW_ID_HINT
    )]
    AlreadyActive { execution_id: String, state: String },
    #[error("execution {0:?} is not in the fleet or the journal")]
    NoSuchExecution(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("worker: {0}")]
    Worker(String),
    #[error(
        "stored data for worker {worker_id:?} is damaged: {reason}; hint: repair or delete that worker's row in agent_exec_fleet_workers"
    )]
    CorruptWorker { worker_id: String, reason: String },
    #[error("stored data for execution {execution_id:?} is damaged: {reason}")]
    Corrupt {
        execution_id: String,
        reason: String,
    },
}
