//! The fleet's connection to PostgreSQL: its own tables next to the journal's, the
//! queue's schema, and the LISTEN channels.
//!
//! The fleet keeps three tables (prefix `agent_exec_fleet_`, like the journal's
//! `agent_exec_`): `workers` (who is alive, what each verified, its lease), `jobs`
//! (one row per submitted execution: queued → running → done, the stored result) and
//! `events` (each execution's events in order, for `wait --events` on any machine).
//! The queue itself is the job-queue library's schema [`QUEUE_SCHEMA`].

use std::time::Duration;

use graphile_worker::WorkerUtils;
use graphile_worker::tokio_postgres::TokioPostgresDatabase;
use tokio::sync::Mutex;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::FleetError;

/// The queue library's schema in the fleet database.
pub const QUEUE_SCHEMA: &str = "agent_exec_queue";
/// The queue's task identifier for one execution.
pub const TASK: &str = "agent_exec_run";
/// NOTIFY channel: an execution asked to stop (payload: the execution id).
pub const CANCEL_CHANNEL: &str = "agent_exec_fleet_cancel";
/// NOTIFY channel: an execution reached its end (payload: the execution id).
pub const DONE_CHANNEL: &str = "agent_exec_fleet_done";
/// How long `connect` waits for a server that does not answer.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA_LOCK: i64 = 0x6167_6e74_666c_6565;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_exec_fleet_workers (
    worker_id       TEXT PRIMARY KEY,
    queue_worker_id TEXT,
    host            TEXT NOT NULL,
    boot_id         TEXT NOT NULL,
    pid             BIGINT NOT NULL,
    start_ticks     BIGINT NOT NULL,
    concurrency     INTEGER NOT NULL,
    backends_json   TEXT NOT NULL,
    state           TEXT NOT NULL,
    note            TEXT,
    started_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS agent_exec_fleet_jobs (
    execution_id     TEXT PRIMARY KEY,
    backend          TEXT NOT NULL,
    required_json    TEXT NOT NULL,
    request_json     TEXT NOT NULL,
    state            TEXT NOT NULL,
    queue_job_id     BIGINT,
    worker_id        TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    result_json      TEXT,
    submitted_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS agent_exec_fleet_jobs_running
    ON agent_exec_fleet_jobs(worker_id) WHERE state = 'running';
CREATE TABLE IF NOT EXISTS agent_exec_fleet_events (
    execution_id TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    event_json   TEXT NOT NULL,
    PRIMARY KEY (execution_id, seq)
);
";

/// One connection to the fleet database (plus the queue library's pool, opened lazily).
pub struct FleetDb {
    pub(crate) client: Mutex<Client>,
    pub(crate) location: String,
    pub(crate) url: String,
    connection_task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FleetDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetDb")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Drop for FleetDb {
    fn drop(&mut self) {
        self.connection_task.abort();
    }
}

/// Connects within [`CONNECT_TIMEOUT`]; the error names the redacted location only.
pub(crate) async fn connect_raw(
    url: &str,
) -> Result<
    (
        Client,
        tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
    ),
    FleetError,
> {
    let location = agent_exec_journal::redact_url(url);
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio_postgres::connect(url, NoTls)).await {
        Ok(Ok(pair)) => Ok(pair),
        Ok(Err(e)) => Err(FleetError::Connect {
            location,
            reason: e.to_string(),
        }),
        Err(_) => Err(FleetError::Connect {
            location,
            reason: format!("no answer within {CONNECT_TIMEOUT:?}"),
        }),
    }
}

impl FleetDb {
    /// Connects, creates the fleet tables and the queue's schema if needed.
    pub async fn connect(url: &str) -> Result<FleetDb, FleetError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(FleetError::NotPostgres);
        }
        let (client, connection) = connect_raw(url).await?;
        let connection_task = tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "fleet: PostgreSQL connection ended");
            }
        });
        let db = FleetDb {
            client: Mutex::new(client),
            location: agent_exec_journal::redact_url(url),
            url: url.to_owned(),
            connection_task,
        };
        db.migrate().await?;
        Ok(db)
    }

    /// Connects without creating anything (read-only views: `runs`). Queries of a
    /// database that has no fleet tables fail; callers treat that as "no fleet".
    pub async fn connect_existing(url: &str) -> Result<FleetDb, FleetError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(FleetError::NotPostgres);
        }
        let (client, connection) = connect_raw(url).await?;
        let connection_task = tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "fleet: PostgreSQL connection ended");
            }
        });
        Ok(FleetDb {
            client: Mutex::new(client),
            location: agent_exec_journal::redact_url(url),
            url: url.to_owned(),
            connection_task,
        })
    }

    /// The redacted URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// True once the connection is gone (the server restarted or went away).
    pub fn is_closed(&self) -> bool {
        self.connection_task.is_finished()
    }

    pub(crate) fn pg(&self, source: tokio_postgres::Error) -> FleetError {
        FleetError::Postgres {
            location: self.location.clone(),
            source,
        }
    }

    pub(crate) fn queue_err(&self, e: impl std::fmt::Display) -> FleetError {
        FleetError::Queue {
            location: self.location.clone(),
            reason: e.to_string(),
        }
    }

    /// The queue library's utilities over a small pool of its own.
    pub(crate) fn queue_utils(&self, pool_size: usize) -> Result<WorkerUtils, FleetError> {
        let database =
            TokioPostgresDatabase::from_url(&self.url, pool_size).map_err(|e| self.queue_err(e))?;
        Ok(WorkerUtils::new(database, QUEUE_SCHEMA))
    }

    async fn migrate(&self) -> Result<(), FleetError> {
        {
            let mut client = self.client.lock().await;
            let tx = client.transaction().await.map_err(|e| self.pg(e))?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await
                .map_err(|e| self.pg(e))?;
            tx.batch_execute(SCHEMA).await.map_err(|e| self.pg(e))?;
            tx.commit().await.map_err(|e| self.pg(e))?;
        }
        // The queue's own migrations (idempotent, locked by the library).
        self.queue_utils(1)?
            .migrate()
            .await
            .map_err(|e| self.queue_err(e))
    }

    /// A second connection that receives NOTIFY on `channels`; each payload goes to
    /// the returned receiver. The receiver ends when the connection does.
    pub async fn listen(
        &self,
        channels: &[&str],
    ) -> Result<
        (
            Client,
            tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
        ),
        FleetError,
    > {
        let (client, mut connection) = connect_raw(&self.url).await?;
        let (send, receive) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            use futures::StreamExt as _;
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => {
                        if send
                            .send((n.channel().to_owned(), n.payload().to_owned()))
                            .is_err()
                        {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "fleet: listening connection ended");
                        break;
                    }
                }
            }
        });
        for channel in channels {
            // Channel names are our constants, never input.
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .map_err(|e| self.pg(e))?;
        }
        Ok((client, receive))
    }
}
