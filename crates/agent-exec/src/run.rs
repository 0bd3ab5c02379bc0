//! `agent-exec run`: one execution, start to journaled end.

use std::io::Write as _;
use std::sync::Arc;

use agent_exec_backends::config::Config;
use agent_exec_contract::{
    CancelCause, Cancellation, Capability, ContractBudget, ContractRequest, ContractResult, Error,
    ErrorCode, EventSink, Outcome, SideEffects, ToolPolicy, WorkspaceHandle,
};
use agent_exec_journal::{Journal, JournalLocation};
use agent_exec_runtime::{RunOptions, Runtime};
use anyhow::{Context as _, anyhow, bail};
use futures::StreamExt as _;

use crate::cli::{Args, RunArgs};
use crate::duration;

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

/// Opens the journal, saying on stderr what recovery found.
pub async fn open_journal(args: &Args, config: &Config) -> anyhow::Result<Journal> {
    let location = journal_location(args, config)?;
    let (journal, recovered) = Journal::open(&location).await?;
    for r in &recovered {
        eprintln!(
            "agent-exec: journal: execution {} marked unknown ({})",
            r.execution_id, r.reason
        );
    }
    Ok(journal)
}

/// Ids are data: printable, no whitespace or control characters, bounded.
fn check_execution_id(id: &str) -> anyhow::Result<()> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        bail!("invalid --execution-id {id:?}: 1 to 128 printable characters without spaces");
    }
    Ok(())
}

fn parse_required(names: &[String]) -> anyhow::Result<Vec<Capability>> {
    let mut required = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let capability = Capability::from_wire(name);
        if let Capability::Other(_) = capability {
            let known: Vec<_> = Capability::KNOWN.iter().map(Capability::as_str).collect();
            bail!(
                "unknown capability {name:?} in --require; one of: {}",
                known.join(", ")
            );
        }
        if !required.contains(&capability) {
            required.push(capability);
        }
    }
    Ok(required)
}

pub async fn run(args: &Args, run: &RunArgs) -> anyhow::Result<u8> {
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

    let request = build_request(run)?;
    let execution_id = request.execution_id.clone();
    let required = request.required.clone();
    let deadline = request.budget.deadline;

    // Cancellation is armed before the backend is resolved: resolving runs the
    // backend's capability probe (processes, a network request; up to a minute when
    // the peer stalls), and the deadline and Ctrl-C/SIGTERM cover it like the run.
    let cancellation = Cancellation::new();
    let signals = tokio::spawn(cancel_on_signal(cancellation.clone()));
    let deadline_timer = deadline.map(|at| tokio::spawn(cancel_at(at, cancellation.clone())));
    let _disarm = Disarm(
        [Some(signals), deadline_timer]
            .into_iter()
            .flatten()
            .collect(),
    );

    // Decision: a canceled probe is dropped, not asked to stop. `Backend::verify`
    // takes no cancellation, and every probe that starts a process runs it as a
    // `ProcessTree`, whose drop kills the whole group and every member it saw; a
    // probe has no side effects to confirm. Not done: journaling a run that ended
    // before its backend was resolved (the journal records executions, and none was
    // dispatched).
    let resolving = tokio::select! {
        biased;
        _ = cancellation.cancelled() => None,
        resolved = registry.resolve(&run.backend, &required) => Some(resolved),
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
                format!(
                    "{why} while backend `{}` was being probed; nothing was dispatched",
                    run.backend
                ),
                SideEffects::None,
            ),
        );
        print_result(run, &execution_id, &result)?;
        return Ok(exit_code(&result.outcome));
    };
    let resolved = match resolving {
        Ok(resolved) => resolved,
        Err(e) => {
            // Nothing ran: report it as the contract's refusal, in the same shape.
            eprintln!("agent-exec: {e}");
            let result = ContractResult::failed(e.to_contract_error());
            print_result(run, &execution_id, &result)?;
            return Ok(match e {
                agent_exec_contract::ResolveError::MissingCapability { .. } => 1,
                _ => crate::EXIT_USAGE,
            });
        }
    };
    if let Some(warning) = &resolved.deprecation_warning {
        eprintln!("agent-exec: warning: {warning}");
    }

    let journal = open_journal(args, &config).await?;
    let runtime = Runtime::new().with_journal(Arc::new(journal));

    let (events, printer) = if run.events {
        let (sink, mut receiver) = EventSink::channel();
        let printer = tokio::spawn(async move {
            while let Some(event) = receiver.next().await {
                if let Ok(line) = serde_json::to_string(&event) {
                    // One write per line, so lines never interleave with diagnostics.
                    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
                }
            }
        });
        (sink, Some(printer))
    } else {
        (EventSink::discard(), None)
    };
    let options = RunOptions {
        events,
        cancellation,
        ..Default::default()
    };
    let result = runtime.run(request, &resolved, options).await;
    if let Some(printer) = printer {
        let _ = printer.await;
    }
    print_result(run, &execution_id, &result)?;
    Ok(exit_code(&result.outcome))
}

/// The request to run: `--request` (Go's JSON, checked field by field), else the
/// flags. Every problem is a usage error before anything runs.
fn build_request(run: &RunArgs) -> anyhow::Result<ContractRequest> {
    let mut request = match &run.request {
        Some(source) => request_from_json(source)?,
        None => request_from_flags(run)?,
    };
    if let Some(schema) = &request.output_schema {
        // A schema that is itself invalid is refused here, before anything runs (the
        // runtime compiles it again for the check of the answer).
        agent_exec_runtime::structured::check_schema(schema).map_err(|e| anyhow!("{e}"))?;
        // A schema is a requirement: only a backend that verified structured output
        // is asked.
        if !request.required.contains(&Capability::StructuredOutput) {
            request.required.push(Capability::StructuredOutput);
        }
    }
    Ok(request)
}

fn request_from_flags(run: &RunArgs) -> anyhow::Result<ContractRequest> {
    let prompt = match (&run.prompt, &run.prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read --prompt-file {}", file.display()))?,
        (None, None) => bail!("give --prompt TEXT or --prompt-file F"),
    };
    let workspace = run
        .workspace
        .as_ref()
        .ok_or_else(|| anyhow!("give --workspace DIR (or --request)"))?;
    let root = canonical_workspace(workspace, "--workspace")?;
    let deadline = match &run.deadline {
        None => None,
        Some(text) => {
            let d = duration::parse(text).map_err(|e| anyhow!("--deadline: {e}"))?;
            // Checked: a huge value is a usage error, never an overflow panic.
            let too_long = || anyhow!("--deadline {text}: too long (the date would overflow)");
            let d = time::Duration::try_from(d).map_err(|_| too_long())?;
            Some(
                time::OffsetDateTime::now_utc()
                    .checked_add(d)
                    .ok_or_else(too_long)?,
            )
        }
    };
    let required = parse_required(&run.require)?;
    let execution_id = match &run.execution_id {
        Some(id) => {
            check_execution_id(id)?;
            id.clone()
        }
        None => uuid::Uuid::now_v7().to_string(),
    };
    let output_schema = match &run.output_schema {
        None => None,
        Some(file) => {
            let text = std::fs::read(file)
                .with_context(|| format!("cannot read --output-schema {}", file.display()))?;
            let schema: serde_json::Value = serde_json::from_slice(&text)
                .map_err(|e| anyhow!("--output-schema {}: not JSON: {e}", file.display()))?;
            Some(schema)
        }
    };
    Ok(ContractRequest {
        execution_id,
        prompt,
        targets: run.targets.clone(),
        workspace: WorkspaceHandle {
            root,
            writable: Vec::new(),
        },
        budget: ContractBudget {
            deadline,
            ..Default::default()
        },
        required,
        tool_policy: ToolPolicy {
            profile: run.tool_profile.clone().unwrap_or_default(),
            allowlist: run.allow_tools.clone(),
        },
        output_schema,
        ..Default::default()
    })
}

/// `DIR` made canonical; it must be an existing directory named in UTF-8.
fn canonical_workspace(dir: &std::path::Path, what: &str) -> anyhow::Result<String> {
    let root = std::fs::canonicalize(dir).with_context(|| format!("{what} {}", dir.display()))?;
    if !root.is_dir() {
        bail!("{what} {} is not a directory", root.display());
    }
    Ok(root
        .to_str()
        .ok_or_else(|| anyhow!("{what} {} is not valid UTF-8", root.display()))?
        .to_owned())
}

/// `--request FILE|-`: Go's `ContractRequest` JSON. A malformed request is a usage
/// error naming the field (`budget.deadline: …`), and so is a field this machine
/// cannot honour (a relative or missing `workspace.root`, an unknown capability).
fn request_from_json(source: &str) -> anyhow::Result<ContractRequest> {
    use std::io::Read as _;
    let limit = agent_exec_contract::MAX_REQUEST_BYTES as u64 + 1;
    let mut bytes = Vec::new();
    let (name, read) = if source == "-" {
        (
            "stdin".to_owned(),
            std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
        )
    } else {
        let file = std::fs::File::open(source)
            .with_context(|| format!("cannot read --request {source}"))?;
        (source.to_owned(), file.take(limit).read_to_end(&mut bytes))
    };
    read.with_context(|| format!("cannot read --request {name}"))?;
    let bad = |field: &str, message: String| anyhow!("--request {name}: {field}: {message}");
    let mut request = agent_exec_contract::decode_request(&bytes)
        .map_err(|e| anyhow!("--request {name}: {e}"))?;
    if request.execution_id.is_empty() {
        return Err(bad(
            "execution_id",
            "empty; the caller chooses the id (and reuses it for a step retry)".into(),
        ));
    }
    check_execution_id(&request.execution_id).map_err(|e| bad("execution_id", e.to_string()))?;
    if request.prompt.is_empty() {
        return Err(bad("prompt", "empty".into()));
    }
    let root = std::path::Path::new(&request.workspace.root);
    if !root.is_absolute() {
        return Err(bad(
            "workspace.root",
            format!("{:?} is not an absolute path", request.workspace.root),
        ));
    }
    request.workspace.root = canonical_workspace(root, "workspace.root")
        .map_err(|e| anyhow!("--request {name}: {e:#}"))?;
    for (i, capability) in request.required.iter().enumerate() {
        if let Capability::Other(unknown) = capability {
            let known: Vec<_> = Capability::KNOWN.iter().map(Capability::as_str).collect();
            return Err(bad(
                &format!("required[{i}]"),
                format!(
                    "unknown capability {unknown:?}; one of: {}",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(request)
}

/// Cancels on the first Ctrl-C or SIGTERM.
async fn cancel_on_signal(cancellation: Cancellation) {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let sigterm = async {
        match terminate.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm => {}
    }
    eprintln!("agent-exec: canceling… (waiting for the backend to stop)");
    cancellation.cancel(CancelCause::Caller);
}

/// Cancels with [`CancelCause::Deadline`] at `at` (the runtime arms its own watchdog
/// for the run; this one covers what comes before it, the probe).
async fn cancel_at(at: time::OffsetDateTime, cancellation: Cancellation) {
    let wait = (at - time::OffsetDateTime::now_utc()).max(time::Duration::ZERO);
    tokio::time::sleep(wait.unsigned_abs()).await;
    cancellation.cancel(CancelCause::Deadline);
}

/// Aborts the signal and deadline tasks when the run is over, on every return path.
struct Disarm(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Disarm {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

fn print_result(run: &RunArgs, execution_id: &str, result: &ContractResult) -> anyhow::Result<()> {
    if run.json {
        let json = serde_json::to_string(result).context("cannot encode the result")?;
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
