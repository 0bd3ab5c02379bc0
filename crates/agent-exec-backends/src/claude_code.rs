//! The `claude-code` backend: Claude Code run headless,
//! `claude -p --output-format stream-json --verbose`, driven through
//! [`crate::agent_program::drive`].
//!
//! ## The stream
//! One JSON object a line: a `system` line (`subtype: "init"`: session id, model,
//! tools), `assistant` lines (a message whose `content` holds `text`, `thinking` and
//! `tool_use` blocks), `user` lines (the `tool_result` blocks Claude Code sends back
//! after running a tool), optionally `stream_event` lines (raw Messages stream events,
//! with `--include-partial-messages`), and one final `result` line (`subtype`
//! `success` or `error_*`, `is_error`, `result` text, `usage`, `total_cost_usd`,
//! `api_error_status`).
//!
//! [`parse_line`] is a pure function from one line to what it says ([`Line`]);
//! [`ClaudeCodeStream`] is the [`StreamParser`] that turns those into contract events
//! in order, keeping the little state the mapping needs (tool names by id, the message
//! already streamed by partial events). Mapping:
//!
//! | stream                                   | contract                                  |
//! |------------------------------------------|-------------------------------------------|
//! | `text` block (main agent)                | `text_delta`                              |
//! | `thinking` block                         | `reasoning_delta`                         |
//! | `tool_use` block                         | `tool_execution_start` (tool, detail)     |
//! | `tool_result` block                      | `tool_execution_end` (same tool, detail)  |
//! | `stream_event` text / thinking delta     | `text_delta` / `reasoning_delta`, and the |
//! |                                          | whole message that follows is not re-sent |
//! | `stream_event` tool input JSON delta     | `tool_call_delta` (tool, JSON piece)      |
//! | `result`, success, `is_error: false`     | [`Verdict::Completed`] with `result`      |
//! | `result` with `is_error` or `error_*`    | [`Verdict::Failed`] (code below)          |
//!
//! Failure codes: `error_max_turns` / `error_max_budget_usd` → `budget_exceeded`; an
//! API error with status 429, 5xx or none (connection refused, timeout) →
//! `provider_unavailable`; any other → `provider_rejected`. Usage comes from the
//! `result` line only (`prompt_tokens` = `input_tokens` + both cache counts, the
//! tokens the prompts consumed; `completion_tokens` = `output_tokens`): the per-message
//! usage in `assistant` lines is the stream's *start* figure, not the total, so a run
//! that dies before its result reports zero, never a guess. Text of a subagent
//! (`parent_tool_use_id` set) is not the run's text and is not emitted; its tool calls
//! are (they are real work).
//!
//! ## The process
//! `claude -p --output-format stream-json --verbose --permission-mode
//! bypassPermissions [--resume=SESSION] [--model=M] [tool flags]
//! [--append-system-prompt=INSTRUCTIONS] <config args>`, the prompt on **stdin** (prior
//! `context` above it as a transcript, the `targets` to write below it, rendered as for
//! codex), the workspace root as working directory, `AGENT_EXEC_EXECUTION_ID` and
//! `AGENT_EXEC_ATTEMPT` in the environment (on top of the config's `env`). Stdin rather than an argument: a prompt in argv is
//! visible to every local user in `/proc/*/cmdline`, is capped at 128 KiB per
//! argument by the kernel, and is swallowed as a value by a variadic option (`--tools
//! a b PROMPT`) that a user put in `args`. Options with a value use the `--opt=value`
//! form so a value starting with `-` is never read as an option.
//! Sessions: Claude Code saves each run's conversation where it keeps every session
//! (`projects/` under its config folder, `CLAUDE_CONFIG_DIR` or `~/.claude`), and the
//! `init` line's `session_id` is reported as the execution's session handle
//! ([`StreamParser::session`]) at once. A resumed attempt runs `--resume=ID` (a UUID
//! only: the flag also takes a session *name*) with the continuation prompt on stdin.
//! Decision: persist, not `--no-session-persistence` — a runner killed mid-run can
//! only be resumed from a conversation on disk; Claude Code's own retention
//! (`cleanupPeriodDays`) removes old ones, agent-exec deletes nothing in a folder it
//! does not own. Not taken: `--session-id` (our own UUID up front) — the init line
//! arrives before the first model call, so nothing worth resuming precedes it.
//! Bypassing permission prompts is required headless (nobody
//! answers them); the [`ToolPolicy`] is enforced instead through `--tools`:
//!
//! * an `allowlist` → exactly those built-in tools (`--tools=A,B`; names must be plain
//!   tool names), and no MCP servers but those in `args` (`--strict-mcp-config`);
//! * profile `reasoning` or empty (the contract's default) → no tools at all;
//! * profile `workspace` → Claude Code's default tool set;
//! * any other profile → refused (`tool_rejected`) before anything starts.
//!
//! Structured output: a request's `output_schema` goes to `--json-schema=<schema>`;
//! Claude Code answers through its own `StructuredOutput` tool and puts the answer in
//! the `result` line's `structured_output`, which (as JSON) is the run's text. That
//! tool call is not reported as a tool run: it is the answer channel, with no effect
//! outside the process. The runtime validates the answer against the schema.
//!
//! Decisions not taken: no `--include-partial-messages` by default (token-level
//! deltas cost a line per few tokens; whole messages are what the spec names; users
//! may add it in `args` and the parser handles it); no environment defaults — the
//! user's own login/settings apply, and tests set `ANTHROPIC_BASE_URL`, a dummy key,
//! `IS_SANDBOX=1` (bypass refuses root otherwise) and a temporary `HOME` through the
//! config's `env`.

use std::collections::HashMap;
use std::time::Duration;

use agent_exec_contract::{
    ContractRequest, Error, ErrorCode, Event, EventKind, ExecutionContext, SideEffects, ToolPolicy,
    Usage,
};
use serde::Deserialize;
use serde_json::Value;

use crate::agent_cli::{
    AgentCli, AgentCliBackend, Attempt, Probe, ProbePlan, ProgramVersion, SessionSeen,
    ToolPolicyRefused, ToolsProof, VersionOrder,
};
use crate::agent_program::{
    self, AgentRun, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict,
};

/// The kind name in config (`kind = "claude-code"`).
pub const KIND: &str = "claude-code";

/// The program run when the config names none.
pub const DEFAULT_PROGRAM: &str = "claude";

/// What to install when the program is missing.
pub const INSTALL_HINT: &str =
    "install Claude Code: `npm install -g @anthropic-ai/claude-code` (or set `program`)";

/// How long the `--version` probe or the format probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The longest `detail` carried by a tool event (a whole file body is not a detail).
pub const MAX_DETAIL: usize = 512;

/// How many tool calls may be open at once before the oldest names are forgotten
/// (bounds the parser's memory on a hostile stream; a real run has a handful).
const MAX_OPEN_TOOLS: usize = 4096;

/// A tool call Claude Code reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    /// The command, path, pattern or URL it acts on (bounded by [`MAX_DETAIL`]).
    pub detail: String,
}

/// A content block of an `assistant` message that means something to the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    Text(String),
    Thinking(String),
    ToolUse(ToolUse),
}

/// A tool's result, from a `user` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub is_error: bool,
    /// For a failed tool, the start of its error text; empty otherwise.
    pub error: String,
}

/// The `result` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Final {
    pub verdict: Verdict,
    pub usage: Usage,
}

/// A `stream_event` line (only with `--include-partial-messages`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partial {
    /// A new message is streamed; its id.
    MessageStart(String),
    TextDelta(String),
    ThinkingDelta(String),
    /// A tool-use block starts streaming: its index in the message and tool name.
    ToolUseStart {
        index: u64,
        name: String,
    },
    /// A piece of a tool call's JSON input, for the block at `index`.
    InputJsonDelta {
        index: u64,
        json: String,
    },
    /// Any other stream event.
    Other,
}

/// What one line of `claude -p --output-format stream-json --verbose` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// `system` / `init`: the session id and the model Claude Code uses.
    Init {
        session_id: String,
        model: String,
        /// The tools the session has (`StructuredOutput` when run with `--json-schema`).
        tools: Vec<String>,
    },
    /// An `assistant` message.
    Assistant {
        message_id: String,
        /// Set when a subagent (Task tool) said it.
        subagent: bool,
        blocks: Vec<Block>,
    },
    /// A `user` line carrying tool results.
    ToolResults(Vec<ToolResult>),
    Partial(Partial),
    /// The final `result` line.
    Final(Final),
    /// A JSON object of a type the contract has nothing for (other `system`
    /// subtypes, hook events, …): ignored. Claude Code adds types between releases.
    Other,
    /// Not JSON, not an object, or without a `type`.
    Unrecognised,
}

/// The top-level fields read. Everything else in a line (the init line's command
/// lists, the result's per-model usage) is skipped by the decoder without being
/// built; each field is a [`Value`], so a field of an unexpected type is data, never
/// a decode error.
#[derive(Deserialize)]
struct RawLine {
    #[serde(rename = "type")]
    kind: Option<Value>,
    subtype: Option<Value>,
    message: Option<Value>,
    event: Option<Value>,
    parent_tool_use_id: Option<Value>,
    session_id: Option<Value>,
    model: Option<Value>,
    is_error: Option<Value>,
    result: Option<Value>,
    errors: Option<Value>,
    usage: Option<Value>,
    api_error_status: Option<Value>,
    terminal_reason: Option<Value>,
    is_api_error_message: Option<Value>,
    tools: Option<Value>,
    /// With `--json-schema`: the answer, as the `StructuredOutput` tool received it.
    structured_output: Option<Value>,
}

/// Parses one line (without its newline). Pure; never panics.
pub fn parse_line(line: &[u8]) -> Line {
    let Ok(raw) = serde_json::from_slice::<RawLine>(line) else {
        return Line::Unrecognised;
    };
    let Some(kind) = raw.kind.as_ref().and_then(Value::as_str) else {
        return Line::Unrecognised;
    };
    match kind {
        "assistant" => assistant(&raw),
        "user" => tool_results(raw.message.as_ref()),
        "result" => Line::Final(final_line(&raw)),
        // A subagent's partial events would interleave with the main message's (and
        // reset which message was streamed); its complete messages still come.
        "stream_event" if is_subagent(&raw) => Line::Other,
        "stream_event" => Line::Partial(partial(raw.event.as_ref())),
        "system" if str_of(raw.subtype.as_ref()) == "init" => Line::Init {
            session_id: str_of(raw.session_id.as_ref()).to_owned(),
            model: str_of(raw.model.as_ref()).to_owned(),
            tools: raw
                .tools
                .as_ref()
                .and_then(Value::as_array)
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(Value::as_str)
                        .take(MAX_OPEN_TOOLS)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        },
        _ => Line::Other,
    }
}

fn is_subagent(raw: &RawLine) -> bool {
    raw.parent_tool_use_id
        .as_ref()
        .is_some_and(|p| !p.is_null())
}

fn str_of(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or_default()
}

fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    str_of(value.get(key))
}

fn content_blocks(message: Option<&Value>) -> &[Value] {
    message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn assistant(raw: &RawLine) -> Line {
    let message = raw.message.as_ref();
    // Claude Code reports an API failure as a synthetic assistant message too; its
    // text is the error, not the model's words, and the result line carries it.
    let synthetic = raw.is_api_error_message.as_ref().and_then(Value::as_bool) == Some(true)
        || message.is_some_and(|m| field(m, "model") == "<synthetic>");
    if synthetic {
        return Line::Other;
    }
    let blocks = content_blocks(message)
        .iter()
        .filter_map(|block| match field(block, "type") {
            "text" => Some(Block::Text(field(block, "text").to_owned())),
            "thinking" => Some(Block::Thinking(field(block, "thinking").to_owned())),
            "tool_use" => Some(Block::ToolUse(ToolUse {
                id: field(block, "id").to_owned(),
                name: field(block, "name").to_owned(),
                detail: tool_detail(block.get("input")),
            })),
            _ => None,
        })
        .collect();
    Line::Assistant {
        message_id: message
            .map(|m| field(m, "id"))
            .unwrap_or_default()
            .to_owned(),
        subagent: is_subagent(raw),
        blocks,
    }
}

/// What a tool acts on: the first of the usual input fields, else the input itself.
fn tool_detail(input: Option<&Value>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    const KEYS: [&str; 6] = [
        "command",
        "file_path",
        "notebook_path",
        "path",
        "pattern",
        "url",
    ];
    for key in KEYS {
        if let Some(text) = input.get(key).and_then(Value::as_str) {
            return agent_program::bounded(text, MAX_DETAIL);
        }
    }
    match input {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => agent_program::bounded(&other.to_string(), MAX_DETAIL),
    }
}

fn tool_results(message: Option<&Value>) -> Line {
    let results = content_blocks(message)
        .iter()
        .filter(|block| field(block, "type") == "tool_result")
        .map(|block| {
            let is_error = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            ToolResult {
                tool_use_id: field(block, "tool_use_id").to_owned(),
                is_error,
                error: if is_error {
                    agent_program::bounded(&result_text(block.get("content")), MAX_DETAIL)
                } else {
                    String::new()
                },
            }
        })
        .collect::<Vec<_>>();
    if results.is_empty() {
        // The prompt echoed back, or a user message without tool results.
        Line::Other
    } else {
        Line::ToolResults(results)
    }
}

/// A tool result's content: a string, or blocks whose text parts are joined.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn partial(event: Option<&Value>) -> Partial {
    let Some(event) = event else {
        return Partial::Other;
    };
    match field(event, "type") {
        "message_start" => Partial::MessageStart(
            event
                .get("message")
                .map(|m| field(m, "id"))
                .unwrap_or_default()
                .to_owned(),
        ),
        "content_block_start" => {
            let block = event.get("content_block").unwrap_or(&Value::Null);
            match field(block, "type") {
                "tool_use" => Partial::ToolUseStart {
                    index: index_of(event),
                    name: field(block, "name").to_owned(),
                },
                _ => Partial::Other,
            }
        }
        "content_block_delta" => {
            let delta = event.get("delta").unwrap_or(&Value::Null);
            match field(delta, "type") {
                "text_delta" => Partial::TextDelta(field(delta, "text").to_owned()),
                "thinking_delta" => Partial::ThinkingDelta(field(delta, "thinking").to_owned()),
                "input_json_delta" => Partial::InputJsonDelta {
                    index: index_of(event),
                    json: field(delta, "partial_json").to_owned(),
                },
                _ => Partial::Other,
            }
        }
        _ => Partial::Other,
    }
}

fn index_of(event: &Value) -> u64 {
    event.get("index").and_then(Value::as_u64).unwrap_or(0)
}

fn final_line(raw: &RawLine) -> Final {
    let usage = raw.usage.as_ref().map(usage_of).unwrap_or_default();
    let subtype = str_of(raw.subtype.as_ref());
    let is_error = raw
        .is_error
        .as_ref()
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let text = str_of(raw.result.as_ref());
    let verdict = if subtype == "success" && !is_error {
        // With `--json-schema` the answer is `structured_output` (the `result` text is
        // whatever the model said around it); the runtime checks it against the schema.
        match raw.structured_output.as_ref().filter(|v| !v.is_null()) {
            Some(answer) => Verdict::Completed(answer.to_string()),
            None => Verdict::Completed(text.to_owned()),
        }
    } else {
        let code = classify_failure(subtype, raw);
        let detail = if !text.is_empty() {
            text.to_owned()
        } else {
            raw.errors
                .as_ref()
                .and_then(Value::as_array)
                .map(|errors| {
                    errors
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default()
        };
        // `success` with `is_error` says little; the terminal reason says more.
        let terminal_reason = str_of(raw.terminal_reason.as_ref());
        let label = match subtype {
            "" | "success" if !terminal_reason.is_empty() => terminal_reason,
            "" => "is_error",
            other => other,
        };
        let message = if detail.is_empty() {
            format!("claude-code reported an error ({label})")
        } else {
            format!(
                "claude-code reported an error ({label}): {}",
                agent_program::bounded(&detail, 2 * MAX_DETAIL)
            )
        };
        Verdict::Failed { code, message }
    };
    Final { verdict, usage }
}

/// The error code of a final line that is not a success (see the module doc).
fn classify_failure(subtype: &str, raw: &RawLine) -> ErrorCode {
    if matches!(subtype, "error_max_turns" | "error_max_budget_usd") {
        return ErrorCode::BudgetExceeded;
    }
    let text = str_of(raw.result.as_ref());
    // Claude Code before `terminal_reason: "api_error"` and `api_error_status` (2.1.197
    // ends a cut stream with `terminal_reason: "completed"`) says it only in the text:
    // "API Error: 529 …", or "API Error: Connection closed …" when no answer came.
    let legacy = text.strip_prefix("API Error:").map(str::trim_start);
    let status = raw
        .api_error_status
        .as_ref()
        .and_then(Value::as_u64)
        .or_else(|| legacy.and_then(leading_status));
    let api_error = str_of(raw.terminal_reason.as_ref()) == "api_error" || legacy.is_some();
    match status {
        Some(429) => ErrorCode::ProviderUnavailable,
        Some(s) if s >= 500 => ErrorCode::ProviderUnavailable,
        Some(_) => ErrorCode::ProviderRejected,
        // No HTTP status on an API error: the request never got an answer.
        None if api_error => ErrorCode::ProviderUnavailable,
        None => ErrorCode::ProviderRejected,
    }
}

/// The HTTP status a text starts with ("529 {…}" → 529), if it does.
fn leading_status(text: &str) -> Option<u64> {
    let (digits, rest) = (text.get(..3)?, text.get(3..)?);
    if digits.bytes().all(|b| b.is_ascii_digit()) && !rest.starts_with(|c: char| c.is_ascii_digit())
    {
        digits.parse().ok()
    } else {
        None
    }
}

fn usage_of(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: count("input_tokens")
            .saturating_add(count("cache_creation_input_tokens"))
            .saturating_add(count("cache_read_input_tokens")),
        completion_tokens: count("output_tokens"),
    }
}

/// The [`StreamParser`] for Claude Code's stream-json: [`parse_line`] plus the state
/// the mapping needs. Fresh per run.
#[derive(Debug, Default)]
pub struct ClaudeCodeStream {
    /// Open tool calls: id → (name, detail), so the end event names its tool.
    open_tools: HashMap<String, (String, String)>,
    /// The message whose text arrived as partial deltas (not to be sent twice).
    streamed_message: Option<String>,
    /// Whether the message being streamed has produced deltas yet.
    streaming: bool,
    /// Tool names of the streamed message's tool-use blocks, by block index.
    streaming_tools: HashMap<u64, String>,
    verdict: Verdict,
    usage: Usage,
    /// From the init line, for logs and tests.
    pub session_id: String,
    pub model: String,
    pub tools: Vec<String>,
    /// Ids of `StructuredOutput` calls, whose results are not tool ends either.
    answer_calls: std::collections::HashSet<String>,
}

impl ClaudeCodeStream {
    pub fn new() -> Self {
        Self::default()
    }

    fn tool_event(kind: EventKind, tool: &str, detail: &str) -> Event {
        Event {
            kind,
            text: String::new(),
            tool: tool.to_owned(),
            detail: detail.to_owned(),
        }
    }
}

impl StreamParser for ClaudeCodeStream {
    fn line(&mut self, line: &[u8], events: &mut Vec<Event>) {
        match parse_line(line) {
            Line::Init {
                session_id,
                model,
                tools,
            } => {
                self.session_id = session_id;
                self.model = model;
                self.tools = tools;
            }
            Line::Partial(Partial::MessageStart(id)) => {
                self.streamed_message = Some(id);
                self.streaming = false;
                self.streaming_tools.clear();
            }
            Line::Partial(Partial::ToolUseStart { index, name }) => {
                if self.streaming_tools.len() < MAX_OPEN_TOOLS {
                    self.streaming_tools.insert(index, name);
                }
            }
            Line::Partial(Partial::InputJsonDelta { index, json }) => {
                let tool = self
                    .streaming_tools
                    .get(&index)
                    .cloned()
                    .unwrap_or_default();
                events.push(Event {
                    kind: EventKind::ToolCallDelta,
                    text: json,
                    tool,
                    detail: String::new(),
                });
            }
            Line::Partial(Partial::TextDelta(text)) => {
                self.streaming = true;
                events.push(Event::text_delta(text));
            }
            Line::Partial(Partial::ThinkingDelta(text)) => {
                self.streaming = true;
                events.push(Event {
                    kind: EventKind::ReasoningDelta,
                    text,
                    tool: String::new(),
                    detail: String::new(),
                });
            }
            Line::Partial(Partial::Other) | Line::Other | Line::Unrecognised => {}
            Line::Assistant {
                message_id,
                subagent,
                blocks,
            } => {
                let already_streamed =
                    self.streaming && self.streamed_message.as_deref() == Some(message_id.as_str());
                for block in blocks {
                    match block {
                        Block::Text(text) if !subagent && !already_streamed => {
                            events.push(Event::text_delta(text));
                        }
                        Block::Thinking(text) if !subagent && !already_streamed => {
                            events.push(Event {
                                kind: EventKind::ReasoningDelta,
                                text,
                                tool: String::new(),
                                detail: String::new(),
                            });
                        }
                        Block::Text(_) | Block::Thinking(_) => {}
                        // Claude Code's own answer channel under `--json-schema`:
                        // no effect outside the process, so not a tool run (which
                        // would make every failure `side_effects: possible`).
                        Block::ToolUse(tool) if tool.name == STRUCTURED_OUTPUT_TOOL => {
                            self.answer_calls.insert(tool.id);
                        }
                        Block::ToolUse(tool) => {
                            events.push(Self::tool_event(
                                EventKind::ToolExecStart,
                                &tool.name,
                                &tool.detail,
                            ));
                            if self.open_tools.len() >= MAX_OPEN_TOOLS {
                                self.open_tools.clear();
                            }
                            self.open_tools.insert(tool.id, (tool.name, tool.detail));
                        }
                    }
                }
            }
            Line::ToolResults(results) => {
                for result in results {
                    if self.answer_calls.remove(&result.tool_use_id) {
                        continue;
                    }
                    let (name, detail) = self
                        .open_tools
                        .remove(&result.tool_use_id)
                        .unwrap_or_default();
                    let detail = if result.is_error {
                        format!("failed: {}", result.error)
                    } else {
                        detail
                    };
                    events.push(Self::tool_event(EventKind::ToolExecEnd, &name, &detail));
                }
            }
            Line::Final(last) => {
                self.verdict = last.verdict;
                self.usage = last.usage;
            }
        }
    }

    fn verdict(&self) -> Verdict {
        self.verdict.clone()
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn session(&self) -> Option<&str> {
        Some(self.session_id.as_str()).filter(|id| !id.is_empty())
    }
}

/// The tool Claude Code adds under `--json-schema`, through which the model answers.
pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

/// The longest `--json-schema` value: the kernel caps one argument at 128 KiB.
const MAX_SCHEMA_ARG: usize = 120 * 1024;

/// The `--tools` flags for a tool policy, or why it is refused.
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
                "tool `{bad}` in the allowlist is not a plain Claude Code tool name"
            )));
        }
        return Ok(vec![
            format!("--tools={}", policy.allowlist.join(",")),
            "--strict-mcp-config".to_owned(),
        ]);
    }
    match policy.profile.as_str() {
        "" | "reasoning" => Ok(vec![
            "--tools=".to_owned(),
            "--strict-mcp-config".to_owned(),
        ]),
        "workspace" => Ok(Vec::new()),
        other => Err(ToolPolicyRefused(format!(
            "tool profile `{other}` is unknown to the claude-code backend (known: reasoning, workspace, or an allowlist)"
        ))),
    }
}

/// Claude Code as an [`AgentCli`]: its argv, parser and probes. Holds only its
/// configuration.
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    config: ProgramConfig,
}

/// The `claude-code` backend.
pub type ClaudeCodeBackend = AgentCliBackend<ClaudeCode>;

impl ClaudeCodeBackend {
    pub fn new(config: ProgramConfig) -> Self {
        AgentCliBackend::of(ClaudeCode { config })
    }

    /// How `request` is run: program, argv, stdin, working directory. Refuses a tool
    /// policy it cannot enforce.
    pub fn agent_run(&self, request: &ContractRequest) -> Result<AgentRun, Error> {
        self.cli().run_for(request, None)
    }

    /// How a resumed attempt of `request` continues `session`: the same run with
    /// `--resume=SESSION` and only the continuation on stdin. Refuses a handle that is
    /// not a UUID (`--resume` also takes a session *name*, and a handle is data).
    pub fn resumed_run(&self, request: &ContractRequest, session: &str) -> Result<AgentRun, Error> {
        self.cli().run_for(request, Some(session))
    }
}

impl ClaudeCode {
    fn program(&self) -> &str {
        self.config.program_or(DEFAULT_PROGRAM)
    }

    /// The run of `request`, fresh or continuing `resume` (see
    /// [`ClaudeCodeBackend::resumed_run`]).
    fn run_for(&self, request: &ContractRequest, resume: Option<&str>) -> Result<AgentRun, Error> {
        let resume = crate::agent_cli::resume_handle::<Self>(&self.config.name, resume)?;
        let tools = tool_args(&request.tool_policy)?;
        let mut args: Vec<String> = [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
        ]
        .map(str::to_owned)
        .to_vec();
        if let Some(session) = resume {
            args.push(format!("--resume={session}"));
        }
        if let Some(model) = &self.config.model {
            args.push(format!("--model={model}"));
        }
        args.extend(tools);
        if !request.instructions.is_empty() {
            args.push(format!("--append-system-prompt={}", request.instructions));
        }
        if let Some(schema) = &request.output_schema {
            // In argv (Claude Code takes the schema only as a value): schemas are not
            // secrets, but they are bounded by the kernel's per-argument cap.
            let schema = schema.to_string();
            if schema.len() > MAX_SCHEMA_ARG {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "the output schema is {} bytes; claude-code takes at most {MAX_SCHEMA_ARG} in --json-schema",
                        schema.len()
                    ),
                    SideEffects::None,
                ));
            }
            args.push(format!("--json-schema={schema}"));
        }
        // The same rendering as codex: prior `context` as a transcript above the
        // prompt, the deliverables to write below it; resumed, the session already
        // holds the conversation, so only the continuation.
        let prompt = match resume {
            Some(_) => agent_program::render_continuation(request),
            None => agent_program::render_prompt(request),
        };
        Ok(self.config.agent_run(
            self.program(),
            args,
            Vec::new(),
            Some(prompt.into_bytes()),
            &request.workspace.root,
        ))
    }
}

#[async_trait::async_trait]
impl AgentCli for ClaudeCode {
    const KIND: &'static str = KIND;
    const DEFAULT_PROGRAM: &'static str = DEFAULT_PROGRAM;
    const INSTALL_HINT: &'static str = INSTALL_HINT;
    // The run's own flags, the default tool policy's (`--tools=` and
    // `--strict-mcp-config`) included; without them, to tell a program that speaks
    // stream-json but cannot hold a tool policy from one that does not.
    const PROBES: ProbePlan = ProbePlan {
        version: VersionOrder::Before,
        tools: ToolsProof::FormatProbe {
            flags: "`--tools`/`--strict-mcp-config`",
        },
        structured_output: true,
        resume: true,
        upgrade: "upgrade @anthropic-ai/claude-code",
        resume_hint: ", and keep `--no-session-persistence` out of `args`",
    };
    const SESSION_HANDLE: &'static str = "a Claude Code session id (a UUID)";
    // Claude Code retries model calls by itself (`CLAUDE_CODE_MAX_RETRIES`, and a cut
    // stream regardless): those retries run inside one attempt, the runtime adds none.
    const RETRY_UNAVAILABLE: bool = false;
    type Parser = ClaudeCodeStream;

    fn config(&self) -> &ProgramConfig {
        &self.config
    }

    fn attempt(
        &self,
        request: &ContractRequest,
        _ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<ClaudeCodeStream>, Error> {
        let run = self.run_for(request, resume)?;
        Ok(Attempt::new(run, ClaudeCodeStream::new()))
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
            Some(version) => Ok(ProgramVersion::new(format!("Claude Code {version}"))),
            None => Err(ProbeError::Unproven(format!(
                "`{program} --version` printed {:?}, not a Claude Code version; {INSTALL_HINT}",
                agent_program::bounded(&output, 200)
            ))),
        }
    }

    /// A real `claude -p --output-format stream-json` run, with the flags the default
    /// tool policy gives (`probe.tools`) or the `workspace` one (no tool flags), pointed
    /// at a refused loopback port with no retries and a throw-away config folder.
    /// Proven when the stream has an `init` line and a final `result` (Claude Code's
    /// own "connection refused"), which takes about half a second. The model request
    /// never leaves the machine, and the user's key is replaced by a dummy for the
    /// probe.
    ///
    /// `probe.schema`: with `--json-schema` too; proven only when the init line lists
    /// the `StructuredOutput` tool Claude Code adds for it (a program that accepted the
    /// flag and ignored it would not).
    ///
    /// `probe.resume`: `--resume=ID` on an earlier probe's session in the same folder;
    /// proven only when the init line names that session — for an id it has no saved
    /// conversation for, Claude Code prints a bare error `result` and no `init` — so
    /// the session was kept and found, which `--help` cannot show.
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError> {
        let mut request = folder.request(probe.tools);
        if probe.schema {
            request.output_schema = Some(serde_json::json!({
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"]
            }));
        }
        let run = self
            .run_for(&request, probe.resume)
            .map_err(|e| ProbeError::Setup(e.reason))?;
        let port = agent_program::refused_loopback_port()?;
        let mut env = run.env.clone();
        for (key, value) in [
            ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
            ("ANTHROPIC_API_KEY", "agent-exec-probe".to_owned()),
            ("CLAUDE_CODE_MAX_RETRIES", "0".to_owned()),
            ("CLAUDE_CONFIG_DIR", folder.home.display().to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ] {
            env.insert(key.to_owned(), value);
        }
        let mut stream = ClaudeCodeStream::new();
        let mut events = Vec::new();
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
            stream.line(line, &mut events);
            events.clear();
            !stream.session_id.is_empty() && stream.verdict() != Verdict::Pending
        })
        .await?;
        seen.proof(|| {
            format!(
                "`{} {}` did not answer with stream-json's init line and a result",
                run.program,
                run.args.join(" ")
            )
        })?;
        if probe.schema && !stream.tools.iter().any(|t| t == STRUCTURED_OUTPUT_TOOL) {
            return Err(ProbeError::Unproven(format!(
                "`{}` accepted --json-schema but its session has no {STRUCTURED_OUTPUT_TOOL} tool (tools: {:?})",
                run.program, stream.tools
            )));
        }
        if let Some(session) = probe.resume
            && stream.session_id != session
        {
            return Err(ProbeError::Unproven(format!(
                "`{} --resume` started session {:?}, not the probe's own",
                run.program, stream.session_id
            )));
        }
        Ok(if agent_program::is_uuid(&stream.session_id) {
            SessionSeen::Id(stream.session_id)
        } else {
            SessionSeen::Missing("the init line carried no session id (a UUID)".to_owned())
        })
    }
}

/// The version in `claude --version` output (`2.1.332 (Claude Code)`).
pub fn parse_version(output: &str) -> Option<&str> {
    let first = output.split_whitespace().next()?;
    let parts: Vec<&str> = first.split('.').collect();
    let numeric = parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    numeric.then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn events_of(lines: &[&str]) -> (Vec<Event>, ClaudeCodeStream) {
        let mut parser = ClaudeCodeStream::new();
        let mut events = Vec::new();
        for line in lines {
            parser.line(line.as_bytes(), &mut events);
        }
        (events, parser)
    }

    #[test]
    fn maps_tool_use_result_text_and_usage_in_order() {
        let (events, parser) = events_of(&[
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"m1","tools":["Bash"]}"#,
            r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"I'll write it"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"echo hi > a","description":"x"}}]},"parent_tool_use_id":null}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"done"}]}}"#,
            r#"{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"wrote a"}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"wrote a","usage":{"input_tokens":300,"cache_creation_input_tokens":5,"cache_read_input_tokens":7,"output_tokens":18},"total_cost_usd":0.1}"#,
        ]);
        let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                EventKind::ReasoningDelta,
                EventKind::TextDelta,
                EventKind::ToolExecStart,
                EventKind::ToolExecEnd,
                EventKind::TextDelta
            ]
        );
        assert_eq!(events[2].tool, "Bash");
        assert_eq!(events[2].detail, "echo hi > a");
        assert_eq!(
            events[3].tool, "Bash",
            "the end names the tool of its start"
        );
        assert_eq!(parser.verdict(), Verdict::Completed("wrote a".into()));
        assert_eq!(
            parser.usage(),
            Usage {
                prompt_tokens: 312,
                completion_tokens: 18
            }
        );
        assert_eq!(
            (parser.session_id.as_str(), parser.model.as_str()),
            ("s1", "m1")
        );
    }

    #[test]
    fn structured_output_is_the_text_and_its_tool_call_is_no_tool_run() {
        let (events, parser) = events_of(&[
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"m1","tools":["StructuredOutput"]}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"StructuredOutput","input":{"n":7}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Here you go","structured_output":{"n":7}}"#,
        ]);
        assert_eq!(parser.tools, ["StructuredOutput"]);
        assert!(
            events.iter().all(|e| e.tool != STRUCTURED_OUTPUT_TOOL),
            "{events:?}"
        );
        assert_eq!(parser.verdict(), Verdict::Completed(r#"{"n":7}"#.into()));
        // Without `structured_output` (or null) the text is the `result`, as before.
        let (_, parser) = events_of(&[
            r#"{"type":"result","subtype":"success","is_error":false,"result":"prose","structured_output":null}"#,
        ]);
        assert_eq!(parser.verdict(), Verdict::Completed("prose".into()));
    }

    #[test]
    fn errors_map_to_honest_codes() {
        let failed = |line: &str| match events_of(&[line]).1.verdict() {
            Verdict::Failed { code, message } => (code, message),
            other => panic!("expected a failure, got {other:?}"),
        };
        let (code, message) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":401,"result":"Failed to authenticate. API Error: 401"}"#,
        );
        assert_eq!(code, ErrorCode::ProviderRejected);
        assert!(message.contains("API Error: 401"), "{message}");
        let (code, _) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":529,"result":"overloaded"}"#,
        );
        assert_eq!(code, ErrorCode::ProviderUnavailable);
        let (code, _) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":null,"result":"Connection refused"}"#,
        );
        assert_eq!(code, ErrorCode::ProviderUnavailable);
        // Older Claude Code (2.1.197) says it in the text only.
        let (code, message) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"completed","result":"API Error: Connection closed mid-response. The response above may be incomplete."}"#,
        );
        assert_eq!(code, ErrorCode::ProviderUnavailable);
        assert!(message.contains("Connection closed"), "{message}");
        let (code, _) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"completed","result":"API Error: 529 {\"type\":\"error\"}"}"#,
        );
        assert_eq!(code, ErrorCode::ProviderUnavailable);
        let (code, _) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"completed","result":"API Error: 400 prompt is too long"}"#,
        );
        assert_eq!(code, ErrorCode::ProviderRejected);
        // Not an API error at all: the model's own words are not parsed as one.
        let (code, _) = failed(
            r#"{"type":"result","subtype":"success","is_error":true,"result":"I saw API Error: 503 in the log"}"#,
        );
        assert_eq!(code, ErrorCode::ProviderRejected);
        let (code, message) = failed(
            r#"{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["max turns 3"]}"#,
        );
        assert_eq!(code, ErrorCode::BudgetExceeded);
        assert!(message.contains("max turns 3"), "{message}");
        let (code, message) = failed(r#"{"type":"result","subtype":"error_during_execution"}"#);
        assert_eq!(code, ErrorCode::ProviderRejected);
        assert!(message.contains("error_during_execution"), "{message}");
    }

    #[test]
    fn partial_deltas_are_not_sent_twice_and_subagent_text_is_not_the_runs() {
        let (events, _) = events_of(&[
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"he"}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"llo"}}}"#,
            r#"{"type":"stream_event","parent_tool_use_id":"t0","event":{"type":"message_start","message":{"id":"msg_sub"}}}"#,
            r#"{"type":"stream_event","parent_tool_use_id":"t0","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sub"}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"hello"}]}}"#,
            r#"{"type":"assistant","message":{"id":"msg_9","content":[{"type":"text","text":"sub"},{"type":"tool_use","id":"t9","name":"Read","input":{"file_path":"/w/a"}}]},"parent_tool_use_id":"t0"}"#,
        ]);
        let texts: Vec<&str> = events.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["he", "llo", ""]);
        assert_eq!(events[2].kind, EventKind::ToolExecStart);
        assert_eq!(events[2].detail, "/w/a");
    }

    #[test]
    fn failed_tools_and_unknown_lines() {
        let (events, parser) = events_of(&[
            "not json",
            "[1]",
            r#"{"no":"type"}"#,
            r#"{"type":"system","subtype":"hook_started"}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"zz","is_error":true,"content":[{"type":"text","text":"Exit code 1"}]}]}}"#,
        ]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, EventKind::ToolExecEnd);
        assert_eq!(events[0].detail, "failed: Exit code 1");
        assert_eq!(parser.verdict(), Verdict::Pending);
        assert_eq!(parse_line(b"not json"), Line::Unrecognised);
        assert_eq!(parse_line(br#"{"type":"rate_limit_event"}"#), Line::Other);
    }

    #[test]
    fn details_are_bounded_on_char_boundaries() {
        let long = "é".repeat(MAX_DETAIL);
        let line = format!(
            r#"{{"type":"assistant","message":{{"id":"m","content":[{{"type":"tool_use","id":"t","name":"Write","input":{{"content":"{long}"}}}}]}}}}"#
        );
        let Line::Assistant { blocks, .. } = parse_line(line.as_bytes()) else {
            panic!("expected an assistant line")
        };
        let Block::ToolUse(tool) = &blocks[0] else {
            panic!("expected a tool use")
        };
        assert!(
            tool.detail.len() <= MAX_DETAIL + '…'.len_utf8(),
            "{}",
            tool.detail.len()
        );
    }

    #[test]
    fn tool_policy_maps_to_flags_or_refusal() {
        let policy = |profile: &str, allow: &[&str]| ToolPolicy {
            profile: profile.into(),
            allowlist: allow.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            tool_args(&policy("", &[])).unwrap(),
            ["--tools=", "--strict-mcp-config"]
        );
        assert_eq!(
            tool_args(&policy("reasoning", &[])).unwrap(),
            tool_args(&policy("", &[])).unwrap()
        );
        assert!(tool_args(&policy("workspace", &[])).unwrap().is_empty());
        assert_eq!(
            tool_args(&policy("workspace", &["Write", "Bash"])).unwrap()[0],
            "--tools=Write,Bash"
        );
        assert!(tool_args(&policy("", &["Bash(rm *)"])).is_err());
        assert!(tool_args(&policy("", &["a,b"])).is_err());
        assert!(
            tool_args(&policy("admin", &[]))
                .unwrap_err()
                .to_string()
                .contains("admin")
        );
    }

    #[test]
    fn argv_puts_the_prompt_on_stdin_and_values_in_one_argument() {
        let mut config = ProgramConfig::new("cc");
        config.model = Some("-odd".into());
        config.args = vec!["--max-turns".into(), "3".into()];
        let backend = ClaudeCodeBackend::new(config);
        let request = ContractRequest {
            prompt: "--not-an-option".into(),
            instructions: "-be brief".into(),
            targets: vec!["out.txt".into()],
            workspace: agent_exec_contract::WorkspaceHandle {
                root: "/w".into(),
                writable: Vec::new(),
            },
            ..Default::default()
        };
        let run = backend.agent_run(&request).unwrap();
        assert_eq!(run.program, "claude");
        assert!(
            run.args.contains(&"--model=-odd".to_owned()),
            "{:?}",
            run.args
        );
        assert!(!run.args.iter().any(|a| a.contains("--not-an-option")));
        let system = run
            .args
            .iter()
            .find(|a| a.starts_with("--append-system-prompt="))
            .unwrap();
        assert_eq!(system, "--append-system-prompt=-be brief");
        let stdin = String::from_utf8(run.stdin.clone().unwrap()).unwrap();
        assert!(
            stdin.starts_with("--not-an-option") && stdin.contains("- out.txt"),
            "{stdin}"
        );
        assert_eq!(run.args[run.args.len() - 2..], ["--max-turns", "3"]);
        assert_eq!(run.cwd, "/w");
        let refused = backend
            .agent_run(&ContractRequest {
                tool_policy: ToolPolicy {
                    profile: "root".into(),
                    allowlist: Vec::new(),
                },
                ..request
            })
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::ToolRejected);
    }

    #[test]
    fn sessions_persist_and_a_resumed_run_continues_one_by_uuid_only() {
        let backend = ClaudeCodeBackend::new(ProgramConfig::new("cc"));
        let request = ContractRequest {
            prompt: "carry on".into(),
            context: vec![agent_exec_contract::Message {
                role: "user".into(),
                content: "said before".into(),
            }],
            workspace: agent_exec_contract::WorkspaceHandle {
                root: "/w".into(),
                writable: Vec::new(),
            },
            ..Default::default()
        };
        let fresh = backend.agent_run(&request).unwrap();
        // Resume needs the conversation on disk.
        assert!(
            !fresh.args.iter().any(|a| a == "--no-session-persistence"),
            "{:?}",
            fresh.args
        );
        assert!(!fresh.args.iter().any(|a| a.starts_with("--resume")));
        let id = "1ca84c62-883d-4acf-bba8-e40c215865c5";
        let resumed = backend.resumed_run(&request, id).unwrap();
        assert!(
            resumed.args.contains(&format!("--resume={id}")),
            "{:?}",
            resumed.args
        );
        let without: Vec<&String> = resumed
            .args
            .iter()
            .filter(|a| !a.starts_with("--resume="))
            .collect();
        assert_eq!(without, fresh.args.iter().collect::<Vec<_>>(), "same flags");
        let stdin = String::from_utf8(resumed.stdin.unwrap()).unwrap();
        assert_eq!(stdin, "carry on", "the session holds the context already");
        for bad in ["--foo", "../x", "a-session-name", "-p"] {
            let refused = backend.resumed_run(&request, bad).unwrap_err();
            assert_eq!(refused.code, ErrorCode::Internal, "{bad}");
            assert_eq!(refused.side_effects, SideEffects::None);
            assert!(refused.reason.contains("cannot resume"), "{refused:?}");
        }
    }

    #[test]
    fn the_init_line_session_id_is_the_session_handle() {
        let (_, parser) = events_of(&[
            r#"{"type":"system","subtype":"init","session_id":"1ca84c62-883d-4acf-bba8-e40c215865c5","model":"m","tools":[]}"#,
        ]);
        assert_eq!(
            parser.session(),
            Some("1ca84c62-883d-4acf-bba8-e40c215865c5")
        );
        // A bogus `--resume` answers with a bare result carrying the id: not a session.
        let (_, parser) = events_of(&[
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"1ca84c62-883d-4acf-bba8-e40c215865c6"}"#,
        ]);
        assert_eq!(parser.session(), None);
    }

    #[test]
    fn credential_values_are_redacted() {
        let mut config = ProgramConfig::new("cc");
        config
            .env
            .insert("ANTHROPIC_API_KEY".into(), "sk-ant-very-secret".into());
        config.env.insert("IS_SANDBOX".into(), "1".into());
        let backend = ClaudeCodeBackend::new(config);
        assert_eq!(
            backend.redact("API Error: 401 key sk-ant-very-secret invalid, IS_SANDBOX=1"),
            "API Error: 401 key [redacted] invalid, IS_SANDBOX=1"
        );
    }

    #[test]
    fn version_is_parsed() {
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some("2.1.332"));
        assert_eq!(parse_version("1.0.0"), Some("1.0.0"));
        assert_eq!(parse_version("claude 2"), None);
        assert_eq!(parse_version(""), None);
    }

    proptest! {
        /// The twin of the fuzz target's session check: the init line's `session_id`
        /// is kept verbatim (the reporter decides what is an id), and a UUID passes
        /// the contract's check and [`agent_program::is_uuid`].
        #[test]
        fn any_init_session_id_is_the_session_verbatim(id in "\\PC{0,40}", uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}") {
            let mut parser = ClaudeCodeStream::new();
            let mut events = Vec::new();
            let line = serde_json::json!({"type": "system", "subtype": "init", "session_id": id}).to_string();
            parser.line(line.as_bytes(), &mut events);
            prop_assert_eq!(parser.session(), Some(id.as_str()).filter(|i| !i.is_empty()));
            prop_assert!(agent_program::is_uuid(&uuid));
            prop_assert!(agent_exec_contract::check_session_handle(&uuid).is_ok());
        }

        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut parser = ClaudeCodeStream::new();
            let mut events = Vec::new();
            parser.line(&bytes, &mut events);
            let _ = parser.verdict();
        }

        #[test]
        fn never_panics_on_typed_objects(
            kind in "(assistant|user|result|stream_event|system|x)",
            block in "(text|thinking|tool_use|tool_result|y)",
            event in "(message_start|content_block_start|content_block_delta|z)",
            delta in "(text_delta|thinking_delta|input_json_delta|w)",
            body in "[ -~]{0,40}",
        ) {
            let escaped = serde_json::to_string(&body).unwrap();
            let line = format!(
                r#"{{"type":"{kind}","subtype":{escaped},"message":{{"id":{escaped},"content":[{{"type":"{block}","text":{escaped},"input":{{"command":{escaped}}},"tool_use_id":{escaped},"is_error":true,"content":{escaped}}}]}},"event":{{"type":"{event}","index":{escaped},"content_block":{{"type":"{block}","name":{escaped}}},"message":{{"id":{escaped}}},"delta":{{"type":"{delta}","text":{escaped},"partial_json":{escaped}}}}},"usage":{{"input_tokens":{escaped}}},"api_error_status":{escaped}}}"#
            );
            let mut parser = ClaudeCodeStream::new();
            let mut events = Vec::new();
            parser.line(line.as_bytes(), &mut events);
            parser.line(line.as_bytes(), &mut events);
            let _ = (parser.verdict(), parser.usage());
        }
    }
}
