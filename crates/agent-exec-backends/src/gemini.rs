//! The `gemini` backend: Gemini CLI (npm `@google/gemini-cli`) run headless as
//! `gemini --output-format=stream-json --skip-trust --approval-mode=yolo
//! [--policy=FILE] [--model=M] [args…] [--resume=SESSION]`, the prompt on stdin, in
//! the workspace root, driven by [`crate::agent_program::drive`].
//!
//! `--output-format stream-json` writes one JSON object a line (0.61.0): `init`
//! (`session_id`, `model`), `message` (`role` `user` | `assistant`, `content`,
//! `delta: true` for the model's text as it streams), `tool_use` (`tool_name`,
//! `tool_id`, `parameters`), `tool_result` (`tool_id`, `status`, `output` | `error`),
//! `error` (`severity`, `message`: a notice, not the end), `result` (`status`
//! `success` | `error`, `error: {type, message}`, `stats` with `input_tokens` and
//! `output_tokens`).
//!
//! * [`parse_line`] is a pure function from one line to what it means for the
//!   contract. It never panics; a line that is not JSON, not an object or without a
//!   `type` is [`Line::Unrecognised`]; an unknown `type` is ignored. Fuzzed
//!   (`agent_exec_gemini_stream`) and property-tested.
//! * [`GeminiStream`] folds the lines into the driver's [`Verdict`]: the run's text is
//!   the assistant text after the last tool call (the answer, not the narration
//!   before it); the result is final only on `result`. A stream that ends without it
//!   is `unknown` (the driver's rule), whatever came before.
//! * [`Gemini`] is the [`AgentCli`]: argv, the tool policy ([`tool_args`]), probes.
//!
//! Decisions:
//! * The prompt goes on stdin (Gemini reads a piped stdin as the prompt when no
//!   `--prompt` is given), never in argv. `instructions` are rendered above it: Gemini
//!   has no flag for a system prompt (`GEMINI_SYSTEM_MD` replaces its whole prompt).
//! * The tool policy: the contract's default (`reasoning`) is a policy file denying
//!   every tool (`--policy`, a temporary file outside the workspace) — Gemini then
//!   offers the model no tool at all; `workspace` is Gemini's own set; an allowlist
//!   is refused (`agent.tool_rejected`): its tool names are not held by one flag, and
//!   a half-held list would be worse than none. `--approval-mode=yolo` because
//!   nobody is there to approve (headless `default` mode drops every tool that
//!   asks, so the agent could not write); the workspace is the caller's isolation.
//! * `--skip-trust`: Gemini refuses to run headless in a folder it was not told to
//!   trust; the workspace is the caller's choice.
//! * `GEMINI_CLI_NO_RELAUNCH=true` (unless the config sets it): Gemini's launcher
//!   otherwise starts a second Node process with a larger heap and waits for it,
//!   ignoring SIGTERM — two start-ups, and a parent a cancel cannot stop by itself.
//! * Failures come from `result.error.message`, which quotes the API's error
//!   (`{"error":{"code":400,…}}`): a code of 5xx, 408 or 429 is
//!   `agent.provider_unavailable` (Gemini retried already, so retryable), any other
//!   code `agent.provider_rejected`; without one, transport words mean unavailable.
//! * Resume: `init`'s `session_id` (a UUID) is the handle; `--resume=ID` continues
//!   it (Gemini keeps sessions under `~/.gemini/tmp/<project>/chats/`, per folder).
//!   Verified by resuming the format probe's own session.
//! * Structured output is not declared: Gemini CLI 0.61.0 has no flag for a response
//!   schema. A request with one is refused by the runtime unless the capability is
//!   verified, and its answer is validated by the runtime either way; the backend
//!   itself ignores the schema, as `pi` does.
//!
//! Deliberately not done: MCP servers and hooks in the user's own Gemini settings are
//! not switched off by the policy (give agent-exec a `HOME` without them).

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
use crate::agent_program::{self, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict};

/// The kind name in config (`kind = "gemini"`).
pub const KIND: &str = "gemini";

/// The program run when the config names none (looked up on `PATH`).
pub const DEFAULT_PROGRAM: &str = "gemini";

/// What to install when the program is missing.
pub const INSTALL_HINT: &str = "install @google/gemini-cli (npm i -g @google/gemini-cli)";

/// The flags every run gets, before the tool policy and the configured `args`.
pub const RUN_FLAGS: [&str; 3] = [
    "--output-format=stream-json",
    "--skip-trust",
    "--approval-mode=yolo",
];

/// The policy file of the contract's default tool policy: every tool denied, which
/// also takes every tool out of what Gemini offers the model.
pub const DENY_ALL_POLICY: &str =
    "[[rule]]\ntoolName = \"*\"\ndecision = \"deny\"\npriority = 999\n";

/// How long a `verify` probe may take (Gemini's Node start-up is about 2 s).
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What one line of `gemini -o stream-json` means.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `init`: the session id (empty when the line has none).
    Init(String),
    /// A piece of the model's text.
    Text(String),
    /// `tool_use`: a tool starts.
    ToolUse {
        id: String,
        tool: String,
        parameters: String,
    },
    /// `tool_result`: a tool ended; `status` as Gemini says it.
    ToolResult { id: String, status: String },
    /// `error`: a notice (Gemini goes on).
    Notice(String),
    /// `result` with `status: success`: usage as reported.
    Succeeded(Usage),
    /// `result` with any other status: Gemini's message.
    Failed(String),
    /// Anything else the parser reads and ignores (a user message, an unknown type).
    Ignored,
    /// Not JSON, not an object, or without a `type`.
    Unrecognised,
}

fn string(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
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
        "init" => Line::Init(string(&value, "session_id")),
        "message" if value.get("role").and_then(Value::as_str) == Some("assistant") => {
            Line::Text(string(&value, "content"))
        }
        "tool_use" => Line::ToolUse {
            id: string(&value, "tool_id"),
            tool: string(&value, "tool_name"),
            parameters: value
                .get("parameters")
                .map(Value::to_string)
                .unwrap_or_default(),
        },
        "tool_result" => Line::ToolResult {
            id: string(&value, "tool_id"),
            status: string(&value, "status"),
        },
        "error" => Line::Notice(string(&value, "message")),
        "result" if value.get("status").and_then(Value::as_str) == Some("success") => {
            let stats = value.get("stats");
            let field = |name: &str| {
                stats
                    .and_then(|s| s.get(name))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            Line::Succeeded(Usage {
                prompt_tokens: field("input_tokens"),
                completion_tokens: field("output_tokens"),
            })
        }
        "result" => {
            let message = value
                .get("error")
                .and_then(|error| error.get("message"))
                .and_then(Value::as_str)
                .unwrap_or(NO_MESSAGE);
            Line::Failed(message.to_owned())
        }
        _ => Line::Ignored,
    }
}

/// The message a failed `result` gets when Gemini gave none.
const NO_MESSAGE: &str = "gemini reported an error without a message";

/// At most this many tool calls are remembered by id (to name the tool when its
/// result arrives); past it a result is reported without its tool's name.
const MAX_OPEN_TOOLS: usize = 256;

/// [`parse_line`] folded into the driver's view of the run (one per execution).
#[derive(Debug, Clone, Default)]
pub struct GeminiStream {
    /// The assistant text since the last tool call.
    answer: String,
    succeeded: bool,
    failed: Option<String>,
    /// The last `error` notice (not final by itself).
    last_notice: Option<String>,
    usage: Usage,
    session_id: Option<String>,
    /// Tool ids whose result has not arrived, with their tool names.
    open_tools: Vec<(String, String)>,
}

impl GeminiStream {
    /// A parser for one run.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last `error` notice Gemini printed, if any.
    pub fn last_notice(&self) -> Option<&str> {
        self.last_notice.as_deref()
    }
}

/// The longest assistant text kept as the run's answer (the events carry it all).
const MAX_ANSWER: usize = 4 * 1024 * 1024;

impl StreamParser for GeminiStream {
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
        match parse_line(line) {
            Line::Init(id) if !id.is_empty() => self.session_id = Some(id),
            Line::Text(text) => {
                if self.answer.len() + text.len() <= MAX_ANSWER {
                    self.answer.push_str(&text);
                }
                events.push(Event::text_delta(text));
            }
            Line::ToolUse {
                id,
                tool,
                parameters,
            } => {
                self.answer.clear();
                if self.open_tools.len() < MAX_OPEN_TOOLS {
                    self.open_tools.push((id, tool.clone()));
                }
                events.push(Event {
                    kind: EventKind::ToolExecStart,
                    text: String::new(),
                    tool,
                    detail: crate::output::bounded(&parameters, 4096),
                });
            }
            Line::ToolResult { id, status } => {
                let tool = self
                    .open_tools
                    .iter()
                    .position(|(open, _)| *open == id)
                    .map(|at| self.open_tools.remove(at).1)
                    .unwrap_or_default();
                events.push(Event {
                    kind: EventKind::ToolExecEnd,
                    text: String::new(),
                    tool,
                    detail: status,
                });
            }
            Line::Notice(message) => self.last_notice = Some(message),
            Line::Succeeded(usage) => {
                self.usage = usage;
                self.succeeded = true;
            }
            Line::Failed(message) => self.failed = Some(message),
            Line::Init(_) | Line::Ignored | Line::Unrecognised => {}
        }
    }

    fn verdict(&self) -> Verdict {
        if let Some(message) = &self.failed {
            return Verdict::Failed {
                code: classify_failure(message),
                message: format!("gemini: {message}"),
            };
        }
        if self.succeeded {
            return Verdict::Completed(self.answer.clone());
        }
        Verdict::Pending
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}

/// The error code for a failure Gemini reported, from its message: the API error's
/// `"code":N` (or `status N`) decides — 5xx, 408 and 429 are transient; otherwise
/// words of transport trouble make it `provider_unavailable`; anything else is
/// `provider_rejected`.
pub fn classify_failure(message: &str) -> ErrorCode {
    let lower = message.to_ascii_lowercase();
    if let Some(status) = quoted_status(&lower) {
        return if status >= 500 || status == 408 || status == 429 {
            ErrorCode::ProviderUnavailable
        } else {
            ErrorCode::ProviderRejected
        };
    }
    // "terminated": undici's word for a response stream cut mid-way (recorded from
    // 0.61.0 as `[API Error: terminated]`).
    const TRANSIENT: [&str; 8] = [
        "terminated",
        "fetch failed",
        "econnrefused",
        "econnreset",
        "socket hang up",
        "timed out",
        "timeout",
        "network",
    ];
    if TRANSIENT.iter().any(|needle| lower.contains(needle)) {
        ErrorCode::ProviderUnavailable
    } else {
        ErrorCode::ProviderRejected
    }
}

/// The first HTTP status after `"code":` or `status` — three digits, not followed by
/// a fourth (a port or a token count would mislead).
fn quoted_status(lower: &str) -> Option<u16> {
    ["\"code\":", "\\\"code\\\":", "status"]
        .iter()
        .flat_map(|word| lower.match_indices(word))
        .filter_map(|(at, word)| {
            let rest = lower.get(at + word.len()..)?;
            let rest = rest.trim_start_matches([':', ' ']);
            let digits = rest.get(..3)?;
            if rest.as_bytes().get(3).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            digits.parse().ok().filter(|s| (100..600).contains(s))
        })
        .next()
}

/// The flags that hold Gemini to `policy`, and the policy file to write when one is
/// needed (`--policy=FILE` is added by the caller, who owns the file):
///
/// * profile `reasoning` or empty (the contract's default) → [`DENY_ALL_POLICY`];
/// * profile `workspace` → Gemini's own tools;
/// * an allowlist, or any other profile → refused.
pub fn tool_args(policy: &ToolPolicy) -> Result<Option<&'static str>, ToolPolicyRefused> {
    if !policy.allowlist.is_empty() {
        return Err(ToolPolicyRefused(
            "the gemini backend cannot hold a tool allowlist (known profiles: reasoning, workspace)"
                .to_owned(),
        ));
    }
    match policy.profile.as_str() {
        "" | "reasoning" => Ok(Some(DENY_ALL_POLICY)),
        "workspace" => Ok(None),
        other => Err(ToolPolicyRefused(format!(
            "tool profile `{other}` is unknown to the gemini backend (known: reasoning, workspace)"
        ))),
    }
}

/// Gemini CLI as an [`AgentCli`]. Holds only its configuration.
#[derive(Debug, Clone)]
pub struct Gemini {
    config: ProgramConfig,
}

/// The `gemini` backend.
pub type GeminiBackend = AgentCliBackend<Gemini>;

impl GeminiBackend {
    /// A backend for `config` (`program` defaults to `gemini` on `PATH`).
    pub fn new(config: ProgramConfig) -> Self {
        AgentCliBackend::of(Gemini { config })
    }
}

impl Gemini {
    fn program(&self) -> &str {
        self.config.program_or(DEFAULT_PROGRAM)
    }

    /// [`RUN_FLAGS`], the policy file's flag, the model; and the file, kept until the
    /// returned guard is dropped (after the run), outside the workspace (a file in it
    /// would be a side effect we caused).
    fn kind_args(
        &self,
        policy: &ToolPolicy,
    ) -> Result<(Vec<String>, Option<tempfile::NamedTempFile>), ArgsError> {
        let mut args: Vec<String> = RUN_FLAGS.iter().map(|s| (*s).to_owned()).collect();
        let file = match tool_args(policy).map_err(ArgsError::Refused)? {
            Some(text) => {
                let file = policy_file(text).map_err(ArgsError::PolicyFile)?;
                args.push(format!("--policy={}", file.path().display()));
                Some(file)
            }
            None => None,
        };
        if let Some(model) = &self.config.model {
            // `--model=M`: a value starting with `-` is never read as a flag.
            args.push(format!("--model={model}"));
        }
        Ok((args, file))
    }
}

/// Why a run's arguments could not be made.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    /// The tool policy asks for what Gemini cannot do.
    #[error("{}", .0.0)]
    Refused(ToolPolicyRefused),
    /// The policy file could not be written.
    #[error("cannot write the tool policy for gemini: {0}")]
    PolicyFile(std::io::Error),
}

fn policy_file(text: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write as _;
    let mut file = tempfile::Builder::new()
        .prefix("agent-exec-gemini-policy-")
        .suffix(".toml")
        .tempfile()?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(file)
}

/// The variable that keeps Gemini in one process: by default its launcher starts a
/// second Node process with a larger heap and waits for it, ignoring SIGTERM itself.
pub const NO_RELAUNCH_VAR: &str = "GEMINI_CLI_NO_RELAUNCH";

/// `GEMINI_CLI_NO_RELAUNCH=true` unless the configuration sets it: one Node start-up
/// instead of two (about 0.6 s a run here), and one process to stop on cancel.
fn no_relaunch(env: &mut std::collections::BTreeMap<String, String>) {
    env.entry(NO_RELAUNCH_VAR.to_owned())
        .or_insert_with(|| "true".to_owned());
}

/// `--resume=ID` when continuing a session.
fn resume_tail(resume: Option<&str>) -> Vec<String> {
    resume
        .map(|id| format!("--resume={id}"))
        .into_iter()
        .collect()
}

/// The prompt with `instructions` above it (Gemini has no flag for them).
fn prompt_with_instructions(request: &ContractRequest, prompt: String) -> String {
    if request.instructions.is_empty() {
        prompt
    } else {
        format!("{}\n\n{prompt}", request.instructions)
    }
}

#[async_trait::async_trait]
impl AgentCli for Gemini {
    const KIND: &'static str = KIND;
    const DEFAULT_PROGRAM: &'static str = DEFAULT_PROGRAM;
    const INSTALL_HINT: &'static str = INSTALL_HINT;
    const PROBES: ProbePlan = ProbePlan {
        version: VersionOrder::Alongside,
        tools: ToolsProof::FormatProbe {
            flags: "`--policy`",
        },
        structured_output: false,
        resume: true,
        upgrade: "upgrade @google/gemini-cli",
        resume_hint: "",
    };
    const SESSION_HANDLE: &'static str = "a gemini session id (a UUID)";
    // Gemini retries the API itself; what is left is transient trouble the caller may
    // retry later (if the side effects allow).
    const RETRY_UNAVAILABLE: bool = true;
    type Parser = GeminiStream;

    fn config(&self) -> &ProgramConfig {
        &self.config
    }

    fn attempt(
        &self,
        request: &ContractRequest,
        _ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<GeminiStream>, Error> {
        let name = &self.config.name;
        let resume = crate::agent_cli::resume_handle::<Self>(name, resume)?;
        let (args, policy) = self.kind_args(&request.tool_policy).map_err(|problem| {
            // A policy Gemini cannot honour is the caller's to change; a file we could
            // not write is ours.
            let code = match problem {
                ArgsError::Refused(_) => ErrorCode::ToolRejected,
                ArgsError::PolicyFile(_) => ErrorCode::Internal,
            };
            Error::new(
                code,
                format!("backend `{name}`: {problem}"),
                SideEffects::None,
            )
        })?;
        let prompt = match resume {
            Some(_) => agent_program::render_continuation(request),
            None => agent_program::render_prompt(request),
        };
        let mut run = self.config.agent_run(
            self.program(),
            args,
            resume_tail(resume),
            Some(prompt_with_instructions(request, prompt).into_bytes()),
            &request.workspace.root,
        );
        no_relaunch(&mut run.env);
        Ok(Attempt {
            keep: policy.into_iter().collect(),
            ..Attempt::new(run, GeminiStream::new())
        })
    }

    fn after_run(
        &self,
        _request: &ContractRequest,
        _ctx: &ExecutionContext,
        stream: &GeminiStream,
        result: &agent_exec_contract::ContractResult,
        notes: &mut Vec<String>,
    ) {
        if result.outcome != agent_exec_contract::Outcome::Succeeded
            && let Some(notice) = stream.last_notice()
        {
            notes.push(format!("gemini said: {notice}"));
        }
    }

    async fn version(&self) -> Result<ProgramVersion, ProbeError> {
        let mut env = self.config.env.clone();
        no_relaunch(&mut env);
        let output = agent_program::probe_output(
            self.program(),
            &["--version"],
            &env,
            PROBE_TIMEOUT,
            INSTALL_HINT,
        )
        .await?;
        let Some(number) = parse_version(&output) else {
            return Err(ProbeError::Unproven(format!(
                "`{} --version` printed {output:?}, not a version number; {INSTALL_HINT}",
                self.program()
            )));
        };
        Ok(ProgramVersion::new(format!("gemini-cli {number}")))
    }

    /// `gemini -o stream-json` with the run's own flags, in the folder's workspace,
    /// `HOME` the folder's home (a settings file selecting an API key, nothing else
    /// of the user's), the Gemini API pointed at a refused loopback port. Proven by
    /// `init` then the prompt's `message` on stdout; Gemini would then retry the
    /// refused port, so the probe stops it there. Nothing leaves the machine.
    ///
    /// `probe.resume`: `--resume=ID` instead; proven only when Gemini starts *that*
    /// session again (it refuses an id it has no session file for).
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError> {
        let request = folder.request(probe.tools);
        let port = agent_program::refused_loopback_port()?;
        let (mut args, _policy) = self
            .kind_args(&request.tool_policy)
            .map_err(|problem| ProbeError::Setup(problem.to_string()))?;
        args.extend(self.config.args.iter().cloned());
        args.extend(resume_tail(probe.resume));
        let settings = folder.home.join(".gemini");
        std::fs::create_dir_all(&settings)
            .and_then(|()| {
                std::fs::write(
                    settings.join("settings.json"),
                    r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
                )
            })
            .map_err(|e| ProbeError::Setup(format!("cannot write the probe's settings: {e}")))?;
        let mut env = self.config.env.clone();
        no_relaunch(&mut env);
        env.insert("HOME".to_owned(), folder.home.display().to_string());
        env.insert(
            "GOOGLE_GEMINI_BASE_URL".to_owned(),
            format!("http://127.0.0.1:{port}"),
        );
        env.insert("GEMINI_API_KEY".to_owned(), "agent-exec-probe".to_owned());
        let (mut session, mut prompted) = (None::<String>, false);
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
                // A resumed probe must start the session it was given, no other.
                Line::Init(id) if probe.resume.is_none_or(|wanted| wanted == id) => {
                    session = Some(id)
                }
                Line::Ignored if session.is_some() && is_user_message(line) => prompted = true,
                _ => {}
            }
            session.is_some() && prompted
        })
        .await?;
        seen.proof(|| match probe.resume {
            None => format!(
                "`{} --output-format=stream-json` did not start a session and read the prompt on stdout",
                self.program()
            ),
            Some(_) => format!(
                "`{} --resume` did not start the probe's own session again",
                self.program()
            ),
        })?;
        Ok(match session {
            Some(id) if agent_program::is_uuid(&id) => SessionSeen::Id(id),
            _ => SessionSeen::Missing("`init` carried no session id (a UUID)".to_owned()),
        })
    }
}

fn is_user_message(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|value| {
        value.get("type").and_then(Value::as_str) == Some("message")
            && value.get("role").and_then(Value::as_str) == Some("user")
    })
}

/// `0.61.0` (what `gemini --version` prints) → `0.61.0`: the first line that starts
/// with a digit.
pub fn parse_version(output: &str) -> Option<&str> {
    output
        .lines()
        .map(str::trim)
        .find(|line| line.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .and_then(|line| line.split_whitespace().next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fold(lines: &[&str]) -> (GeminiStream, Vec<Event>) {
        let mut stream = GeminiStream::new();
        let mut events = Vec::new();
        for line in lines {
            stream.line(line.as_bytes(), &mut events);
        }
        (stream, events)
    }

    #[test]
    fn the_answer_is_the_text_after_the_last_tool_and_only_result_is_final() {
        let (stream, events) = fold(&[
            r#"{"type":"init","session_id":"37755ccb-497f-42dc-81e8-82808a14b8a7","model":"m"}"#,
            r#"{"type":"message","role":"user","content":"hi"}"#,
            r#"{"type":"message","role":"assistant","content":"I'll look.","delta":true}"#,
            r#"{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{"file_path":"a"}}"#,
            r#"{"type":"tool_result","tool_id":"t1","status":"success","output":""}"#,
            r#"{"type":"message","role":"assistant","content":"It says ","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":"hi.","delta":true}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Pending, "no result yet");
        assert_eq!(
            stream.session(),
            Some("37755ccb-497f-42dc-81e8-82808a14b8a7")
        );
        let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                EventKind::TextDelta,
                EventKind::ToolExecStart,
                EventKind::ToolExecEnd,
                EventKind::TextDelta,
                EventKind::TextDelta
            ]
        );
        assert_eq!(events[2].tool, "read_file", "the result names its tool");
        let (stream, _) = fold(&[
            r#"{"type":"message","role":"assistant","content":"done","delta":true}"#,
            r#"{"type":"result","status":"success","stats":{"input_tokens":101,"output_tokens":11}}"#,
        ]);
        assert_eq!(stream.verdict(), Verdict::Completed("done".into()));
        assert_eq!(
            (
                stream.usage().prompt_tokens,
                stream.usage().completion_tokens
            ),
            (101, 11)
        );
    }

    #[test]
    fn failures_are_classified_by_the_code_gemini_quotes_then_by_words() {
        let failed = |message: &str| {
            let line = serde_json::json!({"type": "result", "status": "error",
                "error": {"type": "unknown", "message": message}})
            .to_string();
            fold(&[&line]).0.verdict()
        };
        let code = |message: &str| match failed(message) {
            Verdict::Failed { code, .. } => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(
                r#"[API Error: {"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}]"#
            ),
            ErrorCode::ProviderRejected
        );
        assert_eq!(
            code(r#"[API Error: {"error":{"code":503,"message":"overloaded"}}]"#),
            ErrorCode::ProviderUnavailable
        );
        assert_eq!(
            code("got status: 429 Too Many Requests"),
            ErrorCode::ProviderUnavailable
        );
        assert_eq!(code("fetch failed"), ErrorCode::ProviderUnavailable);
        assert_eq!(code("port 12345 closed"), ErrorCode::ProviderRejected);
        // A notice alone is not final.
        let (stream, _) = fold(&[r#"{"type":"error","severity":"warning","message":"slow"}"#]);
        assert_eq!(stream.verdict(), Verdict::Pending);
        assert_eq!(stream.last_notice(), Some("slow"));
    }

    #[test]
    fn the_tool_policy_is_a_deny_all_file_gemini_s_own_set_or_a_refusal() {
        let policy = |profile: &str, allowlist: &[&str]| ToolPolicy {
            profile: profile.into(),
            allowlist: allowlist.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(tool_args(&policy("", &[])), Ok(Some(DENY_ALL_POLICY)));
        assert_eq!(
            tool_args(&policy("reasoning", &[])),
            Ok(Some(DENY_ALL_POLICY))
        );
        assert_eq!(tool_args(&policy("workspace", &[])), Ok(None));
        assert!(tool_args(&policy("", &["read_file"])).is_err());
        assert!(tool_args(&policy("everything", &[])).is_err());
    }

    #[test]
    fn versions_parse_from_gemini_output_only() {
        assert_eq!(parse_version("0.61.0\n"), Some("0.61.0"));
        assert_eq!(parse_version("Warning: x\n0.61.0"), Some("0.61.0"));
        assert_eq!(parse_version("gemini"), None);
    }

    proptest! {
        #[test]
        fn the_stream_never_panics_on_any_lines(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..128), 0..8)) {
            let mut stream = GeminiStream::new();
            let mut events = Vec::new();
            for line in &lines {
                stream.line(line, &mut events);
            }
            let _ = stream.verdict();
        }

        #[test]
        fn never_panics_on_typed_objects(kind in "(init|message|tool_use|tool_result|error|result|x)", role in "(user|assistant|x)", status in "(success|error|x)", body in "[ -~]{0,40}") {
            let line = serde_json::json!({"type": kind, "role": role, "status": status,
                "content": body, "session_id": body, "tool_id": body, "message": body,
                "error": {"message": body}}).to_string();
            let mut stream = GeminiStream::new();
            let mut events = Vec::new();
            stream.line(line.as_bytes(), &mut events);
            let _ = stream.verdict();
        }
    }
}
