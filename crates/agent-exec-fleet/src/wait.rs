//! Waiting for an execution's end from any machine, and saying why it has not ended.

use std::time::{Duration, Instant};

use agent_exec_contract::{Capability, ContractResult, Error, Outcome};
use agent_exec_journal::{ExecutionRecord, Journal};

use crate::FleetError;
use crate::db::{DONE_CHANNEL, FleetDb};
use crate::flags::{admits, allowlist, job_flags};
use crate::store::{JobRow, JobState, WorkerState};

/// How a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitEnd {
    /// The execution's one result (exactly what `run --json` prints for it).
    Done(ContractResult),
    /// Not terminal when the timeout passed; the string says why.
    TimedOut(String),
}

/// How often the tables are read when no NOTIFY arrives (a missed one is only late).
const POLL: Duration = Duration::from_millis(500);
/// How often a waiter sweeps for dead workers (so a fleet whose workers all died
/// still settles).
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Blocks until `execution_id` is terminal or `timeout` passes. `on_event` gets
/// each event's JSON, in order, before the result is returned.
pub async fn wait(
    db: &FleetDb,
    journal: &Journal,
    execution_id: &str,
    timeout: Option<Duration>,
    mut on_event: impl FnMut(&str),
) -> Result<WaitEnd, FleetError> {
    // On the command's own connection when it is free to listen (one connection for
    // the whole `wait`), else on a second one.
    let (_listen_client, mut notes) = match db.listen_here(&[DONE_CHANNEL]).await? {
        Some(notes) => (None, notes),
        None => {
            let (client, notes) = db.listen(&[DONE_CHANNEL]).await?;
            (Some(client), notes)
        }
    };
    let until = timeout.map(|t| Instant::now() + t);
    let mut last_seq = -1i32;
    let mut last_sweep: Option<Instant> = None;
    loop {
        if last_sweep.is_none_or(|at| at.elapsed() >= SWEEP_EVERY) {
            crate::sweep::sweep(db, journal).await?;
            last_sweep = Some(Instant::now());
        }
        let job = db.job(execution_id).await?;
        for (seq, line) in db.events_after(execution_id, last_seq).await? {
            on_event(&line);
            last_seq = seq;
        }
        match &job {
            Some(job) if job.state == JobState::Done => {
                return Ok(WaitEnd::Done(result_of(journal, job).await?));
            }
            Some(_) => {}
            None => match journal.show(execution_id).await? {
                // Not a fleet execution: a local `run` that is journaled here.
                Some(record) if record.summary.state.is_terminal() => {
                    return Ok(WaitEnd::Done(from_journal(&record)));
                }
                Some(_) => {}
                None => return Err(FleetError::NoSuchExecution(execution_id.to_owned())),
            },
        }
        let nap = match until {
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(WaitEnd::TimedOut(
                        explain(db, execution_id, job.as_ref()).await?,
                    ));
                }
                left.min(POLL)
            }
            None => POLL,
        };
        tokio::select! {
            _ = notes.recv() => {}
            _ = tokio::time::sleep(nap) => {}
        }
    }
}

/// The stored result, or — when the worker died before storing one — the journal's.
async fn result_of(journal: &Journal, job: &JobRow) -> Result<ContractResult, FleetError> {
    if let Some(json) = &job.result_json {
        return serde_json::from_str(json).map_err(|e| FleetError::Corrupt {
            execution_id: job.execution_id.clone(),
            reason: format!("stored result: {e}"),
        });
    }
    match journal.show(&job.execution_id).await? {
        Some(record) => Ok(from_journal(&record)),
        None => Err(FleetError::NoSuchExecution(job.execution_id.clone())),
    }
}

/// The execution's result from the journal: the kept one (what its runner
/// returned), else what the journal knows in the result's shape — outcome, error
/// and usage; text, files and logs were never stored (the process running it ended
/// first), and `logs` says so.
pub fn from_journal(record: &ExecutionRecord) -> ContractResult {
    if let Some(kept) = record
        .result_text
        .as_deref()
        .and_then(|json| serde_json::from_str::<ContractResult>(json).ok())
    {
        return kept;
    }
    let outcome = Outcome::from_wire(record.summary.state.as_str()).effective();
    let err = record
        .error
        .as_ref()
        .and_then(|e| serde_json::from_value::<Error>(e.clone()).ok());
    let mut result = match err {
        Some(err) => ContractResult::with_error(outcome, err),
        None => {
            let mut r = ContractResult::succeeded(String::new());
            r.outcome = outcome;
            r
        }
    };
    result.usage.prompt_tokens = record.summary.usage.prompt_tokens;
    result.usage.completion_tokens = record.summary.usage.completion_tokens;
    result.execution_id = record.summary.execution_id.clone();
    result.logs = "result rebuilt from the journal: no result was kept (the process running the execution ended first); text and files are not available".into();
    result
}

/// Why `execution_id` has not ended yet.
async fn explain(
    db: &FleetDb,
    execution_id: &str,
    job: Option<&JobRow>,
) -> Result<String, FleetError> {
    let Some(job) = job else {
        return Ok(format!(
            "execution {execution_id:?} is running outside the fleet (a local `agent-exec run`)"
        ));
    };
    let workers = db.workers().await?;
    if job.state == JobState::Running {
        let on = job.worker_id.clone().unwrap_or_default();
        return Ok(format!(
            "execution {execution_id:?} is still running on worker {on}"
        ));
    }
    let live: Vec<_> = workers
        .iter()
        .filter(|w| w.state == WorkerState::Live && w.heartbeat_age_s <= crate::LEASE.as_secs_f64())
        .collect();
    let required: Vec<Capability> = job
        .required
        .iter()
        .map(|c| Capability::from_wire(c))
        .collect();
    let flags = job_flags(&job.backend, &required);
    let able: Vec<&str> = live
        .iter()
        .filter(|w| {
            let verified: Vec<_> = w
                .backends
                .iter()
                .filter(|a| !a.verified.is_empty())
                .cloned()
                .collect();
            admits(&allowlist(&verified), &flags)
        })
        .map(|w| w.worker_id.as_str())
        .collect();
    let needs = if job.required.is_empty() {
        format!("backend `{}`", job.backend)
    } else {
        format!(
            "backend `{}` with capabilities {}",
            job.backend,
            job.required.join(", ")
        )
    };
    if !able.is_empty() {
        return Ok(format!(
            "execution {execution_id:?} is still queued: {} live worker(s) can run {needs} ({}), all busy",
            able.len(),
            able.join(", ")
        ));
    }
    if live.is_empty() {
        return Ok(format!(
            "execution {execution_id:?} is still queued: no worker is live; it needs {needs}"
        ));
    }
    let seen: Vec<String> = live
        .iter()
        .filter_map(|w| {
            let b = w.backends.iter().find(|a| a.name == job.backend)?;
            let mut line = format!("{} verified [{}]", w.worker_id, b.verified.join(", "));
            if !b.problems.is_empty() {
                line.push_str(&format!(" ({})", b.problems.join("; ")));
            }
            Some(line)
        })
        .collect();
    Ok(format!(
        "execution {execution_id:?} is still queued: no live worker has verified {needs}{}",
        if seen.is_empty() {
            String::from("; no live worker serves that backend")
        } else {
            format!("; {}", seen.join("; "))
        }
    ))
}
