//! Proving a worker gone, and settling what it held.
//!
//! A worker is gone when its lease expired (no heartbeat for [`crate::LEASE`] by
//! the database's clock — the proof that works across hosts), or, on its own host,
//! as soon as the journal's owner check proves the process dead (exited, pid reused,
//! host rebooted). Then, once:
//! * every execution it was running becomes `unknown` in the journal (only if still
//!   open *and* still owned by that process: the owner check is the fence), and its
//!   fleet job is done — its side effects are whatever the workspace shows; it is
//!   **not** handed to another worker (the queue allows one attempt; the caller
//!   decides, invariant 5);
//! * a job it had claimed but not yet started (the moment between the queue's claim
//!   and the worker's start record) is `failed` with side effects `none`, retryable:
//!   nothing ran, so the caller may submit it again;
//! * its queue locks are released and those jobs deleted from the queue.
//!
//! Every worker sweeps every few seconds, and so does every `wait`.

use agent_exec_contract::{ContractResult, Error, ErrorCode, SideEffects};
use agent_exec_journal::owner::Liveness;
use agent_exec_journal::{End, Journal, ProcessIdentity, State, Usage};

use crate::FleetError;
use crate::db::FleetDb;
use crate::store::{JobState, WorkerRow, WorkerState};

/// One worker found gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departed {
    pub worker_id: String,
    pub reason: String,
    /// Executions now `unknown`.
    pub unknown: Vec<String>,
    /// Claimed, never started: now `failed` with side effects `none`.
    pub unstarted: Vec<String>,
}

fn gone(worker: &WorkerRow, here: &ProcessIdentity, lease: std::time::Duration) -> Option<String> {
    if let Liveness::Dead(reason) = worker.owner.liveness(here) {
        return Some(format!("worker {}: {reason}", worker.worker_id));
    }
    (worker.heartbeat_age_s > lease.as_secs_f64()).then(|| {
        format!(
            "worker {} on {} (pid {}): lease expired, no heartbeat for {:.0} s",
            worker.worker_id, worker.owner.host, worker.owner.pid, worker.heartbeat_age_s
        )
    })
}

/// Finds live workers that are gone and settles what they held.
pub async fn sweep(db: &FleetDb, journal: &Journal) -> Result<Vec<Departed>, FleetError> {
    let pg = journal.as_postgres().ok_or(FleetError::NotPostgres)?;
    let here = ProcessIdentity::current();
    let mut departed = Vec::new();
    for worker in db.workers().await? {
        if worker.state != WorkerState::Live {
            continue;
        }
        let Some(reason) = gone(&worker, &here, crate::LEASE) else {
            continue;
        };
        // Only the sweeper that flips the state settles (concurrent sweepers agree).
        if !db.declare_dead(&worker.worker_id, &reason).await? {
            continue;
        }
        tracing::warn!(worker = %worker.worker_id, %reason, "fleet: worker gone; settling its executions");
        departed.push(settle(db, pg, &worker, &reason).await?);
    }
    Ok(departed)
}

async fn settle(
    db: &FleetDb,
    pg: &agent_exec_journal::PgJournal,
    worker: &WorkerRow,
    reason: &str,
) -> Result<Departed, FleetError> {
    let mut out = Departed {
        worker_id: worker.worker_id.clone(),
        reason: reason.to_owned(),
        unknown: Vec::new(),
        unstarted: Vec::new(),
    };
    let running = db.running_jobs(&worker.worker_id).await?;
    let claimed = match &worker.queue_worker_id {
        None => Vec::new(),
        Some(queue_id) => db.claimed_jobs(queue_id).await?,
    };
    // The queue first: once a waiter sees the end, nothing of the worker is left.
    if let Some(queue_id) = &worker.queue_worker_id {
        release_queue_worker(db, queue_id).await?;
    }
    for id in &running {
        pg.settle_orphan(id, &worker.owner, reason).await?;
        db.finish_job(id, None, None).await?;
        out.unknown.push(id.clone());
    }
    for (id, _) in &claimed {
        if running.contains(id) {
            continue;
        }
        let Some(job) = db.job(id).await? else {
            continue;
        };
        if job.state != JobState::Queued {
            continue;
        }
        let result = ContractResult::failed(
            Error::new(
                ErrorCode::ProviderUnavailable,
                format!("{reason}; it had claimed this execution and not started it: nothing ran"),
                SideEffects::None,
            )
            .retryable(),
        );
        let error_json = result
            .err
            .as_ref()
            .and_then(|e| serde_json::to_string(e).ok());
        pg.record_unstarted(
            id,
            &job.backend,
            Some(&job.request_json),
            &End {
                outcome: State::Failed,
                error_json: error_json.as_deref(),
                error_code: Some(ErrorCode::ProviderUnavailable.as_str()),
                usage: Usage::default(),
                cancel_requested: false,
            },
            "the worker that claimed it died before starting it",
        )
        .await?;
        db.finish_job(id, serde_json::to_string(&result).ok().as_deref(), None)
            .await?;
        out.unstarted.push(id.clone());
    }
    Ok(out)
}

/// Releases every queue lock of the queue worker `queue_id` and deletes those jobs:
/// unlocked, they have used their one attempt and would never be claimed again.
pub(crate) async fn release_queue_worker(db: &FleetDb, queue_id: &str) -> Result<(), FleetError> {
    let ids = db.queue_jobs_locked_by(queue_id).await?;
    let utils = db.queue_utils(1)?;
    utils
        .force_unlock_workers(&[queue_id])
        .await
        .map_err(|e| db.queue_err(e))?;
    if !ids.is_empty() {
        utils
            .complete_jobs(&ids)
            .await
            .map_err(|e| db.queue_err(e))?;
    }
    Ok(())
}
