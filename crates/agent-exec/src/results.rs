//! Results kept in the journal (`result ID`, `runs prune`), and `wait`/`cancel` on one
//! machine without PostgreSQL: on an SQLite journal, for a run another process owns.
//!
//! Cancel across processes is a request recorded in the journal that the runner polls
//! ([`crate::run::watch_cancel_requests`]; the decision is argued at
//! `agent_exec_journal::Journal::request_cancel`). `wait` polls the execution's row,
//! and judges its owner itself, so a runner that died is settled `unknown` (as every
//! journal open does) and the wait ends instead of hanging.

use std::time::Instant;

use agent_exec_backends::config::Config;
use agent_exec_contract::{ContractResult, Outcome};
use agent_exec_journal::owner::Liveness;
use agent_exec_journal::{CancelAsk, ExecutionRecord, Journal, JournalError, ProcessIdentity};
use anyhow::anyhow;

use crate::cli::{Args, CancelArgs, ResultArgs, WaitArgs};
use crate::run::{POLL, exit_code, open_journal, print_recovered, print_result};

/// Exit code of `wait --timeout` when the execution has not ended.
pub const EXIT_TIMEOUT: u8 = 5;

/// `agent-exec result ID`: the kept result, byte for byte what `run --json` printed
/// (or, when none was kept, the one rebuilt from the journal, said on stderr). Exit
/// code as the run's; 5 when it has not ended.
pub async fn result(args: &Args, r: &ResultArgs) -> anyhow::Result<u8> {
    crate::request::check_execution_id(&r.id).map_err(|e| anyhow!("invalid execution id: {e}"))?;
    let config = Config::discover(args.config.as_deref())?;
    let journal = open_journal(args, &config).await?;
    let Some(record) = journal.show(&r.id).await? else {
        eprintln!("agent-exec: no execution {:?} in the journal", r.id);
        return Ok(crate::EXIT_USAGE);
    };
    if !record.summary.state.is_terminal() {
        eprintln!(
            "agent-exec: execution {:?} is still {}: it has no result yet; hint: `agent-exec wait {}` waits for it",
            r.id, record.summary.state, r.id
        );
        return Ok(EXIT_TIMEOUT);
    }
    let outcome = print_kept(true, &record)?;
    Ok(exit_code(&outcome))
}

/// Prints an ended execution's result as its run did: with `json`, the kept JSON as
/// it was stored. Returns the outcome.
pub fn print_kept(json: bool, record: &ExecutionRecord) -> anyhow::Result<Outcome> {
    let id = &record.summary.execution_id;
    if let Some(note) = &record.result_note {
        eprintln!("agent-exec: execution {id}: {note}");
    }
    let kept = record
        .result_text
        .as_deref()
        .and_then(|text| Some((text, serde_json::from_str::<ContractResult>(text).ok()?)));
    match kept {
        Some((text, result)) if json => {
            crate::write_stdout(&format!("{text}\n"))?;
            Ok(result.outcome)
        }
        Some((_, result)) => {
            print_result(false, id, &result)?;
            Ok(result.outcome)
        }
        None => {
            eprintln!(
                "agent-exec: execution {id} kept no result (the process running it ended before returning one); this one is rebuilt from the journal"
            );
            let result = agent_exec_fleet::wait::from_journal(record);
            print_result(json, id, &result)?;
            Ok(result.outcome)
        }
    }
}

/// `wait ID` on an SQLite journal.
pub async fn wait_local(journal: &Journal, w: &WaitArgs) -> anyhow::Result<u8> {
    if w.events {
        anyhow::bail!(
            "--events: an SQLite journal keeps no events (the fleet's PostgreSQL journal does); wait without --events, or give the run itself --events"
        );
    }
    let timeout = match &w.timeout {
        None => None,
        Some(text) => Some(crate::duration::parse(text).map_err(|e| anyhow!("--timeout: {e}"))?),
    };
    let until = timeout.map(|t| Instant::now() + t);
    let here = ProcessIdentity::current();
    loop {
        let Some(record) = journal.show(&w.id).await? else {
            eprintln!("agent-exec: no execution {:?} in the journal", w.id);
            return Ok(crate::EXIT_USAGE);
        };
        if record.summary.state.is_terminal() {
            let outcome = print_kept(w.json, &record)?;
            return Ok(exit_code(&outcome));
        }
        // Its runner died while we wait: settle it now, as the next open would.
        if record.owner.pid != 0 && matches!(record.owner.liveness(&here), Liveness::Dead(_)) {
            let recovered = journal.recover().await?;
            print_recovered(&recovered);
            crate::leftovers::clean_up(journal, &recovered).await;
            continue;
        }
        let nap = match until {
            None => POLL,
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    eprintln!(
                        "agent-exec: wait: timed out: execution {} is still {} in pid {} on {}",
                        w.id, record.summary.state, record.owner.pid, record.owner.host
                    );
                    return Ok(EXIT_TIMEOUT);
                }
                left.min(POLL)
            }
        };
        tokio::time::sleep(nap).await;
    }
}

/// `cancel ID` on an SQLite journal: records the request; the runner acts on it.
pub async fn cancel_local(journal: &Journal, c: &CancelArgs) -> anyhow::Result<u8> {
    let me = ProcessIdentity::current();
    let by = format!("`agent-exec cancel` (pid {} on {})", me.pid, me.host);
    match journal.request_cancel(&c.id, &by).await {
        Ok(CancelAsk::Recorded { owner }) => {
            eprintln!(
                "agent-exec: cancel requested; its runner (pid {} on {}) acts on it within {} ms; `agent-exec wait {}` shows how it ended",
                owner.pid,
                owner.host,
                POLL.as_millis(),
                c.id
            );
            Ok(0)
        }
        Ok(CancelAsk::AlreadyEnded(state)) => {
            eprintln!(
                "agent-exec: execution {} had already ended {state}; nothing to cancel",
                c.id
            );
            Ok(0)
        }
        Err(e @ JournalError::NoSuchExecution(_)) => {
            eprintln!("agent-exec: {e}");
            Ok(crate::EXIT_USAGE)
        }
        Err(e) => Err(e.into()),
    }
}

/// `runs prune --older-than DURATION`.
pub async fn prune(journal: &Journal, older_than: &str) -> anyhow::Result<u8> {
    let age = crate::duration::parse(older_than).map_err(|e| anyhow!("--older-than: {e}"))?;
    let cutoff = time::Duration::try_from(age)
        .ok()
        .and_then(|age| time::OffsetDateTime::now_utc().checked_sub(age))
        .ok_or_else(|| anyhow!("--older-than {older_than}: too long"))?;
    let pruned = journal.prune_ended_before(cutoff).await?;
    let cutoff = cutoff
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    crate::write_stdout(&format!(
        "pruned {pruned} execution(s) that ended before {cutoff}\n"
    ))?;
    Ok(0)
}
