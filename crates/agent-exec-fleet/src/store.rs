//! Reading and writing the fleet tables: workers and jobs as the rest of the crate
//! sees them. Every id is bound as a parameter; nothing is spliced into SQL.

use agent_exec_journal::ProcessIdentity;
use serde::Serialize;

use crate::FleetError;
use crate::db::FleetDb;
use crate::flags::Advertised;
use crate::sql::workers_sql;

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

/// A worker as the fleet table has it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerRow {
    pub worker_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_worker_id: Option<String>,
    pub owner: ProcessIdentity,
    pub concurrency: u32,
    pub backends: Vec<Advertised>,
    /// `live`, `stopped` or `dead`.
    pub state: String,
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

fn worker_from(row: &tokio_postgres::Row) -> WorkerRow {
    let backends: String = row.get(7);
    WorkerRow {
        worker_id: row.get(0),
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
        state: row.get(8),
        note: row.get(9),
        heartbeat_age_s: row.get(10),
    }
}

const JOB_COLUMNS: &str = "execution_id, backend, required_json, state, worker_id,
    cancel_requested, queue_job_id, request_json, result_json";

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

impl FleetDb {
    /// Every worker ever registered, live first, newest first.
    pub async fn workers(&self) -> Result<Vec<WorkerRow>, FleetError> {
        let client = self.conn.read().await;
        let rows = self
            .conn
            .query(&*client, &workers_sql(), &[])
            .await
            .map_err(|e| self.pg(e))?;
        Ok(rows.iter().map(worker_from).collect())
    }

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
                &[
                    &execution_id,
                    &result_json,
                    &worker,
                    &crate::db::DONE_CHANNEL,
                ],
            )
            .await
            .map_err(|e| self.pg(e))?;
        if done.is_empty() {
            return Ok(false);
        }
        Ok(true)
    }
}
