//! The command line, exactly as issue 5 §5 (run, backends, runs), issue 13 §2
//! (worker, submit, wait, cancel) and issue 12 §1 (resume) spell it.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Parser, Subcommand};

/// `0.1.0 (commit 644296a1b2c3)`: the version and the commit built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_GIT_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "agent-exec",
    version = VERSION,
    about = "Run work on interchangeable agent backends under one execution contract, with honest outcomes."
)]
pub struct Args {
    /// Config file (TOML). Default: $AGENT_EXEC_CONFIG, else $XDG_CONFIG_HOME/agent-exec/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Journal: an SQLite file path or a postgres:// URL. Default: the config's [journal],
    /// else $XDG_STATE_HOME/agent-exec/journal.sqlite3.
    #[arg(long, global = true, value_name = "PATH")]
    pub journal: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run one execution and print its result.
    Run(RunArgs),
    /// Continue an interrupted execution inside its agent's own session, under the same id.
    Resume(ResumeArgs),
    /// List the configured backends, their aliases and capabilities.
    Backends(BackendsArgs),
    /// List journaled executions, show one, or prune old ones.
    Runs(RunsArgs),
    /// Print an execution's result from the journal: exactly the JSON `run --json` printed.
    Result(ResultArgs),
    /// Run queued executions from a PostgreSQL fleet journal (`--journal postgres://…`).
    Worker(WorkerArgs),
    /// Queue one execution for the fleet's workers and print its id.
    Submit(SubmitArgs),
    /// Wait for an execution to end and print its result (as `run` does); on an
    /// SQLite journal, for a run of another process on this machine.
    Wait(WaitArgs),
    /// Cancel an execution, queued or running: in the fleet, or (SQLite journal) a run
    /// of another process on this machine.
    Cancel(CancelArgs),
}

/// What makes a request: shared by `run` and `submit`, so both spell every flag alike.
#[derive(Debug, ClapArgs)]
pub struct RequestArgs {
    /// Backend name (or alias).
    #[arg(long, value_name = "NAME")]
    pub backend: String,
    /// The whole request as Go's `encoding/json` writes a `ContractRequest` (a file, or
    /// `-` for stdin). Excludes the flags that would say the same thing twice.
    #[arg(
        long,
        value_name = "FILE|-",
        conflicts_with_all = [
            "prompt", "prompt_file", "workspace", "targets", "deadline", "require",
            "execution_id", "tool_profile", "allow_tools", "output_schema",
        ]
    )]
    pub request: Option<String>,
    /// The prompt.
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "prompt_file",
        required_unless_present_any = ["prompt_file", "request"]
    )]
    pub prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, value_name = "F")]
    pub prompt_file: Option<PathBuf>,
    /// The workspace root (the backend's working directory; deliverables are read back
    /// only from inside it). For `submit`, a directory on the worker.
    #[arg(long, value_name = "DIR", required_unless_present = "request")]
    pub workspace: Option<PathBuf>,
    /// A deliverable, relative to the workspace; repeatable.
    #[arg(long = "target", value_name = "PATH")]
    pub targets: Vec<String>,
    /// Deadline for the whole execution, e.g. 90s, 5m, 1h30m, 500ms.
    #[arg(long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// Required capabilities, comma-separated (text, files, stream, tools, cancel, resume, usage, structured-output).
    #[arg(long, value_name = "CAPS", value_delimiter = ',')]
    pub require: Vec<String>,
    /// Tool profile for the agent (the request's `tool_policy.profile`): `reasoning` (no
    /// tools; the default when nothing is given), `workspace` (the agent's own tools),
    /// or a backend-specific profile. A profile the backend does not know is refused.
    #[arg(long, value_name = "PROFILE")]
    pub tool_profile: Option<String>,
    /// Allow exactly these tools (the request's `tool_policy.allowlist`), comma-separated
    /// or repeated; names are the agent's own (e.g. codex `exec_command`, Claude Code `Write`, pi `bash`).
    #[arg(long = "allow-tool", value_name = "NAME", value_delimiter = ',')]
    pub allow_tools: Vec<String>,
    /// A JSON Schema (a file holding one object) the final text must match: the
    /// backend is asked for structured output its own way, and agent-exec validates the
    /// answer itself. Implies `--require structured-output`.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Execution id (reuse one to retry a step under the same id, deadline and budget). Default: a new UUIDv7.
    #[arg(long, value_name = "ID")]
    pub execution_id: Option<String>,
}

#[derive(Debug, ClapArgs)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Print the result as JSON (the contract's Go tags) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print events as JSON lines on stderr while running.
    #[arg(long)]
    pub events: bool,
}

/// `resume ID`: the request is the journaled one (the execution's own workspace,
/// targets, tool policy, schema and budget); only the continuation prompt and a
/// shorter deadline are the caller's. So there is no `--request` and no `--backend`:
/// a different request or backend would be a new execution (`run`).
#[derive(Debug, ClapArgs)]
pub struct ResumeArgs {
    /// The execution id (as `agent-exec runs` lists it).
    #[arg(value_name = "ID")]
    pub id: String,
    /// The continuation prompt. Default: a fixed sentence saying the run was
    /// interrupted and to continue the original task, checking first what was done.
    #[arg(long, value_name = "TEXT", conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the continuation prompt from a file.
    #[arg(long, value_name = "F")]
    pub prompt_file: Option<PathBuf>,
    /// A deadline for this resume, e.g. 90s, 5m. It can only shorten the execution's
    /// own deadline (set when it first started), never extend it.
    #[arg(long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// Print the result as JSON (the contract's Go tags) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print events as JSON lines on stderr while running.
    #[arg(long)]
    pub events: bool,
}

#[derive(Debug, ClapArgs)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Print `{"execution_id": …}` on stdout instead of the bare id.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
pub struct WorkerArgs {
    /// Executions run at a time.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
    /// A backend to serve (name or alias); repeatable. Default: every configured backend.
    #[arg(long = "backend", value_name = "NAME")]
    pub backends: Vec<String>,
    /// How often idle slots look for queued jobs without a wake-up (`500ms`, `5s`):
    /// a safety net — new jobs and freed slots wake the worker at once.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::duration::parse)]
    pub poll_interval: std::time::Duration,
}

#[derive(Debug, ClapArgs)]
pub struct WaitArgs {
    /// The execution id.
    pub id: String,
    /// Print the result as JSON (the contract's Go tags) on stdout, as `run --json`.
    #[arg(long)]
    pub json: bool,
    /// Print the execution's events as JSON lines on stderr, in order (the fleet's
    /// PostgreSQL journal only: an SQLite journal keeps no events).
    #[arg(long)]
    pub events: bool,
    /// Give up after this long (e.g. 30s, 5m) and say why it has not ended (exit 5).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

#[derive(Debug, ClapArgs)]
pub struct ResultArgs {
    /// The execution id.
    pub id: String,
}

#[derive(Debug, ClapArgs)]
pub struct CancelArgs {
    /// The execution id.
    pub id: String,
}

#[derive(Debug, ClapArgs)]
pub struct BackendsArgs {
    /// Run each backend's probe and list what it verified.
    #[arg(long)]
    pub verify: bool,
    /// JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub show: Option<RunsCommand>,
    /// JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// How many executions to list, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Everything the journal has on one execution: its request, attempts,
    /// transitions and result.
    Show {
        /// The execution id.
        id: String,
        /// JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Delete executions that ended longer ago than DURATION (with their attempts,
    /// transitions and kept results); running ones are never deleted.
    Prune {
        /// e.g. 30d, 12h, 90m (as --deadline; `d` for days).
        #[arg(long, value_name = "DURATION")]
        older_than: String,
    },
}
