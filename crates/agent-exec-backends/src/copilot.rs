//! The `copilot` backend: GitHub Copilot CLI run headless,
//! `copilot --output-format json --allow-all-tools --no-ask-user --no-auto-update
//! --disable-builtin-mcps --session-id=ID|--resume=ID [--model=M] [tool flags]
//! --usage-output-file=FILE [args…]`, the prompt on **stdin**, in the workspace root,
//! driven by [`crate::agent_program::drive`]. Checked against 1.0.102.
//!
//! ## The stream
//! One JSON object a line, `{type, data, id, timestamp, …}`: `user.message`,
//! `assistant.turn_start`, `assistant.message_delta` (`deltaContent`),
//! `assistant.message` (`content`, `toolRequests`), `tool.execution_start`
//! (`toolCallId`, `toolName`, `arguments`), `tool.execution_complete` (`success`,
//! `result.content` or `error.message`), `session.error` (`errorType`, `message`,
//! `statusCode`), many progress lines (`model.call_*`, `session.info`, …) and one final
//! `result` line (`sessionId`, `exitCode`). Mapping:
//!
//! | stream                                   | contract                                  |
//! |------------------------------------------|-------------------------------------------|
//! | `assistant.message_delta`                | `text_delta`                              |
//! | `assistant.message` not streamed before  | `text_delta` (the whole content)          |
//! | `assistant.reasoning_delta`, or          | `reasoning_delta`                         |
//! | `assistant.reasoning` not streamed       |                                           |
//! | `tool.execution_start`                   | `tool_execution_start` (tool, arguments)  |
//! | `tool.execution_complete`                | `tool_execution_end` (same tool, result)  |
//! | `result`, `exitCode` 0, no error         | [`Verdict::Completed`], the last message  |
//! | `result` with another code               | [`Verdict::Failed`] (`session.error` says |
//! |                                          | why; classified below)                    |
//!
//! [`parse_line`] is a pure function from one line to what it says; [`CopilotStream`]
//! folds lines into the verdict. Only `result` is final: a stream cut before it is
//! `unknown` (the driver's settle table), never a success. Failure codes: a
//! `statusCode` of 408, 429 or 5xx, or none with a transport error (`Could not
//! connect`, a timeout) → `provider_unavailable`; any other status (401, 403, 400, …)
//! or an authentication error → `provider_rejected`. Copilot retries a model call
//! itself (5 times, about 16 s), so what is left is not retried by the runtime.
//! Text of a sub-agent (`parentToolCallId` set) is not the run's text; its tool calls
//! are real work and are reported.
//!
//! ## Usage
//! The stream carries no token counts. Copilot writes them at exit to the file named
//! by `--usage-output-file` (`modelMetrics.*.usage.inputTokens`/`outputTokens`), a
//! file in a private temporary folder outside the workspace, read once the program
//! exited. The program, or a tool it runs, can put anything at that path, so it is
//! read through the runtime's bounded, non-blocking reader
//! ([`agent_exec_runtime::input::read_capped`], at most [`MAX_USAGE_FILE`]): a FIFO
//! reads as empty (its writers are gone with the process tree), `/dev/zero` stops at
//! the cap, a sparse file larger than the cap is refused from its size. Anything
//! unreadable leaves the usage at zero with a note in the logs; its content is never
//! quoted.
//!
//! ## Tools
//! Headless Copilot needs `--allow-all-tools` (nobody answers its prompts); the
//! [`ToolPolicy`] is held with `--available-tools`, which decides what the model is
//! offered at all:
//! * an `allowlist` → exactly those tools (`--available-tools=A,B`);
//! * profile `reasoning` or empty (the contract's default) → none: an empty
//!   `--available-tools=` would offer *every* tool, so the flag names a tool that
//!   does not exist ([`NO_TOOLS`]) and the model is offered nothing;
//! * profile `workspace` → Copilot's own set (file access limited by Copilot to the
//!   working directory and the system temporary folder);
//! * any other profile → refused (`tool_rejected`) before anything starts.
//!
//! ## Sessions
//! Each attempt names its session up front with `--session-id=UUID` (a fresh v4
//! UUID), which is its handle from the first line on ([`StreamParser::session`]): the
//! stream names its session only in the final `result` line, too late for a run
//! killed mid-turn. A resumed attempt runs `--resume=UUID` (a UUID only: the flag also
//! takes a session *name* or an id prefix) with the continuation on stdin. Sessions
//! stay where Copilot keeps them (`$COPILOT_HOME/session-state/`); agent-exec deletes
//! none. Verified by resuming the format probe's own session: for an id it has no
//! session for, Copilot prints an error and no stream.
//!
//! ## Deliberately not done
//! * No structured output: Copilot has no flag that constrains the final answer to a
//!   schema, so `structured-output` is not declared.
//! * `instructions` have no flag either (Copilot reads instruction *files*): they are
//!   sent above the prompt on stdin, under an `Instructions:` heading.
//! * The user's own Copilot configuration (MCP servers, hooks, custom instructions) is
//!   not switched off; give the backend its own `COPILOT_HOME` in `env` for a clean
//!   one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use agent_exec_contract::{
    ContractRequest, Error, ErrorCode, Event, EventKind, ExecutionContext, SideEffects, ToolPolicy,
    Usage,
};
use serde_json::Value;

use crate::agent_cli::{
    AgentCli, AgentCliBackend, Attempt, Probe, ProbePlan, ProgramVersion, SessionSeen,
    ToolPolicyRefused, ToolsProof, VersionOrder,
};
use crate::agent_program::{
    self, AgentRun, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict,
};

/// The kind name in config (`kind = "copilot"`).
pub const KIND: &str = "copilot";

/// The program run when the config names none.
pub const DEFAULT_PROGRAM: &str = "copilot";

/// What to install when the program is missing.
pub const INSTALL_HINT: &str =
    "install GitHub Copilot CLI: `npm install -g @github/copilot` (or set `program`)";

/// The flags every run gets: JSON lines on stdout, tools without prompts (nobody is
/// there to answer), no `ask_user` tool (nobody to ask), no self-update, no GitHub MCP
/// server (it needs a GitHub login a backend does not assume).
pub const RUN_FLAGS: [&str; 6] = [
    "--output-format",
    "json",
    "--allow-all-tools",
    "--no-ask-user",
    "--no-auto-update",
    "--disable-builtin-mcps",
];

/// The tool `--available-tools` names when no tool may be offered: none is called
/// so, and an empty list would offer every tool.
pub const NO_TOOLS: &str = "agent-exec-no-tools";

/// The largest usage file read (Copilot's is about 2 KB).
pub const MAX_USAGE_FILE: u64 = 1024 * 1024;

/// The longest `detail` carried by a tool event.
pub const MAX_DETAIL: usize = 512;

/// How many tool calls may be open at once before their names are forgotten (bounds
/// the parser's memory on a hostile stream).
const MAX_OPEN_TOOLS: usize = 4096;

/// How many streamed message ids are remembered (to not send a message twice).
const MAX_STREAMED: usize = 4096;

/// How long the `--version` probe or a format probe may take (a first start unpacks
/// Copilot's package, some seconds).
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// What one line of `copilot --output-format json` means.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `assistant.message_delta`: a piece of message `id`.
    TextDelta { id: String, text: String, sub: bool },
    /// `assistant.message`: a whole message, and whether it asked for tools.
    Message {
        id: String,
        content: String,
        tools: bool,
        sub: bool,
    },
    /// `assistant.reasoning_delta` (`whole` false) / `assistant.reasoning` (true) of
    /// reasoning `id`.
    Reasoning {
        id: String,
        text: String,
        whole: bool,
    },
    /// `tool.execution_start`.
    ToolStart {
        id: String,
        tool: String,
        detail: String,
    },
    /// `tool.execution_complete`.
    ToolEnd { id: String, detail: String },
    /// `session.error`.
    SessionError {
        kind: String,
        message: String,
        status: Option<u64>,
    },
    /// `result`: the final line.
    Result { session: String, exit_code: i64 },
    /// Any other line with a `type`.
    Other,
    /// Not JSON, not an object, or without a `type`.
    Unrecognised,
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `value` as a tool detail: text as is, anything else as JSON, bounded.
fn detail_of(value: Option<&Value>) -> String {
    let raw = match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    agent_program::bounded(&raw, MAX_DETAIL)
}

/// Parses one line (without its newline). Never panics.
pub fn parse_line(line: &[u8]) -> Line {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Line::Unrecognised;
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Line::Unrecognised;
    };
    let empty = Value::Null;
    let data = value.get("data").unwrap_or(&empty);
    let sub = data
        .get("parentToolCallId")
        .is_some_and(|parent| !parent.is_null());
    match kind {
        "assistant.message_delta" => Line::TextDelta {
            id: text(data, "messageId").to_owned(),
            text: text(data, "deltaContent").to_owned(),
            sub,
        },
        "assistant.message" => Line::Message {
            id: text(data, "messageId").to_owned(),
            content: text(data, "content").to_owned(),
            tools: data
                .get("toolRequests")
                .and_then(Value::as_array)
                .is_some_and(|requests| !requests.is_empty()),
            sub,
        },
        "assistant.reasoning_delta" => Line::Reasoning {
            id: text(data, "reasoningId").to_owned(),
            text: text(data, "deltaContent").to_owned(),
            whole: false,
        },
        "assistant.reasoning" => Line::Reasoning {
            id: text(data, "reasoningId").to_owned(),
            text: text(data, "content").to_owned(),
            whole: true,
        },
        "tool.execution_start" => Line::ToolStart {
            id: text(data, "toolCallId").to_owned(),
            tool: text(data, "toolName").to_owned(),
            detail: detail_of(data.get("arguments")),
        },
        "tool.execution_complete" => {
            let detail = match data.get("success").and_then(Value::as_bool) {
                Some(true) => detail_of(data.get("result").and_then(|r| r.get("content"))),
                _ => detail_of(data.get("error").and_then(|e| e.get("message"))),
            };
            Line::ToolEnd {
                id: text(data, "toolCallId").to_owned(),
                detail,
            }
        }
        "session.error" => Line::SessionError {
            kind: text(data, "errorType").to_owned(),
            message: text(data, "message").to_owned(),
            status: data.get("statusCode").and_then(Value::as_u64),
        },
        "result" => Line::Result {
            session: text(&value, "sessionId").to_owned(),
            // A `result` without a readable code is not a success.
            exit_code: value.get("exitCode").and_then(Value::as_i64).unwrap_or(-1),
        },
        _ => Line::Other,
    }
}

/// The error code of a failure Copilot reported (see the module doc).
pub fn classify_failure(kind: &str, message: &str, status: Option<u64>) -> ErrorCode {
    if let Some(status) = status {
        return if status >= 500 || status == 408 || status == 429 {
            ErrorCode::ProviderUnavailable
        } else {
            ErrorCode::ProviderRejected
        };
    }
    if kind == "authentication" {
        return ErrorCode::ProviderRejected;
    }
    let lower = message.to_ascii_lowercase();
    const TRANSIENT: [&str; 6] = [
        "could not connect",
        "connection",
        "timed out",
        "timeout",
        "network",
        "overloaded",
    ];
    if TRANSIENT.iter().any(|needle| lower.contains(needle)) {
        ErrorCode::ProviderUnavailable
    } else {
        ErrorCode::ProviderRejected
    }
}

/// [`parse_line`] folded into the driver's view of one attempt.
#[derive(Debug, Clone, Default)]
pub struct CopilotStream {
    /// The session handle: the `--session-id`/`--resume` id this attempt runs, or the
    /// `result` line's.
    session: Option<String>,
    /// Messages and reasonings whose deltas were emitted (their whole text is not sent
    /// again); reasoning ids are kept with a `reasoning:` prefix.
    streamed: HashSet<String>,
    /// The last non-empty message of the main agent: the run's text.
    last_text: Option<String>,
    /// Open tool calls: id → tool name.
    tools: HashMap<String, String>,
    /// The last `session.error`.
    error: Option<(String, String, Option<u64>)>,
    /// The `result` line's exit code.
    exit_code: Option<i64>,
    /// Where Copilot writes its usage at exit (read by the backend, not the parser).
    usage_file: Option<PathBuf>,
}

impl CopilotStream {
    /// A parser for an attempt that runs session `session` (if known up front).
    pub fn new(session: Option<String>) -> Self {
        CopilotStream {
            session,
            ..CopilotStream::default()
        }
    }

    /// Notes that `id`'s deltas were sent, within [`MAX_STREAMED`] ids (past it, a
    /// message's whole text may be sent again: memory stays bounded).
    fn remember_streamed(&mut self, id: String) {
        if self.streamed.len() < MAX_STREAMED || self.streamed.contains(&id) {
            self.streamed.insert(id);
        }
    }

    fn tool_event(kind: EventKind, tool: &str, detail: String) -> Event {
        Event {
            kind,
            text: String::new(),
            tool: tool.to_owned(),
            detail,
        }
    }
}

impl StreamParser for CopilotStream {
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
        match parse_line(line) {
            Line::TextDelta { id, text, sub } if !sub && !text.is_empty() => {
                self.remember_streamed(id);
                events.push(Event::text_delta(text));
            }
            Line::TextDelta { .. } => {}
            Line::Message {
                id, content, sub, ..
            } if !sub => {
                if !self.streamed.remove(&id) && !content.is_empty() {
                    events.push(Event::text_delta(content.clone()));
                }
                if !content.is_empty() {
                    self.last_text = Some(content);
                }
            }
            Line::Message { .. } => {}
            Line::Reasoning { id, text, whole } if !text.is_empty() => {
                let key = format!("reasoning:{id}");
                let sent = if whole {
                    self.streamed.remove(&key)
                } else {
                    self.remember_streamed(key);
                    false
                };
                if !sent {
                    events.push(Event {
                        kind: EventKind::ReasoningDelta,
                        text,
                        tool: String::new(),
                        detail: String::new(),
                    });
                }
            }
            Line::Reasoning { .. } => {}
            Line::ToolStart { id, tool, detail } => {
                if self.tools.len() < MAX_OPEN_TOOLS {
                    self.tools.insert(id, tool.clone());
                }
                events.push(Self::tool_event(EventKind::ToolExecStart, &tool, detail));
            }
            Line::ToolEnd { id, detail } => {
                let tool = self.tools.remove(&id).unwrap_or_default();
                events.push(Self::tool_event(EventKind::ToolExecEnd, &tool, detail));
            }
            Line::SessionError {
                kind,
                message,
                status,
            } => self.error = Some((kind, message, status)),
            Line::Result { session, exit_code } => {
                if self.session.is_none() && agent_program::is_uuid(&session) {
                    self.session = Some(session);
                }
                self.exit_code = Some(exit_code);
            }
            Line::Other | Line::Unrecognised => {}
        }
    }

    fn verdict(&self) -> Verdict {
        match self.exit_code {
            None => Verdict::Pending,
            Some(0) => Verdict::Completed(self.last_text.clone().unwrap_or_default()),
            Some(code) => {
                let (kind, message, status) = self.error.clone().unwrap_or_else(|| {
                    (
                        String::new(),
                        format!("exited with code {code} without saying why"),
                        None,
                    )
                });
                Verdict::Failed {
                    code: classify_failure(&kind, &message, status),
                    message: format!("copilot: {}", agent_program::bounded(&message, 2000)),
                }
            }
        }
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }

    fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }
}

/// The token counts of Copilot's usage file: `inputTokens` and `outputTokens` summed
/// over `modelMetrics` (one entry per model the session used). `None` when the text
/// is not such a file.
pub fn usage_from_file(bytes: &[u8]) -> Option<Usage> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let models = value.get("modelMetrics")?.as_object()?;
    let mut usage = Usage::default();
    for metrics in models.values() {
        let counts = metrics.get("usage")?;
        let count = |name: &str| counts.get(name).and_then(Value::as_u64).unwrap_or(0);
        usage = usage.plus(Usage {
            prompt_tokens: count("inputTokens"),
            completion_tokens: count("outputTokens"),
        });
    }
    Some(usage)
}

/// The `--available-tools` flag for a tool policy, or why it is refused.
pub fn tool_args(policy: &ToolPolicy) -> Result<Vec<String>, ToolPolicyRefused> {
    if !policy.allowlist.is_empty() {
        let plain = |name: &str| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if let Some(bad) = policy.allowlist.iter().find(|name| !plain(name)) {
            return Err(ToolPolicyRefused(format!(
                "tool `{bad}` in the allowlist is not a plain Copilot tool name"
            )));
        }
        return Ok(vec![format!(
            "--available-tools={}",
            policy.allowlist.join(",")
        )]);
    }
    match policy.profile.as_str() {
        "" | "reasoning" => Ok(vec![format!("--available-tools={NO_TOOLS}")]),
        "workspace" => Ok(Vec::new()),
        other => Err(ToolPolicyRefused(format!(
            "tool profile `{other}` is unknown to the copilot backend (known: reasoning, workspace, or an allowlist)"
        ))),
    }
}

/// The prompt on stdin: the instructions (no flag takes them) above the rendered
/// prompt, or the continuation of a resumed session.
fn stdin_prompt(request: &ContractRequest, resumed: bool) -> String {
    let prompt = if resumed {
        agent_program::render_continuation(request)
    } else {
        agent_program::render_prompt(request)
    };
    if request.instructions.is_empty() {
        prompt
    } else {
        format!("Instructions:\n{}\n\n{prompt}", request.instructions)
    }
}

/// GitHub Copilot CLI as an [`AgentCli`]: its argv, parser and probes.
#[derive(Debug, Clone)]
pub struct Copilot {
    config: ProgramConfig,
}

/// The `copilot` backend.
pub type CopilotBackend = AgentCliBackend<Copilot>;

impl CopilotBackend {
    pub fn new(config: ProgramConfig) -> Self {
        AgentCliBackend::of(Copilot { config })
    }

    /// How `request` runs as session `session` (fresh, or `resume`d): program, argv,
    /// stdin, working directory, with its usage written to `usage_file`.
    pub fn agent_run(
        &self,
        request: &ContractRequest,
        session: &str,
        resume: bool,
        usage_file: &std::path::Path,
    ) -> Result<AgentRun, Error> {
        self.cli().run_for(request, session, resume, usage_file)
    }
}

impl Copilot {
    fn program(&self) -> &str {
        self.config.program_or(DEFAULT_PROGRAM)
    }

    fn run_for(
        &self,
        request: &ContractRequest,
        session: &str,
        resume: bool,
        usage_file: &std::path::Path,
    ) -> Result<AgentRun, Error> {
        let name = &self.config.name;
        crate::agent_cli::resume_handle::<Self>(name, Some(session))?;
        let tools = tool_args(&request.tool_policy).map_err(|problem| {
            Error::new(
                ErrorCode::ToolRejected,
                format!("backend `{name}`: {problem}"),
                SideEffects::None,
            )
        })?;
        let mut args: Vec<String> = RUN_FLAGS.map(str::to_owned).to_vec();
        args.push(if resume {
            format!("--resume={session}")
        } else {
            format!("--session-id={session}")
        });
        if let Some(model) = &self.config.model {
            args.push(format!("--model={model}"));
        }
        args.extend(tools);
        args.push(format!("--usage-output-file={}", usage_file.display()));
        Ok(self.config.agent_run(
            self.program(),
            args,
            Vec::new(),
            Some(stdin_prompt(request, resume).into_bytes()),
            &request.workspace.root,
        ))
    }
}

/// A private folder outside the workspace for the usage file, removed after the run.
fn usage_folder() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("agent-exec-copilot-")
        .tempdir()
}

#[async_trait::async_trait]
impl AgentCli for Copilot {
    const KIND: &'static str = KIND;
    const DEFAULT_PROGRAM: &'static str = DEFAULT_PROGRAM;
    const INSTALL_HINT: &'static str = INSTALL_HINT;
    const PROBES: ProbePlan = ProbePlan {
        version: VersionOrder::Before,
        tools: ToolsProof::FormatProbe {
            flags: "`--available-tools`",
        },
        structured_output: false,
        resume: true,
        upgrade: "upgrade @github/copilot",
        resume_hint: "",
    };
    const SESSION_HANDLE: &'static str = "a Copilot session id (a UUID)";
    // Copilot retries a failed model call itself, about 16 s over 5 tries: the
    // runtime adds none.
    const RETRY_UNAVAILABLE: bool = false;
    type Parser = CopilotStream;

    fn config(&self) -> &ProgramConfig {
        &self.config
    }

    fn attempt(
        &self,
        request: &ContractRequest,
        _ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<CopilotStream>, Error> {
        let session = match resume {
            Some(session) => session.to_owned(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let folder = usage_folder().map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("cannot create a folder for copilot's usage file: {e}"),
                SideEffects::None,
            )
        })?;
        let usage_file = folder.path().join("usage.json");
        let run = self.run_for(request, &session, resume.is_some(), &usage_file)?;
        let mut parser = CopilotStream::new(Some(session));
        parser.usage_file = Some(usage_file);
        let mut attempt = Attempt::new(run, parser);
        attempt.keep_dirs.push(folder);
        Ok(attempt)
    }

    /// The usage file Copilot wrote at exit (see the module doc): read bounded and
    /// without waiting, never quoted.
    fn usage_after_exit(&self, parser: &CopilotStream, notes: &mut Vec<String>) -> Option<Usage> {
        let path = parser.usage_file.as_ref()?;
        match agent_exec_runtime::input::read_capped(path, MAX_USAGE_FILE) {
            Ok(bytes) => match usage_from_file(&bytes) {
                Some(usage) => Some(usage),
                None => {
                    notes.push(
                        "copilot's usage file is not a usage report; usage is unknown (0)"
                            .to_owned(),
                    );
                    None
                }
            },
            // Absent: the program did not get to write it (killed, or it failed
            // before its end); nothing to note beyond the outcome.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                notes.push(format!(
                    "copilot's usage file could not be read ({error}); usage is unknown (0)"
                ));
                None
            }
        }
    }

    async fn version(&self) -> Result<ProgramVersion, ProbeError> {
        let program = self.program();
        let output = agent_program::probe_output(
            program,
            &["--version"],
            &self.config.env,
            PROBE_TIMEOUT,
            INSTALL_HINT,
        )
        .await?;
        match parse_version(&output) {
            Some(version) => Ok(ProgramVersion::new(format!("GitHub Copilot CLI {version}"))),
            None => Err(ProbeError::Unproven(format!(
                "`{program} --version` printed {:?}, not a GitHub Copilot CLI version; {INSTALL_HINT}",
                agent_program::bounded(&output, 200)
            ))),
        }
    }

    /// A real run with the run's own flags (the default tool policy's
    /// `--available-tools` with `probe.tools`), its provider a refused loopback port
    /// (`COPILOT_PROVIDER_BASE_URL`, offline, a throw-away `COPILOT_HOME`). Proven
    /// when the stream shows the prompt as a `user.message` and a turn starting (and,
    /// for a fresh probe, the session's `events.jsonl` holds the prompt, so the resume
    /// probe can find it); the probe stops there (Copilot would retry the provider for
    /// some 20 s). The model request never leaves the machine.
    ///
    /// `probe.resume`: `--resume=ID` on the first probe's session in the same
    /// `COPILOT_HOME`; for an id it has no session for, Copilot prints an error and no
    /// stream, so a stream proves the session was kept and found.
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError> {
        let request = folder.request(probe.tools);
        let session = match probe.resume {
            Some(session) => session.to_owned(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let usage_file = folder.home.join("usage.json");
        let run = self
            .run_for(&request, &session, probe.resume.is_some(), &usage_file)
            .map_err(|e| ProbeError::Setup(e.reason))?;
        let port = agent_program::refused_loopback_port()?;
        let mut env: BTreeMap<String, String> = run.env.clone();
        for (key, value) in [
            (
                "COPILOT_PROVIDER_BASE_URL",
                format!("http://127.0.0.1:{port}/v1"),
            ),
            ("COPILOT_PROVIDER_TYPE", "openai".to_owned()),
            (
                "COPILOT_PROVIDER_API_KEY",
                "agent-exec-probe-key".to_owned(),
            ),
            ("COPILOT_OFFLINE", "true".to_owned()),
            ("COPILOT_HOME", folder.home.display().to_string()),
        ] {
            env.insert(key.to_owned(), value);
        }
        if self.config.model.is_none() && !env.contains_key("COPILOT_MODEL") {
            // Copilot's own-provider mode needs a model name; any will do here.
            env.insert("COPILOT_MODEL".to_owned(), "gpt-4.1".to_owned());
        }
        let (mut prompted, mut turn) = (false, false);
        // A fresh probe's session must be on disk before the probe stops it, or the
        // resume probe finds nothing: Copilot writes the session's events file beside
        // its stream, and under load the stream can be ahead of it.
        let events_file = folder
            .home
            .join("session-state")
            .join(&session)
            .join("events.jsonl");
        let kept = || {
            probe.resume.is_some()
                || agent_exec_runtime::input::read_capped(&events_file, MAX_USAGE_FILE * 4)
                    .is_ok_and(|bytes| {
                        bytes
                            .windows(b"\"user.message\"".len())
                            .any(|window| window == b"\"user.message\"")
                    })
        };
        let format = agent_program::FormatProbe {
            program: &run.program,
            args: &run.args,
            env: &env,
            cwd: &folder.workspace,
            stdin: run.stdin.as_deref().unwrap_or_default(),
            timeout: PROBE_TIMEOUT,
            install_hint: INSTALL_HINT,
        };
        let seen = agent_program::probe_stream(&format, &mut |line| {
            let kind = serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned));
            match kind.as_deref() {
                Some("user.message") => prompted = true,
                Some("assistant.turn_start") if prompted => turn = true,
                _ => {}
            }
            prompted && turn && kept()
        })
        .await?;
        seen.proof(|| match probe.resume {
            None => format!(
                "`{} --output-format json` did not show the prompt and a turn on stdout",
                run.program
            ),
            Some(_) => format!(
                "`{} --resume` did not continue the probe's own session",
                run.program
            ),
        })?;
        Ok(SessionSeen::Id(session))
    }
}

/// The version in `copilot --version` output (`GitHub Copilot CLI 1.0.102.`).
pub fn parse_version(output: &str) -> Option<&str> {
    let rest = output.trim().strip_prefix("GitHub Copilot CLI ")?;
    let number = rest.split_whitespace().next()?.trim_end_matches('.');
    let parts: Vec<&str> = number.split('.').collect();
    let numeric = parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    numeric.then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn events_of(lines: &[&str]) -> (Vec<Event>, CopilotStream) {
        let mut stream = CopilotStream::new(None);
        let mut events = Vec::new();
        for line in lines {
            stream.line(line.as_bytes(), &mut events);
        }
        (events, stream)
    }

    #[test]
    fn maps_text_tools_and_the_result_in_order() {
        let (events, stream) = events_of(&[
            r#"{"type":"session.tools_updated","data":{"model":"gpt-4.1"}}"#,
            r#"{"type":"assistant.message","data":{"messageId":"m1","content":"","toolRequests":[{"toolCallId":"c1","name":"view"}]}}"#,
            r#"{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"view","arguments":{"path":"/w/a.txt"}}}"#,
            r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"hello"}}}"#,
            r#"{"type":"assistant.message_delta","data":{"messageId":"m2","deltaContent":"do"}}"#,
            r#"{"type":"assistant.message_delta","data":{"messageId":"m2","deltaContent":"ne"}}"#,
            r#"{"type":"assistant.message","data":{"messageId":"m2","content":"done","toolRequests":[]}}"#,
            r#"{"type":"result","sessionId":"0cb916db-26aa-40f2-86b5-1ba81b225fd2","exitCode":0}"#,
        ]);
        let kinds: Vec<(EventKind, String, String)> = events
            .iter()
            .map(|e| (e.kind.clone(), e.tool.clone(), e.text.clone()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::ToolExecStart, "view".into(), String::new()),
                (EventKind::ToolExecEnd, "view".into(), String::new()),
                (EventKind::TextDelta, String::new(), "do".into()),
                (EventKind::TextDelta, String::new(), "ne".into()),
            ]
        );
        assert_eq!(events[0].detail, r#"{"path":"/w/a.txt"}"#);
        assert_eq!(events[1].detail, "hello");
        assert_eq!(stream.verdict(), Verdict::Completed("done".into()));
        assert_eq!(
            stream.session(),
            Some("0cb916db-26aa-40f2-86b5-1ba81b225fd2")
        );
    }

    #[test]
    fn a_message_not_streamed_is_sent_whole_and_sub_agent_text_is_not_the_runs() {
        let (events, stream) = events_of(&[
            r#"{"type":"assistant.message","data":{"messageId":"m1","content":"whole"}}"#,
            r#"{"type":"assistant.message","data":{"messageId":"s1","content":"sub","parentToolCallId":"t1"}}"#,
            r#"{"type":"result","sessionId":"x","exitCode":0}"#,
        ]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].text, "whole");
        assert_eq!(stream.verdict(), Verdict::Completed("whole".into()));
        // Not a UUID: not a session handle.
        assert_eq!(stream.session(), None);
    }

    #[test]
    fn reasoning_is_sent_once_whether_streamed_or_whole() {
        let (events, _) = events_of(&[
            r#"{"type":"assistant.reasoning_delta","data":{"reasoningId":"r1","deltaContent":"think"}}"#,
            r#"{"type":"assistant.reasoning","data":{"reasoningId":"r1","content":"think"}}"#,
            r#"{"type":"assistant.reasoning","data":{"reasoningId":"r2","content":"again"}}"#,
        ]);
        let texts: Vec<(EventKind, &str)> = events
            .iter()
            .map(|e| (e.kind.clone(), e.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            vec![
                (EventKind::ReasoningDelta, "think"),
                (EventKind::ReasoningDelta, "again")
            ]
        );
    }

    #[test]
    fn errors_map_to_honest_codes_and_only_result_is_final() {
        let (_, stream) = events_of(&[
            r#"{"type":"session.error","data":{"errorType":"authentication","message":"Authentication failed (HTTP 401)","statusCode":401}}"#,
        ]);
        assert_eq!(
            stream.verdict(),
            Verdict::Pending,
            "session.error is not final"
        );
        for (error, code) in [
            (
                r#"{"errorType":"authentication","message":"Authentication failed","statusCode":401}"#,
                ErrorCode::ProviderRejected,
            ),
            (
                r#"{"errorType":"query","message":"retried 5 times; Last error: 500","statusCode":500}"#,
                ErrorCode::ProviderUnavailable,
            ),
            (
                r#"{"errorType":"query","message":"rate limited","statusCode":429}"#,
                ErrorCode::ProviderUnavailable,
            ),
            (
                r#"{"errorType":"query","message":"Could not connect to local model provider"}"#,
                ErrorCode::ProviderUnavailable,
            ),
            (
                r#"{"errorType":"query","message":"model not supported"}"#,
                ErrorCode::ProviderRejected,
            ),
        ] {
            let error_line = format!(r#"{{"type":"session.error","data":{error}}}"#);
            let (_, stream) = events_of(&[
                &error_line,
                r#"{"type":"result","sessionId":"x","exitCode":1}"#,
            ]);
            match stream.verdict() {
                Verdict::Failed { code: got, message } => {
                    assert_eq!(got, code, "{error}");
                    assert!(message.starts_with("copilot: "), "{message}");
                }
                other => panic!("{error}: {other:?}"),
            }
        }
        let (_, stream) = events_of(&[r#"{"type":"result","exitCode":2}"#]);
        assert!(matches!(stream.verdict(), Verdict::Failed { .. }));
        let (_, stream) = events_of(&[r#"{"type":"result"}"#]);
        assert!(matches!(stream.verdict(), Verdict::Failed { .. }));
    }

    #[test]
    fn usage_comes_from_the_usage_file_summed_over_models() {
        let file = br#"{"modelMetrics":{"gpt-4.1":{"usage":{"inputTokens":200,"outputTokens":20}},"gpt-5.4":{"usage":{"inputTokens":5,"outputTokens":1}}}}"#;
        assert_eq!(
            usage_from_file(file),
            Some(Usage {
                prompt_tokens: 205,
                completion_tokens: 21
            })
        );
        assert_eq!(
            usage_from_file(br#"{"modelMetrics":{}}"#),
            Some(Usage::default())
        );
        assert_eq!(usage_from_file(b"not json"), None);
        assert_eq!(usage_from_file(b""), None);
        assert_eq!(usage_from_file(br#"{"modelMetrics":[]}"#), None);
    }

    #[test]
    fn tool_policy_maps_to_available_tools_or_refusal() {
        let policy = |profile: &str, allowlist: &[&str]| ToolPolicy {
            profile: profile.into(),
            allowlist: allowlist.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            tool_args(&policy("", &[])).unwrap(),
            vec![format!("--available-tools={NO_TOOLS}")]
        );
        assert_eq!(
            tool_args(&policy("reasoning", &[])).unwrap(),
            vec![format!("--available-tools={NO_TOOLS}")]
        );
        assert!(tool_args(&policy("workspace", &[])).unwrap().is_empty());
        assert_eq!(
            tool_args(&policy("", &["view", "grep"])).unwrap(),
            vec!["--available-tools=view,grep".to_owned()]
        );
        assert!(tool_args(&policy("", &["view,bash"])).is_err());
        assert!(tool_args(&policy("", &[""])).is_err());
        assert!(tool_args(&policy("everything", &[])).is_err());
    }

    #[test]
    fn argv_puts_the_prompt_on_stdin_and_names_the_session() {
        let backend = CopilotBackend::new(ProgramConfig {
            model: Some("gpt-4.1".into()),
            args: vec!["--log-level=none".into()],
            ..ProgramConfig::new("cp")
        });
        let request = ContractRequest {
            prompt: "SECRET-PROMPT".into(),
            instructions: "be brief".into(),
            workspace: agent_exec_contract::WorkspaceHandle {
                root: "/w".into(),
                writable: Vec::new(),
            },
            ..Default::default()
        };
        let session = "0cb916db-26aa-40f2-86b5-1ba81b225fd2";
        let usage = std::path::Path::new("/tmp/u/usage.json");
        let run = backend.agent_run(&request, session, false, usage).unwrap();
        assert_eq!(run.program, "copilot");
        assert_eq!(run.cwd, "/w");
        assert!(run.args.iter().all(|a| !a.contains("SECRET-PROMPT")));
        assert_eq!(
            run.args,
            [
                "--output-format",
                "json",
                "--allow-all-tools",
                "--no-ask-user",
                "--no-auto-update",
                "--disable-builtin-mcps",
                "--session-id=0cb916db-26aa-40f2-86b5-1ba81b225fd2",
                "--model=gpt-4.1",
                "--available-tools=agent-exec-no-tools",
                "--usage-output-file=/tmp/u/usage.json",
                "--log-level=none",
            ]
        );
        let stdin = String::from_utf8(run.stdin.unwrap()).unwrap();
        assert_eq!(stdin, "Instructions:\nbe brief\n\nSECRET-PROMPT");
        let resumed = backend.agent_run(&request, session, true, usage).unwrap();
        assert!(resumed.args.contains(&format!("--resume={session}")));
        assert!(
            backend
                .agent_run(&request, "my-session-name", true, usage)
                .is_err()
        );
    }

    #[test]
    fn version_is_parsed() {
        assert_eq!(
            parse_version(
                "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n"
            ),
            Some("1.0.102")
        );
        assert_eq!(parse_version("copilot 1.0"), None);
        assert_eq!(parse_version("GitHub Copilot CLI x.y."), None);
    }

    proptest! {
        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut stream = CopilotStream::new(None);
            let mut events = Vec::new();
            stream.line(&bytes, &mut events);
            let _ = stream.verdict();
            let _ = usage_from_file(&bytes);
        }

        #[test]
        fn never_panics_on_typed_objects(
            kind in prop::sample::select(vec![
                "assistant.message_delta", "assistant.message", "tool.execution_start",
                "tool.execution_complete", "session.error", "result", "assistant.reasoning",
            ]),
            data in prop::collection::btree_map(
                prop::sample::select(vec![
                    "messageId", "deltaContent", "content", "toolRequests", "toolCallId",
                    "toolName", "arguments", "success", "result", "error", "statusCode",
                    "parentToolCallId", "errorType", "message",
                ]),
                prop_oneof![
                    Just(Value::Null),
                    any::<bool>().prop_map(Value::Bool),
                    any::<i64>().prop_map(|n| serde_json::json!(n)),
                    ".{0,12}".prop_map(Value::String),
                    Just(serde_json::json!([{"a": 1}])),
                    Just(serde_json::json!({"content": "x", "message": "y"})),
                ],
                0..6,
            ),
            exit in prop_oneof![Just(Value::Null), any::<i64>().prop_map(|n| serde_json::json!(n))],
        ) {
            let line = serde_json::json!({"type": kind, "data": data, "exitCode": exit, "sessionId": "s"});
            let mut stream = CopilotStream::new(None);
            let mut events = Vec::new();
            stream.line(line.to_string().as_bytes(), &mut events);
            for event in &events {
                prop_assert!(event.detail.len() <= MAX_DETAIL + 3);
            }
            let _ = stream.verdict();
        }
    }
}
