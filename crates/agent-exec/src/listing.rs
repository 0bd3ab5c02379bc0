//! `agent-exec backends` and `agent-exec runs`: read-only views.

use std::fmt::Write as _;

use agent_exec_backends::config::Config;
use agent_exec_journal::{ExecutionRecord, ExecutionSummary};
use serde::Serialize;

use crate::cli::{Args, BackendsArgs, RunsArgs, RunsCommand};
use crate::run::open_journal;

#[derive(Debug, Serialize)]
struct AliasView {
    name: String,
    deprecated: bool,
}

#[derive(Debug, Serialize)]
struct BackendView {
    name: String,
    kind: String,
    aliases: Vec<AliasView>,
    declared: Vec<String>,
    /// `None` until probed (`--verify`).
    verified: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    adapter_version: String,
    /// With `--verify`, for backends that run a process tree: what keeps its
    /// processes from outliving a run on this machine (`cgroup`, `subreaper`,
    /// `process-group`; `docs/agent-exec.md`, "Leftover processes").
    #[serde(skip_serializing_if = "Option::is_none")]
    confinement: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confinement_detail: Option<String>,
    /// With `--verify`: the probe's own execution id and what it spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<ProbeView>,
}

#[derive(Debug, Serialize)]
struct ProbeView {
    execution_id: String,
    usage: agent_exec_contract::Usage,
}

pub async fn backends(args: &Args, b: &BackendsArgs) -> anyhow::Result<u8> {
    let config = Config::discover(args.config.as_deref())?;
    let mut registry = config.registry()?;
    // As `run` does: the probes run process trees too, and what `--verify` reports
    // about confinement is what a run here would get.
    if let Err(e) = agent_exec_runtime::become_subreaper() {
        tracing::warn!(%e, "cannot become a child subreaper");
    }
    // `--verify` always probes, and leaves the fresh result for later runs.
    crate::verified::attach(&mut registry, agent_exec_contract::CacheMode::Refresh);
    let names = match &b.name {
        Some(name) => vec![registry.canonical(name)?.0],
        None => registry.names(),
    };
    let mut views = Vec::new();
    // Backends whose probe failed outright (nothing verified): a missing program, a
    // peer that does not answer. Notes beside verified capabilities do not count, nor
    // does a built-in agent nobody configured (its program is simply not installed)
    // unless it was named.
    let mut failed = Vec::new();
    for name in names {
        let Some(descriptor) = registry.descriptor(&name) else {
            continue;
        };
        let mut view = BackendView {
            kind: config.kind_of(&name).unwrap_or("built-in").to_owned(),
            aliases: registry
                .aliases_of(&name)
                .into_iter()
                .map(|(alias, a)| AliasView {
                    name: alias,
                    deprecated: a.deprecated,
                })
                .collect(),
            declared: descriptor
                .capabilities
                .iter()
                .map(|c| c.to_string())
                .collect(),
            verified: None,
            problems: Vec::new(),
            adapter_version: descriptor.adapter_version.clone(),
            confinement: None,
            confinement_detail: None,
            probe: None,
            name,
        };
        if b.verify {
            let verification = registry.verification(&view.name).await?;
            view.verified = Some(
                verification
                    .verified
                    .iter()
                    .map(|c| c.to_string())
                    .collect(),
            );
            let counts = b.name.is_some() || config.backends.contains_key(&view.name);
            if verification.verified.is_empty() && !verification.problems.is_empty() && counts {
                failed.push(view.name.clone());
            }
            view.probe = registry.probe_run(&view.name).await.map(|run| ProbeView {
                execution_id: run.execution_id,
                usage: run.usage,
            });
            view.problems = verification.problems;
            if !verification.adapter_version.is_empty() {
                view.adapter_version = verification.adapter_version;
            }
            // Every kind but `openai` runs the backend as a process tree.
            if config.kind_of(&view.name) != Some(agent_exec_backends::openai::KIND) {
                let confinement = agent_exec_runtime::Confinement::available();
                view.confinement = Some(confinement.as_str().to_owned());
                view.confinement_detail =
                    Some(agent_exec_runtime::Confinement::describe_available());
            }
        }
        views.push(view);
    }
    if b.json {
        crate::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&views)?))?;
    } else {
        crate::write_stdout(&render_backends(&views, config.file.as_deref()))?;
    }
    if !failed.is_empty() {
        eprintln!(
            "agent-exec: verification failed for: {} (see the problems listed)",
            failed.join(", ")
        );
        return Ok(1);
    }
    Ok(0)
}

fn render_backends(views: &[BackendView], file: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    if views.is_empty() {
        let _ = writeln!(
            out,
            "no backends configured{}; declare one, e.g.\n\n  [backends.review]\n  kind = \"command\"\n  argv = [\"my-agent\", \"--headless\"]",
            file.map(|f| format!(" in {}", f.display()))
                .unwrap_or_default()
        );
        return out;
    }
    for v in views {
        let _ = writeln!(out, "{} ({})", v.name, v.kind);
        if !v.aliases.is_empty() {
            let aliases: Vec<_> = v
                .aliases
                .iter()
                .map(|a| {
                    if a.deprecated {
                        format!("{} (deprecated)", a.name)
                    } else {
                        a.name.clone()
                    }
                })
                .collect();
            let _ = writeln!(out, "  aliases:  {}", aliases.join(", "));
        }
        let _ = writeln!(out, "  declared: {}", v.declared.join(", "));
        match &v.verified {
            None => {
                let _ = writeln!(out, "  verified: (not probed; use --verify)");
            }
            Some(verified) if verified.is_empty() => {
                let _ = writeln!(out, "  verified: none");
            }
            Some(verified) => {
                let _ = writeln!(out, "  verified: {}", verified.join(", "));
            }
        }
        for problem in &v.problems {
            let _ = writeln!(out, "  problem:  {problem}");
        }
        if !v.adapter_version.is_empty() {
            let _ = writeln!(out, "  version:  {}", v.adapter_version);
        }
        if let (Some(confinement), Some(detail)) = (&v.confinement, &v.confinement_detail) {
            let _ = writeln!(out, "  leftover processes: {confinement} ({detail})");
        }
        if let Some(probe) = &v.probe {
            let usage = &probe.usage;
            let spent = if usage.prompt_tokens > 0 || usage.completion_tokens > 0 {
                format!(
                    ", tokens {} in / {} out",
                    usage.prompt_tokens, usage.completion_tokens
                )
            } else {
                String::new()
            };
            let _ = writeln!(out, "  probe:    execution {}{spent}", probe.execution_id);
        }
    }
    out
}

/// Which fleet worker ran an execution (a PostgreSQL journal with fleet tables only).
#[derive(Debug, Clone, Serialize)]
struct WorkerView {
    worker_id: String,
    host: String,
    pid: u32,
    /// The worker's state now: `live`, `stopped` or `dead`.
    state: String,
}

/// The fleet's view of `ids`: who ran each. Empty for SQLite or a database without
/// fleet tables (a view never creates them).
async fn fleet_workers(
    args: &Args,
    config: &Config,
    ids: &[String],
) -> std::collections::HashMap<String, WorkerView> {
    let Ok(agent_exec_journal::JournalLocation::Postgres(url)) =
        crate::run::journal_location(args, config)
    else {
        return Default::default();
    };
    let Ok(db) = agent_exec_fleet::FleetDb::connect_existing(&url).await else {
        return Default::default();
    };
    let (Ok(jobs), Ok(workers)) = (db.jobs_by_id(ids).await, db.workers().await) else {
        return Default::default();
    };
    jobs.into_iter()
        .filter_map(|(id, job)| {
            let worker = workers
                .iter()
                .find(|w| Some(&w.worker_id) == job.worker_id.as_ref())?;
            Some((
                id,
                WorkerView {
                    worker_id: worker.worker_id.clone(),
                    host: worker.owner.host.clone(),
                    pid: worker.owner.pid,
                    state: worker.state.to_string(),
                },
            ))
        })
        .collect()
}

/// `value` (an object) with `"worker"` added when the fleet knows it.
fn with_worker(
    value: impl Serialize,
    worker: Option<&WorkerView>,
) -> anyhow::Result<serde_json::Value> {
    let mut value = serde_json::to_value(value)?;
    if let (Some(object), Some(worker)) = (value.as_object_mut(), worker) {
        object.insert("worker".into(), serde_json::to_value(worker)?);
    }
    Ok(value)
}

pub async fn runs(args: &Args, r: &RunsArgs) -> anyhow::Result<u8> {
    let config = Config::discover(args.config.as_deref())?;
    let journal = open_journal(args, &config).await?;
    match &r.show {
        Some(RunsCommand::Prune { older_than }) => {
            crate::results::prune(&journal, older_than).await
        }
        None => {
            let list = journal.list(r.limit).await?;
            let ids: Vec<String> = list.iter().map(|s| s.execution_id.clone()).collect();
            let workers = fleet_workers(args, &config, &ids).await;
            if r.json {
                let values = list
                    .iter()
                    .map(|s| with_worker(s, workers.get(&s.execution_id)))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                crate::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&values)?))?;
            } else {
                crate::write_stdout(&render_runs(&list, &workers))?;
            }
            Ok(0)
        }
        Some(RunsCommand::Show { id, json }) => match journal.show(id).await? {
            None => {
                eprintln!("agent-exec: no execution {id:?} in the journal");
                Ok(1)
            }
            Some(record) => {
                let workers = fleet_workers(args, &config, std::slice::from_ref(id)).await;
                let worker = workers.get(id);
                if *json || r.json {
                    let value = with_worker(&record, worker)?;
                    crate::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
                } else {
                    let mut text = render_record(&record);
                    if let Some(w) = worker {
                        text.push_str(&format!(
                            "  worker:   {} (pid {} on {}, now {})\n",
                            w.worker_id, w.pid, w.host, w.state
                        ));
                    }
                    crate::write_stdout(&text)?;
                }
                Ok(0)
            }
        },
    }
}

fn render_runs(
    list: &[ExecutionSummary],
    workers: &std::collections::HashMap<String, WorkerView>,
) -> String {
    let mut out = String::new();
    if list.is_empty() {
        out.push_str("no executions in the journal\n");
        return out;
    }
    let width = list
        .iter()
        .map(|s| s.execution_id.len())
        .max()
        .unwrap_or(0)
        .max(12);
    // The WORKER column only when the fleet ran something: a local journal's listing
    // stays as it was.
    let worker_width = workers.values().map(|w| w.worker_id.len()).max();
    let worker_header = worker_width.map_or(String::new(), |w| format!("{:<w$}  ", "WORKER"));
    let _ = writeln!(
        out,
        "{:<width$}  {:<10}  {:<12}  {:>8}  {:<27}  {worker_header}ERROR",
        "EXECUTION", "STATE", "BACKEND", "ATTEMPTS", "UPDATED"
    );
    for s in list {
        let worker = worker_width.map_or(String::new(), |w| {
            format!(
                "{:<w$}  ",
                workers
                    .get(&s.execution_id)
                    .map_or("-", |v| v.worker_id.as_str())
            )
        });
        let _ = writeln!(
            out,
            "{:<width$}  {:<10}  {:<12}  {:>8}  {:<27}  {worker}{}{}",
            s.execution_id,
            s.state.as_str(),
            s.backend,
            s.attempts,
            s.updated_at,
            s.error_code.as_deref().unwrap_or("-"),
            if s.cancel_requested {
                " (cancel requested)"
            } else {
                ""
            }
        );
    }
    out
}

/// Every line of `text`, indented under a heading.
fn indented(out: &mut String, heading: &str, text: &str) {
    let _ = writeln!(out, "    {heading}");
    for line in text.lines() {
        let _ = writeln!(out, "      {line}");
    }
}

/// The journaled request: what was asked, where, of what.
fn render_request(out: &mut String, request: Option<&serde_json::Value>) {
    let Some(request) = request else {
        let _ = writeln!(out, "  request:  (not journaled)");
        return;
    };
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let list = |v: &serde_json::Value| {
        v.as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let _ = writeln!(out, "  request:");
    indented(out, "prompt:", &text(&request["prompt"]));
    let _ = writeln!(
        out,
        "    workspace: {}",
        text(&request["workspace"]["root"])
    );
    for (name, value) in [
        ("targets", list(&request["targets"])),
        ("required", list(&request["required"])),
        ("tools", text(&request["tool_policy"]["profile"])),
        ("allowed", list(&request["tool_policy"]["allowlist"])),
    ] {
        if !value.is_empty() {
            let _ = writeln!(out, "    {name}: {value}");
        }
    }
    if request.get("output_schema").is_some_and(|s| !s.is_null()) {
        let _ = writeln!(out, "    output schema: {}", request["output_schema"]);
    }
}

/// The kept result (what the caller got), or why there is none.
fn render_result(out: &mut String, record: &ExecutionRecord) {
    let kept = record
        .result_text
        .as_deref()
        .and_then(|t| serde_json::from_str::<agent_exec_contract::ContractResult>(t).ok());
    match kept {
        None if record.summary.state.is_terminal() => {
            let _ = writeln!(
                out,
                "  result:   none kept (the process running it ended before returning one)"
            );
        }
        None => {
            let _ = writeln!(out, "  result:   none yet ({})", record.summary.state);
        }
        Some(result) => {
            let _ = writeln!(out, "  result:   {}", result.outcome);
            if !result.text.is_empty() {
                indented(out, "text:", &result.text);
            }
            for (path, bytes) in &result.files {
                let _ = writeln!(out, "    file: {path} ({} bytes)", bytes.len());
            }
            if let Some(err) = &result.err {
                let _ = writeln!(
                    out,
                    "    error: {}: {} (side effects: {})",
                    err.code,
                    err.reason,
                    err.side_effects.as_str()
                );
            }
            if !result.logs.trim().is_empty() {
                indented(out, "logs:", result.logs.trim_end());
            }
        }
    }
    if let Some(note) = &record.result_note {
        let _ = writeln!(out, "    note: {note}");
    }
    if let Some(tail) = &record.output_tail {
        indented(out, "output (tail, as streamed):", tail.trim_end());
    }
}

fn render_record(record: &ExecutionRecord) -> String {
    let s = &record.summary;
    let mut out = String::new();
    let _ = writeln!(out, "execution {}", s.execution_id);
    let _ = writeln!(
        out,
        "  state:    {}{}",
        s.state,
        if s.cancel_requested {
            " (cancel requested)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "  backend:  {}", s.backend);
    let _ = writeln!(out, "  created:  {}", s.created_at);
    let _ = writeln!(out, "  updated:  {}", s.updated_at);
    if let Some(deadline) = &s.deadline {
        let _ = writeln!(out, "  deadline: {deadline}");
    }
    let _ = writeln!(
        out,
        "  usage:    {} prompt / {} completion tokens",
        s.usage.prompt_tokens, s.usage.completion_tokens
    );
    if let Some(error) = &record.error {
        let _ = writeln!(out, "  error:    {error}");
    }
    let _ = writeln!(
        out,
        "  owner:    pid {} on {}",
        record.owner.pid, record.owner.host
    );
    if let Some(request) = &record.cancel_request {
        let _ = writeln!(out, "  cancel:   {request}");
    }
    render_request(&mut out, record.request.as_ref());
    render_result(&mut out, record);
    for a in &record.attempts {
        let _ = writeln!(
            out,
            "  attempt {} on {}: {} ({} → {})",
            a.attempt,
            a.backend,
            a.state,
            a.started_at,
            a.finished_at.as_deref().unwrap_or("…")
        );
        // The backend's own conversation id: what `agent-exec resume` continues.
        let _ = writeln!(
            out,
            "    session: {}",
            a.session_handle.as_deref().unwrap_or("none reported")
        );
    }
    let _ = writeln!(out, "  transitions:");
    for t in &record.transitions {
        let _ = writeln!(
            out,
            "    {}  #{} {} → {}{}",
            t.at,
            t.attempt,
            t.from.map_or("-", |f| f.as_str()),
            t.to,
            t.note
                .as_deref()
                .map(|n| format!("  ({n})"))
                .unwrap_or_default()
        );
    }
    out
}
