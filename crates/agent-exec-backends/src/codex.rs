//! The `codex` backend: the OpenAI Codex CLI run headless as
//! `codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
//! [--model=M] [tool flags] [-c developer_instructions=…] [args…] -`, the prompt on
//! stdin, in the workspace root, driven by [`crate::agent_program::drive`].
//!
//! `codex exec --json` writes one JSON object a line (`thread.started`, `turn.started`,
//! `item.started` / `item.updated` / `item.completed` with an `item` of type
//! `agent_message`, `reasoning`, `command_execution`, `file_change`, `mcp_tool_call`,
//! …, `turn.completed` with `usage`, `turn.failed`, `error`).
//!
//! * [`parse_line`] is a pure function from one line to what it means for the contract:
//!   events in order, usage, the final message, a failure. It never panics; a line that
//!   is not JSON or not an object is [`Line::Unrecognised`], never a crash. An unknown
//!   `type` is ignored (codex adds event types between releases). Fuzzed
//!   (`agent_exec_codex_stream`) and property-tested.
//! * [`CodexStream`] folds those lines into the driver's [`Verdict`]: the run's text is
//!   the *last* `agent_message`; the result is final only on `turn.completed` (usage
//!   summed over the turn's model calls, as codex reports it) or `turn.failed`.
//! * [`Codex`] is the [`AgentCli`]: the argv ([`Codex::kind_args`], [`tool_args`]),
//!   the prompt ([`crate::agent_program::render_prompt`]) and the probes;
//!   [`CodexBackend`] is the one agent-CLI backend over it.
//!
//! Decisions:
//! * A top-level `error` line is *not* final: codex also uses it for notices it
//!   recovers from (`Reconnecting... waiting for network`, which it repeats for as long
//!   as the provider is unreachable — such a run ends only by the deadline). It is
//!   remembered: it explains a `turn.failed` without a message, and goes to the logs
//!   of a run that did not succeed.
//! * Failure codes come from codex's message: a quoted HTTP status decides (5xx, 408,
//!   429 → `agent.provider_unavailable`, retryable; other statuses →
//!   `agent.provider_rejected`); without one, transport words (disconnect, timeout,
//!   retry limit) mean unavailable, anything else rejected.
//! * The prompt goes on stdin (`-` as the prompt argument), never in argv: argv is
//!   readable by every local user and capped at 128 KiB an argument. `context`
//!   messages are rendered above it as a transcript and `targets` below it as the files
//!   to write, since the prompt is the agent's only input. `instructions` go to codex's
//!   `developer_instructions` setting, TOML-quoted (so they do sit in argv).
//! * The [`ToolPolicy`] is held with codex's own switches ([`tool_args`]): the default
//!   (`reasoning`) disables every built-in tool, `workspace` keeps codex's set, an
//!   allowlist keeps exactly the named tools, anything else is `agent.tool_rejected`
//!   before codex starts. Approvals and the sandbox are bypassed because nobody is there
//!   to approve; the workspace is the caller's isolation (invariant 7).
//! * Error reasons and logs are scrubbed of the values of environment variables
//!   (configured or inherited) that look like credentials (`*KEY*`, `*TOKEN*`,
//!   `*SECRET*`, `*PASSWORD*`): providers do echo keys back in errors.
//!
//! * Structured output: a request's `output_schema` is written to a temporary file
//!   outside the workspace and passed as `--output-schema=FILE`; the last
//!   `agent_message` is then the JSON, which the runtime validates (codex's promise is
//!   not a proof). Verified by the format probe run with the flag.
//!
//! * Resume: `thread.started`'s `thread_id` is the session handle
//!   ([`StreamParser::session`]; the driver reports it at once). A resumed attempt runs
//!   `codex exec resume [the same flags] THREAD -` with the continuation on stdin; the
//!   thread id must be a UUID (`exec resume` also takes a thread *name* there). The
//!   thread lives where codex keeps every session — `$CODEX_HOME/sessions/…` (the
//!   user's, or the config's `CODEX_HOME`) — so a later process resumes it after the
//!   runner died; agent-exec removes none (codex's own files, in a folder it does not
//!   own). Verified by resuming the format probe's own thread.
//!
//! Deliberately not done: MCP servers declared in the user's own codex config are not
//! switched off by the policy (give agent-exec a `CODEX_HOME` without them);
//! `--ephemeral` is not forced (it would make `resume` impossible), so codex keeps its
//! own session log.

use std::time::Duration;

use agent_exec_contract::{
    ContractRequest, ContractResult, Error, ErrorCode, Event, EventKind, ExecutionContext, Outcome,
    SideEffects, ToolPolicy, Usage,
};
use serde_json::Value;

use crate::agent_cli::{
    AgentCli, AgentCliBackend, Attempt, Probe, ProbePlan, ProgramVersion, SessionSeen,
    ToolPolicyRefused, ToolsProof, VersionOrder,
};
use crate::agent_program::{self, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict};

/// The kind name in config (`kind = "codex"`).
pub const KIND: &str = "codex";

/// The program run when the config names none (looked up on `PATH`).
pub const DEFAULT_PROGRAM: &str = "codex";

/// What to install when the program is missing.
pub const INSTALL_HINT: &str = "install @openai/codex (npm i -g @openai/codex)";

/// The flags every run gets, before the configured `args`: JSON lines on stdout, no
/// git-repository requirement (workspaces need not be repositories), and no approval
/// prompts or sandbox (nobody is there to approve; isolation is the caller's).
pub const EXEC_FLAGS: [&str; 4] = [
    "exec",
    "--json",
    "--skip-git-repo-check",
    "--dangerously-bypass-approvals-and-sandbox",
];

/// How long a `verify` probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// What one line of `codex exec --json` means.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `thread.started`: codex's thread id, the session handle `exec resume` takes
    /// (empty when the line has none).
    ThreadStarted(String),
    /// Events to emit, in order (may be empty, e.g. `turn.started`).
    Events(Vec<Event>),
    /// A completed assistant message: its text is emitted and is the result text.
    AgentMessage(String),
    /// `turn.completed`: the turn ended; usage as codex reported it.
    TurnCompleted(Usage),
    /// `turn.failed` or `error`: codex's own message.
    Failed(String),
    /// Not JSON, not an object, or without a `type`.
    Unrecognised,
}

/// Parses one line (without its newline).
pub fn parse_line(line: &[u8]) -> Line {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Line::Unrecognised;
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Line::Unrecognised;
    };
    match kind {
        "thread.started" => Line::ThreadStarted(
            value
                .get("thread_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        "turn.completed" => {
            let usage = value.get("usage");
            let field = |name: &str| {
                usage
                    .and_then(|u| u.get(name))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            Line::TurnCompleted(Usage {
                prompt_tokens: field("input_tokens"),
                completion_tokens: field("output_tokens"),
            })
        }
        "turn.failed" => Line::Failed(message(value.get("error").unwrap_or(&Value::Null))),
        "error" => Line::Failed(message(&value)),
        "item.started" | "item.completed" => {
            let started = kind == "item.started";
            let Some(item) = value.get("item") else {
                return Line::Unrecognised;
            };
            item_line(item, started)
        }
        _ => Line::Events(Vec::new()),
    }
}

fn message(value: &Value) -> String {
    value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or(NO_MESSAGE)
        .to_owned()
}

fn text_of(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn item_line(item: &Value, started: bool) -> Line {
    let item_type = item.get("type").and_then(Value::as_str).unwrap_or_default();
    let tool_event = |kind: EventKind, tool: &str, detail: String| Event {
        kind,
        text: String::new(),
        tool: tool.to_owned(),
        detail,
    };
    let phase = if started {
        EventKind::ToolExecStart
    } else {
        EventKind::ToolExecEnd
    };
    match item_type {
        "agent_message" if !started => Line::AgentMessage(text_of(item, "text")),
        "reasoning" if !started => Line::Events(vec![Event {
            kind: EventKind::ReasoningDelta,
            text: text_of(item, "text"),
            tool: String::new(),
            detail: String::new(),
        }]),
        "command_execution" => {
            Line::Events(vec![tool_event(phase, "shell", text_of(item, "command"))])
        }
        "file_change" => {
            let paths: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .map(|changes| {
                    changes
                        .iter()
                        .filter_map(|c| c.get("path").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            Line::Events(vec![tool_event(phase, "apply_patch", paths.join("\n"))])
        }
        "mcp_tool_call" => Line::Events(vec![tool_event(
            phase,
            &text_of(item, "tool"),
            String::new(),
        )]),
        "web_search" => Line::Events(vec![tool_event(
            phase,
            "web_search",
            text_of(item, "query"),
        )]),
        _ => Line::Events(Vec::new()),
    }
}

/// [`parse_line`] folded into the driver's view of the run (one per execution).
#[derive(Debug, Clone, Default)]
pub struct CodexStream {
    /// The last completed `agent_message`: the run's text.
    last_message: Option<String>,
    /// `turn.completed` was seen.
    completed: bool,
    /// `turn.failed`: codex's message.
    failed: Option<String>,
    /// The last top-level `error` line (not final by itself).
    last_error: Option<String>,
    usage: Usage,
    /// From `thread.started`: the session handle (a resumed run starts the same one).
    thread_id: Option<String>,
}

impl CodexStream {
    /// A parser for one run.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamParser for CodexStream {
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
        match parse_line(line) {
            Line::ThreadStarted(id) if !id.is_empty() => self.thread_id = Some(id),
            Line::ThreadStarted(_) => {}
            Line::Events(more) => events.extend(more),
            Line::AgentMessage(text) => {
                events.push(Event::text_delta(text.clone()));
                self.last_message = Some(text);
            }
            Line::TurnCompleted(usage) => {
                self.usage = self.usage.plus(usage);
                self.completed = true;
            }
            Line::Failed(message) if is_turn_failure(line) => self.failed = Some(message),
            Line::Failed(message) => self.last_error = Some(message),
            Line::Unrecognised => {}
        }
    }

    fn verdict(&self) -> Verdict {
        if let Some(message) = &self.failed {
            // `turn.failed` without a message of its own: the last `error` says why.
            let message = match (&self.last_error, message.as_str()) {
                (Some(error), NO_MESSAGE) => error.clone(),
                _ => message.clone(),
            };
            return Verdict::Failed {
                code: classify_failure(&message),
                message: format!("codex: {message}"),
            };
        }
        if self.completed {
            return Verdict::Completed(self.last_message.clone().unwrap_or_default());
        }
        Verdict::Pending
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn session(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }
}

/// Whether `line` (already known to be a failure) is `turn.failed` rather than a
/// top-level `error`. Cheap: failures are rare.
fn is_turn_failure(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| {
            v.get("type")
                .and_then(Value::as_str)
                .map(|t| t == "turn.failed")
        })
        .unwrap_or(false)
}

/// The error code for a failure codex reported, from its message: an HTTP status it
/// quotes decides (5xx, 408 and 429 are transient); otherwise words of transport
/// trouble make it `provider_unavailable`; anything else is `provider_rejected`.
pub fn classify_failure(message: &str) -> ErrorCode {
    let lower = message.to_ascii_lowercase();
    if let Some(status) = quoted_status(&lower) {
        return if status >= 500 || status == 408 || status == 429 {
            ErrorCode::ProviderUnavailable
        } else {
            ErrorCode::ProviderRejected
        };
    }
    const TRANSIENT: [&str; 9] = [
        "stream disconnected",
        "disconnect",
        "error sending request",
        "connection",
        "timed out",
        "timeout",
        "retry limit",
        "overloaded",
        "waiting for network",
    ];
    if TRANSIENT.iter().any(|needle| lower.contains(needle)) {
        ErrorCode::ProviderUnavailable
    } else {
        ErrorCode::ProviderRejected
    }
}

/// The first HTTP status in `status 503 …` / `status: 429 …` (codex's wording), not
/// any three digits (a port or a token count would mislead).
fn quoted_status(lower: &str) -> Option<u16> {
    lower.match_indices("status").find_map(|(at, word)| {
        let rest = lower.get(at + word.len()..)?;
        let rest = rest.trim_start_matches([':', ' ']);
        let digits = rest.get(..3)?;
        let followed_by_digit = rest.as_bytes().get(3).is_some_and(u8::is_ascii_digit);
        if followed_by_digit {
            return None;
        }
        digits.parse().ok().filter(|s| (100..600).contains(s))
    })
}

/// The Codex CLI as an [`AgentCli`]: its argv, parser and probes. Holds only its
/// configuration: every execution is a fresh `codex exec` process and a fresh codex
/// thread.
#[derive(Debug, Clone)]
pub struct Codex {
    config: ProgramConfig,
}

/// The `codex` backend.
pub type CodexBackend = AgentCliBackend<Codex>;

impl CodexBackend {
    /// A backend for `config` (`program` defaults to `codex` on `PATH`). Problems are
    /// reported by [`Backend::verify`](agent_exec_contract::Backend::verify) and at run
    /// time, never by a panic.
    pub fn new(config: ProgramConfig) -> Self {
        AgentCliBackend::of(Codex { config })
    }

    /// The kind's own arguments of a fresh run (see [`Codex::kind_args`]).
    pub fn kind_args(&self, request: &ContractRequest) -> Result<Vec<String>, ToolPolicyRefused> {
        self.cli().kind_args(request)
    }
}

impl Codex {
    fn program(&self) -> &str {
        self.config.program_or(DEFAULT_PROGRAM)
    }

    /// The kind's own arguments: [`EXEC_FLAGS`], the model, the tool policy
    /// ([`tool_args`]), the instructions (the configured `args` and `-`, "prompt on
    /// stdin", follow). Fails when the policy names what this backend cannot honour.
    pub fn kind_args(&self, request: &ContractRequest) -> Result<Vec<String>, ToolPolicyRefused> {
        let mut args: Vec<String> = EXEC_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        if let Some(model) = &self.config.model {
            // `--model=M`: a value starting with `-` is never read as a flag.
            args.push(format!("--model={model}"));
        }
        args.extend(tool_args(&request.tool_policy)?);
        if !request.instructions.is_empty() {
            // TOML-quoted, so codex cannot read the text as an array, a table, a number.
            let value = toml::Value::String(request.instructions.clone());
            args.push("-c".into());
            args.push(format!("developer_instructions={value}"));
        }
        Ok(args)
    }

    /// `--output-schema=FILE` for `schema`, written to a temporary file *outside* the
    /// workspace (a file in it would be a workspace change, a side effect we caused),
    /// kept until the returned guard is dropped — after the run. codex reads the file
    /// when it starts and sends it as the Responses API's `text.format` json_schema.
    fn schema_arg(schema: &Value) -> std::io::Result<(String, tempfile::NamedTempFile)> {
        use std::io::Write as _;
        let mut file = tempfile::Builder::new()
            .prefix("agent-exec-output-schema-")
            .suffix(".json")
            .tempfile()?;
        let text = serde_json::to_vec(schema)?;
        file.write_all(&text)?;
        file.flush()?;
        Ok((format!("--output-schema={}", file.path().display()), file))
    }

    /// One `--version` probe: `exec <our flags> [--disable shell_tool] --version`.
    async fn exec_version(&self, with_disable: bool) -> Result<String, ProbeError> {
        let mut args: Vec<&str> = EXEC_FLAGS.to_vec();
        if with_disable {
            args.extend(["--disable", "shell_tool"]);
        }
        args.push("--version");
        agent_program::probe_output(
            self.program(),
            &args,
            &self.config.env,
            PROBE_TIMEOUT,
            INSTALL_HINT,
        )
        .await
    }
}

#[async_trait::async_trait]
impl AgentCli for Codex {
    const KIND: &'static str = KIND;
    const DEFAULT_PROGRAM: &'static str = DEFAULT_PROGRAM;
    const INSTALL_HINT: &'static str = INSTALL_HINT;
    const PROBES: ProbePlan = ProbePlan {
        version: VersionOrder::Before,
        tools: ToolsProof::VersionProbe { flags: "--disable" },
        structured_output: true,
        resume: true,
        upgrade: "upgrade @openai/codex",
        resume_hint: ", and keep `--ephemeral` out of `args`",
    };
    const SESSION_HANDLE: &'static str = "a codex thread id (a UUID)";
    // codex already retried the stream itself; what is left is transient trouble the
    // caller may retry later (if the side effects allow).
    const RETRY_UNAVAILABLE: bool = true;
    type Parser = CodexStream;

    fn config(&self) -> &ProgramConfig {
        &self.config
    }

    /// `codex exec [resume] …flags… [--output-schema=FILE] [args…] [THREAD] -`, the
    /// prompt on stdin (`-`), not in argv: argv is readable by every local user in
    /// /proc/*/cmdline and capped at 128 KiB an argument. Resumed, the thread already
    /// holds the conversation: only the continuation. The thread id must be a UUID,
    /// since `exec resume` also takes a thread *name* in the same place.
    fn attempt(
        &self,
        request: &ContractRequest,
        _ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<CodexStream>, Error> {
        let name = &self.config.name;
        let refused = |code, problem: String| {
            Error::new(
                code,
                format!("backend `{name}`: {problem}"),
                SideEffects::None,
            )
        };
        let mut kind_args = self
            .kind_args(request)
            .map_err(|problem| refused(ErrorCode::ToolRejected, problem.to_string()))?;
        let resume = crate::agent_cli::resume_handle::<Self>(name, resume)?;
        if resume.is_some() {
            kind_args = resumed(kind_args);
        }
        let mut keep = Vec::new();
        if let Some(schema) = &request.output_schema {
            let (arg, file) = Self::schema_arg(schema).map_err(|e| {
                refused(
                    ErrorCode::Internal,
                    format!("cannot write the output schema for codex: {e}"),
                )
            })?;
            kind_args.push(arg);
            keep.push(file);
        }
        let prompt = match resume {
            Some(_) => agent_program::render_continuation(request),
            None => agent_program::render_prompt(request),
        };
        let run = self.config.agent_run(
            self.program(),
            kind_args,
            prompt_tail(resume),
            Some(prompt.into_bytes()),
            &request.workspace.root,
        );
        Ok(Attempt {
            keep,
            ..Attempt::new(run, CodexStream::new())
        })
    }

    fn after_run(
        &self,
        _request: &ContractRequest,
        _ctx: &ExecutionContext,
        stream: &CodexStream,
        result: &ContractResult,
        notes: &mut Vec<String>,
    ) {
        if result.outcome != Outcome::Succeeded
            && let Some(error) = &stream.last_error
        {
            // E.g. "Reconnecting... waiting for network": codex's last word on why a
            // run that was canceled or timed out was not progressing.
            notes.push(format!("codex said: {error}"));
        }
    }

    /// One probe proves the format flags and gives the version: clap parses arguments
    /// in order, so `exec <our flags> --version` prints `codex-cli-exec X.Y.Z` only if
    /// `exec` accepts every flag we run it with (`--json` is the format, `--disable`
    /// holds the tool policy). One probe, because each pays the npm launcher's Node
    /// start-up (~0.2 s) and every `agent-exec run` verifies before it runs.
    async fn version(&self) -> Result<ProgramVersion, ProbeError> {
        let program = self.program();
        let (output, tools_refused) = match self.exec_version(true).await {
            Ok(output) => (output, None),
            Err(full) => match self.exec_version(false).await {
                Ok(output) => (output, Some(full.to_string())),
                Err(problem) => {
                    // Say whether it is codex at all, and which version.
                    let seen = agent_program::probe_output(
                        program,
                        &["--version"],
                        &self.config.env,
                        PROBE_TIMEOUT,
                        INSTALL_HINT,
                    )
                    .await
                    .unwrap_or_default();
                    let seen = if seen.is_empty() {
                        String::new()
                    } else {
                        format!(" (`{program} --version`: {seen})")
                    };
                    return Err(ProbeError::Unproven(format!(
                        "`{program} exec --json` is not available{seen}: {problem}"
                    )));
                }
            },
        };
        let Some(number) = parse_version(&output) else {
            return Err(ProbeError::Unproven(format!(
                "`{program} exec --version` printed {output:?}, not `codex-cli-exec X.Y.Z`; {INSTALL_HINT}"
            )));
        };
        Ok(ProgramVersion {
            label: format!("codex-cli {number}"),
            tools_refused,
        })
    }

    /// `codex exec --json` with the run's own flags (the default tool policy's
    /// `--disable`s with `probe.tools`), its model provider pointed at a refused
    /// loopback port and the folder's throw-away `CODEX_HOME`. Proven by
    /// `thread.started` then `turn.started` on stdout; codex would then retry the
    /// provider for minutes, so the probe stops it there (about 0.3 s in all). The
    /// model request never leaves the machine.
    ///
    /// `probe.schema`: with `--output-schema` too — codex reads and parses the file
    /// before it starts the thread (a missing or malformed one ends it there), so a
    /// started thread proves the flag is understood, not merely accepted.
    ///
    /// `probe.resume`: `exec resume` on that thread instead; proven only when codex
    /// starts *that* thread again — it refuses an id it has no session file for ("no
    /// rollout found"), so this proves the session was kept and found, which `exec
    /// resume --help` cannot.
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError> {
        let request = folder.request(probe.tools);
        let port = agent_program::refused_loopback_port()?;
        let mut args = self
            .kind_args(&request)
            .map_err(|problem| ProbeError::Setup(problem.to_string()))?;
        if probe.resume.is_some() {
            args = resumed(args);
        }
        let _schema_file = if probe.schema {
            let schema = serde_json::json!({
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
                "additionalProperties": false
            });
            let (arg, file) = Self::schema_arg(&schema).map_err(|e| {
                ProbeError::Setup(format!("cannot write the output schema for codex: {e}"))
            })?;
            args.push(arg);
            Some(file)
        } else {
            None
        };
        args.extend(self.config.args.iter().cloned());
        args.extend([
            "-c".to_owned(),
            format!(
                "model_providers.agent_exec_probe={{name=\"agent-exec probe\",base_url=\"http://127.0.0.1:{port}/v1\",wire_api=\"responses\",request_max_retries=0,stream_max_retries=0}}"
            ),
            "-c".to_owned(),
            "model_provider=\"agent_exec_probe\"".to_owned(),
        ]);
        args.extend(prompt_tail(probe.resume));
        let mut env = self.config.env.clone();
        env.insert("CODEX_HOME".to_owned(), folder.home.display().to_string());
        let (mut thread, mut turn) = (None::<String>, false);
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
            match parse_line(line) {
                // A resumed probe must start the thread it was given, no other.
                Line::ThreadStarted(id) if probe.resume.is_none_or(|wanted| wanted == id) => {
                    thread = Some(id)
                }
                Line::Events(_) if thread.is_some() && is_turn_started(line) => turn = true,
                _ => {}
            }
            thread.is_some() && turn
        })
        .await?;
        seen.proof(|| match probe.resume {
            None => format!(
                "`{} exec --json` did not start a thread and a turn on stdout",
                self.program()
            ),
            Some(_) => format!(
                "`{} exec resume --json` did not start the probe's own thread again",
                self.program()
            ),
        })?;
        Ok(match thread {
            Some(id) if agent_program::is_uuid(&id) => SessionSeen::Id(id),
            _ => SessionSeen::Missing("`thread.started` carried no thread id (a UUID)".to_owned()),
        })
    }
}

/// `exec …` → `exec resume …`: the same flags, since `exec resume` (0.171) takes each
/// of them — `--json`, `--skip-git-repo-check`,
/// `--dangerously-bypass-approvals-and-sandbox`, `--model`, `--disable`, `-c`,
/// `--output-schema` — so a resumed turn is held to the same tool policy as a fresh
/// one. (It has no `-C`; the workspace is the working directory either way.)
fn resumed(mut args: Vec<String>) -> Vec<String> {
    args.insert(1, "resume".to_owned());
    args
}

/// The last arguments: `-` (the prompt on stdin), after the thread id when resuming.
fn prompt_tail(resume: Option<&str>) -> Vec<String> {
    resume
        .map(str::to_owned)
        .into_iter()
        .chain(["-".to_owned()])
        .collect()
}

fn is_turn_started(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .is_some_and(|v| v.get("type").and_then(Value::as_str) == Some("turn.started"))
}

/// The message `turn.failed` gets when codex gave none (see [`message`]).
const NO_MESSAGE: &str = "codex reported an error without a message";

/// The codex tools a [`ToolPolicy`] can name, and the codex features behind each.
/// `exec_command` is codex's shell (with its `write_stdin` companion); without it the
/// shell snapshot (a login shell codex starts to capture the environment) is useless
/// start-up work, and a process left to kill when the run ends.
pub const TOOLS: [(&str, &[&str]); 3] = [
    (
        "exec_command",
        &["shell_tool", "unified_exec", "shell_snapshot"],
    ),
    ("view_image", &["view_image"]),
    ("web_search", &[]),
];

/// Features that give the model reach beyond its answer and that no allowlist entry
/// turns back on: sub-agents (which have tools of their own), goals, image generation.
const ALWAYS_OFF_UNLESS_WORKSPACE: [&str; 3] = ["multi_agent", "goals", "image_generation"];

/// The flags that hold codex to `policy`:
///
/// * an `allowlist` → exactly those of [`TOOLS`] (every other feature is disabled);
/// * profile `reasoning` or empty (the contract's default) → none of them;
/// * profile `workspace` → codex's own default tool set;
/// * anything else → an error (`tool_rejected`): unknown tools are refused.
///
/// An unknown feature name makes codex exit before it starts (fail closed), so a
/// codex release that renames a feature breaks runs loudly rather than widening them.
pub fn tool_args(policy: &ToolPolicy) -> Result<Vec<String>, ToolPolicyRefused> {
    let allowed: Vec<&str> = if !policy.allowlist.is_empty() {
        if let Some(bad) = policy
            .allowlist
            .iter()
            .find(|name| !TOOLS.iter().any(|(tool, _)| tool == name))
        {
            return Err(ToolPolicyRefused(format!(
                "tool `{bad}` is unknown to the codex backend (known: {})",
                TOOLS.map(|(tool, _)| tool).join(", ")
            )));
        }
        policy.allowlist.iter().map(String::as_str).collect()
    } else {
        match policy.profile.as_str() {
            "" | "reasoning" => Vec::new(),
            "workspace" => return Ok(Vec::new()),
            other => {
                return Err(ToolPolicyRefused(format!(
                    "tool profile `{other}` is unknown to the codex backend (known: reasoning, workspace, or an allowlist of {})",
                    TOOLS.map(|(tool, _)| tool).join(", ")
                )));
            }
        }
    };
    let mut args = Vec::new();
    let mut disable = |feature: &str| {
        args.push("--disable".to_owned());
        args.push(feature.to_owned());
    };
    for (tool, features) in TOOLS {
        if !allowed.contains(&tool) {
            features.iter().for_each(|f| disable(f));
        }
    }
    ALWAYS_OFF_UNLESS_WORKSPACE.iter().for_each(|f| disable(f));
    if !allowed.contains(&"web_search") {
        args.push("-c".to_owned());
        args.push("web_search=\"disabled\"".to_owned());
    }
    Ok(args)
}

/// `codex-cli 0.171.0` (or `codex-cli-exec 0.171.0`, from `codex exec --version`) →
/// `0.171.0`.
pub fn parse_version(output: &str) -> Option<&str> {
    let line = output
        .lines()
        .find(|l| l.trim_start().starts_with("codex"))?;
    let version = line.split_whitespace().nth(1)?;
    version
        .chars()
        .next()
        .filter(char::is_ascii_digit)
        .map(|_| version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_exec_contract::Backend as _;
    use proptest::prelude::*;

    #[test]
    fn maps_items_usage_and_failures() {
        assert_eq!(
            parse_line(br#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}"#),
            Line::AgentMessage("done".into())
        );
        let Line::Events(events) = parse_line(
            br#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}"#,
        ) else {
            panic!("expected events")
        };
        assert_eq!(events[0].kind, EventKind::ToolExecStart);
        assert_eq!(events[0].detail, "bash -lc ls");
        assert_eq!(
            parse_line(br#"{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":0,"output_tokens":9}}"#),
            Line::TurnCompleted(Usage { prompt_tokens: 120, completion_tokens: 9 })
        );
        assert_eq!(
            parse_line(br#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#),
            Line::Failed("stream disconnected".into())
        );
        assert_eq!(
            parse_line(br#"{"type":"thread.started","thread_id":"t"}"#),
            Line::ThreadStarted("t".into())
        );
        assert_eq!(
            parse_line(br#"{"type":"thread.started","thread_id":7}"#),
            Line::ThreadStarted(String::new())
        );
        assert_eq!(
            parse_line(br#"{"type":"turn.started"}"#),
            Line::Events(vec![])
        );
        assert_eq!(parse_line(b"not json"), Line::Unrecognised);
        assert_eq!(parse_line(b"[1,2]"), Line::Unrecognised);
    }

    fn fold(lines: &[&str]) -> (CodexStream, Vec<Event>) {
        let mut stream = CodexStream::new();
        let mut events = Vec::new();
        for line in lines {
            stream.line(line.as_bytes(), &mut events);
        }
        (stream, events)
    }

    #[test]
    fn the_last_message_is_the_text_and_only_turn_completed_is_final() {
        let (stream, events) = fold(&[
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"first"}}"#,
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"second"}}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Pending);
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].kind, EventKind::TextDelta);
        let (stream, _) = fold(&[
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"first"}}"#,
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"second"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":7,"output_tokens":2}}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Completed("second".into()));
        assert_eq!(stream.usage().prompt_tokens, 7);
        assert_eq!(stream.usage().completion_tokens, 2);
    }

    #[test]
    fn the_thread_id_is_the_session_and_the_last_one_wins() {
        // Recorded from codex-cli 0.171.0 (`exec --json`, and `exec resume` on it).
        let (stream, events) = fold(&[
            r#"{"type":"thread.started","thread_id":"01a2342a-70a9-7080-b1dd-42fcf176d61f"}"#,
            r#"{"type":"turn.started"}"#,
        ]);
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(
            stream.session(),
            Some("01a2342a-70a9-7080-b1dd-42fcf176d61f")
        );
        let (stream, _) = fold(&[
            r#"{"type":"thread.started","thread_id":"a"}"#,
            r#"{"type":"thread.started"}"#,
            r#"{"type":"thread.started","thread_id":"b"}"#,
        ]);
        assert_eq!(stream.session(), Some("b"));
        assert_eq!(CodexStream::new().session(), None);
    }

    #[test]
    fn a_resumed_run_is_exec_resume_with_the_same_flags_then_the_thread_and_stdin() {
        let backend = CodexBackend::new(ProgramConfig::new("cx"));
        let request = ContractRequest::default();
        let fresh = backend.kind_args(&request).unwrap();
        let resumed_args = resumed(fresh.clone());
        assert_eq!(resumed_args[..2], ["exec", "resume"]);
        assert_eq!(
            resumed_args[2..],
            fresh[1..],
            "every flag of a fresh run, in order"
        );
        assert!(
            resumed_args
                .windows(2)
                .any(|w| w == ["--disable", "shell_tool"]),
            "the default policy still holds: {resumed_args:?}"
        );
        let id = "01a2342a-70a9-7080-b1dd-42fcf176d61f";
        assert_eq!(prompt_tail(Some(id)), [id, "-"]);
        assert_eq!(prompt_tail(None), ["-"]);
    }

    #[tokio::test]
    async fn a_refused_resume_handle_fails_before_codex_starts() {
        // `program` does not exist: reaching the spawn would fail differently.
        let mut config = ProgramConfig::new("cx");
        config.program = Some("/nonexistent/codex".into());
        let backend = CodexBackend::new(config);
        let request = ContractRequest {
            workspace: agent_exec_contract::WorkspaceHandle {
                root: "/".into(),
                writable: Vec::new(),
            },
            ..ContractRequest::default()
        };
        // Not an id at all, or an id that is not a thread UUID (`exec resume` would
        // read it as a thread *name*).
        for bad in ["--foo", "../x", "my-thread-name", "-c"] {
            let mut ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
            ctx.resume = Some(agent_exec_contract::ResumeFrom {
                session: bad.into(),
                attempt: 1,
                original_prompt: "p".into(),
            });
            let result = backend.execute(&request, ctx).await;
            let err = result.err.unwrap();
            assert_eq!(err.code, ErrorCode::Internal, "{bad}");
            assert_eq!(err.side_effects, SideEffects::None, "{bad}");
            assert!(
                err.reason.contains("cannot resume"),
                "{bad}: {}",
                err.reason
            );
        }
        let id = "01a2342a-70a9-7080-b1dd-42fcf176d61f";
        let ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
        let attempt = backend.cli().attempt(&request, &ctx, Some(id)).unwrap();
        assert_eq!(attempt.run.args[..2], ["exec", "resume"]);
        assert_eq!(attempt.run.args[attempt.run.args.len() - 2..], [id, "-"]);
    }

    #[test]
    fn an_error_line_alone_is_not_final_but_explains_a_bare_turn_failure() {
        let (stream, _) = fold(&[r#"{"type":"error","message":"Reconnecting... 1/5"}"#]);
        assert_eq!(stream.verdict(), Verdict::Pending);
        let (stream, _) = fold(&[
            r#"{"type":"error","message":"stream disconnected before completion"}"#,
            r#"{"type":"turn.failed","error":{}}"#,
        ]);
        assert_eq!(
            stream.verdict(),
            Verdict::Failed {
                code: ErrorCode::ProviderUnavailable,
                message: "codex: stream disconnected before completion".into()
            }
        );
        let (stream, _) = fold(&[
            r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}"#,
        ]);
        assert!(matches!(
            stream.verdict(),
            Verdict::Failed {
                code: ErrorCode::ProviderRejected,
                ..
            }
        ));
    }

    #[test]
    fn failures_are_classified_by_the_status_codex_quotes_then_by_words() {
        let unavailable = ErrorCode::ProviderUnavailable;
        let rejected = ErrorCode::ProviderRejected;
        for (message, code) in [
            (
                "unexpected status 503 Service Unavailable: x, url: http://h:1/v1",
                &unavailable,
            ),
            (
                "exceeded retry limit, last status: 429 Too Many Requests",
                &unavailable,
            ),
            (
                "unexpected status 401 Unauthorized: bad key, url: http://h:5003/v1",
                &rejected,
            ),
            ("unexpected status 400 Bad Request: tokens 5000", &rejected),
            (
                "stream disconnected before completion: error decoding",
                &unavailable,
            ),
            (
                "Reconnecting... waiting for network (Connection failed)",
                &unavailable,
            ),
            ("model not supported", &rejected),
            ("status", &rejected),
        ] {
            assert_eq!(&classify_failure(message), code, "{message}");
        }
    }

    #[test]
    fn versions_parse_from_codex_cli_output_only() {
        assert_eq!(parse_version("codex-cli 0.171.0"), Some("0.171.0"));
        assert_eq!(parse_version("codex-cli-exec 0.171.0"), Some("0.171.0"));
        assert_eq!(
            parse_version("WARNING: x\ncodex-cli 1.2.3\n"),
            Some("1.2.3")
        );
        assert_eq!(parse_version("claude 1.0"), None);
        assert_eq!(parse_version("codex-cli"), None);
        assert_eq!(parse_version("codex-cli dev"), None);
    }

    #[test]
    fn the_prompt_carries_context_and_targets() {
        let mut request = ContractRequest {
            prompt: "fix it".into(),
            ..ContractRequest::default()
        };
        assert_eq!(crate::agent_program::render_prompt(&request), "fix it");
        request.context = vec![agent_exec_contract::Message {
            role: "user".into(),
            content: "earlier".into(),
        }];
        request.targets = vec!["out.md".into()];
        let prompt = crate::agent_program::render_prompt(&request);
        assert!(
            prompt.starts_with("Conversation so far:\n[user] earlier\n"),
            "{prompt}"
        );
        assert!(prompt.ends_with("- out.md\n"), "{prompt}");
    }

    #[test]
    fn instructions_are_toml_quoted_and_the_model_is_passed() {
        let mut config = ProgramConfig::new("cx");
        config.model = Some("m1".into());
        let backend = CodexBackend::new(config);
        let request = ContractRequest {
            instructions: "say \"hi\"\n[not a table]".into(),
            ..ContractRequest::default()
        };
        let args = backend.kind_args(&request).unwrap();
        assert_eq!(&args[..4], &EXEC_FLAGS);
        assert_eq!(args[4], "--model=m1");
        let setting = args.last().unwrap();
        let parsed: toml::Table = toml::from_str(setting).unwrap();
        assert_eq!(
            parsed["developer_instructions"].as_str(),
            Some("say \"hi\"\n[not a table]")
        );
    }

    #[test]
    fn the_tool_policy_becomes_disabled_features_or_a_refusal() {
        let policy = |profile: &str, allow: &[&str]| ToolPolicy {
            profile: profile.into(),
            allowlist: allow.iter().map(|s| (*s).to_owned()).collect(),
        };
        let disabled = |args: &[String]| -> Vec<String> {
            args.windows(2)
                .filter(|w| w[0] == "--disable")
                .map(|w| w[1].clone())
                .collect()
        };
        let none = tool_args(&policy("", &[])).unwrap();
        assert_eq!(none, tool_args(&policy("reasoning", &[])).unwrap());
        for feature in ["shell_tool", "unified_exec", "view_image", "multi_agent"] {
            assert!(disabled(&none).iter().any(|f| f == feature), "{none:?}");
        }
        assert!(none.contains(&"web_search=\"disabled\"".to_owned()));
        assert!(tool_args(&policy("workspace", &[])).unwrap().is_empty());
        let shell = tool_args(&policy("workspace", &["exec_command"])).unwrap();
        assert!(
            !disabled(&shell).iter().any(|f| f == "shell_tool"),
            "{shell:?}"
        );
        assert!(
            disabled(&shell).iter().any(|f| f == "view_image"),
            "{shell:?}"
        );
        assert!(
            disabled(&shell).iter().any(|f| f == "multi_agent"),
            "{shell:?}"
        );
        let refused = tool_args(&policy("root", &[])).unwrap_err();
        assert!(refused.to_string().contains("`root`"), "{refused}");
        let refused = tool_args(&policy("", &["rm_rf"])).unwrap_err();
        assert!(refused.to_string().contains("`rm_rf`"), "{refused}");
    }

    #[test]
    fn credential_values_from_the_config_env_are_redacted() {
        let mut config = ProgramConfig::new("cx");
        config
            .env
            .insert("SCRIPTED_KEY".into(), "sk-very-secret".into());
        config
            .env
            .insert("CODEX_HOME".into(), "/home/me/.codex".into());
        let backend = CodexBackend::new(config);
        let out = backend.redact("401: bad key sk-very-secret in /home/me/.codex, 1 try");
        assert_eq!(out, "401: bad key [redacted] in /home/me/.codex, 1 try");
    }

    proptest! {
        #[test]
        fn the_stream_never_panics_on_any_lines(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..128), 0..8)) {
            let mut stream = CodexStream::new();
            let mut events = Vec::new();
            for line in &lines {
                stream.line(line, &mut events);
            }
            let _ = stream.verdict();
        }


        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_line(&bytes);
        }

        /// The twin of the fuzz target's session check: any `thread_id` string is kept
        /// as it is (the reporter, not the parser, decides what is an id), and a UUID
        /// always passes the contract's check.
        #[test]
        fn any_thread_id_is_the_session_verbatim(id in "\\PC{0,40}", uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}") {
            let mut stream = CodexStream::new();
            let mut events = Vec::new();
            let line = serde_json::json!({"type": "thread.started", "thread_id": id}).to_string();
            stream.line(line.as_bytes(), &mut events);
            prop_assert_eq!(stream.session(), Some(id.as_str()).filter(|i| !i.is_empty()));
            prop_assert!(events.is_empty());
            prop_assert!(agent_program::is_uuid(&uuid));
            prop_assert!(agent_exec_contract::check_session_handle(&uuid).is_ok());
        }

        #[test]
        fn never_panics_on_typed_objects(kind in "(item\\.started|item\\.completed|turn\\.completed|turn\\.failed|thread\\.started|error|x)", body in "[ -~]{0,40}") {
            let line = format!(r#"{{"type":"{kind}","thread_id":"{body}","item":{{"type":"{body}"}},"usage":{{"input_tokens":"{body}"}}}}"#);
            let _ = parse_line(line.as_bytes());
        }
    }
}
