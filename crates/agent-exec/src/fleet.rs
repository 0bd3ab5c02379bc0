//! `agent-exec worker`, `submit`, `wait`, `cancel`: the fleet commands, thin over
//! `agent-exec-fleet`. The journal location is the same as for `run` and must be a
//! `postgres://` URL — except for `wait` and `cancel`, which on an SQLite journal
//! work for runs on this machine ([`crate::results`]).

use std::sync::Arc;

use agent_exec_backends::config::Config;
use agent_exec_fleet::{CancelOutcome, FleetDb, FleetError, WaitEnd, WorkerSettings};
use agent_exec_journal::{Journal, JournalLocation, PgJournal};
use anyhow::{anyhow, bail};
use tokio_util::sync::CancellationToken;

use crate::cli::{Args, CancelArgs, SubmitArgs, WaitArgs, WorkerArgs};
use crate::results::EXIT_TIMEOUT;
use crate::run::{exit_code, journal_location, print_recovered, print_result};

/// The fleet's URL: the journal location, which must be PostgreSQL.
fn fleet_url(args: &Args, config: &Config) -> anyhow::Result<String> {
    match journal_location(args, config)? {
        JournalLocation::Postgres(url) => Ok(url),
        JournalLocation::Sqlite(path) => bail!(
            "the fleet needs --journal postgres://… (or [journal] url); {} is an SQLite file, which machines cannot share",
            path.display()
        ),
    }
}

/// The fleet and the journal over one connection: a one-shot command pays for one
/// (on a loaded machine a connection costs tens of milliseconds; `submit` used three).
async fn connect(args: &Args) -> anyhow::Result<(Config, FleetDb, Journal)> {
    let config = Config::discover(args.config.as_deref())?;
    let url = fleet_url(args, &config)?;
    // The fleet connection first: it answers "does the URL answer" with a bounded wait.
    let db = FleetDb::connect_existing(&url).await?;
    // Both schema checks at once: their statements share round trips.
    let (migrated, opened) =
        tokio::join!(db.migrate(), PgJournal::open_on(db.connection().clone()));
    migrated?;
    let (journal, recovered) = opened?;
    print_recovered(&recovered);
    let journal = Journal::Postgres(journal);
    crate::leftovers::clean_up(&journal, &recovered).await;
    Ok((config, db, journal))
}

pub async fn worker(args: &Args, w: &WorkerArgs) -> anyhow::Result<u8> {
    if let Err(e) = agent_exec_runtime::become_subreaper() {
        tracing::warn!(%e, "cannot become a child subreaper; orphaned processes may escape");
    }
    let config = Config::discover(args.config.as_deref())?;
    for warning in &config.warnings {
        eprintln!("agent-exec: warning: {warning}");
    }
    let url = fleet_url(args, &config)?;
    let mut registry = config.registry()?;
    crate::verified::attach(&mut registry, agent_exec_contract::CacheMode::Use);
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    let signals = tokio::spawn(async move {
        crate::run::stop_signal().await;
        eprintln!("agent-exec worker: stopping… (canceling running executions)");
        on_signal.cancel();
    });
    let settings = WorkerSettings {
        url,
        concurrency: w.concurrency as usize,
        backends: w.backends.clone(),
        poll_interval: w.poll_interval,
    };
    let result = agent_exec_fleet::run_worker(settings, Arc::new(registry), shutdown).await;
    signals.abort();
    result?;
    Ok(0)
}

pub async fn submit(args: &Args, s: &SubmitArgs) -> anyhow::Result<u8> {
    // Everything that can be checked here is, before the database is touched.
    let request = crate::request::build(&s.request, crate::request::WorkspaceAt::Worker)?;
    let (_config, db, journal) = connect(args).await?;
    match agent_exec_fleet::submit(&db, &journal, &s.request.backend, &request).await {
        Ok(_) => {}
        Err(e @ (FleetError::UnknownBackend { .. } | FleetError::InvalidRequest(_))) => {
            eprintln!("agent-exec: {e}");
            return Ok(crate::EXIT_USAGE);
        }
        Err(e @ (FleetError::AlreadyActive { .. } | FleetError::Journal(_))) => {
            let message = crate::run::in_the_ids_words(&e.to_string(), &s.request);
            eprintln!("agent-exec: {message}");
            return Ok(1);
        }
        Err(e) => return Err(e.into()),
    }
    if s.json {
        let json = serde_json::json!({ "execution_id": request.execution_id });
        crate::write_stdout(&format!("{json}\n"))?;
    } else {
        crate::write_stdout(&format!("{}\n", request.execution_id))?;
    }
    Ok(0)
}

/// The SQLite journal, opened, when that is where the journal is (`wait` and `cancel`
/// then need no fleet).
async fn local_journal(args: &Args) -> anyhow::Result<Option<Journal>> {
    let config = Config::discover(args.config.as_deref())?;
    match journal_location(args, &config)? {
        JournalLocation::Sqlite(_) => Ok(Some(crate::run::open_journal(args, &config).await?)),
        JournalLocation::Postgres(_) => Ok(None),
    }
}

pub async fn wait(args: &Args, w: &WaitArgs) -> anyhow::Result<u8> {
    if let Some(journal) = local_journal(args).await? {
        return crate::results::wait_local(&journal, w).await;
    }
    let timeout = match &w.timeout {
        None => None,
        Some(text) => Some(crate::duration::parse(text).map_err(|e| anyhow!("--timeout: {e}"))?),
    };
    let (_config, db, journal) = connect(args).await?;
    let events = w.events;
    let end = agent_exec_fleet::wait(&db, &journal, &w.id, timeout, |line| {
        if events {
            use std::io::Write as _;
            // One write per line, as `run --events`.
            let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
        }
    })
    .await;
    match end {
        Ok(WaitEnd::Done(result)) => {
            print_result(w.json, &w.id, &result)?;
            Ok(exit_code(&result.outcome))
        }
        Ok(WaitEnd::TimedOut(why)) => {
            eprintln!("agent-exec: wait: timed out: {why}");
            Ok(EXIT_TIMEOUT)
        }
        Err(e @ FleetError::NoSuchExecution(_)) => {
            eprintln!("agent-exec: {e}");
            Ok(crate::EXIT_USAGE)
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn cancel(args: &Args, c: &CancelArgs) -> anyhow::Result<u8> {
    if let Some(journal) = local_journal(args).await? {
        return crate::results::cancel_local(&journal, c).await;
    }
    let (_config, db, journal) = connect(args).await?;
    match agent_exec_fleet::cancel(&db, &journal, &c.id).await {
        Ok(CancelOutcome::Dequeued) => {
            eprintln!(
                "agent-exec: execution {} was queued: removed, recorded canceled; it never starts",
                c.id
            );
            Ok(0)
        }
        Ok(CancelOutcome::Signaled { worker_id }) => {
            eprintln!(
                "agent-exec: cancel sent to {}; `agent-exec wait {}` shows how it ended",
                worker_id.map_or_else(
                    || "the worker that claimed it".to_owned(),
                    |w| format!("worker {w}")
                ),
                c.id
            );
            Ok(0)
        }
        Ok(CancelOutcome::AlreadyEnded) => {
            eprintln!(
                "agent-exec: execution {} had already ended; nothing to cancel",
                c.id
            );
            Ok(0)
        }
        // Not a fleet job: a local `run` journaled in the same database.
        Err(FleetError::NoSuchExecution(_)) => crate::results::cancel_local(&journal, c).await,
        Err(e) => Err(e.into()),
    }
}
