//! `agent-exec run`: one execution, start to journaled end.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::config::Config;
use agent_exec_contract::{
    CancelCause, Cancellation, ContractResult, Error, ErrorCode, EventSink, Outcome, SideEffects,
};
use agent_exec_journal::{Journal, JournalLocation};
use agent_exec_runtime::{RunOptions, Runtime};
use anyhow::{Context as _, anyhow};
use futures::StreamExt as _;

use crate::cli::{Args, RunArgs};

/// Exit code of an outcome.
pub fn exit_code(outcome: &Outcome) -> u8 {
    match outcome.effective() {
        Outcome::Succeeded => 0,
        Outcome::Failed => 1,
        Outcome::Canceled => 4,
        _ => 3,
    }
}

/// Where the journal is: `--journal`, else the config's `[journal]`, else the XDG default.
pub fn journal_location(args: &Args, config: &Config) -> anyhow::Result<JournalLocation> {
    if let Some(text) = &args.journal {
        return Ok(JournalLocation::parse(text));
    }
    if let Some(url) = &config.journal.url {
        return Ok(JournalLocation::Postgres(url.clone()));
    }
    if let Some(path) = &config.journal.path {
        return Ok(JournalLocation::Sqlite(path.clone()));
    }
    JournalLocation::default_path()
        .map(JournalLocation::Sqlite)
        .ok_or_else(|| {
            anyhow!("no journal location: set --journal, [journal] in the config, or HOME")
        })
}

/// Opens the journal, saying on stderr what recovery found, and ends what dead
/// runners left ([`crate::leftovers`]).
pub async fn open_journal(args: &Args, config: &Config) -> anyhow::Result<Journal> {
    let location = journal_location(args, config)?;
    let (journal, recovered) = Journal::open(&location).await?;
    print_recovered(&recovered);
    crate::leftovers::clean_up(&journal, &recovered).await;
    Ok(journal)
}

/// Says on stderr which executions the journal's recovery marked `unknown`.
pub fn print_recovered(recovered: &[agent_exec_journal::Recovered]) {
    for r in recovered {
        eprintln!(
            "agent-exec: journal: execution {} marked unknown ({})",
            r.execution_id, r.reason
        );
    }
}

/// What every command that runs a backend (`run`, `resume`) sets up first: this
/// process as a subreaper, the config (its warnings on stderr) and the registry with
/// the verification cache.
pub fn prepare(args: &Args) -> anyhow::Result<(Config, agent_exec_contract::Registry)> {
    // Orphaned grandchildren are re-parented to us, not to init, so the runtime can
    // find and reap every member of a backend's tree.
    if let Err(e) = agent_exec_runtime::become_subreaper() {
        tracing::warn!(%e, "cannot become a child subreaper; orphaned processes may escape");
    }
    let config = Config::discover(args.config.as_deref())?;
    for warning in &config.warnings {
        eprintln!("agent-exec: warning: {warning}");
    }
    let mut registry = config.registry()?;
    crate::verified::attach(&mut registry, agent_exec_contract::CacheMode::Use);
    Ok((config, registry))
}

pub async fn run(args: &Args, run: &RunArgs) -> anyhow::Result<u8> {
    let (config, registry) = prepare(args)?;

    let mut request = crate::request::build(&run.request, crate::request::WorkspaceAt::Here)?;
    if request.budget.deadline.is_none()
        && let Some(default) = config.default_deadline(&run.request.backend)
    {
        // The backend's `default_deadline`: the caller gave none.
        request.budget.deadline = Some(crate::request::deadline_after(default)?);
    }
    let execution_id = request.execution_id.clone();
    let required = request.required.clone();
    let deadline = request.budget.deadline;

    let (cancellation, _disarm) = arm_cancellation(deadline);
    let resolved = match resolve(
        &registry,
        &run.request.backend,
        &required,
        &cancellation,
        run.json,
        &execution_id,
    )
    .await?
    {
        Ok(resolved) => resolved,
        Err(exit) => return Ok(exit),
    };

    let journal = Arc::new(open_journal(args, &config).await?);
    let runtime = Runtime::new().with_journal(journal.clone());
    let watcher =
        watch_cancel_requests(journal.clone(), execution_id.clone(), cancellation.clone());

    // Human mode on a `command` backend: the program's stdout and stderr as they come
    // (a Ctrl-C'd run has shown what it had), not all at the end.
    let stream =
        !run.json && config.kind_of(&resolved.name) == Some(agent_exec_backends::command::KIND);
    agent_exec_backends::command::echo_stderr(stream);
    let (events, printer, streamed) = if stream {
        let (events, streamer) = text_streamer(run.events);
        (events, None, Some(streamer))
    } else {
        let (events, printer) = event_printer(run.events);
        (events, Some(printer), None)
    };
    let options = RunOptions {
        events,
        cancellation,
        ..Default::default()
    };
    let mut result = runtime.run(request, &resolved, options).await;
    watcher.abort();
    crate::verified::forget_if_changed(&registry, &resolved.name, &result).await;
    name_the_id(&mut result, &run.request);
    if let Some(printer) = printer {
        let tail = printer.await.unwrap_or_default();
        keep_output_tail(&journal, &execution_id, tail, &result).await;
    }
    if let Some(streamer) = streamed {
        let (open_line, tail) = streamer.await.unwrap_or_default();
        keep_output_tail(&journal, &execution_id, tail, &result).await;
        if open_line {
            crate::write_stdout("\n")?;
        }
        // The text is out already; the rest (deliverables, the summary) as usual.
        let mut rest = result.clone();
        rest.text.clear();
        print_result(false, &execution_id, &rest)?;
    } else {
        print_result(run.json, &execution_id, &result)?;
    }
    Ok(exit_code(&result.outcome))
}

/// Keeps in the journal what the run streamed (see [`OutputTail`]),
/// once the printer has seen every event — unless the kept result's text already
/// ends with it (the common success: one write less per run). Nothing is written when
/// nothing streamed (a refused run must not touch the execution it was refused for).
pub async fn keep_output_tail(
    journal: &agent_exec_journal::Journal,
    execution_id: &str,
    tail: OutputTail,
    result: &ContractResult,
) {
    let output = tail.into_string();
    if output.is_empty() || result.text.ends_with(&output) {
        return;
    }
    if let Err(e) = journal.record_output_tail(execution_id, &output).await {
        eprintln!("agent-exec: journal: output tail not kept: {e}");
    }
}

/// A refusal's hint in the words of the way the caller gave the id: the journal says
/// [`agent_exec_journal::NEW_ID_HINT`], which is right for neither a flag nor a
/// `--request` (whose callers cannot add `--execution-id`: it conflicts).
fn name_the_id(result: &mut ContractResult, request: &crate::cli::RequestArgs) {
    if let Some(err) = result.err.as_mut() {
        err.reason = in_the_ids_words(&err.reason, request);
    }
}

/// `message` with the journal's plain new-id hint said the way `request` gave the id.
pub fn in_the_ids_words(message: &str, request: &crate::cli::RequestArgs) -> String {
    let way = if request.request.is_some() {
        "put a new `execution_id` in the --request JSON"
    } else {
        "use a new --execution-id (or leave it out for a fresh one)"
    };
    message.replace(agent_exec_journal::NEW_ID_HINT, way)
}

/// Arms cancellation on Ctrl-C/SIGTERM and at `deadline`, before the backend is
/// resolved: resolving runs the backend's capability probe (processes, a network
/// request; up to a minute when the peer stalls), and the deadline and a signal cover
/// it like the run. The tasks end when the returned guard drops.
pub fn arm_cancellation(deadline: Option<time::OffsetDateTime>) -> (Cancellation, Disarm) {
    let cancellation = Cancellation::new();
    let signals = tokio::spawn(cancel_on_signal(cancellation.clone()));
    let deadline_timer = deadline.map(|at| tokio::spawn(cancel_at(at, cancellation.clone())));
    let disarm = Disarm(
        [Some(signals), deadline_timer]
            .into_iter()
            .flatten()
            .collect(),
    );
    (cancellation, disarm)
}

/// Resolves `backend` with `required` (running its probe, or reading the cache), or
/// prints why not — a cancel during the probe, an unknown backend, a missing
/// capability — as a result, and returns the exit code for it.
///
/// Decision: a canceled probe is dropped, not asked to stop. `Backend::verify`
/// takes no cancellation, and every probe that starts a process runs it as a
/// `ProcessTree`, whose drop kills the whole group and every member it saw; a
/// probe has no side effects to confirm. Not done: journaling a run that ended
/// before its backend was resolved (the journal records executions, and none was
/// dispatched).
pub async fn resolve(
    registry: &agent_exec_contract::Registry,
    backend: &str,
    required: &[agent_exec_contract::Capability],
    cancellation: &Cancellation,
    json: bool,
    execution_id: &str,
) -> anyhow::Result<Result<agent_exec_contract::Resolved, u8>> {
    let resolving = tokio::select! {
        biased;
        _ = cancellation.cancelled() => None,
        resolved = registry.resolve(backend, required) => Some(resolved),
    };
    let Some(resolving) = resolving else {
        let cause = cancellation.cause().unwrap_or(CancelCause::Caller);
        let (code, why) = match cause {
            CancelCause::Deadline => (ErrorCode::DeadlineExceeded, "the deadline passed"),
            CancelCause::Caller => (ErrorCode::Canceled, "the caller canceled"),
        };
        let result = ContractResult::with_error(
            Outcome::Canceled,
            Error::new(
                code,
                format!("{why} while backend `{backend}` was being probed; nothing was dispatched"),
                SideEffects::None,
            ),
        );
        print_result(json, execution_id, &result)?;
        return Ok(Err(exit_code(&result.outcome)));
    };
    match resolving {
        Ok(resolved) => {
            if let Some(warning) = &resolved.deprecation_warning {
                eprintln!("agent-exec: warning: {warning}");
            }
            Ok(Ok(resolved))
        }
        Err(e) => {
            // Nothing ran: report it as the contract's refusal, in the same shape.
            eprintln!("agent-exec: {e}");
            let result = ContractResult::failed(e.to_contract_error());
            print_result(json, execution_id, &result)?;
            Ok(Err(match e {
                agent_exec_contract::ResolveError::MissingCapability { .. } => 1,
                _ => crate::EXIT_USAGE,
            }))
        }
    }
}

/// A sink whose events a task keeps the output tail of and, with `--events`, prints
/// as JSON lines on stderr. Await the task after the run: every line is then out
/// before the result, and it returns the tail.
pub fn event_printer(events: bool) -> (EventSink, tokio::task::JoinHandle<OutputTail>) {
    let (sink, mut receiver) = EventSink::channel();
    let printer = tokio::spawn(async move {
        let mut tail = OutputTail::default();
        while let Some(event) = receiver.next().await {
            if event.kind == agent_exec_contract::EventKind::TextDelta {
                tail.push(&event.text);
            }
            if events && let Ok(line) = serde_json::to_string(&event) {
                // One write per line, so lines never interleave with diagnostics.
                let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
            }
        }
        tail
    });
    (sink, printer)
}

/// A sink that writes the text of `text_delta` events to stdout as they come (and,
/// with `--events`, every event as a JSON line on stderr). The task ends with the
/// run's events and gives whether the text left a line open (no final newline) and
/// the tail of what it streamed (kept in the journal as `run` does).
fn text_streamer(events: bool) -> (EventSink, tokio::task::JoinHandle<(bool, OutputTail)>) {
    let (sink, mut receiver) = EventSink::channel();
    let streamer = tokio::spawn(async move {
        let mut open_line = false;
        let mut tail = OutputTail::default();
        while let Some(event) = receiver.next().await {
            if events && let Ok(line) = serde_json::to_string(&event) {
                let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
            }
            if event.kind == agent_exec_contract::EventKind::TextDelta && !event.text.is_empty() {
                tail.push(&event.text);
                open_line = !event.text.ends_with('\n');
                // A closed stdout is not the run's failure; the summary says the rest.
                let _ = crate::write_stdout(&event.text);
            }
        }
        (open_line, tail)
    });
    (sink, streamer)
}

/// Cancels on the first Ctrl-C or SIGTERM.
async fn cancel_on_signal(cancellation: Cancellation) {
    stop_signal().await;
    eprintln!("agent-exec: canceling… (waiting for the backend to stop)");
    cancellation.cancel(CancelCause::Caller);
}

/// Returns at the first Ctrl-C or SIGTERM (also one that came before the call): how
/// `run` and `worker` are told to stop.
pub async fn stop_signal() {
    crate::signals::stopped().await;
}

/// Cancels with [`CancelCause::Deadline`] at `at` (the runtime arms its own watchdog
/// for the run; this one covers what comes before it, the probe).
async fn cancel_at(at: time::OffsetDateTime, cancellation: Cancellation) {
    let wait = (at - time::OffsetDateTime::now_utc()).max(time::Duration::ZERO);
    tokio::time::sleep(wait.unsigned_abs()).await;
    cancellation.cancel(CancelCause::Deadline);
}

/// Aborts the signal and deadline tasks when the run is over, on every return path.
pub struct Disarm(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Disarm {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Prints a result as `run` does: `--json` the result JSON on stdout (one line); else
/// the text on stdout and a summary on stderr. `wait` prints through this too.
///
/// A result that does not name its execution yet (a refusal before anything was
/// journaled) is printed naming `execution_id`.
pub fn print_result(json: bool, execution_id: &str, result: &ContractResult) -> anyhow::Result<()> {
    if json {
        let json = if result.execution_id.is_empty() {
            let mut named = result.clone();
            named.execution_id = execution_id.to_owned();
            serde_json::to_string(&named)
        } else {
            serde_json::to_string(result)
        }
        .context("cannot encode the result")?;
        crate::write_stdout(&format!("{json}\n"))?;
    } else {
        let mut text = result.text.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        crate::write_stdout(&text)?;
        for (path, bytes) in &result.files {
            eprintln!("agent-exec: deliverable {path} ({} bytes)", bytes.len());
        }
        let mut line = format!("agent-exec: {} (execution {execution_id}", result.outcome);
        if result.usage.prompt_tokens > 0 || result.usage.completion_tokens > 0 {
            line.push_str(&format!(
                ", tokens {} in / {} out",
                result.usage.prompt_tokens, result.usage.completion_tokens
            ));
        }
        line.push(')');
        if let Some(err) = &result.err {
            line.push_str(&format!(
                "\n  {}: {} (side effects: {})",
                err.code,
                err.reason,
                err.side_effects.as_str()
            ));
        }
        if result.outcome != Outcome::Succeeded && !result.logs.trim().is_empty() {
            // The backend's own words (a program's stderr tail, an HTTP status) say why.
            let lines: Vec<&str> = result.logs.trim_end().lines().collect();
            let tail = &lines[lines.len().saturating_sub(20)..];
            line.push_str("\n  logs:");
            for l in tail {
                line.push_str("\n    ");
                line.push_str(l);
            }
        }
        eprintln!("{line}");
    }
    Ok(())
}

/// How often a runner looks for a cancel request, and `wait` at the execution: a
/// cancel acts within this, a wait returns within this of the end.
pub const POLL: Duration = Duration::from_millis(200);

/// Cancels `cancellation` when another process asks the journal to cancel
/// `execution_id` (`agent-exec cancel`). Abort the task when the run is over.
pub fn watch_cancel_requests(
    journal: Arc<Journal>,
    execution_id: String,
    cancellation: Cancellation,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(POLL).await;
            // A journal that cannot be read now is tried again at the next look.
            if let Ok(Some(request)) = journal.cancel_request(&execution_id).await {
                eprintln!("agent-exec: canceling… ({request})");
                cancellation.cancel(CancelCause::Caller);
                return;
            }
        }
    })
}

/// What a run streamed: the last [`agent_exec_journal::OUTPUT_TAIL_CAP`] bytes of its
/// text deltas, kept in the journal for a run whose result has no text (canceled,
/// failed, or killed by its deadline).
#[derive(Debug, Default)]
pub struct OutputTail(String);

impl OutputTail {
    pub fn push(&mut self, delta: &str) {
        let cap = agent_exec_journal::OUTPUT_TAIL_CAP;
        self.0.push_str(delta);
        if self.0.len() > 2 * cap {
            let keep = agent_exec_journal::tail_of(&self.0, cap).len();
            self.0.drain(..self.0.len() - keep);
        }
    }

    pub fn into_string(self) -> String {
        self.0
    }
}
