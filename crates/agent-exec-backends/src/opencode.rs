//! The `opencode` backend: OpenCode (npm `opencode-ai`) run headless as
//! `opencode run --format json --title agent-exec [-m MODEL] [--session ID] [args…]`,
//! the prompt on stdin, in the workspace root, driven by
//! [`crate::agent_program::drive`].
//!
//! `opencode run --format json` (1.18.33) writes one JSON object a line, each with
//! `type`, `timestamp` and `sessionID`: `step_start`; `text` (a finished text part,
//! `part.text`); `reasoning` (only with `--thinking`); `tool_use` (a tool part once it
//! ended: `part.tool`, `part.state.status` `completed` | `error`, `part.state.input`,
//! `part.state.error`); `step_finish` (`part.reason` — `tool-calls` when the model
//! called tools and the loop goes on, `stop` when its turn ended — and `part.tokens`);
//! `error` (`error.name`, `error.data.message`, `error.data.statusCode`).
//!
//! * [`parse_line`] is a pure function from one line to what it means; it never
//!   panics, and a line that is not a JSON object with a `type` is
//!   [`Line::Unrecognised`]. Fuzzed (`agent_exec_opencode_stream`) and
//!   property-tested.
//! * [`OpenCodeStream`] folds lines into the driver's [`Verdict`]. OpenCode writes no
//!   closing line: `run` stops reading when the session goes idle. So the run is
//!   complete when the last `step_finish` ended the model's turn (a reason other than
//!   `tool-calls`) and no `step_start` followed; its text is the text parts of that
//!   last step. A stream that ends anywhere else — mid-step, after `tool-calls` — is
//!   still pending, which the driver settles as `unknown`. An `error` line is final:
//!   OpenCode has already retried what it retries (5xx, 429 and cut streams, with
//!   back-off, for over a minute), and it exits 1 after it.
//! * Failure codes: the `statusCode` OpenCode quotes decides (5xx, 408, 429 →
//!   `agent.provider_unavailable`; others → `agent.provider_rejected`); without one,
//!   transport words mean unavailable, anything else rejected.
//! * Tool events: OpenCode reports a tool only once it ended, so each `tool_use` is a
//!   `tool_exec_start` and a `tool_exec_end` together (detail: the input, bounded;
//!   the error when it failed).
//! * The [`ToolPolicy`] and the instructions go into `OPENCODE_CONFIG_CONTENT` (a
//!   config OpenCode merges over the user's and the project's): the default
//!   (`reasoning`) denies every permission, which removes every tool from the model's
//!   list; `workspace` allows OpenCode's own tools but not `external_directory`
//!   (nobody is there to answer its questions headless: an ask is rejected and ends
//!   the run); an allowlist denies all but the named permissions; instructions are a
//!   file outside the workspace named in `instructions`. A configured
//!   `OPENCODE_CONFIG_CONTENT` (a JSON object) is kept, with these keys set over it.
//! * `PWD` is set to the workspace root: OpenCode takes its folder from `$PWD` when it
//!   is set, not from its working directory, so an inherited `PWD` (the runner's own
//!   folder) would make it read, write and run tools there.
//! * `--title agent-exec`: without a title OpenCode asks the model for one in a side
//!   request before the turn.
//! * Resume: the first `sessionID` is the handle (`ses_…`); a resumed attempt runs
//!   `--session ID` with the continuation on stdin. OpenCode keeps sessions in its
//!   database (`$XDG_DATA_HOME/opencode/`); agent-exec removes none. Verified by
//!   resuming the format probe's own session.
//! * Not declared: `structured-output` (OpenCode 1.18.33 has no output-schema flag).
//!
//! Probes run with `XDG_DATA_HOME` in the probe folder (the user's session database is
//! not touched), models.dev and update checks off, against a loopback provider that
//! answers every request with HTTP 400: OpenCode retries a refused port for about a
//! minute, while a 400 is final at once and still proves the stream (an `error` line
//! with the session id).

use std::time::Duration;

use agent_exec_contract::{
    ContractRequest, Error, ErrorCode, Event, EventKind, ExecutionContext, SideEffects, ToolPolicy,
    Usage,
};
use serde_json::{Value, json};

use crate::agent_cli::{
    AgentCli, AgentCliBackend, Attempt, Probe, ProbePlan, ProgramVersion, SessionSeen,
    ToolPolicyRefused, ToolsProof, VersionOrder,
};
use crate::agent_program::{self, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict};

/// The kind name in config (`kind = "opencode"`).
pub const KIND: &str = "opencode";

/// The program run when the config names none (looked up on `PATH`).
pub const DEFAULT_PROGRAM: &str = "opencode";

/// What to install when the program is missing.
pub const INSTALL_HINT: &str = "install opencode-ai (npm i -g opencode-ai)";

/// The flags every run gets, before the configured `args`.
pub const RUN_FLAGS: [&str; 5] = ["run", "--format", "json", "--title", "agent-exec"];

/// The environment variable OpenCode merges as one more config.
pub const CONFIG_CONTENT_VAR: &str = "OPENCODE_CONFIG_CONTENT";

/// How long a `verify` probe may take (OpenCode starts in 3–5 s here).
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest tool detail (input or error) put in an event.
const MAX_DETAIL: usize = 2048;

/// What one line of `opencode run --format json` means.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `step_start`: a model call begins.
    StepStart,
    /// A finished text part.
    Text(String),
    /// A finished reasoning part.
    Reasoning(String),
    /// A tool that ended: its name, input (bounded JSON text) and error, if it failed.
    Tool {
        tool: String,
        input: String,
        error: Option<String>,
    },
    /// `step_finish`: why the model call ended, and its tokens.
    StepFinish { reason: String, usage: Usage },
    /// `error`: OpenCode's own failure.
    Failed { code: ErrorCode, message: String },
    /// A JSON object with a `type` this parser does not act on.
    Other,
    /// Not JSON, not an object, or without a `type`.
    Unrecognised,
}

/// The `sessionID` a line carries, if any.
pub fn session_of(value: &Value) -> Option<&str> {
    value
        .get("sessionID")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
}

/// Parses one line (without its newline).
pub fn parse_line(line: &[u8]) -> Line {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Line::Unrecognised;
    };
    parse_value(&value)
}

fn parse_value(value: &Value) -> Line {
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Line::Unrecognised;
    };
    let part = value.get("part").unwrap_or(&Value::Null);
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match kind {
        "step_start" => Line::StepStart,
        "text" => Line::Text(text(part, "text")),
        "reasoning" => Line::Reasoning(text(part, "text")),
        "tool_use" => {
            let state = part.get("state").unwrap_or(&Value::Null);
            let input = state
                .get("input")
                .map(|input| agent_program::bounded(&input.to_string(), MAX_DETAIL))
                .unwrap_or_default();
            let error = (state.get("status").and_then(Value::as_str) == Some("error"))
                .then(|| agent_program::bounded(&text(state, "error"), MAX_DETAIL));
            Line::Tool {
                tool: text(part, "tool"),
                input,
                error,
            }
        }
        "step_finish" => {
            let tokens = part.get("tokens");
            let count = |name: &str| {
                tokens
                    .and_then(|t| t.get(name))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            Line::StepFinish {
                reason: text(part, "reason"),
                usage: Usage {
                    prompt_tokens: count("input"),
                    completion_tokens: count("output"),
                },
            }
        }
        "error" => {
            let error = value.get("error").unwrap_or(&Value::Null);
            let data = error.get("data").unwrap_or(&Value::Null);
            let name = text(error, "name");
            let message = data
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    if name.is_empty() {
                        NO_MESSAGE.to_owned()
                    } else {
                        name.clone()
                    }
                });
            let status = data
                .get("statusCode")
                .and_then(Value::as_u64)
                .and_then(|status| u16::try_from(status).ok());
            let shown = if name.is_empty() || message == name {
                message.clone()
            } else {
                format!("{name}: {message}")
            };
            Line::Failed {
                code: classify_failure(status, &message),
                message: agent_program::bounded(&shown, MAX_DETAIL),
            }
        }
        _ => Line::Other,
    }
}

/// What an `error` line without a message is reported as.
const NO_MESSAGE: &str = "the run failed without a message";

/// The error code of an OpenCode failure: the HTTP status it quotes decides (5xx, 408
/// and 429 are transient); without one, words of transport trouble make it
/// `provider_unavailable`, anything else `provider_rejected`.
pub fn classify_failure(status: Option<u16>, message: &str) -> ErrorCode {
    if let Some(status) = status {
        return if status >= 500 || status == 408 || status == 429 {
            ErrorCode::ProviderUnavailable
        } else {
            ErrorCode::ProviderRejected
        };
    }
    let lower = message.to_ascii_lowercase();
    const TRANSIENT: [&str; 6] = [
        "connection",
        "econnrefused",
        "econnreset",
        "timed out",
        "timeout",
        "overloaded",
    ];
    if TRANSIENT.iter().any(|needle| lower.contains(needle)) {
        ErrorCode::ProviderUnavailable
    } else {
        ErrorCode::ProviderRejected
    }
}

/// [`parse_line`] folded into the driver's view of the run (one per execution).
#[derive(Debug, Clone, Default)]
pub struct OpenCodeStream {
    /// The text parts of the current (last) step.
    step_text: Vec<String>,
    /// The reason of the last `step_finish`, cleared by a `step_start`.
    finished: Option<String>,
    failed: Option<(ErrorCode, String)>,
    usage: Usage,
    /// The first `sessionID` seen: the session handle.
    session_id: Option<String>,
}

impl OpenCodeStream {
    /// A parser for one run.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamParser for OpenCodeStream {
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if self.session_id.is_none()
            && let Some(id) = session_of(&value)
        {
            self.session_id = Some(id.to_owned());
        }
        match parse_value(&value) {
            Line::StepStart => {
                self.step_text.clear();
                self.finished = None;
            }
            Line::Text(text) => {
                events.push(Event::text_delta(text.clone()));
                self.step_text.push(text);
            }
            Line::Reasoning(text) => events.push(Event {
                kind: EventKind::ReasoningDelta,
                text,
                tool: String::new(),
                detail: String::new(),
            }),
            Line::Tool { tool, input, error } => {
                let event = |kind: EventKind, detail: String| Event {
                    kind,
                    text: String::new(),
                    tool: tool.clone(),
                    detail,
                };
                events.push(event(EventKind::ToolExecStart, input));
                events.push(event(EventKind::ToolExecEnd, error.unwrap_or_default()));
            }
            Line::StepFinish { reason, usage } => {
                self.usage = self.usage.plus(usage);
                self.finished = Some(reason);
            }
            Line::Failed { code, message } => self.failed = Some((code, message)),
            Line::Other | Line::Unrecognised => {}
        }
    }

    fn verdict(&self) -> Verdict {
        if let Some((code, message)) = &self.failed {
            return Verdict::Failed {
                code: code.clone(),
                message: format!("opencode: {message}"),
            };
        }
        match self.finished.as_deref() {
            // The model called tools: OpenCode runs them and calls it again.
            Some("tool-calls" | "tool_calls") | None => Verdict::Pending,
            Some(_) => Verdict::Completed(self.step_text.join("\n")),
        }
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}

/// Whether `handle` is an OpenCode session id (`ses_` and letters or digits): only
/// such a value reaches `--session`.
pub fn is_session_id(handle: &str) -> bool {
    handle.strip_prefix("ses_").is_some_and(|rest| {
        !rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// The permission table for a tool policy (OpenCode removes a tool whose permission
/// is denied from the model's list), or why it is refused.
pub fn permission_for(policy: &ToolPolicy) -> Result<Value, ToolPolicyRefused> {
    if !policy.allowlist.is_empty() {
        let plain = |name: &str| {
            !name.is_empty()
                && name != "*"
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if let Some(bad) = policy.allowlist.iter().find(|name| !plain(name)) {
            return Err(ToolPolicyRefused(format!(
                "tool `{bad}` in the allowlist is not a plain OpenCode permission name (read, edit, bash, …)"
            )));
        }
        let mut table = serde_json::Map::new();
        table.insert("*".into(), json!("deny"));
        for name in &policy.allowlist {
            table.insert(name.clone(), json!("allow"));
        }
        return Ok(Value::Object(table));
    }
    match policy.profile.as_str() {
        "" | "reasoning" => Ok(json!({"*": "deny"})),
        "workspace" => Ok(json!({"*": "allow", "external_directory": "deny", "question": "deny"})),
        other => Err(ToolPolicyRefused(format!(
            "tool profile `{other}` is unknown to the opencode backend (known: reasoning, workspace, or an allowlist)"
        ))),
    }
}

/// OpenCode as an [`AgentCli`]: its argv, parser and probes. Holds only its
/// configuration.
#[derive(Debug, Clone)]
pub struct OpenCode {
    config: ProgramConfig,
}

/// The `opencode` backend.
pub type OpenCodeBackend = AgentCliBackend<OpenCode>;

impl OpenCodeBackend {
    /// A backend for `config` (`program` defaults to `opencode` on `PATH`).
    pub fn new(config: ProgramConfig) -> Self {
        AgentCliBackend::of(OpenCode { config })
    }
}

impl OpenCode {
    fn program(&self) -> &str {
        self.config.program_or(DEFAULT_PROGRAM)
    }

    /// [`RUN_FLAGS`], the model (`-m`), and the session to continue.
    fn kind_args(&self, resume: Option<&str>) -> Vec<String> {
        let mut args: Vec<String> = RUN_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        if let Some(model) = &self.config.model {
            // `--model=M`: a value starting with `-` is never read as a flag.
            args.push(format!("--model={model}"));
        }
        if let Some(session) = resume {
            args.push(format!("--session={session}"));
        }
        args
    }

    /// `OPENCODE_CONFIG_CONTENT`: the configured one (a JSON object), with the
    /// permission table, the instructions file and `extra` set over it.
    fn config_content(
        &self,
        policy: &ToolPolicy,
        instructions: Option<&std::path::Path>,
        extra: &[(&str, Value)],
    ) -> Result<String, ConfigContentError> {
        let mut content = match self.config.env.get(CONFIG_CONTENT_VAR) {
            None => serde_json::Map::new(),
            Some(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(object)) => object,
                _ => return Err(ConfigContentError::NotAnObject),
            },
        };
        let permission = permission_for(policy).map_err(ConfigContentError::Refused)?;
        content.insert("permission".into(), permission);
        if let Some(file) = instructions {
            content.insert("instructions".into(), json!([file.display().to_string()]));
        }
        for (key, value) in extra {
            content.insert((*key).to_owned(), value.clone());
        }
        Ok(Value::Object(content).to_string())
    }

    /// The request's instructions in a file *outside* the workspace (a file in it would
    /// be a workspace change), kept until the run ended.
    fn instructions_file(text: &str) -> std::io::Result<tempfile::NamedTempFile> {
        use std::io::Write as _;
        let mut file = tempfile::Builder::new()
            .prefix("agent-exec-instructions-")
            .suffix(".md")
            .tempfile()?;
        file.write_all(text.as_bytes())?;
        file.flush()?;
        Ok(file)
    }
}

/// Why `OPENCODE_CONFIG_CONTENT` could not be made.
#[derive(Debug, thiserror::Error)]
enum ConfigContentError {
    /// The configured `env.OPENCODE_CONFIG_CONTENT` is not a JSON object.
    #[error("env.{CONFIG_CONTENT_VAR} must be a JSON object (OpenCode config)")]
    NotAnObject,
    /// The tool policy asks for what OpenCode cannot do.
    #[error("{}", .0.0)]
    Refused(ToolPolicyRefused),
}

#[async_trait::async_trait]
impl AgentCli for OpenCode {
    const KIND: &'static str = KIND;
    const DEFAULT_PROGRAM: &'static str = DEFAULT_PROGRAM;
    const INSTALL_HINT: &'static str = INSTALL_HINT;
    const PROBES: ProbePlan = ProbePlan {
        version: VersionOrder::Alongside,
        tools: ToolsProof::FormatProbe {
            flags: "a permission table in OPENCODE_CONFIG_CONTENT",
        },
        structured_output: false,
        resume: true,
        upgrade: "upgrade opencode-ai",
        resume_hint: ", and let OpenCode keep its sessions (its data folder must be writable)",
    };
    const SESSION_HANDLE: &'static str = "an OpenCode session id (ses_…)";
    // OpenCode retries 5xx, 429 and cut streams itself, with back-off, for over a
    // minute: what is left is not worth an immediate retry by the caller.
    const RETRY_UNAVAILABLE: bool = false;
    type Parser = OpenCodeStream;

    fn config(&self) -> &ProgramConfig {
        &self.config
    }

    fn is_session_handle(handle: &str) -> bool {
        is_session_id(handle)
    }

    fn attempt(
        &self,
        request: &ContractRequest,
        _ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<OpenCodeStream>, Error> {
        let name = &self.config.name;
        let refused = |code, problem: String| {
            Error::new(
                code,
                format!("backend `{name}`: {problem}"),
                SideEffects::None,
            )
        };
        permission_for(&request.tool_policy)
            .map_err(|problem| refused(ErrorCode::ToolRejected, problem.0))?;
        let resume = crate::agent_cli::resume_handle::<Self>(name, resume)?;
        let mut keep = Vec::new();
        let instructions = if request.instructions.is_empty() {
            None
        } else {
            let file = Self::instructions_file(&request.instructions).map_err(|e| {
                refused(
                    ErrorCode::Internal,
                    format!("cannot write the instructions for opencode: {e}"),
                )
            })?;
            let path = file.path().to_path_buf();
            keep.push(file);
            Some(path)
        };
        let content = self
            .config_content(&request.tool_policy, instructions.as_deref(), &[])
            .map_err(|problem| {
                let code = match problem {
                    ConfigContentError::Refused(_) => ErrorCode::ToolRejected,
                    ConfigContentError::NotAnObject => ErrorCode::Internal,
                };
                refused(code, problem.to_string())
            })?;
        let prompt = match resume {
            Some(_) => agent_program::render_continuation(request),
            None => agent_program::render_prompt(request),
        };
        let mut run = self.config.agent_run(
            self.program(),
            self.kind_args(resume),
            Vec::new(),
            Some(prompt.into_bytes()),
            &request.workspace.root,
        );
        run.env.insert(CONFIG_CONTENT_VAR.to_owned(), content);
        // OpenCode takes its folder from `$PWD` when set, not from its working
        // directory: an inherited `PWD` (the runner's folder) would make it work there.
        run.env
            .insert("PWD".to_owned(), request.workspace.root.clone());
        Ok(Attempt {
            keep,
            ..Attempt::new(run, OpenCodeStream::new())
        })
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
        let number = output.trim();
        let plausible = !number.is_empty()
            && number.len() <= 32
            && number.split('.').count() >= 2
            && number
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.' || b.is_ascii_alphanumeric() || b == b'-');
        if !plausible {
            return Err(ProbeError::Unproven(format!(
                "`{program} --version` printed {:?}, not a version number; {INSTALL_HINT}",
                agent_program::bounded(number, 200)
            )));
        }
        Ok(ProgramVersion::new(format!("opencode {number}")))
    }

    /// `opencode run --format json` with the run's own flags and config, its model a
    /// provider on loopback that answers HTTP 400 (see the module doc). Proven by an
    /// `error` line carrying a session id — the JSON event stream, started for a
    /// session; with `probe.resume`, that very session.
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError> {
        let request = folder.request(probe.tools);
        let provider = RejectingProvider::start().await?;
        let model_provider = json!({
            "agent-exec-probe": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "agent-exec probe",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", provider.port),
                            "apiKey": "agent-exec-probe"},
                "models": {"probe": {"name": "probe"}},
            }
        });
        let content = self
            .config_content(
                &request.tool_policy,
                None,
                &[
                    ("provider", model_provider),
                    ("model", json!("agent-exec-probe/probe")),
                ],
            )
            .map_err(|problem| ProbeError::Setup(problem.to_string()))?;
        let mut args: Vec<String> = RUN_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        args.push("--model=agent-exec-probe/probe".to_owned());
        if let Some(session) = probe.resume {
            args.push(format!("--session={session}"));
        }
        args.extend(self.config.args.iter().cloned());
        let mut env = self.config.env.clone();
        env.insert(CONFIG_CONTENT_VAR.to_owned(), content);
        env.insert("PWD".to_owned(), folder.workspace.display().to_string());
        env.insert(
            "XDG_DATA_HOME".to_owned(),
            folder.home.join("data").display().to_string(),
        );
        env.insert("OPENCODE_DISABLE_MODELS_FETCH".to_owned(), "1".to_owned());
        env.insert("OPENCODE_DISABLE_AUTOUPDATE".to_owned(), "1".to_owned());
        let mut session: Option<String> = None;
        let format = agent_program::FormatProbe {
            program: self.program(),
            args: &args,
            env: &env,
            cwd: &folder.workspace,
            stdin: b"agent-exec format probe",
            timeout: PROBE_TIMEOUT,
            install_hint: INSTALL_HINT,
        };
        let seen = agent_program::probe_stream(&format, &mut |line| {
            let Ok(value) = serde_json::from_slice::<Value>(line) else {
                return false;
            };
            let Some(id) = session_of(&value) else {
                return false;
            };
            if probe.resume.is_some_and(|wanted| wanted != id) {
                return false;
            }
            session = Some(id.to_owned());
            matches!(parse_value(&value), Line::Failed { .. } | Line::StepStart)
        })
        .await?;
        drop(provider);
        seen.proof(|| match probe.resume {
            None => format!(
                "`{} run --format json` did not write a JSON event for a session on stdout",
                self.program()
            ),
            Some(_) => format!(
                "`{} run --format json --session` did not continue the probe's own session",
                self.program()
            ),
        })?;
        Ok(match session {
            Some(id) if is_session_id(&id) => SessionSeen::Id(id),
            _ => SessionSeen::Missing("the stream carried no OpenCode session id (ses_…)".into()),
        })
    }
}

/// A loopback HTTP server that answers every request with `400` and a JSON error: a
/// final answer OpenCode does not retry. Stops when dropped.
struct RejectingProvider {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl RejectingProvider {
    async fn start() -> Result<RejectingProvider, ProbeError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| ProbeError::Setup(format!("cannot bind a loopback port: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| ProbeError::Setup(format!("cannot read the loopback port: {e}")))?
            .port();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
                    // Read the whole request (bounded) before answering: closing on
                    // an unread body can reset the connection, which OpenCode retries
                    // for a minute instead of reading the 400.
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                            let body = content_length(&request[..end]).min(1 << 20);
                            if request.len() >= end + 4 + body {
                                break;
                            }
                        }
                        if request.len() > (1 << 20) + 64 * 1024 {
                            break;
                        }
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let body = br#"{"error":{"message":"agent-exec format probe: no model here","type":"invalid_request_error"}}"#;
                    let answer = format!(
                        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                    let _ = socket.write_all(body).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Ok(RejectingProvider { port, task })
    }
}

/// The `content-length` of an HTTP request head, 0 when absent or unreadable.
fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

impl Drop for RejectingProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_stream_never_panics_on_any_lines(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..128), 0..8)) {
            let mut stream = OpenCodeStream::new();
            let mut events = Vec::new();
            for line in &lines {
                stream.line(line, &mut events);
            }
            let _ = stream.verdict();
        }

        #[test]
        fn never_panics_on_typed_objects(kind in "(step_start|step_finish|text|reasoning|tool_use|error|x)", body in "[ -~]{0,40}") {
            let line = format!(r#"{{"type":"{kind}","sessionID":"{body}","part":{{"text":"{body}","reason":"{body}","tokens":{{"input":"{body}"}},"state":{{"status":"error","input":{{"a":"{body}"}}}}}},"error":{{"data":{{"statusCode":"{body}"}}}}}}"#);
            let _ = parse_line(line.as_bytes());
        }

        /// The twin of the fuzz target's session check: a handle that passes
        /// `is_session_id` (what reaches `--session=`) always passes the contract's
        /// check and is never an option.
        #[test]
        fn session_ids_that_reach_argv_are_plain(id in "\\PC{0,40}", good in "ses_[A-Za-z0-9]{1,40}") {
            prop_assert!(is_session_id(&good));
            prop_assert!(agent_exec_contract::check_session_handle(&good).is_ok());
            if is_session_id(&id) {
                prop_assert!(!id.starts_with('-'));
                prop_assert!(agent_exec_contract::check_session_handle(&id).is_ok());
            }
        }
    }

    fn fold(lines: &[&str]) -> (OpenCodeStream, Vec<Event>) {
        let mut stream = OpenCodeStream::new();
        let mut events = Vec::new();
        for line in lines {
            stream.line(line.as_bytes(), &mut events);
        }
        (stream, events)
    }

    #[test]
    fn a_turn_that_ends_in_tool_calls_is_pending_and_stop_completes_it() {
        let (stream, events) = fold(&[
            r#"{"type":"step_start","sessionID":"ses_a1"}"#,
            r#"{"type":"text","sessionID":"ses_a1","part":{"text":"reading"}}"#,
            r#"{"type":"tool_use","sessionID":"ses_a1","part":{"tool":"read","state":{"status":"completed","input":{"filePath":"a"}}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_a1","part":{"reason":"tool-calls","tokens":{"input":5,"output":1}}}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Pending);
        assert_eq!(stream.session(), Some("ses_a1"));
        assert_eq!(events.len(), 3, "{events:?}");
        let (stream, _) = fold(&[
            r#"{"type":"step_start","sessionID":"ses_a1"}"#,
            r#"{"type":"step_finish","sessionID":"ses_a1","part":{"reason":"tool-calls","tokens":{"input":5,"output":1}}}"#,
            r#"{"type":"step_start","sessionID":"ses_a1"}"#,
            r#"{"type":"text","sessionID":"ses_a1","part":{"text":"done"}}"#,
            r#"{"type":"step_finish","sessionID":"ses_a1","part":{"reason":"stop","tokens":{"input":7,"output":2}}}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Completed("done".into()));
        assert_eq!(
            (
                stream.usage().prompt_tokens,
                stream.usage().completion_tokens
            ),
            (12, 3)
        );
    }

    #[test]
    fn errors_are_classified_by_status_then_by_words() {
        let line = |status: &str| {
            format!(
                r#"{{"type":"error","sessionID":"ses_x","error":{{"name":"APIError","data":{{"message":"m","statusCode":{status}}}}}}}"#
            )
        };
        for (status, code) in [
            ("400", ErrorCode::ProviderRejected),
            ("401", ErrorCode::ProviderRejected),
            ("429", ErrorCode::ProviderUnavailable),
            ("503", ErrorCode::ProviderUnavailable),
        ] {
            let (stream, _) = fold(&[&line(status)]);
            assert_eq!(
                stream.verdict(),
                Verdict::Failed {
                    code,
                    message: "opencode: APIError: m".into()
                },
                "{status}"
            );
        }
        assert_eq!(
            classify_failure(None, "Unable to connect. ECONNREFUSED"),
            ErrorCode::ProviderUnavailable
        );
        assert_eq!(
            classify_failure(None, "bad model"),
            ErrorCode::ProviderRejected
        );
    }

    #[test]
    fn only_plain_session_ids_and_known_policies_pass() {
        assert!(is_session_id("ses_db1e99ba1ffetOz1HwqTp3jL4w"));
        for bad in ["", "ses_", "ses_a b", "-s", "ses_a/../b", "abc"] {
            assert!(!is_session_id(bad), "{bad}");
        }
        let policy = |profile: &str, allow: &[&str]| ToolPolicy {
            profile: profile.into(),
            allowlist: allow.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(
            permission_for(&policy("", &[])).unwrap(),
            json!({"*": "deny"})
        );
        assert_eq!(
            permission_for(&policy("", &["read", "edit"])).unwrap(),
            json!({"*": "deny", "read": "allow", "edit": "allow"})
        );
        assert!(permission_for(&policy("yolo", &[])).is_err());
        assert!(permission_for(&policy("", &["*"])).is_err());
    }
}
