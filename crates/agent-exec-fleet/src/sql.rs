//! Statements the one-shot commands run, here so that `db` can prepare them in one
//! round trip at connect time while `store` and `submit`, which run them, sit above
//! `db`.

const WORKER_COLUMNS: &str = "worker_id, queue_worker_id, host, boot_id, pid, start_ticks,
    concurrency, backends_json, state, note,
    EXTRACT(EPOCH FROM (now() - heartbeat_at))::float8";

/// Every worker, live first, newest first.
pub(crate) fn workers_sql() -> String {
    format!(
        "SELECT {WORKER_COLUMNS} FROM agent_exec_fleet_workers
         ORDER BY (state = 'live') DESC, started_at DESC"
    )
}

/// The fleet row of an execution being submitted, locked.
pub(crate) const EXISTING_SQL: &str =
    "SELECT state FROM agent_exec_fleet_jobs WHERE execution_id = $1 FOR UPDATE";

/// The fleet row of a submitted execution (new, or one that had ended).
pub(crate) const INSERT_SQL: &str = "INSERT INTO agent_exec_fleet_jobs
         (execution_id, backend, required_json, request_json, state, queue_job_id)
     VALUES ($1, $2, $3, $4, 'queued', $5)
     ON CONFLICT (execution_id) DO UPDATE SET backend = $2, required_json = $3,
         request_json = $4, state = 'queued', queue_job_id = $5, worker_id = NULL,
         cancel_requested = FALSE, result_json = NULL, submitted_at = now(),
         started_at = NULL, finished_at = NULL";
