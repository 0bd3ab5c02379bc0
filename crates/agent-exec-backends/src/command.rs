//! The `command` backend: any program from config, driven through the execution
//! contract.
//!
//! * `argv` from config; the prompt goes on stdin (default) or as a last argument;
//! * the workspace root is the working directory;
//! * the environment carries `AGENT_EXEC_EXECUTION_ID` (the same for every attempt
//!   of an execution), `AGENT_EXEC_ATTEMPT`, `AGENT_EXEC_WORKSPACE`, and, when set,
//!   `AGENT_EXEC_INSTRUCTIONS` and `AGENT_EXEC_TARGETS` (one target per line);
//! * `text` is the program's stdout (invalid UTF-8 is replaced, and logged);
//!   stdout chunks are also sent as `text_delta` events as they arrive;
//! * `structured_output = true` declares `structured-output`: the request's
//!   `output_schema` is handed over in `AGENT_EXEC_OUTPUT_SCHEMA` (compact JSON), and
//!   the answer is checked against it here, with the runtime's own validator — that
//!   check, not the program, is the proof, so the probe only needs the program;
//! * a failed or rejected answer is not lost: the end of stdout (at most
//!   [`STDOUT_TAIL`] bytes) goes to `logs`, and the ends of stderr and stdout to the
//!   error's reason (at most [`REASON_TAIL`] bytes each), all redacted;
//! * [`echo_stderr`]: a CLI in human mode sees the program's stderr as it comes;
//! * the program leads its own process group; cancel and the end of the run
//!   terminate the whole tree ([`agent_exec_runtime::process`]).
//!
//! Outcomes: exit 0 is `succeeded`; another exit code is `failed`
//! (`agent.provider_rejected`); death by a signal we did not send (a crash) is
//! `unknown`; a cancel is `canceled` only when every process of the tree is
//! confirmed gone, else `unknown` with `cancel_requested`. Processes left behind by a
//! program that exited are terminated too; if they outlive SIGKILL, the outcome is
//! `unknown`.
//!
//! Side effects: the runtime observes the workspace. What a program does outside it
//! (network calls, other directories) is invisible; set `assume_external_effects`
//! for programs known to act outside, and every failure then says `possible`.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::time::Duration;

use agent_exec_contract::{
    Backend, BackendDescriptor, CANCEL_REQUESTED, Capability, ContractRequest, ContractResult,
    Error, ErrorCode, Event, EventKind, EventSink, ExecutionContext, Outcome, SideEffects,
    Verification,
};
use agent_exec_runtime::cause_code;
use agent_exec_runtime::process::{DEFAULT_GRACE, ProcessTree, Termination};
use agent_exec_runtime::spawn::{LeaderCommand, Stdio};

use crate::execution::{identity_env, verify_cancel};
use crate::locate::find_program;
use crate::output::{Collected, Reader, Unfinished, join_bounded, push_line};
use crate::redact::{StreamRedactor, credential_values, redact_result, redact_values};
use serde::Deserialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The kind name in config (`kind = "command"`).
pub const KIND: &str = "command";

// Written once for every backend; this path stays for callers outside the crate.
pub use crate::execution::EXECUTION_ID_VAR;

/// Environment variable holding the request's `output_schema` (compact JSON), when it
/// has one.
pub const OUTPUT_SCHEMA_VAR: &str = "AGENT_EXEC_OUTPUT_SCHEMA";

/// How much of a failed or rejected answer's stdout `logs` keeps (its end).
pub const STDOUT_TAIL: usize = 4 * 1024;

/// How much of the end of stderr, and of stdout, an error's reason quotes.
pub const REASON_TAIL: usize = 240;

static ECHO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether every later run copies its program's stderr to this process's stderr as
/// it is read (credentials redacted), besides keeping its tail for `logs`. For a
/// command-line tool in human mode, where the program's diagnostics are the user's to
/// read while it runs; a process-wide choice of how to show output, not run state.
pub fn echo_stderr(on: bool) {
    ECHO_STDERR.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// How often the process tree is scanned while the program runs, so that a
/// process which leaves the group is remembered while it can still be seen.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// Where the prompt goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptMode {
    /// Written to stdin, which is then closed.
    #[default]
    Stdin,
    /// Appended as the last argument; stdin is empty.
    Argument,
}

/// A `command` backend's configuration (a `[backends.NAME]` table with
/// `kind = "command"`; the table's key is the name, set by the loader).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// Backend name (the config key); not part of the table.
    #[serde(skip)]
    pub name: String,
    /// Program and arguments; must not be empty.
    pub argv: Vec<String>,
    #[serde(default)]
    pub prompt: PromptMode,
    /// Extra environment for the program.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Milliseconds between SIGTERM and SIGKILL on cancel.
    #[serde(default = "default_grace_ms")]
    pub grace_ms: u64,
    /// The program may act outside its workspace: failures report side effects
    /// `possible`, so no fallback replays them.
    #[serde(default)]
    pub assume_external_effects: bool,
    /// The program answers in the JSON a request's `output_schema` asks for (handed
    /// over in [`OUTPUT_SCHEMA_VAR`]): declares `structured-output`, which the answer's
    /// check against the schema proves at every run.
    #[serde(default)]
    pub structured_output: bool,
}

fn default_grace_ms() -> u64 {
    DEFAULT_GRACE.as_millis() as u64
}

impl CommandConfig {
    /// A config with defaults for everything but the name and argv.
    pub fn new(name: impl Into<String>, argv: Vec<String>) -> Self {
        CommandConfig {
            name: name.into(),
            argv,
            prompt: PromptMode::Stdin,
            env: BTreeMap::new(),
            grace_ms: default_grace_ms(),
            assume_external_effects: false,
            structured_output: false,
        }
    }
}

/// The backend. Holds only its configuration: nothing carries over between runs.
#[derive(Debug, Clone)]
pub struct CommandBackend {
    config: CommandConfig,
}

impl CommandBackend {
    /// A backend for `config`. Validation happens in [`Backend::verify`] and at run
    /// time, so a bad config is reported, never a panic.
    pub fn new(config: CommandConfig) -> Self {
        CommandBackend { config }
    }

    fn declared(&self) -> Vec<Capability> {
        let mut declared = vec![
            Capability::Text,
            Capability::Files,
            Capability::Stream,
            Capability::Cancel,
        ];
        if self.config.structured_output {
            declared.push(Capability::StructuredOutput);
        }
        declared
    }

    fn failure_effects(&self) -> SideEffects {
        if self.config.assume_external_effects {
            SideEffects::Possible
        } else {
            SideEffects::None
        }
    }
}

#[async_trait::async_trait]
impl Backend for CommandBackend {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: self.config.name.clone(),
            capabilities: self.declared(),
            adapter_version: format!("command/{}", env!("CARGO_PKG_VERSION")),
        }
    }

    async fn verify(&self) -> Verification {
        let Some(program) = self.config.argv.first() else {
            return Verification::failed(format!(
                "backend `{}`: argv is empty; set argv = [\"program\", ...]",
                self.config.name
            ));
        };
        if let Err(problem) = find_program(program) {
            return Verification::failed(format!("backend `{}`: {problem}", self.config.name));
        }
        let mut verified = vec![Capability::Text, Capability::Files, Capability::Stream];
        if self.config.structured_output {
            // Proven per run: the answer is checked against the schema in `execute`.
            verified.push(Capability::StructuredOutput);
        }
        let mut problems = Vec::new();
        verify_cancel(&mut verified, &mut problems);
        Verification {
            verified,
            adapter_version: format!("command/{}", env!("CARGO_PKG_VERSION")),
            problems,
        }
    }

    async fn execute(&self, request: &ContractRequest, ctx: ExecutionContext) -> ContractResult {
        let effects = self.failure_effects();
        let Some((program, args)) = self.config.argv.split_first() else {
            return ContractResult::failed(Error::new(
                ErrorCode::Internal,
                format!("backend `{}`: argv is empty", self.config.name),
                SideEffects::None,
            ));
        };
        if request.workspace.root.is_empty() {
            return ContractResult::failed(Error::new(
                ErrorCode::Internal,
                "the command backend needs a workspace root to run in",
                SideEffects::None,
            ));
        }
        if let Some(canceled) = crate::execution::canceled_before_start(&ctx) {
            return canceled;
        }

        let mut command = LeaderCommand::new(program);
        command
            .args(args)
            .current_dir(&request.workspace.root)
            .envs(&self.config.env)
            .envs(identity_env(&request.execution_id, ctx.attempt))
            .env("AGENT_EXEC_WORKSPACE", &request.workspace.root)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !request.instructions.is_empty() {
            command.env("AGENT_EXEC_INSTRUCTIONS", &request.instructions);
        }
        if !request.targets.is_empty() {
            command.env("AGENT_EXEC_TARGETS", request.targets.join("\n"));
        }
        let schema = match &request.output_schema {
            None => None,
            Some(schema) => match agent_exec_runtime::structured::check_schema(schema) {
                Ok(checker) => {
                    command.env(OUTPUT_SCHEMA_VAR, schema.to_string());
                    Some(checker)
                }
                Err(why) => {
                    return ContractResult::failed(Error::new(
                        ErrorCode::Internal,
                        why,
                        SideEffects::None,
                    ));
                }
            },
        };
        match self.config.prompt {
            PromptMode::Stdin => {
                command.stdin(Stdio::piped());
            }
            PromptMode::Argument => {
                command.arg(&request.prompt).stdin(Stdio::null());
            }
        }
        let mut tree = match ProcessTree::spawn(command) {
            Ok(tree) => tree,
            Err(e) => {
                return ContractResult::failed(Error::new(
                    ErrorCode::ProviderUnavailable,
                    format!(
                        "cannot start `{program}` for backend `{}`: {e}",
                        self.config.name
                    ),
                    SideEffects::None,
                ));
            }
        };

        let stdin = tree.child_mut().stdin.take();
        let prompt = request.prompt.clone().into_bytes();
        let writer = tokio::spawn(async move {
            if let Some(mut stdin) = stdin {
                // A program that does not read its stdin closes the pipe: not an error.
                let _ = stdin.write_all(&prompt).await;
                let _ = stdin.shutdown().await;
            }
        });
        let stdout = tree.child_mut().stdout.take();
        let events = ctx.events.clone();
        let redactor = StreamRedactor::new(&self.config.env);
        let reader = Reader::spawn(|into| read_stdout(stdout, events, redactor, into));
        let err_reader = if ECHO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
            Reader::tail_echo(
                tree.child_mut().stderr.take(),
                stderr_echo(&self.config.env),
            )
        } else {
            Reader::tail(tree.child_mut().stderr.take())
        };

        let grace = Duration::from_millis(self.config.grace_ms);
        let exited = tokio::select! {
            status = tree.wait_leader_watching(WATCH_EVERY) => Some(status),
            _ = ctx.cancellation.cancelled() => None,
        };
        let termination = tree.terminate(grace).await;
        writer.abort();
        // With the tree gone the pipes are closed and the readers end at once; a
        // survivor may hold them open, so the wait is bounded.
        let (stdout_bytes, stdout_note) = join_bounded(reader).await;
        let (stderr_tail, _) = join_bounded(err_reader).await;

        // Redacted before anything is cut from it, so no cut leaves half a credential.
        let secrets = credential_values(&self.config.env);
        // At this size the reader may have dropped the beginning (it keeps the tail).
        let maybe_cut = stderr_tail.len() >= crate::output::STDERR_TAIL;
        let stderr_text = redact_values(
            &secrets,
            drop_cut_line(&String::from_utf8_lossy(&stderr_tail), maybe_cut),
        );
        let mut logs = stderr_text.clone();
        let text = match String::from_utf8(stdout_bytes) {
            Ok(text) => text,
            Err(e) => {
                push_line(
                    &mut logs,
                    "stdout was not valid UTF-8; invalid bytes replaced",
                );
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        };
        let text = redact_values(&secrets, &text);
        if let Some(unfinished) = stdout_note {
            push_line(&mut logs, unfinished.note());
        }
        let mut result = self.settle(
            exited,
            &termination,
            ctx.cancellation.cause(),
            effects,
            program,
        );
        if result.outcome == Outcome::Succeeded && stdout_note == Some(Unfinished::HeldOpen) {
            // The program exited 0 and its tree is gone as far as we can see, yet its
            // stdout is still open: a process that escaped the tree holds it and may
            // still be working. Neither the text nor the end is certain.
            result = ContractResult::with_error(
                Outcome::Unknown,
                Error::new(
                    ErrorCode::UnknownOutcome,
                    format!(
                        "`{program}` exited with status 0, but a process outside its process \
                         tree (one that escaped it, or one it handed its stdout to) still holds \
                         its stdout open; it may still be running"
                    ),
                    SideEffects::Possible,
                ),
            );
        }
        if result.outcome == Outcome::Succeeded
            && let Some(checker) = &schema
            && let Err(why) = checker.check_text(&text)
        {
            // The runtime would reject it too, but keep nothing of it; here the
            // program's answer is at hand to show the caller what it said instead.
            // Code and words as the runtime's rejection (`structured`).
            result = ContractResult::failed(Error::new(
                ErrorCode::MissingDeliverable,
                format!("structured output rejected: {why}"),
                effects,
            ));
        }
        if result.outcome == Outcome::Succeeded {
            result.text = text;
            ctx.events.emit(Event::of_kind(EventKind::MessageEnd));
        } else {
            if !text.is_empty() {
                push_line(
                    &mut logs,
                    &format!(
                        "stdout ({} bytes, not returned as text){}:\n{}",
                        text.len(),
                        if text.len() > STDOUT_TAIL {
                            ", its end"
                        } else {
                            ""
                        },
                        tail(&text, STDOUT_TAIL)
                    ),
                );
            }
            if let Some(err) = result.err.as_mut() {
                for (stream, said) in [("stderr", &stderr_text), ("stdout", &text)] {
                    let end = tail(said.trim_end(), REASON_TAIL);
                    if !end.trim().is_empty() {
                        err.reason.push_str(&format!("; {stream} ends: {end:?}"));
                    }
                }
            }
        }
        result.logs = logs;
        termination.report_leftovers(program, &mut result, &ctx.events);
        // The program may print a credential it was given (its env, or ours).
        redact_result(&self.config.env, &mut result);
        result
    }
}

impl CommandBackend {
    fn settle(
        &self,
        exited: Option<std::io::Result<std::process::ExitStatus>>,
        termination: &Termination,
        cause: Option<agent_exec_contract::CancelCause>,
        effects: SideEffects,
        program: &str,
    ) -> ContractResult {
        if !termination.survivors.is_empty() || termination.leader_status.is_none() {
            return ContractResult::with_error(
                Outcome::Unknown,
                Error::new(
                    if exited.is_none() {
                        cause_code(cause)
                    } else {
                        ErrorCode::UnknownOutcome
                    },
                    format!(
                        "{CANCEL_REQUESTED}: processes {:?} of `{program}` are still alive after SIGKILL",
                        termination.survivors
                    ),
                    SideEffects::Possible,
                ),
            );
        }
        let Some(exited) = exited else {
            return ContractResult::with_error(
                Outcome::Canceled,
                Error::new(
                    cause_code(cause),
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
            );
        };
        match exited {
            Err(e) => ContractResult::with_error(
                Outcome::Unknown,
                Error::new(
                    ErrorCode::UnknownOutcome,
                    format!("lost track of `{program}`: {e}"),
                    SideEffects::Possible,
                ),
            ),
            Ok(status) if status.success() => ContractResult::succeeded(String::new()),
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => ContractResult::failed(Error::new(
                    ErrorCode::ProviderRejected,
                    format!("`{program}` exited with status {code}"),
                    effects,
                )),
                (None, signal) => ContractResult::with_error(
                    Outcome::Unknown,
                    Error::new(
                        ErrorCode::UnknownOutcome,
                        format!(
                            "`{program}` was killed by signal {}",
                            signal.unwrap_or_default()
                        ),
                        SideEffects::Possible,
                    ),
                ),
            },
        }
    }
}

/// At most the last `max` bytes of `text`, from a char boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.get(start..).unwrap_or_default()
}

/// `text` without its first line when `cut` (the reader dropped its beginning): that
/// line may start in the middle of a credential, which redaction would not recognise.
fn drop_cut_line(text: &str, cut: bool) -> &str {
    match text.split_once('\n') {
        Some((_, rest)) if cut => rest,
        _ if cut => "",
        _ => text,
    }
}

/// Copies stderr chunks to this process's stderr as they come, credentials redacted
/// (held back while a piece could begin one), UTF-8 sequences split across reads kept
/// whole.
fn stderr_echo(
    configured: &BTreeMap<String, String>,
) -> impl FnMut(Option<&[u8]>) + Send + 'static {
    use std::io::Write as _;
    let mut redactor = StreamRedactor::new(configured);
    let mut pending = Vec::new();
    move |chunk| {
        let text = match chunk {
            Some(chunk) => {
                pending.extend_from_slice(chunk);
                let complete = match std::str::from_utf8(&pending) {
                    Ok(_) => pending.len(),
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    Err(_) => pending.len(),
                };
                let piece = String::from_utf8_lossy(pending.get(..complete).unwrap_or_default())
                    .into_owned();
                pending.drain(..complete);
                redactor.push(&piece)
            }
            None => {
                let rest = String::from_utf8_lossy(&std::mem::take(&mut pending)).into_owned();
                let mut out = redactor.push(&rest);
                out.push_str(&redactor.finish());
                out
            }
        };
        if !text.is_empty() {
            // Our stderr gone away is not the run's failure.
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
    }
}

/// Reads stdout to the end, emitting complete UTF-8 as `text_delta` events, with
/// credential values redacted (the collected bytes are redacted with the result).
async fn read_stdout(
    stdout: Option<tokio::process::ChildStdout>,
    events: EventSink,
    mut redactor: StreamRedactor,
    into: Collected,
) {
    let Some(mut stdout) = stdout else {
        return;
    };
    let mut buf = vec![0u8; 16 * 1024];
    // Bytes not yet emitted: at most an incomplete UTF-8 sequence between reads.
    let mut pending = Vec::new();
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = buf.get(..n).unwrap_or_default();
        into.with(|collected| collected.extend_from_slice(chunk));
        pending.extend_from_slice(chunk);
        let complete = match std::str::from_utf8(&pending) {
            Ok(_) => pending.len(),
            // An incomplete sequence at the end waits for the next read; an invalid
            // one is emitted (replaced) rather than holding the stream back.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => pending.len(),
        };
        if complete > 0 {
            let text = String::from_utf8_lossy(pending.get(..complete).unwrap_or_default());
            let text = redactor.push(&text);
            if !text.is_empty() {
                events.emit(Event::text_delta(text));
            }
            pending.drain(..complete);
        }
    }
    let rest = redactor.finish();
    if !rest.is_empty() {
        events.emit(Event::text_delta(rest));
    }
}
