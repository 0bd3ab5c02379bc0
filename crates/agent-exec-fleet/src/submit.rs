//! Submitting an execution, and canceling one: each a single transaction, so a
//! refusal or a failure leaves nothing half-enqueued.

use agent_exec_contract::{
    ContractRequest, ContractResult, Error, ErrorCode, Outcome, SideEffects,
};
use agent_exec_journal::{End, Journal, State, Usage};
use graphile_worker::JobSpec;
use serde::{Deserialize, Serialize};

use crate::FleetError;
use crate::db::{FleetDb, TASK};
use crate::flags::{Advertised, job_flags};
use crate::store::JobState;

/// What a queued job carries: the backend's canonical name and the request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobPayload {
    pub backend: String,
    pub request: ContractRequest,
}

/// Ids are data: printable, no whitespace or control characters, bounded (the same
/// rule as `agent-exec run --execution-id`).
pub fn check_execution_id(id: &str) -> Result<(), FleetError> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(FleetError::InvalidRequest(format!(
            "execution id {id:?}: 1 to 128 printable characters without spaces"
        )));
    }
    Ok(())
}

/// Checks what a worker cannot check better: the id, and that the workspace is an
/// absolute path (it names a directory *on the worker*, so its existence is the
/// worker's to check).
pub fn check_request(request: &ContractRequest) -> Result<(), FleetError> {
    check_execution_id(&request.execution_id)?;
    if !request.workspace.root.starts_with('/') {
        return Err(FleetError::InvalidRequest(format!(
            "workspace {:?} is not an absolute path (it names a directory on the worker)",
            request.workspace.root
        )));
    }
    if let Some(unknown) = request
        .required
        .iter()
        .find(|c| matches!(c, agent_exec_contract::Capability::Other(_)))
    {
        return Err(FleetError::InvalidRequest(format!(
            "unknown capability {:?}",
            unknown.as_str()
        )));
    }
    Ok(())
}

/// Maps `name` (canonical or alias) to a canonical name some worker advertised.
pub(crate) fn canonical_backend(
    name: &str,
    advertised: &[Advertised],
) -> Result<String, FleetError> {
    if let Some(found) = advertised
        .iter()
        .find(|a| a.name == name || a.aliases.iter().any(|alias| alias == name))
    {
        return Ok(found.name.clone());
    }
    let mut known: Vec<String> = advertised.iter().map(|a| a.name.clone()).collect();
    known.sort();
    known.dedup();
    Err(FleetError::UnknownBackend {
        name: name.to_owned(),
        known,
    })
}

/// Whether the journal lets this id run again: never while it runs, and after an end
/// only a step retry of `failed`/`canceled` without side effects (as `run` decides).
async fn check_journal(journal: &Journal, id: &str) -> Result<(), FleetError> {
    let Some(record) = journal.show(id).await? else {
        return Ok(());
    };
    let state = record.summary.state;
    if !state.is_terminal() {
        return Err(FleetError::AlreadyActive {
            execution_id: id.to_owned(),
            state: state.as_str().to_owned(),
        });
    }
    let side_effects = record
        .error
        .as_ref()
        .and_then(|e| e.get("side_effects"))
        .and_then(|v| serde_json::from_value::<SideEffects>(v.clone()).ok())
        .unwrap_or(match state {
            State::Succeeded => SideEffects::None,
            _ => SideEffects::Possible,
        });
    let outcome = Outcome::from_wire(state.as_str());
    if agent_exec_contract::may_continue(&outcome, side_effects) {
        return Ok(());
    }
    Err(FleetError::Journal(
        agent_exec_journal::JournalError::Finished {
            execution_id: id.to_owned(),
            outcome: state.as_str().to_owned(),
            side_effects: side_effects.as_str().to_owned(),
        },
    ))
}

/// Enqueues `request` for `backend` (a name or alias some worker advertised). Returns
/// the canonical backend name. Refuses an id that is queued or running, and one the
/// journal would not continue; nothing is written then.
pub async fn submit(
    db: &FleetDb,
    journal: &Journal,
    backend: &str,
    request: &ContractRequest,
) -> Result<String, FleetError> {
    check_request(request)?;
    let id = &request.execution_id;
    // Independent reads, at once (pipelined when they share a connection).
    let (workers, continuable) = tokio::join!(db.workers(), check_journal(journal, id));
    let advertised: Vec<Advertised> = workers?.into_iter().flat_map(|w| w.backends).collect();
    let canonical = canonical_backend(backend, &advertised)?;
    continuable?;

    let payload = JobPayload {
        backend: canonical.clone(),
        request: request.clone(),
    };
    let request_json = serde_json::to_string(request)
        .map_err(|e| FleetError::InvalidRequest(format!("cannot encode the request: {e}")))?;
    let required: Vec<&str> = request.required.iter().map(|c| c.as_str()).collect();
    let required_json = serde_json::to_string(&required)
        .map_err(|e| FleetError::InvalidRequest(format!("cannot encode --require: {e}")))?;
    let utils = db.queue_utils(1)?;

    let mut client = db.conn.lock().await;
    let tx = client.transaction().await.map_err(|e| db.pg(e))?;
    if let Some(state) = db.locked_job_state(&tx, id).await? {
        // As stored: a state this build does not know is not `done`, so it refuses.
        if state != JobState::Done.as_str() {
            return Err(FleetError::AlreadyActive {
                execution_id: id.clone(),
                state,
            });
        }
        // A submit again of an execution that ended: its old events go.
        db.clear_events(&tx, id).await?;
    }
    // One attempt from the queue's point of view (invariant 3): the contract's only
    // retry layer is the caller's.
    let spec = JobSpec {
        max_attempts: Some(1),
        flags: Some(job_flags(&canonical, &request.required)),
        ..Default::default()
    };
    // The queue job first, so the fleet row is written once, with its id. Both in
    // this transaction: the queue's NOTIFY goes out when it commits.
    let job = utils
        .with_executor(&tx)
        .add_raw_job(TASK, &payload, spec)
        .await
        .map_err(|e| db.queue_err(e))?;
    db.insert_job(
        &tx,
        id,
        &canonical,
        &required_json,
        &request_json,
        *job.id(),
    )
    .await?;
    tx.commit().await.map_err(|e| db.pg(e))?;
    Ok(canonical)
}

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    /// It was still queued: removed from the queue, recorded `canceled`; it never starts.
    Dequeued,
    /// A worker has it: the worker was told (NOTIFY) and cancels the whole tree.
    Signaled { worker_id: Option<String> },
    /// It had already ended.
    AlreadyEnded,
}

/// The result of an execution canceled before any worker started it.
pub fn canceled_while_queued() -> ContractResult {
    ContractResult::with_error(
        Outcome::Canceled,
        Error::new(
            ErrorCode::Canceled,
            "the caller canceled while the execution was queued; it never started",
            SideEffects::None,
        ),
    )
}

/// Cancels `execution_id`, wherever it is.
pub async fn cancel(
    db: &FleetDb,
    journal: &Journal,
    execution_id: &str,
) -> Result<CancelOutcome, FleetError> {
    let pg = journal.as_postgres().ok_or(FleetError::NotPostgres)?;
    let utils = db.queue_utils(1)?;
    let mut client = db.conn.lock().await;
    let tx = client.transaction().await.map_err(|e| db.pg(e))?;
    let Some(job) = db.lock_job_for_cancel(&tx, execution_id).await? else {
        return Err(FleetError::NoSuchExecution(execution_id.to_owned()));
    };
    if job.state == JobState::Done {
        return Ok(CancelOutcome::AlreadyEnded);
    }
    // The request is recorded first: a worker that claims the job from now on sees it
    // before it starts anything (see the worker's start), whatever the NOTIFY does.
    db.request_job_cancel(&tx, execution_id).await?;
    if job.state == JobState::Queued
        && let Some(job_id) = job.queue_job_id
    {
        // Deletes the job only if no worker holds it (the queue's own rule), so a
        // job is either removed here or claimed there, never both.
        let removed = utils
            .with_executor(&tx)
            .complete_jobs(&[job_id])
            .await
            .map_err(|e| db.queue_err(e))?;
        if !removed.is_empty() {
            let result = canceled_while_queued();
            let result_json = serde_json::to_string(&result).ok();
            let error_json = result
                .err
                .as_ref()
                .and_then(|e| serde_json::to_string(e).ok());
            db.finish_dequeued(&tx, execution_id, result_json.as_deref())
                .await?;
            tx.commit().await.map_err(|e| db.pg(e))?;
            drop(client);
            pg.record_unstarted(
                execution_id,
                &job.backend,
                Some(&job.request_json),
                &End {
                    outcome: State::Canceled,
                    error_json: error_json.as_deref(),
                    error_code: Some(ErrorCode::Canceled.as_str()),
                    usage: Usage::default(),
                    cancel_requested: false,
                },
                "canceled while queued; never started",
            )
            .await?;
            return Ok(CancelOutcome::Dequeued);
        }
    }
    db.notify_cancel(&tx, execution_id).await?;
    tx.commit().await.map_err(|e| db.pg(e))?;
    Ok(CancelOutcome::Signaled {
        worker_id: job.worker_id,
    })
}
