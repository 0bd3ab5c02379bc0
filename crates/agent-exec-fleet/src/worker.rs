//! `agent-exec worker`: claims queued executions and runs them with the runtime, as
//! `run` would, `K` at a time.
//!
//! * **Routing.** The worker verifies its backends once at start and advertises what
//!   the probes verified (never what is declared); it claims only jobs whose flags its
//!   verifications cover ([`crate::flags`]).
//! * **One attempt.** Jobs have `max_attempts = 1`; the handler always returns
//!   success to the queue (the outcome lives in the journal and the stored result),
//!   so the queue never retries. Starting is fenced too: a job runs only if its fleet
//!   row flips from `queued` to `running` in one transaction, so a job the queue
//!   hands out again (it does so for a job interrupted by a shutdown past the grace
//!   period, which is why that period is set far beyond the cancel timeout) never
//!   runs twice.
//! * **Cancel.** A LISTEN connection receives cancel requests and fires the
//!   execution's cancellation, which terminates the whole process tree as `run`
//!   does; the heartbeat also polls for requests, in case a NOTIFY was missed.
//! * **Lease.** A heartbeat every [`crate::HEARTBEAT`]; a worker whose heartbeat
//!   finds its row no longer `live` (a sweep declared it gone) cancels everything and
//!   stops: what it would record now is fenced off anyway.
//! * **Database loss.** The session (connections, queue worker, listener) is rebuilt
//!   with backoff (0.5 s doubling to 10 s), logged on stderr. Executions that were
//!   running when the connection broke keep running; a result that could not be
//!   recorded is kept in memory and recorded after the reconnect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::{Duration, Instant};

use agent_exec_contract::{
    CancelCause, Cancellation, ContractResult, Error, ErrorCode, EventSink, JournalHook as _,
    Registry, SideEffects,
};
use agent_exec_journal::{End, Journal, JournalLocation, ProcessIdentity, State, Usage};
use agent_exec_runtime::{RunOptions, Runtime};
use futures::StreamExt as _;
use graphile_worker::tokio_postgres::TokioPostgresDatabase;
use graphile_worker::{
    IntoTaskHandlerResult, TaskHandler, WorkerContext, WorkerOptions, WorkerStart,
};
use tokio_util::sync::CancellationToken;

use crate::FleetError;
use crate::db::{CANCEL_CHANNEL, FleetDb, QUEUE_SCHEMA, TASK};
use crate::flags::{Advertised, allowlist};
use crate::store::JobStart;
use crate::submit::{JobPayload, canceled_while_queued};

/// How a worker is run.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// The fleet's PostgreSQL URL (the journal's).
    pub url: String,
    /// Executions at a time.
    pub concurrency: usize,
    /// Backends to serve (names or aliases); empty: every configured backend.
    pub backends: Vec<String>,
    /// How often idle slots look for queued jobs when no wake-up came (a NOTIFY missed
    /// while disconnected, a job whose flags another worker refused). New jobs and
    /// freed slots wake the queue at once, so this is a safety net, not the dispatch
    /// latency.
    pub poll_interval: Duration,
}

/// The queue library's own default.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Verifies `names` (all of the registry's when empty) and says what each verified.
pub async fn advertise(
    registry: &Registry,
    names: &[String],
) -> Result<Vec<Advertised>, FleetError> {
    let names: Vec<String> = if names.is_empty() {
        registry.names()
    } else {
        let mut canonical = Vec::new();
        for name in names {
            let (c, _) = registry
                .canonical(name)
                .map_err(|e| FleetError::Worker(format!("--backend {name}: {e}")))?;
            if !canonical.contains(&c) {
                canonical.push(c);
            }
        }
        canonical
    };
    let mut out = Vec::new();
    for name in names {
        let verification = registry
            .verification(&name)
            .await
            .map_err(|e| FleetError::Worker(e.to_string()))?;
        out.push(Advertised {
            aliases: registry
                .aliases_of(&name)
                .into_iter()
                .map(|(alias, _)| alias)
                .collect(),
            verified: verification
                .verified
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect(),
            problems: verification.problems,
            name,
        });
    }
    Ok(out)
}

/// A result the worker could not record (the database was away), kept for the
/// next session.
struct Undelivered {
    execution_id: String,
    result: ContractResult,
}

/// What one session shares with its job handlers.
struct Session {
    db: Arc<FleetDb>,
    /// The journal for sweeps and repairs (the first lane's).
    journal: Arc<Journal>,
    /// One runtime and journal connection per execution slot. Decision: a journal
    /// write is a transaction on one connection, so with one connection the `K`
    /// executions of a worker took turns at every write — measured, about 0.6 s of
    /// waiting per trivial job at concurrency 4 on a loaded machine, and one worker
    /// ran 5 jobs a second. Not taken: a pool inside the journal (every journal
    /// operation would have to carry its connection through; a lane per slot needs
    /// none of that).
    lanes: Vec<Runtime>,
    free_lanes: SyncMutex<Vec<usize>>,
}

impl Session {
    /// A lane for one execution; given back with [`Session::give_back`]. There are as
    /// many lanes as slots, so one is free; if not (it cannot be), the first is shared.
    fn take_lane(&self) -> usize {
        self.free_lanes
            .lock()
            .ok()
            .and_then(|mut free| free.pop())
            .unwrap_or(0)
    }

    fn give_back(&self, lane: usize) {
        if let Ok(mut free) = self.free_lanes.lock()
            && !free.contains(&lane)
        {
            free.push(lane);
        }
    }
}

/// What lives as long as the worker process.
struct Shared {
    worker_id: String,
    registry: Arc<Registry>,
    session: SyncMutex<Option<Arc<Session>>>,
    running: SyncMutex<HashMap<String, Cancellation>>,
    undelivered: SyncMutex<Vec<Undelivered>>,
    /// Set once the worker is stopping: a job claimed from now on is canceled before
    /// it is dispatched.
    stopping: std::sync::atomic::AtomicBool,
    /// Told when a job handler returns: the queue's slots look for the next job at
    /// once ([`crate::wake`]).
    free: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

/// The handle the queue's extension map holds.
#[derive(Clone, Debug)]
struct Handle(Arc<Shared>);

impl Shared {
    fn session(&self) -> Option<Arc<Session>> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    fn cancel(&self, execution_id: &str) {
        if let Some(c) = self
            .running
            .lock()
            .ok()
            .and_then(|r| r.get(execution_id).cloned())
        {
            tracing::info!(execution = %execution_id, "fleet: cancel requested");
            c.cancel(CancelCause::Caller);
        }
    }

    fn cancel_all(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Ok(running) = self.running.lock() {
            for c in running.values() {
                c.cancel(CancelCause::Caller);
            }
        }
    }

    fn running_ids(&self) -> Vec<String> {
        self.running
            .lock()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Runs one claimed job to its recorded end.
    async fn execute(self: Arc<Self>, payload: JobPayload) {
        let id = payload.request.execution_id.clone();
        let Some(session) = self.session() else {
            return;
        };
        // Registered before the start record is read: a cancel that lands after this
        // reaches the NOTIFY handler; one that landed before is in the row.
        let cancellation = Cancellation::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(id.clone(), cancellation.clone());
        }
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            cancellation.cancel(CancelCause::Caller);
        }
        let result = self.run_claimed(&session, payload, cancellation).await;
        if let Some(result) = result {
            let delivered = deliver(&session, &self.worker_id, &id, &result).await;
            if let Err(e) = delivered {
                tracing::warn!(execution = %id, error = %e, "fleet: result not recorded yet; kept for the reconnect");
                if let Ok(mut u) = self.undelivered.lock() {
                    u.push(Undelivered {
                        execution_id: id.clone(),
                        result,
                    });
                }
            }
        }
        if let Ok(mut running) = self.running.lock() {
            running.remove(&id);
        }
    }

    /// `None` when the job is not this worker's to run (already started elsewhere,
    /// or gone).
    async fn run_claimed(
        &self,
        session: &Session,
        payload: JobPayload,
        cancellation: Cancellation,
    ) -> Option<ContractResult> {
        let id = payload.request.execution_id.clone();
        match session.db.start_job(&id, &self.worker_id).await {
            Ok(JobStart::Run) => {}
            Ok(JobStart::NotOurs(state)) => {
                tracing::warn!(execution = %id, %state, "fleet: claimed a job that is not queued; not run");
                return None;
            }
            Ok(JobStart::Canceled) => {
                let result = canceled_while_queued();
                record_unstarted(
                    session,
                    &id,
                    &payload,
                    &result,
                    "canceled before it started",
                )
                .await;
                return Some(result);
            }
            Err(e) => {
                tracing::warn!(execution = %id, error = %e, "fleet: cannot record the start; not run");
                return None;
            }
        }
        let mut request = payload.request;
        // The workspace names a directory on this machine: it must exist here.
        match std::fs::canonicalize(&request.workspace.root) {
            Ok(root) if root.is_dir() => {
                if let Some(root) = root.to_str() {
                    request.workspace.root = root.to_owned();
                }
            }
            _ => {
                let result = ContractResult::failed(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "workspace {:?} is not a directory on worker {}",
                        request.workspace.root, self.worker_id
                    ),
                    SideEffects::None,
                ));
                record_unstarted(
                    session,
                    &id,
                    &JobPayload {
                        backend: payload.backend,
                        request,
                    },
                    &result,
                    "not started: no workspace",
                )
                .await;
                return Some(result);
            }
        }
        let resolved = match self
            .registry
            .resolve(&payload.backend, &request.required)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                let result = ContractResult::failed(e.to_contract_error());
                record_unstarted(
                    session,
                    &id,
                    &JobPayload {
                        backend: payload.backend,
                        request,
                    },
                    &result,
                    "not started: backend refused",
                )
                .await;
                return Some(result);
            }
        };
        let (events, receiver) = EventSink::channel();
        let writer = tokio::spawn(write_events(session.db.clone(), id.clone(), receiver));
        let options = RunOptions {
            events,
            cancellation,
            ..Default::default()
        };
        let lane = session.take_lane();
        let result = match session.lanes.get(lane) {
            Some(runtime) => runtime.run(request, &resolved, options).await,
            None => {
                Runtime::new()
                    .with_journal(session.journal.clone())
                    .run(request, &resolved, options)
                    .await
            }
        };
        session.give_back(lane);
        let _ = writer.await;
        Some(result)
    }
}

async fn record_unstarted(
    session: &Session,
    id: &str,
    payload: &JobPayload,
    result: &ContractResult,
    note: &str,
) {
    let Some(pg) = session.journal.as_postgres() else {
        return;
    };
    let outcome = State::parse(result.outcome.effective().as_str()).unwrap_or(State::Unknown);
    let error_json = result
        .err
        .as_ref()
        .and_then(|e| serde_json::to_string(e).ok());
    let request_json = serde_json::to_string(&payload.request).ok();
    let end = End {
        outcome,
        error_json: error_json.as_deref(),
        error_code: result.err.as_ref().map(|e| e.code.as_str()),
        usage: Usage::default(),
        cancel_requested: false,
    };
    if let Err(e) = pg
        .record_unstarted(id, &payload.backend, request_json.as_deref(), &end, note)
        .await
    {
        tracing::warn!(execution = %id, error = %e, "fleet: journal: end not recorded");
    }
}

/// Stores the result and tells waiters.
async fn deliver(
    session: &Session,
    worker_id: &str,
    id: &str,
    result: &ContractResult,
) -> Result<(), FleetError> {
    let json = serde_json::to_string(result).map_err(|e| FleetError::Corrupt {
        execution_id: id.to_owned(),
        reason: e.to_string(),
    })?;
    if session.db.is_closed() {
        return Err(FleetError::Worker(
            "the database connection is closed".into(),
        ));
    }
    session
        .db
        .finish_job(id, Some(&json), Some(worker_id))
        .await?;
    Ok(())
}

/// Copies events to the fleet table in order, a batch per round trip.
async fn write_events(
    db: Arc<FleetDb>,
    id: String,
    mut receiver: futures::channel::mpsc::UnboundedReceiver<agent_exec_contract::Event>,
) {
    let mut seq = 0i32;
    while let Some(first) = receiver.next().await {
        let mut batch = vec![first];
        while batch.len() < 256 {
            match receiver.try_recv() {
                Ok(e) => batch.push(e),
                _ => break,
            }
        }
        let lines: Vec<String> = batch
            .iter()
            .filter_map(|e| serde_json::to_string(e).ok())
            .collect();
        if let Err(e) = db.append_events(&id, seq, &lines).await {
            tracing::warn!(execution = %id, error = %e, "fleet: events not stored");
        }
        seq += lines.len() as i32;
    }
}

impl TaskHandler for JobPayload {
    const IDENTIFIER: &'static str = TASK;

    fn run(
        self,
        ctx: WorkerContext,
    ) -> impl Future<Output = impl IntoTaskHandlerResult> + Send + 'static {
        let handle = ctx.get_ext::<Handle>().cloned();
        async move {
            let Some(Handle(shared)) = handle else {
                return Err::<(), String>("agent-exec fleet state missing".into());
            };
            let free = shared.free.clone();
            shared.execute(self).await;
            free.notify_one();
            // Always success to the queue: the outcome is the journal's, and a queue
            // failure would only invite a retry (invariant 3).
            Ok(())
        }
    }
}

/// Why a session ended.
enum SessionEnd {
    Shutdown,
    LeaseLost,
}

/// Runs the worker until `shutdown` fires (SIGTERM/Ctrl-C in the CLI): running
/// executions are canceled as `run` cancels them, and recorded.
pub async fn run_worker(
    settings: WorkerSettings,
    registry: Arc<Registry>,
    shutdown: CancellationToken,
) -> Result<(), FleetError> {
    let advertised = advertise(&registry, &settings.backends).await?;
    if advertised.iter().all(|a| a.verified.is_empty()) {
        let problems: Vec<String> = advertised
            .iter()
            .map(|a| format!("{}: {}", a.name, a.problems.join("; ")))
            .collect();
        return Err(FleetError::Worker(format!(
            "no backend verified anything, so this worker could run nothing ({})",
            problems.join(" | ")
        )));
    }
    let me = ProcessIdentity::current();
    let short = uuid::Uuid::now_v7().simple().to_string();
    let worker_id = format!("{}-{}-{}", me.host, me.pid, &short[short.len() - 6..]);
    for a in &advertised {
        eprintln!(
            "agent-exec worker {worker_id}: backend {} verified [{}]{}",
            a.name,
            a.verified.join(", "),
            if a.problems.is_empty() {
                String::new()
            } else {
                format!(" ({})", a.problems.join("; "))
            }
        );
    }
    let shared = Arc::new(Shared {
        worker_id: worker_id.clone(),
        registry,
        session: SyncMutex::new(None),
        running: SyncMutex::new(HashMap::new()),
        undelivered: SyncMutex::new(Vec::new()),
        stopping: std::sync::atomic::AtomicBool::new(false),
        free: Arc::new(tokio::sync::Notify::new()),
    });
    let mut backoff = Duration::from_millis(500);
    let mut first = true;
    loop {
        if shutdown.is_cancelled() {
            return Ok(());
        }
        let began = Instant::now();
        match session(&settings, &shared, &advertised, &me, &shutdown).await {
            Ok(SessionEnd::Shutdown) => return Ok(()),
            Ok(SessionEnd::LeaseLost) => {
                return Err(FleetError::Worker(format!(
                    "worker {worker_id} lost its lease (another process declared it gone); its executions were recorded unknown; stopping"
                )));
            }
            Err(e) if first && matches!(e, FleetError::Connect { .. }) => return Err(e),
            Err(e) => {
                if began.elapsed() > Duration::from_secs(10) {
                    backoff = Duration::from_millis(500);
                }
                eprintln!(
                    "agent-exec worker {worker_id}: PostgreSQL connection lost or refused ({e}); reconnecting in {} ms",
                    backoff.as_millis()
                );
                tokio::select! {
                    _ = shutdown.cancelled() => { shared.cancel_all(); return Ok(()); }
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
        first = false;
    }
}

async fn session(
    settings: &WorkerSettings,
    shared: &Arc<Shared>,
    advertised: &[Advertised],
    me: &ProcessIdentity,
    shutdown: &CancellationToken,
) -> Result<SessionEnd, FleetError> {
    let db = Arc::new(FleetDb::connect(&settings.url).await?);
    let (journal, recovered) =
        Journal::open(&JournalLocation::Postgres(settings.url.clone())).await?;
    for r in &recovered {
        eprintln!(
            "agent-exec: journal: execution {} marked unknown ({})",
            r.execution_id, r.reason
        );
    }
    let journal = Arc::new(journal);
    let lane_count = settings.concurrency.max(1);
    let mut lanes = vec![Runtime::new().with_journal(journal.clone())];
    for _ in 1..lane_count {
        // Recovery ran on the first open; these find nothing to recover.
        let (more, _) = Journal::open(&JournalLocation::Postgres(settings.url.clone())).await?;
        lanes.push(Runtime::new().with_journal(Arc::new(more)));
    }
    let worker_id = shared.worker_id.clone();
    let backends_json =
        serde_json::to_string(advertised).map_err(|e| FleetError::Worker(e.to_string()))?;
    let registered = db
        .register_worker(&worker_id, me, settings.concurrency, &backends_json)
        .await?;
    if !registered {
        shared.cancel_all();
        return Ok(SessionEnd::LeaseLost);
    }
    let session = Arc::new(Session {
        db: db.clone(),
        journal: journal.clone(),
        lanes,
        free_lanes: SyncMutex::new((0..lane_count).rev().collect()),
    });
    let previous_queue_id = db.queue_worker_id(&worker_id).await?;
    if let Ok(mut s) = shared.session.lock() {
        *s = Some(session.clone());
    }
    redeliver(shared, &session, previous_queue_id.as_deref()).await?;

    let (_listen_client, mut notes) = db.listen(&[CANCEL_CHANNEL]).await?;
    let stop = shutdown.child_token();
    let queue_db = TokioPostgresDatabase::from_url(&settings.url, settings.concurrency + 2)
        .map_err(|e| db.queue_err(e))?;
    let queue_db = crate::wake::WakingDatabase::new(queue_db, shared.free.clone());
    let hook_db = db.clone();
    let hook_worker = worker_id.clone();
    let signal = stop.clone().cancelled_owned();
    let queue = WorkerOptions::default()
        .database(graphile_worker::Database::new(queue_db))
        .schema(QUEUE_SCHEMA)
        .concurrency(settings.concurrency.max(1))
        .poll_interval(settings.poll_interval)
        .define_job::<JobPayload>()
        .job_flag_allowlist(allowlist(
            &advertised
                .iter()
                .filter(|a| !a.verified.is_empty())
                .cloned()
                .collect::<Vec<_>>(),
        ))
        .add_extension(Handle(shared.clone()))
        .listen_os_shutdown_signals(false)
        .shutdown_signal(signal)
        // Far beyond the runtime's cancel timeout: the queue must never interrupt a
        // job itself (it would hand it out again).
        .shutdown_grace_period(Duration::from_secs(24 * 3600))
        .on(WorkerStart, move |ctx| {
            let db = hook_db.clone();
            let worker_id = hook_worker.clone();
            async move {
                if let Err(e) = db.record_queue_worker_id(&worker_id, &ctx.worker_id).await {
                    tracing::warn!(error = %e, "fleet: cannot record the queue worker id");
                }
            }
        })
        .init()
        .await
        .map_err(|e| db.queue_err(e))?;
    eprintln!(
        "agent-exec worker {worker_id}: connected to {}; concurrency {}",
        db.location(),
        settings.concurrency
    );
    // The queue runs as its own task: polled from inside this loop's `select!`, it
    // would stall whenever a branch body awaits (a heartbeat waiting on the client a
    // job handler holds would wait forever).
    let queue = Arc::new(queue);
    let mut run = tokio::spawn({
        let queue = queue.clone();
        async move { queue.run().await }
    });
    let mut heartbeat = tokio::time::interval(crate::HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks = 0u64;
    let end = loop {
        tokio::select! {
            result = &mut run => {
                break match result {
                    Ok(Ok(())) if shutdown.is_cancelled() => Ok(SessionEnd::Shutdown),
                    Ok(Ok(())) => Err(FleetError::Worker("the queue worker stopped".into())),
                    Ok(Err(e)) => Err(db.queue_err(e)),
                    Err(e) => Err(FleetError::Worker(format!("the queue worker task ended: {e}"))),
                };
            }
            _ = shutdown.cancelled() => {
                shared.cancel_all();
                stop.cancel();
                let _ = (&mut run).await;
                break Ok(SessionEnd::Shutdown);
            }
            note = notes.recv() => match note {
                Some((_, id)) => shared.cancel(&id),
                None => {
                    stop.cancel();
                    let _ = (&mut run).await;
                    break Err(FleetError::Worker("the listening connection closed".into()));
                }
            },
            _ = heartbeat.tick() => {
                ticks += 1;
                match beat(&db, &worker_id).await {
                    Ok(true) => {}
                    Ok(false) => {
                        shared.cancel_all();
                        stop.cancel();
                        let _ = (&mut run).await;
                        break Ok(SessionEnd::LeaseLost);
                    }
                    Err(e) => {
                        stop.cancel();
                        let _ = (&mut run).await;
                        break Err(e);
                    }
                }
                if let Ok(ids) = db.canceled_running(&worker_id).await {
                    for id in ids { shared.cancel(&id); }
                }
                if ticks.is_multiple_of(3) && let Err(e) = crate::sweep::sweep(&db, &journal).await {
                    tracing::warn!(error = %e, "fleet: sweep failed");
                }
            }
        }
    };
    if matches!(end, Ok(SessionEnd::Shutdown)) {
        let _ = db.stop_worker(&worker_id).await;
    }
    end
}

/// Renews the lease; `false` when the row is no longer `live`.
async fn beat(db: &FleetDb, worker_id: &str) -> Result<bool, FleetError> {
    if db.is_closed() {
        return Err(FleetError::Worker(
            "the database connection is closed".into(),
        ));
    }
    db.renew_lease(worker_id).await
}

/// After a reconnect: records results the last session could not, settles what
/// that session held and no longer runs, and releases the previous queue locks.
async fn redeliver(
    shared: &Shared,
    session: &Session,
    previous_queue_id: Option<&str>,
) -> Result<(), FleetError> {
    let pending: Vec<Undelivered> = shared
        .undelivered
        .lock()
        .map(|mut u| std::mem::take(&mut *u))
        .unwrap_or_default();
    for u in pending {
        finish_journal(session, &u.execution_id, &u.result).await;
        if let Err(e) = deliver(session, &shared.worker_id, &u.execution_id, &u.result).await {
            if let Ok(mut list) = shared.undelivered.lock() {
                list.push(u);
            }
            return Err(e);
        }
        eprintln!(
            "agent-exec worker {}: recorded execution {} after the reconnect ({})",
            shared.worker_id, u.execution_id, u.result.outcome
        );
    }
    // Jobs this worker holds `running` that nothing here runs any more: their end
    // could not be recorded and nothing is left of it in memory — unknown.
    let held = session.db.running_jobs(&shared.worker_id).await?;
    let running = shared.running_ids();
    let me = ProcessIdentity::current();
    for id in held.iter().filter(|id| !running.contains(id)) {
        if let Some(pg) = session.journal.as_postgres() {
            pg.settle_orphan(
                id,
                &me,
                "the worker lost its database connection and kept no result",
            )
            .await?;
        }
        session.db.finish_job(id, None, None).await?;
    }
    if let Some(queue_id) = previous_queue_id {
        crate::sweep::release_queue_worker(&session.db, queue_id).await?;
    }
    Ok(())
}

/// Records in the journal the end of an execution whose runtime could not (the
/// database was away when it ended). Only an attempt still open is touched.
async fn finish_journal(session: &Session, id: &str, result: &ContractResult) {
    let Ok(Some(record)) = session.journal.show(id).await else {
        return;
    };
    if record.summary.state.is_terminal() {
        return;
    }
    let attempt = record.summary.attempts;
    let now = time::OffsetDateTime::now_utc();
    if record
        .attempts
        .iter()
        .any(|a| a.attempt == attempt && !a.state.is_terminal())
    {
        let _ = session
            .journal
            .attempt_finished(id, attempt, result, now)
            .await;
    }
    if let Err(e) = session.journal.execution_finished(id, result, now).await {
        tracing::warn!(execution = %id, error = %e, "fleet: journal: end not recorded after the reconnect");
    }
}
