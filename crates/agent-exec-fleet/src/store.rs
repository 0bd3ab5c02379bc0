//! The fleet's tables, and the one module that reads and writes them.
//!
//! The fleet keeps three tables (prefix `agent_exec_fleet_`, like the journal's
//! `agent_exec_`): `workers` (who is alive, what each verified, its lease), `jobs`
//! (one row per submitted execution: queued → running → done, the stored result) and
//! `events` (each execution's events in order, for `wait --events` on any machine),
//! and their version in `meta`. Their schema, their migration and every statement on
//! them are here; the rest of the crate calls these methods. Every id is bound as a
//! parameter; nothing is spliced into SQL. A row is read fail-closed where it decides
//! something: a worker in a state this build does not know is an error naming it.

use agent_exec_journal::ProcessIdentity;
use serde::Serialize;
use tokio_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use crate::FleetError;
use crate::db::{CANCEL_CHANNEL, DONE_CHANNEL, FleetDb, QUEUE_SCHEMA};
use crate::flags::Advertised;

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

const WORKER_COLUMNS: &str = "worker_id, queue_worker_id, host, boot_id, pid, start_ticks,
    concurrency, backends_json, state, note,
    EXTRACT(EPOCH FROM (now() - heartbeat_at))::float8";

/// Every worker, live first, newest first.
fn workers_sql() -> String {
    format!(
        "SELECT {WORKER_COLUMNS} FROM agent_exec_fleet_workers
         ORDER BY (state = 'live') DESC, started_at DESC"
    )
}

/// The fleet row of an execution being submitted, locked.
const EXISTING_SQL: &str =
    "SELECT state FROM agent_exec_fleet_jobs WHERE execution_id = $1 FOR UPDATE";

/// The fleet row of a submitted execution (new, or one that had ended).
const INSERT_SQL: &str = "INSERT INTO agent_exec_fleet_jobs
         (execution_id, backend, required_json, request_json, state, queue_job_id)
     VALUES ($1, $2, $3, $4, 'queued', $5)
     ON CONFLICT (execution_id) DO UPDATE SET backend = $2, required_json = $3,
         request_json = $4, state = 'queued', queue_job_id = $5, worker_id = NULL,
         cancel_requested = FALSE, result_json = NULL, submitted_at = now(),
         started_at = NULL, finished_at = NULL";

const JOB_COLUMNS: &str = "execution_id, backend, required_json, state, worker_id,
    cancel_requested, queue_job_id, request_json, result_json";

/// The newest migration of the queue library this binary links.
fn queue_migration() -> i32 {
    graphile_worker_migrations::sql::GRAPHILE_WORKER_MIGRATIONS
        .iter()
        .map(|m| i32::try_from(m.migration_number()).unwrap_or(i32::MAX))
        .max()
        .unwrap_or(0)
}

/// Where a submitted execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// In the queue; no worker has started it.
    Queued,
    /// A worker started it.
    Running,
    /// It ended (the result is stored, or the journal has the outcome).
    Done,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
        }
    }
    pub(crate) fn parse(text: &str) -> JobState {
        match text {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            // Anything else is read as ended: a reader never waits on a state it
            // does not know.
            _ => JobState::Done,
        }
    }
}

/// Where a worker is, as its row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// Registered and renewing its lease.
    Live,
    /// Shut down on request.
    Stopped,
    /// Found gone by a sweep (lease expired, or its process proven dead).
    Dead,
}

impl WorkerState {
    pub const ALL: [WorkerState; 3] = [WorkerState::Live, WorkerState::Stopped, WorkerState::Dead];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Live => "live",
            WorkerState::Stopped => "stopped",
            WorkerState::Dead => "dead",
        }
    }

    /// A worker row's state, fail closed: a state this build does not know is an
    /// error naming the row (routing, sweeping and `wait` decide on it; a guess could
    /// route to, or settle, the wrong worker).
    pub(crate) fn from_row(worker_id: &str, text: &str) -> Result<WorkerState, FleetError> {
        WorkerState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| FleetError::CorruptWorker {
                worker_id: worker_id.to_owned(),
                reason: format!("its state is {text:?}, not live, stopped or dead"),
            })
    }
}

impl std::fmt::Display for WorkerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A worker as the fleet table has it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerRow {
    pub worker_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_worker_id: Option<String>,
    pub owner: ProcessIdentity,
    pub concurrency: u32,
    pub backends: Vec<Advertised>,
    pub state: WorkerState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Seconds since its last heartbeat, by the database's clock.
    pub heartbeat_age_s: f64,
}

/// A submitted execution as the fleet table has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobRow {
    pub execution_id: String,
    pub backend: String,
    pub required: Vec<String>,
    pub state: JobState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<String>,
    pub cancel_requested: bool,
    #[serde(skip)]
    pub queue_job_id: Option<i64>,
    #[serde(skip)]
    pub request_json: String,
    #[serde(skip)]
    pub result_json: Option<String>,
}

/// What a worker's start of a claimed job found (see [`FleetDb::start_job`]).
pub(crate) enum JobStart {
    /// The row flipped `queued` → `running` on this worker: run it.
    Run,
    /// A cancel was recorded while it was queued: the row is `done`, nothing runs.
    Canceled,
    /// The row was not `queued` (its state, or `missing`): not this worker's to run.
    NotOurs(String),
}

/// A job's row locked for a cancel (see [`FleetDb::lock_job_for_cancel`]).
pub(crate) struct LockedJob {
    pub state: JobState,
    pub queue_job_id: Option<i64>,
    pub worker_id: Option<String>,
    pub backend: String,
    pub request_json: String,
}

fn worker_from(row: &tokio_postgres::Row) -> Result<WorkerRow, FleetError> {
    let worker_id: String = row.get(0);
    let backends: String = row.get(7);
    let state = WorkerState::from_row(&worker_id, &row.get::<_, String>(8))?;
    Ok(WorkerRow {
        queue_worker_id: row.get(1),
        owner: ProcessIdentity {
            host: row.get(2),
            boot_id: row.get(3),
            pid: u32::try_from(row.get::<_, i64>(4)).unwrap_or(0),
            start_ticks: row.get::<_, i64>(5).max(0) as u64,
        },
        concurrency: row.get::<_, i32>(6).max(0) as u32,
        // A damaged advertisement advertises nothing (fail closed: no job is routed
        // on a guess).
        backends: serde_json::from_str(&backends).unwrap_or_default(),
        state,
        note: row.get(9),
        heartbeat_age_s: row.get(10),
        worker_id,
    })
}

fn job_from(row: &tokio_postgres::Row) -> JobRow {
    let required: String = row.get(2);
    JobRow {
        execution_id: row.get(0),
        backend: row.get(1),
        required: serde_json::from_str(&required).unwrap_or_default(),
        state: JobState::parse(&row.get::<_, String>(3)),
        worker_id: row.get(4),
        cancel_requested: row.get(5),
        queue_job_id: row.get(6),
        request_json: row.get(7),
        result_json: row.get(8),
    }
}

/// The schema.
impl FleetDb {
    /// Connects, creates the fleet tables and the queue's schema if needed.
    pub async fn connect(url: &str) -> Result<FleetDb, FleetError> {
        let db = FleetDb::connect_existing(url).await?;
        db.migrate().await?;
        Ok(db)
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
            .prepare_all(&[&check, &workers_sql(), EXISTING_SQL, INSERT_SQL])
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
}

/// The workers table.
impl FleetDb {
    /// Every worker ever registered, live first, newest first. A row this build
    /// cannot read fails the listing, naming the worker.
    pub async fn workers(&self) -> Result<Vec<WorkerRow>, FleetError> {
        let client = self.conn.read().await;
        let rows = self
            .conn
            .query(&*client, &workers_sql(), &[])
            .await
            .map_err(|e| self.pg(e))?;
        rows.iter().map(worker_from).collect()
    }

    /// Registers (or, after a reconnect, renews) worker `worker_id` as `live`.
    /// `false` when its row exists and is no longer live: a sweep declared it gone.
    pub(crate) async fn register_worker(
        &self,
        worker_id: &str,
        me: &ProcessIdentity,
        concurrency: usize,
        backends_json: &str,
    ) -> Result<bool, FleetError> {
        let client = self.conn.read().await;
        let n = self
            .conn
            .execute(
                &*client,
                "INSERT INTO agent_exec_fleet_workers (worker_id, host, boot_id, pid, start_ticks,
                     concurrency, backends_json, state)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'live')
                 ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now(), backends_json = $7
                 WHERE agent_exec_fleet_workers.state = 'live'",
                &[
                    &worker_id,
                    &me.host,
                    &me.boot_id,
                    &i64::from(me.pid),
                    &(me.start_ticks as i64),
                    &(concurrency as i32),
                    &backends_json,
                ],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(n != 0)
    }

    /// The queue worker id worker `worker_id` recorded last (its previous session's).
    pub(crate) async fn queue_worker_id(
        &self,
        worker_id: &str,
    ) -> Result<Option<String>, FleetError> {
        let client = self.conn.read().await;
        Ok(self
            .conn
            .query_opt(
                &*client,
                "SELECT queue_worker_id FROM agent_exec_fleet_workers WHERE worker_id = $1",
                &[&worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?
            .and_then(|r| r.get::<_, Option<String>>(0)))
    }

    /// Records the queue library's id of worker `worker_id`'s current session.
    pub(crate) async fn record_queue_worker_id(
        &self,
        worker_id: &str,
        queue_worker_id: &str,
    ) -> Result<(), FleetError> {
        let client = self.conn.read().await;
        self.conn
            .execute(
                &*client,
                "UPDATE agent_exec_fleet_workers SET queue_worker_id = $2 WHERE worker_id = $1",
                &[&worker_id, &queue_worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// Renews the lease; `false` when the row is no longer `live`.
    pub(crate) async fn renew_lease(&self, worker_id: &str) -> Result<bool, FleetError> {
        let client = self.conn.read().await;
        let n = self.conn.execute(&*client,
                "UPDATE agent_exec_fleet_workers SET heartbeat_at = now() WHERE worker_id = $1 AND state = 'live'",
                &[&worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(n == 1)
    }

    /// A live worker shut down on request becomes `stopped`.
    pub(crate) async fn stop_worker(&self, worker_id: &str) -> Result<(), FleetError> {
        let client = self.conn.read().await;
        self.conn
            .execute(
                &*client,
                "UPDATE agent_exec_fleet_workers SET state = 'stopped', note = 'shut down'
                 WHERE worker_id = $1 AND state = 'live'",
                &[&worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// A live worker found gone becomes `dead`, with why. `true` for the one caller
    /// that flipped it (concurrent sweepers agree on one).
    pub(crate) async fn declare_dead(
        &self,
        worker_id: &str,
        note: &str,
    ) -> Result<bool, FleetError> {
        let client = self.conn.read().await;
        let n = self
            .conn
            .execute(
                &*client,
                "UPDATE agent_exec_fleet_workers SET state = 'dead', note = $2
                 WHERE worker_id = $1 AND state = 'live'",
                &[&worker_id, &note],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(n != 0)
    }
}

/// The jobs table.
impl FleetDb {
    /// One submitted execution.
    pub async fn job(&self, execution_id: &str) -> Result<Option<JobRow>, FleetError> {
        let client = self.conn.read().await;
        let row = self
            .conn
            .query_opt(
                &*client,
                &format!("SELECT {JOB_COLUMNS} FROM agent_exec_fleet_jobs WHERE execution_id = $1"),
                &[&execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(row.as_ref().map(job_from))
    }

    /// The fleet's view of many executions (for `runs`): id → (state, worker).
    pub async fn jobs_by_id(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, JobRow>, FleetError> {
        let client = self.conn.read().await;
        let rows = self
            .conn
            .query(
                &*client,
                &format!(
                    "SELECT {JOB_COLUMNS} FROM agent_exec_fleet_jobs WHERE execution_id = ANY($1)"
                ),
                &[&ids],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(rows
            .iter()
            .map(job_from)
            .map(|j| (j.execution_id.clone(), j))
            .collect())
    }

    /// The state of `execution_id`'s fleet row as stored, locked in `tx` for a
    /// submit; `None` when there is none.
    pub(crate) async fn locked_job_state(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
    ) -> Result<Option<String>, FleetError> {
        Ok(self
            .conn
            .query_opt(tx, EXISTING_SQL, &[&execution_id])
            .await
            .map_err(|e| self.pg(e))?
            .map(|row| row.get(0)))
    }

    /// Writes the fleet row of a submitted execution in `tx`: new, or one that had
    /// ended queued again (its worker, cancel, result and times cleared).
    pub(crate) async fn insert_job(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
        backend: &str,
        required_json: &str,
        request_json: &str,
        queue_job_id: i64,
    ) -> Result<(), FleetError> {
        self.conn
            .execute(
                tx,
                INSERT_SQL,
                &[
                    &execution_id,
                    &backend,
                    &required_json,
                    &request_json,
                    &queue_job_id,
                ],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// `execution_id`'s row locked in `tx` for a cancel; `None` when there is none.
    pub(crate) async fn lock_job_for_cancel(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
    ) -> Result<Option<LockedJob>, FleetError> {
        let row = self
            .conn
            .query_opt(
                tx,
                "SELECT state, queue_job_id, worker_id, backend, request_json
                 FROM agent_exec_fleet_jobs WHERE execution_id = $1 FOR UPDATE",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(row.map(|row| LockedJob {
            state: JobState::parse(&row.get::<_, String>(0)),
            queue_job_id: row.get(1),
            worker_id: row.get(2),
            backend: row.get(3),
            request_json: row.get(4),
        }))
    }

    /// Records in `tx` that `execution_id` is to be canceled: a worker that claims
    /// it from then on sees the request before it starts anything.
    pub(crate) async fn request_job_cancel(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
    ) -> Result<(), FleetError> {
        self.conn
            .execute(
                tx,
                "UPDATE agent_exec_fleet_jobs SET cancel_requested = TRUE WHERE execution_id = $1",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// In `tx`: a job removed from the queue before any worker started it is `done`
    /// with `result_json`, and waiters are told when `tx` commits.
    pub(crate) async fn finish_dequeued(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
        result_json: Option<&str>,
    ) -> Result<(), FleetError> {
        self.conn.execute(tx,
                "UPDATE agent_exec_fleet_jobs SET state = 'done', result_json = $2, finished_at = now()
                 WHERE execution_id = $1",
                &[&execution_id, &result_json],
            )
            .await
            .map_err(|e| self.pg(e))?;
        self.conn
            .execute(
                tx,
                "SELECT pg_notify($1, $2)",
                &[&DONE_CHANNEL, &execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// In `tx`: tells the worker running `execution_id` to cancel it (when `tx`
    /// commits).
    pub(crate) async fn notify_cancel(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
    ) -> Result<(), FleetError> {
        self.conn
            .execute(
                tx,
                "SELECT pg_notify($1, $2)",
                &[&CANCEL_CHANNEL, &execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// Flips the job from `queued` to `running` on this worker — or to `done` when a
    /// cancel was recorded while it was queued — in one statement (the fence: a row
    /// leaves `queued` once). Only when it does not is the state read, for the log.
    pub(crate) async fn start_job(
        &self,
        execution_id: &str,
        worker_id: &str,
    ) -> Result<JobStart, FleetError> {
        let client = self.conn.read().await;
        let flipped = self
            .conn
            .query_opt(
                &*client,
                "UPDATE agent_exec_fleet_jobs
                 SET state = CASE WHEN cancel_requested THEN 'done' ELSE 'running' END,
                     worker_id = $2, started_at = now()
                 WHERE execution_id = $1 AND state = 'queued'
                 RETURNING cancel_requested",
                &[&execution_id, &worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        if let Some(row) = flipped {
            return Ok(if row.get::<_, bool>(0) {
                JobStart::Canceled
            } else {
                JobStart::Run
            });
        }
        let state = self
            .conn
            .query_opt(
                &*client,
                "SELECT state FROM agent_exec_fleet_jobs WHERE execution_id = $1",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?
            .map_or_else(|| "missing".to_owned(), |row| row.get(0));
        Ok(JobStart::NotOurs(state))
    }

    /// The executions worker `worker_id` holds `running`.
    pub(crate) async fn running_jobs(&self, worker_id: &str) -> Result<Vec<String>, FleetError> {
        let client = self.conn.read().await;
        Ok(self.conn.query(&*client,
                "SELECT execution_id FROM agent_exec_fleet_jobs WHERE worker_id = $1 AND state = 'running'",
                &[&worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// The executions worker `worker_id` runs whose cancel was requested (what the
    /// heartbeat polls, in case a NOTIFY was missed).
    pub(crate) async fn canceled_running(
        &self,
        worker_id: &str,
    ) -> Result<Vec<String>, FleetError> {
        let client = self.conn.read().await;
        Ok(self
            .conn
            .query(
                &*client,
                "SELECT execution_id FROM agent_exec_fleet_jobs
                 WHERE worker_id = $1 AND state = 'running' AND cancel_requested",
                &[&worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// The fleet's executions whose queue job the queue worker `queue_worker_id`
    /// holds locked: (execution id, queue job id).
    ///
    /// Decision: the queue library has no API for "jobs locked by worker X", so its
    /// jobs table is read here (this and [`FleetDb::queue_jobs_locked_by`] are the
    /// only reads of the library's private schema; checked against graphile_worker
    /// 0.14).
    pub(crate) async fn claimed_jobs(
        &self,
        queue_worker_id: &str,
    ) -> Result<Vec<(String, i64)>, FleetError> {
        let client = self.conn.read().await;
        Ok(client
            .query(
                &format!(
                    "SELECT f.execution_id, j.id FROM {QUEUE_SCHEMA}._private_jobs j
                     JOIN agent_exec_fleet_jobs f ON f.queue_job_id = j.id
                     WHERE j.locked_by = $1"
                ),
                &[&queue_worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    /// The queue jobs the queue worker `queue_worker_id` holds locked (read from
    /// the library's private schema, as [`FleetDb::claimed_jobs`]).
    pub(crate) async fn queue_jobs_locked_by(
        &self,
        queue_worker_id: &str,
    ) -> Result<Vec<i64>, FleetError> {
        let client = self.conn.read().await;
        Ok(self
            .conn
            .query(
                &*client,
                &format!("SELECT id FROM {QUEUE_SCHEMA}._private_jobs WHERE locked_by = $1"),
                &[&queue_worker_id],
            )
            .await
            .map_err(|e| self.pg(e))?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// Marks the job done with its result (when there is one) and tells waiters.
    /// With `worker`, only while that worker still holds it running: a worker whose
    /// lease was taken cannot overwrite what the sweep settled.
    pub(crate) async fn finish_job(
        &self,
        execution_id: &str,
        result_json: Option<&str>,
        worker: Option<&str>,
    ) -> Result<bool, FleetError> {
        let client = self.conn.read().await;
        // One statement: the row and the NOTIFY (sent when it commits) together.
        let done = self
            .conn
            .query(
                &*client,
                "WITH done AS (
                     UPDATE agent_exec_fleet_jobs SET state = 'done',
                         result_json = COALESCE($2, result_json), finished_at = now()
                     WHERE execution_id = $1 AND state <> 'done'
                         AND ($3::text IS NULL OR (worker_id = $3 AND state = 'running'))
                     RETURNING execution_id)
                 SELECT pg_notify($4, execution_id) FROM done",
                &[&execution_id, &result_json, &worker, &DONE_CHANNEL],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(!done.is_empty())
    }
}

/// The events table.
impl FleetDb {
    /// Events of `execution_id` after `after` (a sequence number), in order.
    pub async fn events_after(
        &self,
        execution_id: &str,
        after: i32,
    ) -> Result<Vec<(i32, String)>, FleetError> {
        let client = self.conn.read().await;
        let rows = self
            .conn
            .query(
                &*client,
                "SELECT seq, event_json FROM agent_exec_fleet_events
                 WHERE execution_id = $1 AND seq > $2 ORDER BY seq",
                &[&execution_id, &after],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Appends events (sequence numbers from `first`) in one statement.
    pub(crate) async fn append_events(
        &self,
        execution_id: &str,
        first: i32,
        events: &[String],
    ) -> Result<(), FleetError> {
        let seqs: Vec<i32> = (0..events.len() as i32).map(|i| first + i).collect();
        let client = self.conn.read().await;
        self.conn
            .execute(
                &*client,
                "INSERT INTO agent_exec_fleet_events (execution_id, seq, event_json)
                 SELECT $1, s, e FROM unnest($2::int[], $3::text[]) AS t(s, e)",
                &[&execution_id, &seqs, &events],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }

    /// In `tx`: drops `execution_id`'s events (a submit again of an execution that
    /// ended starts its events afresh).
    pub(crate) async fn clear_events(
        &self,
        tx: &(impl GenericClient + Sync),
        execution_id: &str,
    ) -> Result<(), FleetError> {
        self.conn
            .execute(
                tx,
                "DELETE FROM agent_exec_fleet_events WHERE execution_id = $1",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.pg(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's state is read fail closed: the three known ones round-trip, and
    /// anything else is an error naming the worker and the value, never a default.
    #[test]
    fn a_worker_state_is_known_or_an_error_naming_the_row() {
        for state in WorkerState::ALL {
            assert_eq!(
                WorkerState::from_row("w1", state.as_str()).ok(),
                Some(state)
            );
            assert_eq!(
                serde_json::to_value(state).ok(),
                Some(serde_json::Value::from(state.as_str()))
            );
        }
        for bad in ["", "Live", "zombie", "live "] {
            let message = match WorkerState::from_row("w-bad", bad) {
                Err(e) => e.to_string(),
                Ok(state) => panic!("{bad:?} read as {state}"),
            };
            assert!(message.contains("\"w-bad\""), "{message}");
            assert!(message.contains(&format!("{bad:?}")), "{message}");
            assert!(message.contains("hint:"), "{message}");
        }
    }
}
