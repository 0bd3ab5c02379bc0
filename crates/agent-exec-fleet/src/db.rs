//! The fleet's connection to PostgreSQL: its own tables next to the journal's, the
//! queue's schema, and the LISTEN channels.
//!
//! The fleet keeps three tables (prefix `agent_exec_fleet_`, like the journal's
//! `agent_exec_`): `workers` (who is alive, what each verified, its lease), `jobs`
//! (one row per submitted execution: queued → running → done, the stored result) and
//! `events` (each execution's events in order, for `wait --events` on any machine).
//! The queue itself is the job-queue library's schema [`QUEUE_SCHEMA`].

use std::time::Duration;

use std::sync::Arc;

use agent_exec_journal::{Notice, PgConnection};
use graphile_worker::WorkerUtils;
use graphile_worker::tokio_postgres::TokioPostgresDatabase;
use tokio_postgres::error::SqlState;
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
/// The version of the fleet's tables (`agent_exec_fleet_meta`, key `schema_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_exec_fleet_meta (
    key   TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
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

/// The fleet's connection to its database (shared with the journal in the one-shot
/// commands: see [`FleetDb::connection`]).
pub struct FleetDb {
    pub(crate) conn: Arc<PgConnection>,
    pub(crate) location: String,
    pub(crate) url: String,
}

impl std::fmt::Debug for FleetDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetDb")
            .field("location", &self.location)
            .finish_non_exhaustive()
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

/// [`PgConnection::connect`] within [`CONNECT_TIMEOUT`], errors as [`connect_raw`]'s.
async fn connect_shared(url: &str) -> Result<PgConnection, FleetError> {
    let location = agent_exec_journal::redact_url(url);
    match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect(url)).await {
        Ok(Ok(conn)) => Ok(conn),
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

/// The newest migration of the queue library this binary links.
fn queue_migration() -> i32 {
    graphile_worker_migrations::sql::GRAPHILE_WORKER_MIGRATIONS
        .iter()
        .map(|m| i32::try_from(m.migration_number()).unwrap_or(i32::MAX))
        .max()
        .unwrap_or(0)
}

impl FleetDb {
    /// Connects, creates the fleet tables and the queue's schema if needed.
    pub async fn connect(url: &str) -> Result<FleetDb, FleetError> {
        let db = FleetDb::connect_existing(url).await?;
        db.migrate().await?;
        Ok(db)
    }

    /// Connects without creating anything (read-only views: `runs`). Queries of a
    /// database that has no fleet tables fail; callers treat that as "no fleet".
    pub async fn connect_existing(url: &str) -> Result<FleetDb, FleetError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(FleetError::NotPostgres);
        }
        let conn = connect_shared(url).await?;
        Ok(FleetDb {
            location: conn.location().to_owned(),
            conn: Arc::new(conn),
            url: url.to_owned(),
        })
    }

    /// The connection, to open the journal on (`PgJournal::open_on`): a one-shot
    /// command then needs one connection, not two.
    pub fn connection(&self) -> &Arc<PgConnection> {
        &self.conn
    }

    /// The redacted URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// True once the connection is gone (the server restarted or went away).
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
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

    /// The queue library's utilities over a small pool of its own (it connects only
    /// when used without an executor of ours).
    pub(crate) fn queue_utils(&self, pool_size: usize) -> Result<WorkerUtils, FleetError> {
        let database =
            TokioPostgresDatabase::from_url(&self.url, pool_size).map_err(|e| self.queue_err(e))?;
        Ok(WorkerUtils::new(database, QUEUE_SCHEMA))
    }

    /// The fleet tables and the queue's schema at this binary's versions. The check is
    /// one read (every connect but the first ones of a database); the tables are
    /// created and the queue migrated — under an advisory lock, by the library — only
    /// when either is missing or older. Before, every `submit` ran the DDL under the
    /// lock and opened a second connection for the queue's check.
    pub async fn migrate(&self) -> Result<(), FleetError> {
        let want_queue = queue_migration();
        let check = format!(
            "SELECT (SELECT value FROM agent_exec_fleet_meta WHERE key = 'schema_version'),
                    (SELECT max(id) FROM {QUEUE_SCHEMA}.migrations)"
        );
        // The statements of a one-shot command, prepared in one round trip (each runs
        // once; parsing them one by one was a round trip each).
        self.conn
            .prepare_all(&[
                &check,
                &crate::sql::workers_sql(),
                crate::sql::EXISTING_SQL,
                crate::sql::INSERT_SQL,
            ])
            .await;
        let found = {
            let client = self.conn.read().await;
            match self.conn.query_opt(&*client, &check, &[]).await {
                Ok(Some(row)) => Some((row.get::<_, Option<i64>>(0), row.get::<_, Option<i32>>(1))),
                Ok(None) => None,
                Err(e)
                    if e.code() == Some(&SqlState::UNDEFINED_TABLE)
                        || e.code() == Some(&SqlState::INVALID_SCHEMA_NAME) =>
                {
                    None
                }
                Err(e) => return Err(self.pg(e)),
            }
        };
        if let Some((Some(version), _)) = found
            && version > SCHEMA_VERSION
        {
            return Err(FleetError::NewerSchema {
                location: self.location.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if found == Some((Some(SCHEMA_VERSION), Some(want_queue))) {
            return Ok(());
        }
        {
            let mut client = self.conn.lock().await;
            let tx = client.transaction().await.map_err(|e| self.pg(e))?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await
                .map_err(|e| self.pg(e))?;
            tx.batch_execute(SCHEMA).await.map_err(|e| self.pg(e))?;
            tx.execute(
                "INSERT INTO agent_exec_fleet_meta (key, value) VALUES ('schema_version', $1)
                 ON CONFLICT (key) DO NOTHING",
                &[&SCHEMA_VERSION],
            )
            .await
            .map_err(|e| self.pg(e))?;
            tx.commit().await.map_err(|e| self.pg(e))?;
        }
        // The queue's own migrations (idempotent, locked by the library).
        self.queue_utils(1)?
            .migrate()
            .await
            .map_err(|e| self.queue_err(e))
    }

    /// LISTEN on `channels` on this connection; the receiver gets each NOTIFY (channel,
    /// payload). One caller per connection (`wait`); `None` when taken already.
    pub async fn listen_here(
        &self,
        channels: &[&str],
    ) -> Result<Option<tokio::sync::mpsc::UnboundedReceiver<Notice>>, FleetError> {
        let Some(notices) = self.conn.take_notices() else {
            return Ok(None);
        };
        let client = self.conn.read().await;
        for channel in channels {
            // Channel names are our constants, never input.
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .map_err(|e| self.pg(e))?;
        }
        Ok(Some(notices))
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
