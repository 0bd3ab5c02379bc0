//! Driving a real agent program (codex, claude, pi, …) run headless with a JSON-lines
//! stdout: one place for the process side, so each agent backend is only its argv and
//! its stream parser.
//!
//! The driver spawns the program as the leader of its own process group
//! ([`ProcessTree`]), feeds stdin (or closes it), splits stdout into lines and hands
//! each to the backend's [`StreamParser`], emits the parser's events in order, keeps
//! the tail of stderr for `logs`, and settles the outcome from what the *stream* said
//! and how the *process* ended — both must agree before anything is `succeeded`:
//!
//! | stream said            | process                       | outcome                         |
//! |------------------------|-------------------------------|---------------------------------|
//! | final result           | exit 0 (soon after the result)| `succeeded`                     |
//! | final result           | still running after           | `unknown` (hung after result)   |
//! |                        | [`AgentRun::exit_after_result`]|                                |
//! | final result           | non-zero exit / signal        | `unknown`                       |
//! | the program's failure  | any exit                      | `failed`                        |
//! | nothing final          | exit 0                        | `unknown` (missing result)      |
//! | nothing at all         | non-zero exit                 | `failed` (invocation rejected)  |
//! | something, not final   | non-zero exit / signal        | `unknown` (crash)               |
//! | —                      | canceled, tree confirmed gone | `canceled`                      |
//! | —                      | canceled, members survive     | `unknown` + `cancel_requested`  |
//!
//! Side effects: once the stream reported a tool starting, a failure says `possible`
//! (agents run shell commands; what they touched outside the workspace is invisible
//! to us). Before any tool ran it says `none`, so a fallback may replay — except after
//! a cancel, which stops the reading with lines possibly unread: always `possible`.
//!
//! Decisions: lines longer than [`MAX_LINE`] are skipped with a note in the logs
//! rather than buffered without bound; the parser is a trait object so the driver is
//! compiled once. Not done here: anything protocol-specific (ACP speaks JSON-RPC both
//! ways and has its own module).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::time::Duration;

use agent_exec_contract::{
    CANCEL_REQUESTED, Cancellation, Capability, ContractResult, Error, ErrorCode, Event, EventKind,
    ExecutionContext, Outcome, SideEffects, Usage,
};
use agent_exec_runtime::cause_code;
use agent_exec_runtime::process::{ProcessTree, Termination};
use agent_exec_runtime::spawn::{LeaderCommand, Stdio};

use crate::output::{Reader, join_bounded, push_line};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

/// The longest stdout line handed to a parser (agents put whole file bodies in tool
/// results; 16 MiB is far above any real line and still bounded).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How often the process tree is scanned while the program runs.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// What the stream has established so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Verdict {
    /// No final line yet.
    #[default]
    Pending,
    /// The program reported its final result; this is the run's text.
    Completed(String),
    /// The program reported its own failure.
    Failed { code: ErrorCode, message: String },
}

/// A backend's reading of its program's stdout. Implementations are pure (no I/O) and
/// never panic on any input: they are fuzzed.
pub trait StreamParser: Send {
    /// Handles one line (without its newline), pushing the contract events it means,
    /// in order.
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>);
    /// The verdict so far; [`Verdict::Completed`] or [`Verdict::Failed`] once the
    /// program's final line was seen.
    fn verdict(&self) -> Verdict;
    /// Usage as the program reported it (zero when it did not).
    fn usage(&self) -> Usage;
    /// The program's own session handle (a Codex thread id, a Claude Code session id)
    /// once the stream has shown it; `None` before, or for a program without one. The
    /// parser only records it; [`drive`] reports it (see [`agent_exec_contract::session`]).
    fn session(&self) -> Option<&str> {
        None
    }
}

/// How to run the program for one attempt.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// Backend name, for messages.
    pub backend: String,
    pub program: String,
    pub args: Vec<String>,
    /// Extra environment (on top of ours, which the program inherits).
    pub env: BTreeMap<String, String>,
    /// Bytes for stdin, which is then closed; `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Working directory: the workspace root.
    pub cwd: String,
    /// SIGTERM → SIGKILL grace on cancel.
    pub grace: Duration,
    /// How long the program may take to exit after its final line before the run is
    /// declared hung (`unknown`).
    pub exit_after_result: Duration,
}

/// Default for [`AgentRun::exit_after_result`].
pub const DEFAULT_EXIT_AFTER_RESULT: Duration = Duration::from_secs(10);

/// The config table shared by every agent-program backend (`kind = "codex"`,
/// `"claude-code"`, `"agent-native"`, `"acp"`): which program, extra arguments and
/// environment, the model, the timings. Credentials stay in the program's own login or
/// in environment variables named by the user; never in this file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramConfig {
    /// Backend name (the config key); not part of the table.
    #[serde(skip)]
    pub name: String,
    /// The program to run: a path, or a name looked up on PATH. Default per kind.
    #[serde(default)]
    pub program: Option<String>,
    /// Extra arguments, after the kind's own and before the prompt.
    #[serde(default)]
    pub args: Vec<String>,
    /// Model name handed to the program (its own default when absent).
    #[serde(default)]
    pub model: Option<String>,
    /// Extra environment for the program.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Milliseconds between SIGTERM and SIGKILL on cancel.
    #[serde(default = "default_grace_ms")]
    pub grace_ms: u64,
    /// Milliseconds the program may take to exit after its final result.
    #[serde(default = "default_exit_after_result_ms")]
    pub exit_after_result_ms: u64,
}

fn default_grace_ms() -> u64 {
    agent_exec_runtime::process::DEFAULT_GRACE.as_millis() as u64
}

fn default_exit_after_result_ms() -> u64 {
    DEFAULT_EXIT_AFTER_RESULT.as_millis() as u64
}

impl ProgramConfig {
    /// A config with defaults for everything but the name.
    pub fn new(name: impl Into<String>) -> Self {
        ProgramConfig {
            name: name.into(),
            program: None,
            args: Vec::new(),
            model: None,
            env: BTreeMap::new(),
            grace_ms: default_grace_ms(),
            exit_after_result_ms: default_exit_after_result_ms(),
        }
    }

    /// The program to run: the configured one, else `default`.
    pub fn program_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.program.as_deref().unwrap_or(default)
    }

    /// An [`AgentRun`] of `program` with `kind_args` (the kind's own flags), then the
    /// configured `args`, then `tail` (typically the prompt), in `cwd`.
    pub fn agent_run(
        &self,
        program: &str,
        kind_args: Vec<String>,
        tail: Vec<String>,
        stdin: Option<Vec<u8>>,
        cwd: &str,
    ) -> AgentRun {
        let mut args = kind_args;
        args.extend(self.args.iter().cloned());
        args.extend(tail);
        AgentRun {
            backend: self.name.clone(),
            program: program.to_owned(),
            args,
            env: self.env.clone(),
            stdin,
            cwd: cwd.to_owned(),
            grace: Duration::from_millis(self.grace_ms),
            exit_after_result: Duration::from_millis(self.exit_after_result_ms),
        }
    }
}

/// What an agent-CLI backend declares; each proves them in its `verify`.
pub const AGENT_CLI_CAPABILITIES: [Capability; 6] = [
    Capability::Text,
    Capability::Files,
    Capability::Stream,
    Capability::Tools,
    Capability::Cancel,
    Capability::Usage,
];

/// `KIND/<this crate's version>`, then the program's own version in parentheses when
/// the probe found it: what `adapter_version` says of an agent-CLI backend.
pub fn adapter_version(kind: &str, program_version: &str) -> String {
    let ours = format!("{kind}/{}", env!("CARGO_PKG_VERSION"));
    if program_version.is_empty() {
        ours
    } else {
        format!("{ours} ({program_version})")
    }
}

// The execution's identity and the cancel check live below every backend; these
// paths stay for callers outside the crate.
pub use crate::execution::{ATTEMPT_VAR, identity_env, verify_cancel};

// One bound for every backend's quoted text (also the OpenAI stream's); this path
// stays for callers outside the crate.
pub use crate::output::bounded;

/// The prompt an agent CLI reads on stdin: prior `context` as a transcript, the
/// prompt, then the deliverables to write (the programs take one prompt, not a
/// message list).
pub fn render_prompt(request: &agent_exec_contract::ContractRequest) -> String {
    let mut prompt = String::new();
    if !request.context.is_empty() {
        prompt.push_str("Conversation so far:\n");
        for message in &request.context {
            prompt.push_str(&format!("[{}] {}\n", message.role, message.content));
        }
        prompt.push('\n');
    }
    prompt.push_str(&request.prompt);
    push_targets(&mut prompt, &request.targets);
    prompt
}

/// The deliverables to write, below the prompt.
fn push_targets(prompt: &mut String, targets: &[String]) {
    if !targets.is_empty() {
        prompt.push_str("\n\nWrite these files (paths relative to the working directory):\n");
        for target in targets {
            prompt.push_str(&format!("- {target}\n"));
        }
    }
}

/// What a resumed attempt sends on stdin: the continuation prompt (the request's
/// `prompt`; [`DEFAULT_CONTINUATION`] when empty) and the deliverables again. Not
/// `context`: the program's own conversation already holds it.
pub fn render_continuation(request: &agent_exec_contract::ContractRequest) -> String {
    let mut prompt = if request.prompt.is_empty() {
        DEFAULT_CONTINUATION.to_owned()
    } else {
        request.prompt.clone()
    };
    push_targets(&mut prompt, &request.targets);
    prompt
}

/// The continuation prompt of a resume that was given none.
pub const DEFAULT_CONTINUATION: &str =
    "You were interrupted. Continue the task where you left off; do not redo finished steps.";

/// How the process part ended, before settling.
enum Ending {
    Exited(std::io::Result<ExitStatus>),
    Canceled,
    HungAfterResult,
}

/// Runs `run` to the end, feeding stdout to `parser`. Always returns a result.
pub async fn drive(
    run: AgentRun,
    parser: &mut dyn StreamParser,
    ctx: &ExecutionContext,
) -> ContractResult {
    if let Some(canceled) = crate::execution::canceled_before_start(ctx) {
        return canceled;
    }
    let mut command = LeaderCommand::new(&run.program);
    command
        .args(&run.args)
        .envs(&run.env)
        .current_dir(&run.cwd)
        .stdin(if run.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut tree = match ProcessTree::spawn(command) {
        Ok(tree) => tree,
        Err(e) => {
            return ContractResult::failed(Error::new(
                ErrorCode::ProviderUnavailable,
                format!(
                    "cannot start `{}` for backend `{}`: {e}",
                    run.program, run.backend
                ),
                SideEffects::None,
            ));
        }
    };
    let writer = tree.child_mut().stdin.take().map(|mut stdin| {
        let bytes = run.stdin.clone().unwrap_or_default();
        tokio::spawn(async move {
            // A program that never reads stdin closes the pipe: not an error.
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        })
    });
    let stderr = tree.child_mut().stderr.take();
    let err_reader = Reader::tail(stderr);
    let Some(stdout) = tree.child_mut().stdout.take() else {
        let _ = tree.terminate(run.grace).await;
        return ContractResult::failed(Error::new(
            ErrorCode::Internal,
            "the program's stdout was not captured",
            SideEffects::None,
        ));
    };

    let mut state = Reading::default();
    let ending = read_until_end(
        &run,
        &mut tree,
        tokio::io::BufReader::with_capacity(64 * 1024, stdout),
        parser,
        ctx,
        &mut state,
    )
    .await;
    let termination = tree.terminate(run.grace).await;
    if let Some(writer) = writer {
        writer.abort();
    }
    let (stderr_tail, _) = join_bounded(err_reader).await;

    let mut logs = String::from_utf8_lossy(&stderr_tail).into_owned();
    for note in &state.notes {
        push_line(&mut logs, note);
    }
    let mut result = settle(&run, ending, &termination, &state, parser.verdict(), ctx);
    result.usage = parser.usage();
    if result.outcome == Outcome::Succeeded {
        ctx.events.emit(Event::of_kind(EventKind::MessageEnd));
    }
    result.logs = logs;
    termination.report_leftovers(&run.program, &mut result, &ctx.events);
    result
}

/// What reading the stream noticed besides events.
#[derive(Debug, Default)]
struct Reading {
    lines: usize,
    tool_started: bool,
    notes: Vec<String>,
    /// The session handle last reported (or refused), so each is reported once.
    session: Option<String>,
}

impl Reading {
    /// Reports the parser's session handle the moment it is new: before the line's
    /// events go out, so a runner killed right after still left it in the journal.
    fn report_session(&mut self, parser: &dyn StreamParser, ctx: &ExecutionContext) {
        let Some(handle) = parser.session() else {
            return;
        };
        if self.session.as_deref() == Some(handle) {
            return;
        }
        if let Err(reason) = ctx.session.report(handle) {
            // The reason, not the handle: a refused value is outside input.
            self.notes.push(format!(
                "the stream's session handle was not recorded: {reason}"
            ));
        }
        self.session = Some(handle.to_owned());
    }
}

/// The session a resumed attempt continues (`ctx.resume`), checked again here: a
/// journal row is outside input, so a handle that is not an id never reaches an argv.
/// `Ok(None)`: a fresh run. The refusal is `failed` before anything starts.
pub fn resume_session<'a>(
    ctx: &'a ExecutionContext,
    backend: &str,
) -> Result<Option<&'a str>, Error> {
    let Some(resume) = &ctx.resume else {
        return Ok(None);
    };
    agent_exec_contract::check_session_handle(&resume.session)
        .map(|()| Some(resume.session.as_str()))
        .map_err(|reason| {
            Error::new(
                ErrorCode::Internal,
                format!("backend `{backend}` cannot resume: {reason}"),
                SideEffects::None,
            )
        })
}

/// Whether `handle` is a UUID (8-4-4-4-12 hex digits). Codex and Claude Code take a
/// session *name* in the same argument as its id, so only a UUID is passed on: a
/// handle that merely passed [`agent_exec_contract::check_session_handle`] could
/// still pick another conversation by name.
pub fn is_uuid(handle: &str) -> bool {
    let groups: Vec<&str> = handle.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

async fn read_until_end(
    run: &AgentRun,
    tree: &mut ProcessTree,
    mut stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    parser: &mut dyn StreamParser,
    ctx: &ExecutionContext,
    state: &mut Reading,
) -> Ending {
    let mut line = Vec::new();
    let mut events = Vec::new();
    let mut stdout_open = true;
    let mut skipping_long_line = false;
    // The leader's exit, once seen while stdout was still open (a child may hold it).
    let mut exited: Option<std::io::Result<ExitStatus>> = None;
    let mut drain_deadline: Option<tokio::time::Instant> = None;
    let mut hang_deadline: Option<tokio::time::Instant> = None;
    let mut scan_due = false;
    let mut tick = tokio::time::interval(WATCH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if scan_due {
            // Keeps membership fresh so escapees are remembered (see ProcessTree).
            let _ = tree.live_members();
            scan_due = false;
        }
        if hang_deadline.is_none() && parser.verdict() != Verdict::Pending {
            hang_deadline = Some(tokio::time::Instant::now() + run.exit_after_result);
        }
        let hang = sleep_until_or_never(hang_deadline);
        let drain = sleep_until_or_never(drain_deadline);
        tokio::select! {
            // Cancellation first: a program that floods stdout must not starve it.
            biased;
            _ = ctx.cancellation.cancelled() => return Ending::Canceled,
            read = read_bounded_line(&mut stdout, &mut line), if stdout_open => {
                match read {
                    Ok(LineRead::Eof) | Err(_) => {
                        stdout_open = false;
                        if let Some(status) = exited.take() {
                            return Ending::Exited(status);
                        }
                    }
                    Ok(LineRead::TooLong { ended }) => {
                        if !skipping_long_line {
                            state.notes.push(format!(
                                "a stdout line longer than {MAX_LINE} bytes was skipped"
                            ));
                        }
                        // Until its newline, what follows is still that line.
                        skipping_long_line = !ended;
                        line.clear();
                    }
                    Ok(LineRead::Line) => {
                        if skipping_long_line {
                            // The tail of an over-long line.
                            skipping_long_line = false;
                        } else {
                            state.lines += 1;
                            let content = trim_newline(&line);
                            if !content.is_empty() {
                                parser.line(content, &mut events);
                                state.report_session(parser, ctx);
                            }
                            for event in events.drain(..) {
                                if event.kind == EventKind::ToolExecStart {
                                    state.tool_started = true;
                                }
                                ctx.events.emit(event);
                            }
                        }
                        line.clear();
                    }
                }
            }
            status = tree.wait_leader(), if exited.is_none() && drain_deadline.is_none() => {
                if !stdout_open {
                    return Ending::Exited(status);
                }
                // Let what is already in the pipe be read, but do not wait for a
                // straggler that inherited stdout: the program is done, so what it left
                // running is terminated now (what it wrote stays readable), and the
                // pipe closes. `terminate` is idempotent: `drive` gets this answer.
                exited = Some(status);
                drain_deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                let _ = tree.terminate(run.grace).await;
            }
            _ = tick.tick() => scan_due = true,
            _ = drain => {
                state.notes.push(
                    "stdout was still held open after the program exited; the rest was not read"
                        .to_owned(),
                );
                if let Some(status) = exited.take() {
                    return Ending::Exited(status);
                }
            }
            _ = hang, if exited.is_none() => return Ending::HungAfterResult,
        }
    }
}

/// How long stdout is still read after the leader exited.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

async fn sleep_until_or_never(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

enum LineRead {
    Line,
    /// [`MAX_LINE`] reached; `ended`: the line's newline was consumed too.
    TooLong {
        ended: bool,
    },
    Eof,
}

/// Reads up to and including the next `\n` into `line`, stopping at [`MAX_LINE`].
async fn read_bounded_line(
    stdout: &mut tokio::io::BufReader<tokio::process::ChildStdout>,
    line: &mut Vec<u8>,
) -> std::io::Result<LineRead> {
    loop {
        let available = stdout.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(available.get(..take.min(room)).unwrap_or_default());
        stdout.consume(take);
        if take > room {
            // Cut: never hand a parser the head of a line as if it were the whole.
            return Ok(LineRead::TooLong { ended: done });
        }
        if done {
            return Ok(LineRead::Line);
        }
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn settle(
    run: &AgentRun,
    ending: Ending,
    termination: &Termination,
    state: &Reading,
    verdict: Verdict,
    ctx: &ExecutionContext,
) -> ContractResult {
    let program = &run.program;
    let canceled = matches!(ending, Ending::Canceled);
    // A cancel cuts the reading short: a tool start may still sit unread in the pipe,
    // so a canceled program that was running is never confirmed effect-free.
    let effects = if state.tool_started || canceled {
        SideEffects::Possible
    } else {
        SideEffects::None
    };
    let unknown = |reason: String| {
        ContractResult::with_error(
            Outcome::Unknown,
            Error::new(ErrorCode::UnknownOutcome, reason, SideEffects::Possible),
        )
    };
    if let Some(result) = settle_tree(program, termination, canceled, &ctx.cancellation, effects) {
        return result;
    }
    match ending {
        // Answered by `settle_tree` already; spelled out so the match stays total.
        Ending::Canceled => canceled_tree(program, termination, &ctx.cancellation, effects),
        Ending::HungAfterResult => unknown(format!(
            "`{program}` reported its result but did not exit within {:?}; it was terminated",
            run.exit_after_result
        )),
        Ending::Exited(Err(e)) => unknown(format!("lost track of `{program}`: {e}")),
        Ending::Exited(Ok(status)) => match verdict {
            Verdict::Failed { code, message } => {
                ContractResult::failed(Error::new(code, message, effects))
            }
            Verdict::Completed(text) if status.success() => ContractResult::succeeded(text),
            Verdict::Completed(_) => unknown(format!(
                "`{program}` reported a result but then {}",
                describe(status)
            )),
            Verdict::Pending if status.success() => unknown(format!(
                "`{program}` exited without its final result line ({} lines read)",
                state.lines
            )),
            Verdict::Pending if state.lines == 0 && status.code().is_some() => {
                ContractResult::failed(Error::new(
                    ErrorCode::ProviderRejected,
                    format!(
                        "`{program}` {} before writing anything (see logs)",
                        describe(status)
                    ),
                    SideEffects::None,
                ))
            }
            Verdict::Pending => unknown(format!(
                "`{program}` {} before its final result",
                describe(status)
            )),
        },
    }
}

/// The part of settling every process-tree backend shares (this driver, `acp`):
/// members that outlived SIGKILL make the run `unknown` with `cancel_requested`,
/// whatever the stream said; a cancel with the tree confirmed gone is `canceled`.
/// `None`: the tree is gone and there was no cancel, so the stream decides.
pub(crate) fn settle_tree(
    program: &str,
    termination: &Termination,
    canceled: bool,
    cancellation: &Cancellation,
    effects: SideEffects,
) -> Option<ContractResult> {
    if !termination.survivors.is_empty() || termination.leader_status.is_none() {
        let code = if canceled {
            cause_code(cancellation.cause())
        } else {
            ErrorCode::UnknownOutcome
        };
        return Some(ContractResult::with_error(
            Outcome::Unknown,
            Error::new(
                code,
                format!(
                    "{CANCEL_REQUESTED}: processes {:?} of `{program}` are still alive after SIGKILL",
                    termination.survivors
                ),
                SideEffects::Possible,
            ),
        ));
    }
    canceled.then(|| canceled_tree(program, termination, cancellation, effects))
}

fn canceled_tree(
    program: &str,
    termination: &Termination,
    cancellation: &Cancellation,
    effects: SideEffects,
) -> ContractResult {
    ContractResult::with_error(
        Outcome::Canceled,
        Error::new(
            cause_code(cancellation.cause()),
            format!(
                "canceled; {} process(es) of `{program}` terminated{}",
                termination.members_seen,
                if termination.killed {
                    " (SIGKILL after the grace period)"
                } else {
                    ""
                }
            ),
            effects,
        ),
    )
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

/// The [`agent_exec_contract::Backend::verification_key`] of an agent-program
/// backend of `kind` running `program` with `config`: `None` when the program cannot
/// be found or stat'ed (then the probe runs, and reports the problem).
///
/// What a probe's answer depends on, and so what the key holds: the adapter (kind and
/// this crate's version: its flags and parsers), the program *file* — PATH lookup,
/// then canonicalized, since npm's `.bin/x` is a symlink to a JS launcher or a native
/// binary — with its size, mtime (ns), inode and device (a reinstall or upgrade
/// rewrites the file), and the configured args, env and model. Those last three are
/// only hashed (SHA-256, length-prefixed fields): env values may be credentials and
/// the key is stored in clear. Decision: stat the file, not hash its bytes — claude's
/// binary is 400 MB, and reading it would cost more than the probe it replaces. Not
/// covered: what the launcher loads at run time (Node itself, a vendored binary
/// updated alone); `agent-exec backends --verify` re-probes, and entries expire.
pub fn verification_key(kind: &str, program: &str, config: &ProgramConfig) -> Option<String> {
    use sha2::{Digest as _, Sha256};
    use std::os::unix::fs::MetadataExt as _;
    let found = crate::locate::find_program(program).ok()?;
    let resolved = std::fs::canonicalize(found).ok()?;
    let meta = std::fs::metadata(&resolved).ok()?;
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for arg in &config.args {
        field(b"arg");
        field(arg.as_bytes());
    }
    for (name, value) in &config.env {
        field(b"env");
        field(name.as_bytes());
        field(value.as_bytes());
    }
    if let Some(model) = &config.model {
        field(b"model");
        field(model.as_bytes());
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Some(format!(
        "{kind}/{} program={} size={} mtime_ns={mtime_ns} ino={} dev={} config=sha256:{digest}",
        env!("CARGO_PKG_VERSION"),
        resolved.display(),
        meta.size(),
        meta.ino(),
        meta.dev(),
    ))
}

/// Why a probe could not prove what it was run for. The text of each says what
/// happened and, for a missing program, what to install.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The program is not there (`problem` says where it was looked for).
    #[error("{problem}; {install_hint}")]
    NotFound {
        problem: String,
        install_hint: String,
    },
    /// The program is there but could not be started.
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// `command` gave no answer in time.
    #[error("`{command}` did not answer within {timeout:?}")]
    Timeout { command: String, timeout: Duration },
    /// `command` ended unsuccessfully.
    #[error("`{command}` {ended}: {stderr}")]
    Failed {
        command: String,
        ended: String,
        stderr: String,
    },
    /// The probe's own preparation failed (a folder, a port, a file).
    #[error("{0}")]
    Setup(String),
    /// The program ran, but did not show what was to be proven.
    #[error("{0}")]
    Unproven(String),
}

impl ProbeError {
    fn not_found(problem: crate::locate::ProgramNotFound, install_hint: &str) -> Self {
        ProbeError::NotFound {
            problem: problem.to_string(),
            install_hint: install_hint.to_owned(),
        }
    }
}

/// Runs `program args…` (a `--version`-style probe) with stdin closed and a timeout,
/// returning its trimmed stdout. The error says what to install.
pub async fn probe_output(
    program: &str,
    args: &[&str],
    env: &BTreeMap<String, String>,
    timeout: Duration,
    install_hint: &str,
) -> Result<String, ProbeError> {
    let output = probe_run(program, args, env, timeout, install_hint).await?;
    if !output.status.success() {
        return Err(ProbeError::Failed {
            command: format!("{program} {}", args.join(" ")),
            ended: describe(output.status),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Runs `program args…` with `env`, stdin closed, within `timeout`, keeping its whole
/// output whatever its status (pi prints its version on stderr).
pub async fn probe_run(
    program: &str,
    args: &[&str],
    env: &BTreeMap<String, String>,
    timeout: Duration,
    install_hint: &str,
) -> Result<std::process::Output, ProbeError> {
    let path = crate::locate::find_program(program)
        .map_err(|problem| ProbeError::not_found(problem, install_hint))?;
    let mut command = LeaderCommand::new(path);
    command.args(args).envs(env);
    match run_probe_tree(command, None, timeout).await {
        Ok(Some(output)) => Ok(output),
        Err(source) => Err(ProbeError::Spawn {
            program: program.to_owned(),
            source,
        }),
        Ok(None) => Err(ProbeError::Timeout {
            command: format!("{program} {}", args.join(" ")),
            timeout,
        }),
    }
}

/// Runs a probe `command` as a [`ProcessTree`]: writes `stdin` (or gives it none),
/// collects stdout and stderr, and waits for the leader, all within `timeout`
/// (`Ok(None)` when it passed); then the whole tree is terminated, so a probe that
/// forked leaves nothing behind.
///
/// Invariant: a probe future dropped midway (the caller's deadline or Ctrl-C fired
/// while resolving the backend) drops the tree, whose `Drop` kills the group and
/// every member seen — never a probe process left running. The decision not taken:
/// `Command::output` with `kill_on_drop`, which reaches the direct child only.
pub async fn run_probe_tree(
    mut command: LeaderCommand,
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> std::io::Result<Option<std::process::Output>> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut tree = ProcessTree::spawn(command)?;
    let input = tree.child_mut().stdin.take();
    let stdout = tree.child_mut().stdout.take();
    let stderr = tree.child_mut().stderr.take();
    let ran = async {
        let feed = async {
            if let (Some(mut pipe), Some(bytes)) = (input, stdin) {
                // A program that never reads stdin closes the pipe: judged by its output.
                let _ = pipe.write_all(bytes).await;
            }
        };
        let (_, out, err, status) =
            tokio::join!(feed, read_all(stdout), read_all(stderr), tree.wait_leader());
        status.map(|status| std::process::Output {
            status,
            stdout: out,
            stderr: err,
        })
    };
    let answer = tokio::time::timeout(timeout, ran).await;
    let _ = tree.terminate(Duration::from_millis(200)).await;
    match answer {
        Err(_) => Ok(None),
        Ok(output) => output.map(Some),
    }
}

/// A loopback port nothing listens on (bound, then released): a format probe points
/// the program's model provider there, so its first request is refused at once and
/// the model request (with its key, a dummy) never leaves the machine.
pub fn refused_loopback_port() -> Result<u16, ProbeError> {
    let refused =
        |e: std::io::Error| ProbeError::Setup(format!("cannot reserve a loopback port: {e}"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(refused)?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(refused)
}

/// A format probe's throw-away folder: a `workspace` to run in and a `home` for the
/// program's own state (its config folder), both removed when this is dropped.
pub struct ProbeFolder {
    _dir: tempfile::TempDir,
    pub workspace: std::path::PathBuf,
    pub home: std::path::PathBuf,
}

impl ProbeFolder {
    pub fn new() -> Result<ProbeFolder, ProbeError> {
        let failed =
            |e: std::io::Error| ProbeError::Setup(format!("cannot create a probe folder: {e}"));
        let dir = tempfile::tempdir().map_err(failed)?;
        let workspace = dir.path().join("workspace");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&workspace)
            .and_then(|()| std::fs::create_dir_all(&home))
            .map_err(failed)?;
        Ok(ProbeFolder {
            _dir: dir,
            workspace,
            home,
        })
    }

    /// The request a format probe runs: a short prompt in this workspace, under the
    /// contract's default tool policy (`with_tools`: the run's tool flags are part of
    /// what is proven) or under `workspace` (the program's own tools, no flags).
    pub fn request(&self, with_tools: bool) -> agent_exec_contract::ContractRequest {
        agent_exec_contract::ContractRequest {
            execution_id: "agent-exec-format-probe".into(),
            prompt: "agent-exec format probe".into(),
            workspace: agent_exec_contract::WorkspaceHandle {
                root: self.workspace.display().to_string(),
                writable: Vec::new(),
            },
            tool_policy: agent_exec_contract::ToolPolicy {
                profile: if with_tools { "reasoning" } else { "workspace" }.into(),
                allowlist: Vec::new(),
            },
            ..Default::default()
        }
    }
}

/// The longest stdout line a format probe reads before it gives up (a real first line
/// is a few KB; the probe's program is the user's, but bounded all the same).
const PROBE_MAX_LINE: usize = 1024 * 1024;

/// What a format probe saw.
#[derive(Debug)]
pub struct StreamProbe {
    /// `enough` said yes to a line before the output ended.
    pub proven: bool,
    /// Stdout lines read.
    pub lines: usize,
    /// How the program ended, when it ended on its own before the probe stopped it.
    pub status: Option<ExitStatus>,
    /// The tail of stderr, trimmed, at most 400 characters.
    pub stderr: String,
}

impl StreamProbe {
    /// `Ok` when proven; else `failure`, followed by what the probe saw.
    pub fn proof(&self, failure: impl FnOnce() -> String) -> Result<(), ProbeError> {
        if self.proven {
            Ok(())
        } else {
            Err(ProbeError::Unproven(format!(
                "{} ({})",
                failure(),
                self.describe()
            )))
        }
    }

    /// "exited with status 1, stderr: …" for a message about an unproven probe.
    pub fn describe(&self) -> String {
        let ended = self
            .status
            .map_or_else(|| "still running".to_owned(), describe);
        format!(
            "{} stdout line(s), {ended}, stderr: {:?}",
            self.lines, self.stderr
        )
    }
}

/// How a format probe runs the program: as a real run would, but pointed at nothing.
#[derive(Debug, Clone, Copy)]
pub struct FormatProbe<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    /// On top of the inherited environment.
    pub env: &'a BTreeMap<String, String>,
    pub cwd: &'a std::path::Path,
    pub stdin: &'a [u8],
    pub timeout: Duration,
    /// What to install, for a program that is not there.
    pub install_hint: &'a str,
}

/// A format probe: runs `program args…` the way a real run does (same flags, `env` on
/// top of ours, in `cwd`, `stdin` written then closed) and hands each stdout line to
/// `enough` until it says the stream is the expected one — then the whole tree is
/// terminated, so a program that would go on (codex retrying a refused provider for
/// minutes) costs only its first lines. Ends unproven at end of output, at a line over
/// [`PROBE_MAX_LINE`], or after `timeout`.
///
/// Why not `--help` or `--version` alone: they show a flag is *accepted*, not that the
/// program then *speaks* the format the parser reads (issue: "present, version, speaks
/// the expected format").
pub async fn probe_stream(
    probe: &FormatProbe<'_>,
    enough: &mut (dyn FnMut(&[u8]) -> bool + Send),
) -> Result<StreamProbe, ProbeError> {
    let FormatProbe {
        program,
        args,
        env,
        cwd,
        stdin,
        timeout,
        install_hint,
    } = *probe;
    let path = crate::locate::find_program(program)
        .map_err(|problem| ProbeError::not_found(problem, install_hint))?;
    let mut command = LeaderCommand::new(path);
    command
        .args(args)
        .envs(env)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut tree = ProcessTree::spawn(command).map_err(|source| ProbeError::Spawn {
        program: program.to_owned(),
        source,
    })?;
    let input = tree.child_mut().stdin.take();
    let stdout = tree.child_mut().stdout.take();
    let stderr = Reader::tail(tree.child_mut().stderr.take());
    let feed = async {
        if let Some(mut pipe) = input {
            // A program that never reads stdin closes the pipe: judged by its output.
            let _ = pipe.write_all(stdin).await;
        }
    };
    let mut lines = 0;
    let read = async {
        let Some(stdout) = stdout else {
            return false;
        };
        let mut reader = tokio::io::BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            let mut limited = (&mut reader).take(PROBE_MAX_LINE as u64 + 1);
            match limited.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return false,
                Ok(_) if line.len() > PROBE_MAX_LINE => return false,
                Ok(_) => {}
            }
            lines += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            if enough(text) {
                return true;
            }
        }
    };
    let proven = tokio::time::timeout(timeout, async { tokio::join!(feed, read).1 })
        .await
        .unwrap_or(false);
    // Ended on its own (end of output): its status says how; else it is stopped here.
    let status = if proven {
        None
    } else {
        tokio::time::timeout(Duration::from_millis(500), tree.wait_leader())
            .await
            .ok()
            .and_then(Result::ok)
    };
    let _ = tree.terminate(Duration::from_millis(200)).await;
    let (tail, _) = join_bounded(stderr).await;
    let tail = String::from_utf8_lossy(&tail);
    let tail = tail.trim();
    let start = tail.len().saturating_sub(400);
    let start = (start..=tail.len())
        .find(|&i| tail.is_char_boundary(i))
        .unwrap_or(tail.len());
    Ok(StreamProbe {
        proven,
        lines,
        status,
        stderr: tail.get(start..).unwrap_or_default().to_owned(),
    })
}

async fn read_all<R: tokio::io::AsyncRead + Unpin>(stream: Option<R>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(mut stream) = stream {
        let _ = stream.read_to_end(&mut bytes).await;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_exec_contract::{CancelCause, EventSink};

    /// Lines: `tool NAME`, `done TEXT`, `fail TEXT`, `session ID`, anything else ignored.
    #[derive(Default)]
    struct Lines {
        verdict: Verdict,
        session: Option<String>,
    }

    impl StreamParser for Lines {
        fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
            let line = String::from_utf8_lossy(line);
            if let Some(tool) = line.strip_prefix("tool ") {
                events.push(Event {
                    kind: EventKind::ToolExecStart,
                    text: String::new(),
                    tool: tool.to_owned(),
                    detail: String::new(),
                });
            } else if let Some(text) = line.strip_prefix("done ") {
                self.verdict = Verdict::Completed(text.to_owned());
            } else if let Some(id) = line.strip_prefix("session ") {
                self.session = Some(id.to_owned());
            } else if let Some(text) = line.strip_prefix("fail ") {
                self.verdict = Verdict::Failed {
                    code: ErrorCode::ProviderRejected,
                    message: text.to_owned(),
                };
            }
        }
        fn verdict(&self) -> Verdict {
            self.verdict.clone()
        }
        fn usage(&self) -> Usage {
            Usage {
                prompt_tokens: 3,
                completion_tokens: 4,
            }
        }
        fn session(&self) -> Option<&str> {
            self.session.as_deref()
        }
    }

    fn run(script: &str) -> AgentRun {
        AgentRun {
            backend: "test".into(),
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: BTreeMap::new(),
            stdin: None,
            cwd: std::env::temp_dir().display().to_string(),
            grace: Duration::from_millis(500),
            exit_after_result: Duration::from_millis(300),
        }
    }

    async fn drive_script(script: &str) -> (ContractResult, Vec<Event>) {
        let (sink, mut rx) = EventSink::channel();
        let ctx = ExecutionContext::new(sink);
        let result = drive(run(script), &mut Lines::default(), &ctx).await;
        drop(ctx);
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        (result, events)
    }

    fn code(result: &ContractResult) -> Option<ErrorCode> {
        result.err.as_ref().map(|e| e.code.clone())
    }

    #[tokio::test]
    async fn result_line_and_clean_exit_is_success_with_events_in_order() {
        let (result, events) =
            drive_script("echo 'tool a'; echo noise; echo 'tool b'; echo 'done hi'").await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
        assert_eq!(result.text, "hi");
        assert_eq!(result.usage.completion_tokens, 4);
        let tools: Vec<&str> = events.iter().map(|e| e.tool.as_str()).collect();
        assert_eq!(tools, ["a", "b", ""]);
        assert_eq!(
            events.last().map(|e| e.kind.clone()),
            Some(EventKind::MessageEnd)
        );
    }

    #[tokio::test]
    async fn a_session_handle_is_reported_once_as_the_stream_shows_it_and_a_bad_one_never() {
        let (sink, _rx) = EventSink::channel();
        let mut ctx = ExecutionContext::new(sink);
        let (reporter, mut handles) = agent_exec_contract::SessionReporter::channel();
        ctx.session = reporter;
        // A repeated handle is not reported again; a refused one is noted, not sent.
        let script = "echo 'session s-1'; echo 'tool a'; echo 'session s-1'; \
                      echo 'session ../x'; echo 'session s-2'; echo 'done ok'";
        let result = drive(run(script), &mut Lines::default(), &ctx).await;
        drop(ctx);
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
        let mut got = Vec::new();
        while let Ok(handle) = handles.try_recv() {
            got.push(handle);
        }
        assert_eq!(got, ["s-1", "s-2"], "once each; the path-like one dropped");
        assert!(
            result
                .logs
                .contains("the stream's session handle was not recorded"),
            "{}",
            result.logs
        );
        assert!(!result.logs.contains("../x"), "{}", result.logs);
    }

    #[tokio::test]
    async fn a_handle_is_reported_before_the_program_is_killed() {
        // SIGKILL right after the handle line: the journal must still get it.
        let (sink, _rx) = EventSink::channel();
        let mut ctx = ExecutionContext::new(sink);
        let (reporter, mut handles) = agent_exec_contract::SessionReporter::channel();
        ctx.session = reporter;
        let result = drive(
            run("echo 'session s-9'; echo 'tool a'; kill -KILL $$"),
            &mut Lines::default(),
            &ctx,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
        assert_eq!(handles.try_recv().ok(), Some("s-9".to_owned()));
    }

    #[test]
    fn resume_refuses_a_handle_that_is_not_an_id_and_uuids_are_recognised() {
        let mut ctx = ExecutionContext::new(EventSink::discard());
        assert_eq!(resume_session(&ctx, "b").ok(), Some(None));
        for bad in ["--foo", "../x", "a b", ""] {
            ctx.resume = Some(agent_exec_contract::ResumeFrom {
                session: bad.into(),
                attempt: 1,
                original_prompt: "p".into(),
            });
            let refused = resume_session(&ctx, "b").unwrap_err();
            assert_eq!(refused.code, ErrorCode::Internal, "{bad:?}");
            assert_eq!(refused.side_effects, SideEffects::None, "{bad:?}");
            assert!(
                refused.reason.contains("backend `b` cannot resume"),
                "{refused:?}"
            );
        }
        ctx.resume = Some(agent_exec_contract::ResumeFrom {
            session: "s-1".into(),
            attempt: 1,
            original_prompt: "p".into(),
        });
        assert_eq!(resume_session(&ctx, "b").ok(), Some(Some("s-1")));
        assert!(is_uuid("01a2342a-70a9-7080-b1dd-42fcf176d61f"));
        assert!(is_uuid("1CA84C62-883D-4ACF-BBA8-E40C215865C5"));
        for not in [
            "s-1",
            "01a2342a-70a9-7080-b1dd-42fcf176d61",
            "01a2342a-70a9-7080-b1dd-42fcf176d61f0",
            "01a2342a_70a9-7080-b1dd-42fcf176d61f",
            "g1a2342a-70a9-7080-b1dd-42fcf176d61f",
            "01a2342a-70a9-7080-b1dd-42fcf176d61f-0",
        ] {
            assert!(!is_uuid(not), "{not}");
        }
    }

    #[test]
    fn the_continuation_carries_the_prompt_and_targets_but_not_the_context() {
        let mut request = agent_exec_contract::ContractRequest {
            prompt: "go on".into(),
            context: vec![agent_exec_contract::Message {
                role: "user".into(),
                content: "earlier words".into(),
            }],
            targets: vec!["out.md".into()],
            ..Default::default()
        };
        let continued = render_continuation(&request);
        assert!(continued.starts_with("go on\n"), "{continued}");
        assert!(continued.ends_with("- out.md\n"), "{continued}");
        assert!(!continued.contains("earlier words"), "{continued}");
        request.prompt.clear();
        assert!(render_continuation(&request).starts_with(DEFAULT_CONTINUATION));
    }

    #[tokio::test]
    async fn an_overlong_line_is_skipped_whole_never_handed_over_cut() {
        // The cap falls a few bytes before the newline, usually inside one read: a cut
        // head (`fail xxx…`) reaching the parser would turn the run into a failure. The
        // result comes last: written after it, the megabyte could outlast the driver's
        // exit grace on a loaded machine (the test once failed that way, `unknown`).
        let (result, _) = drive_script(&format!(
            "printf 'fail '; head -c {} /dev/zero | tr '\\0' x; echo; echo 'tool t'; echo 'done after'",
            MAX_LINE + 10
        ))
        .await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{:?}", result.err);
        assert_eq!(result.text, "after");
        assert!(result.logs.contains("was skipped"), "{}", result.logs);
    }

    #[tokio::test]
    async fn clean_exit_without_result_is_unknown() {
        let (result, _) = drive_script("echo 'tool a'").await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
        assert_eq!(code(&result), Some(ErrorCode::UnknownOutcome));
    }

    #[tokio::test]
    async fn a_hang_after_the_result_is_unknown_and_the_tree_is_killed() {
        let (result, _) = drive_script("echo 'done hi'; sleep 30").await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
        let reason = result.err.map(|e| e.reason).unwrap_or_default();
        assert!(reason.contains("did not exit"), "{reason}");
    }

    #[tokio::test]
    async fn a_crash_after_a_tool_ran_is_unknown_with_possible_effects() {
        let (result, _) = drive_script("echo 'tool a'; kill -SEGV $$").await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
        assert_eq!(
            result.err.map(|e| e.side_effects),
            Some(SideEffects::Possible)
        );
    }

    #[tokio::test]
    async fn a_result_then_a_failing_exit_is_not_success() {
        let (result, _) = drive_script("echo 'done hi'; exit 3").await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
    }

    #[tokio::test]
    async fn a_rejected_invocation_is_failed_without_effects() {
        let (result, _) = drive_script("echo 'bad flag' >&2; exit 2").await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
        assert_eq!(result.err.map(|e| e.side_effects), Some(SideEffects::None));
        assert!(result.logs.contains("bad flag"), "{}", result.logs);
    }

    #[tokio::test]
    async fn the_programs_own_failure_is_failed() {
        let (result, _) = drive_script("echo 'fail quota'; exit 1").await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
        assert_eq!(result.err.map(|e| e.reason), Some("quota".to_owned()));
    }

    #[tokio::test]
    async fn a_straggler_holding_stdout_does_not_hold_the_run() {
        let (result, _) = drive_script("echo 'done hi'; (sleep 30 &) ; exit 0").await;
        // The leader exited 0 after its result; the straggler is terminated.
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    }

    #[tokio::test]
    async fn cancel_mid_run_is_canceled_and_leaves_no_process() {
        let (sink, _rx) = EventSink::channel();
        let ctx = ExecutionContext::new(sink);
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "echo 'tool sleep'; sleep 30 & echo $! > {}; wait",
            pidfile.display()
        );
        let cancel = ctx.cancellation.clone();
        let waiter = {
            let pidfile = pidfile.clone();
            tokio::spawn(async move {
                // The shell creates the file before writing the pid into it.
                while !std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n')) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                cancel.cancel(CancelCause::Caller);
            })
        };
        let result = drive(run(&script), &mut Lines::default(), &ctx).await;
        waiter.await.unwrap();
        assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
        assert_eq!(code(&result), Some(ErrorCode::Canceled));
        assert_eq!(
            result.err.map(|e| e.side_effects),
            Some(SideEffects::Possible)
        );
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            test_support::procfs::gone(pid),
            "the sleeping child {pid} survived"
        );
    }

    fn executable(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\necho 1.0\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn verification_key_follows_the_symlink_and_changes_when_the_program_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let real = executable(dir.path(), "agent.js");
        let link = dir.path().join("agent");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let config = ProgramConfig::new("x");
        let link = link.to_str().unwrap();
        let key = verification_key("codex", link, &config).unwrap();
        let canonical = std::fs::canonicalize(&real).unwrap();
        assert!(
            key.contains(&format!("program={} ", canonical.display())),
            "{key}"
        );
        assert_eq!(verification_key("codex", link, &config), Some(key.clone()));
        // Another kind over the same program is another adapter.
        assert_ne!(verification_key("acp", link, &config), Some(key.clone()));
        // An upgrade in place: same path, new mtime.
        let file = std::fs::File::options().write(true).open(&real).unwrap();
        file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        drop(file);
        let touched = verification_key("codex", link, &config).unwrap();
        assert_ne!(touched, key);
    }

    #[test]
    fn verification_key_hashes_the_config_and_never_holds_env_values() {
        let dir = tempfile::tempdir().unwrap();
        let program = executable(dir.path(), "agent");
        let program = program.to_str().unwrap();
        let mut config = ProgramConfig::new("x");
        config
            .env
            .insert("SCRIPTED_KEY".into(), "sk-very-secret-value".into());
        let key = verification_key("codex", program, &config).unwrap();
        assert!(!key.contains("sk-very-secret-value"), "{key}");
        assert!(!key.contains("SCRIPTED_KEY"), "{key}");
        let mut other = config.clone();
        other
            .env
            .insert("SCRIPTED_KEY".into(), "sk-another-value".into());
        assert_ne!(
            verification_key("codex", program, &other),
            Some(key.clone())
        );
        let mut model = config.clone();
        model.model = Some("m".into());
        assert_ne!(
            verification_key("codex", program, &model),
            Some(key.clone())
        );
        let mut args = config.clone();
        args.args.push("--flag".into());
        assert_ne!(verification_key("codex", program, &args), Some(key));
        // A missing program has no key: the probe runs and says what is wrong.
        assert_eq!(
            verification_key("codex", "/nonexistent/agent", &config),
            None
        );
    }
}
