//! The hook envelope: the JSON event a harness writes on the hook's stdin.
//!
//! Three dialects share one shape, two have their own. Claude Code (and DeepSeek
//! Harness's Claude Code hook bridge, which sends the same), Codex and Gemini CLI all
//! send
//! `{session_id, transcript_path, cwd, hook_event_name, tool_name, tool_input,
//! tool_use_id, permission_mode?}`. They differ in what `tool_input` holds —
//! Codex's shell and `apply_patch` tools carry one `{command}` string, its MCP
//! tools their resolved arguments — and in what an answer may say: Codex honours
//! `deny` only (an `ask` is rejected by its output parser as unsupported), so the
//! Codex dialect never has an approval channel.
//!
//! Gemini CLI (0.61.0) names its events `SessionStart`, `BeforeAgent` (a prompt),
//! `BeforeTool` and `AfterTool`; they are read as `SessionStart`, `UserPromptSubmit`,
//! `PreToolUse` and `PostToolUse`. It sends no `permission_mode` and no
//! `tool_use_id`, and reads a refusal only in its own shape
//! (`{"decision":"deny","reason":…}`, see [`crate::output`]). It accepts `ask`, but a
//! headless run then waits for an answer nobody can give, and its event does not say
//! whether a person is there: the Gemini dialect never asks.
//! GitHub Copilot CLI (1.0.102, hooks configured under camelCase event names such as
//! `preToolUse`) sends `{sessionId, timestamp, cwd, toolName, toolArgs}` for a tool
//! call, `toolResult` added after it, `{…, source, initialPrompt}` at session start and
//! `{…, prompt}` for a prompt — and no event name: which hook ran is read from the
//! fields ([`copilot_event`]). `toolArgs` is the arguments object, or text: a
//! free-form tool's input (`apply_patch`'s patch), or JSON text, which is read as the
//! object it holds. Copilot also accepts Claude-style `PreToolUse` entries and then
//! sends Claude's envelope with Claude's tool names (`Read`) over Copilot's arguments
//! (`path`): the Copilot dialect refuses that form ([`EnvelopeError::ClaudeForm`])
//! rather than judge Copilot's arguments under Claude's names.
//! OpenCode (a plugin, not a command hook) is heard through the shim
//! `integrations/opencode/plugin/facet.js`, which sends its own shape (see
//! `from_opencode_object`): `{hook, directory, worktree, input, output}`.
//!
//! ## Invariants
//! - Parsing never panics and never trusts a field's type: every field is read
//!   from a `serde_json::Value` and a wrong type is a named error, not a default.
//! - Fields the guard does not need (`transcript_path`, `tool_use_id`, `model`,
//!   `turn_id`, …) are ignored, so a harness adding fields breaks nothing.
//! - An event name we do not act on is [`HookEvent::Other`], not an error: a hook
//!   registered on more events than it needs must stay silent on them.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

/// Which harness wrote the envelope, and therefore what an answer may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Claude Code, and DeepSeek Harness through `@deepseek-ai/dsh-hooks-claude-code`.
    ClaudeCode,
    /// OpenAI Codex: `tool_input` is `{command}` for shell and `apply_patch`; only
    /// `deny` is honoured.
    Codex,
    /// Gemini CLI: its own event names and answer shape, its own tool table
    /// ([`facet_core::ToolTable::gemini_cli`]); facet never asks it.
    Gemini,
    /// GitHub Copilot CLI's own hook format (camelCase events: `preToolUse`, …).
    /// `ask` is honoured in an interactive session; a headless one (`-p`) refuses it
    /// itself, which is why its setup runs the hook with `FACET_NO_APPROVAL=1` there.
    Copilot,
    /// OpenCode, through the plugin shim `integrations/opencode/plugin/facet.js`: its
    /// `tool.execute.before` arguments as one object; a refusal is thrown, and
    /// nothing can ask.
    OpenCode,
}

impl Dialect {
    /// Every `--dialect` value, as a usage error lists them.
    pub const FLAG_VALUES: &'static str =
        "claude-code (also claude, dsh), codex, copilot, gemini, opencode";

    /// Parse the `--dialect` flag value.
    pub fn from_flag(value: &str) -> Option<Self> {
        match value {
            "claude-code" | "claude" | "dsh" => Some(Self::ClaudeCode),
            "codex" => Some(Self::Codex),
            "gemini" => Some(Self::Gemini),
            "copilot" => Some(Self::Copilot),
            "opencode" => Some(Self::OpenCode),
            _ => None,
        }
    }

    /// What the host calls the `facet` MCP tool of a server named `facet`: Claude
    /// Code and Codex `mcp__facet__facet`, Copilot `facet-facet` (seen live), OpenCode
    /// `facet_facet` (`<server>_<tool>`).
    pub fn facet_tool_name(self) -> &'static str {
        match self {
            Self::ClaudeCode | Self::Codex => crate::facet_tool::DEFAULT_HOST_TOOL_NAME,
            Self::Copilot => "facet-facet",
            Self::Gemini => "mcp_facet_facet",
            Self::OpenCode => "facet_facet",
        }
    }

    /// The tool table this host's tools are judged by: the host's own where its names
    /// collide with DeepSeek Harness's (Gemini CLI, Copilot CLI, OpenCode), the
    /// built-in one for the others.
    pub fn tool_table(self) -> facet_core::ToolTable {
        match self {
            Self::ClaudeCode | Self::Codex => facet_core::ToolTable::builtin(),
            Self::Copilot => facet_core::ToolTable::copilot(),
            Self::Gemini => facet_core::ToolTable::gemini_cli(),
            Self::OpenCode => facet_core::ToolTable::opencode(),
        }
    }

    /// Whether an `ask` answer can reach a person in this dialect at all.
    pub fn honours_ask(self) -> bool {
        matches!(self, Self::ClaudeCode | Self::Copilot)
    }
}

/// One hook invocation, as far as the guard cares.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The host's session id. Data, never a path: the state store encodes it.
    /// Empty when the host has no session for the event (DeepSeek Harness sends
    /// `""` for a tool run outside an agent).
    pub session_id: String,
    /// The session's working directory, against which relative paths resolve.
    pub cwd: String,
    /// `permission_mode` as sent, when sent.
    pub permission_mode: Option<String>,
    /// What happened.
    pub event: HookEvent,
}

impl Envelope {
    /// `permission_mode: bypassPermissions` means nobody is asked anything: the
    /// session has no approval channel.
    pub fn bypasses_permissions(&self) -> bool {
        self.permission_mode.as_deref() == Some("bypassPermissions")
    }
}

/// The events the guard acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum HookEvent {
    /// A session starts (or resumes, or is cleared): state the rule and binding.
    SessionStart,
    /// The user sent a prompt: restate the binding if it changed.
    UserPromptSubmit,
    /// A tool is about to run: decide.
    PreToolUse {
        /// The host's tool name (`Read`, `read`, `apply_patch`, `mcp__facet__facet`, …).
        tool_name: String,
        /// The tool's arguments; an object, or `Value::Null` when absent.
        tool_input: Value,
    },
    /// A tool ran: record an approved `facet` call.
    PostToolUse {
        /// The host's tool name.
        tool_name: String,
        /// The tool's arguments.
        tool_input: Value,
        /// The tool's result, when the host sends one (`tool_response`).
        tool_response: Option<Value>,
    },
    /// Any other event (`Stop`, `Notification`, …): no opinion.
    Other(String),
}

/// Why an envelope could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeError {
    /// stdin was empty or only whitespace.
    Empty,
    /// stdin was not JSON.
    NotJson(String),
    /// The JSON was not an object.
    NotAnObject,
    /// A required field is absent.
    Missing(&'static str),
    /// Claude's envelope sent to the Copilot dialect: Copilot's Claude-style
    /// (`PreToolUse`) hook entries rename its tools (`view` → `Read`) but keep its
    /// arguments (`path`), which no table here reads together.
    ClaudeForm,
    /// A field has the wrong type or an unusable value.
    Invalid {
        /// The field.
        field: &'static str,
        /// What was wrong with it.
        problem: &'static str,
    },
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "the hook event on stdin is empty"),
            Self::NotJson(error) => write!(f, "the hook event on stdin is not JSON: {error}"),
            Self::NotAnObject => write!(f, "the hook event on stdin is not a JSON object"),
            Self::Missing(field) => write!(f, "the hook event has no `{field}` field"),
            Self::ClaudeForm => write!(
                f,
                "the hook event is Copilot's Claude-style `PreToolUse` form, whose tool names \
                 (`Read`) do not match its arguments (`path`); register `facet hook --dialect \
                 copilot` under the camelCase events (`preToolUse`, …) as \
                 integrations/copilot/facet.json does"
            ),
            Self::Invalid { field, problem } => {
                write!(f, "the hook event's `{field}` field {problem}")
            }
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// Read a Claude Code or Codex envelope from the bytes on stdin. Never panics.
pub fn parse(input: &[u8]) -> Result<Envelope, EnvelopeError> {
    parse_as(input, Dialect::ClaudeCode)
}

/// Read an envelope in `dialect`'s format from the bytes on stdin. Never panics.
pub fn parse_as(input: &[u8], dialect: Dialect) -> Result<Envelope, EnvelopeError> {
    let object = json_object(input)?;
    match dialect {
        Dialect::ClaudeCode | Dialect::Codex | Dialect::Gemini => from_object(object),
        Dialect::Copilot => from_copilot_object(object),
        Dialect::OpenCode => from_opencode_object(object),
    }
}

/// What the OpenCode plugin shim sends: the arguments of OpenCode's
/// `tool.execute.before(input, output)` (opencode-ai 1.18.33 calls it with
/// `{tool, sessionID, callID}` and `{args}`) and the plugin's `directory` (the folder
/// OpenCode runs tools in, against which it joins relative paths) and `worktree`:
///
/// ```json
/// {"hook": "tool.execute.before", "directory": "/abs", "worktree": "/abs",
///  "input": {"tool": "read", "sessionID": "ses_…", "callID": "call_1"},
///  "output": {"args": {"filePath": "../x"}}}
/// ```
///
/// It maps onto the common envelope: `sessionID` → `session_id`, `directory` →
/// `cwd`, `tool` / `args` → a `PreToolUse`. The shim also sends
/// `experimental.chat.system.transform` (`input: {sessionID}`), called before each of
/// a session's model requests with the system prompt to add to: it reads as a
/// [`HookEvent::SessionStart`], whose answer (the rule and the binding) the shim adds.
/// Any other `hook` is [`HookEvent::Other`].
/// `worktree` is read by nobody: facet's facet is the session's folder, whatever
/// OpenCode takes for the worktree (`/` outside git).
fn from_opencode_object(mut object: Map<String, Value>) -> Result<Envelope, EnvelopeError> {
    let hook = required_string(&object, "hook")?;
    let cwd = absolute_cwd(required_string(&object, "directory")?, "directory")?;
    if hook == OPENCODE_SYSTEM_HOOK {
        // The system prompt of a session's model request: where the rule and the
        // binding go. Without a session (OpenCode's own side calls) it is no event.
        let session_id = object
            .get("input")
            .and_then(|input| input.get("sessionID"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let event = if session_id.is_empty() {
            HookEvent::Other(hook)
        } else {
            HookEvent::SessionStart
        };
        return Ok(Envelope {
            session_id,
            cwd,
            permission_mode: None,
            event,
        });
    }
    if hook != OPENCODE_TOOL_HOOK {
        return Ok(Envelope {
            session_id: String::new(),
            cwd,
            permission_mode: None,
            event: HookEvent::Other(hook),
        });
    }
    let Some(Value::Object(call)) = object.remove("input") else {
        return Err(match object.get("input") {
            None => EnvelopeError::Missing("input"),
            Some(_) => EnvelopeError::Invalid {
                field: "input",
                problem: "is not an object",
            },
        });
    };
    let session_id = match call.get("sessionID") {
        Some(Value::String(text)) if text.is_empty() => String::new(),
        _ => required_string(&call, "sessionID")?,
    };
    let tool_name = required_string(&call, "tool")?;
    let tool_input = match object.remove("output") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(mut output)) => tool_input_field(&mut output, "args")?,
        Some(_) => {
            return Err(EnvelopeError::Invalid {
                field: "output",
                problem: "is not an object",
            });
        }
    };
    Ok(Envelope {
        session_id,
        cwd,
        permission_mode: None,
        event: HookEvent::PreToolUse {
            tool_name,
            tool_input,
        },
    })
}

/// The OpenCode plugin hook facet judges.
const OPENCODE_TOOL_HOOK: &str = "tool.execute.before";
/// The OpenCode plugin hook through which the rule and the binding reach the model.
const OPENCODE_SYSTEM_HOOK: &str = "experimental.chat.system.transform";

fn json_object(input: &[u8]) -> Result<Map<String, Value>, EnvelopeError> {
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(EnvelopeError::Empty);
    }
    let value: Value =
        serde_json::from_slice(&replace_lone_surrogates(input)).map_err(|error| {
            // serde_json's message names line and column, which is what a person
            // debugging a hook configuration needs; it never echoes the input.
            EnvelopeError::NotJson(error.to_string())
        })?;
    let Value::Object(object) = value else {
        return Err(EnvelopeError::NotAnObject);
    };
    Ok(object)
}

/// `input` with every lone UTF-16 surrogate escape (`\uD800`–`\uDFFF` not part of a
/// high+low pair) replaced by `\uFFFD`.
///
/// Why: Node's `JSON.stringify` writes a lone surrogate as such an escape, and
/// serde_json rejects it, so without this a path the host considers valid would
/// make the hook fail open. Node writes such a path to disk with U+FFFD, so judging
/// the replaced text judges the file the tool will touch.
///
/// Escapes are scanned as JSON does: a backslash consumes the next character, so
/// `\\ud800` is an escaped backslash followed by text, not an escape. Bytes outside
/// escapes are copied unchanged; input without any surrogate escape is borrowed.
pub fn replace_lone_surrogates(input: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Vec<u8> = Vec::new();
    // `input[..copied]` is already in `out` (when anything was replaced).
    let mut copied = 0;
    let mut i = 0;
    while i < input.len() {
        if input[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = unicode_escape_at(input, i) else {
            // `\x` for any other x: both bytes are consumed together.
            i += 2;
            continue;
        };
        let is_high = (0xD800..0xDC00).contains(&unit);
        let is_low = (0xDC00..0xE000).contains(&unit);
        if is_high
            && unicode_escape_at(input, i + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next))
        {
            i += 12;
            continue;
        }
        if is_high || is_low {
            out.extend_from_slice(&input[copied..i]);
            out.extend_from_slice(b"\\uFFFD");
            copied = i + 6;
        }
        i += 6;
    }
    if copied == 0 {
        return Cow::Borrowed(input);
    }
    out.extend_from_slice(&input[copied..]);
    Cow::Owned(out)
}

/// The code unit of a `\uXXXX` escape starting at `input[at]`, if there is one.
fn unicode_escape_at(input: &[u8], at: usize) -> Option<u32> {
    let escape = input.get(at..at.checked_add(6)?)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let hex = std::str::from_utf8(&escape[2..]).ok()?;
    u32::from_str_radix(hex, 16).ok()
}

/// Whether raw bytes that could not be decoded may be a tool call in `dialect`'s
/// format: [`looks_like_pre_tool_use`], or for Copilot (whose events carry no name)
/// any event with a `"toolName"` key. Fail closed: a false positive only refuses.
pub fn may_be_tool_call(input: &[u8], dialect: Dialect) -> bool {
    match dialect {
        Dialect::ClaudeCode | Dialect::Codex | Dialect::Gemini | Dialect::OpenCode => {
            looks_like_pre_tool_use(input)
        }
        Dialect::Copilot => {
            looks_like_pre_tool_use(input) || find(input, b"\"toolName\"").is_some()
        }
    }
}

/// Whether raw bytes that could not be decoded show a tool call event: the key
/// `"hook_event_name"`, then (whitespace allowed) `:` and `"PreToolUse"` (or Gemini
/// CLI's `"BeforeTool"`), or the OpenCode shim's `"hook"` `:` `"tool.execute.before"`.
///
/// Used only to fail closed on an event the host considers valid but serde_json
/// cannot read (nesting deeper than its recursion limit, an event over the size
/// cap): such a call must be refused, not run unjudged. A false positive (the text
/// inside some string) can only turn an unreadable event into a refusal.
pub fn looks_like_pre_tool_use(input: &[u8]) -> bool {
    key_with_value(input, b"\"hook_event_name\"", b"\"PreToolUse\"")
        || key_with_value(input, b"\"hook_event_name\"", b"\"BeforeTool\"")
        || key_with_value(input, b"\"hook\"", b"\"tool.execute.before\"")
}

/// Whether `input` holds the JSON key `key`, then (whitespace allowed) `:` and `value`.
fn key_with_value(input: &[u8], key: &[u8], value: &[u8]) -> bool {
    let mut from = 0;
    while let Some(found) = find(&input[from..], key) {
        let mut at = from + found + key.len();
        at += leading_whitespace(&input[at..]);
        if input.get(at) == Some(&b':') {
            at += 1;
            at += leading_whitespace(&input[at..]);
            if input[at..].starts_with(value) {
                return true;
            }
        }
        from += found + 1;
    }
    false
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn leading_whitespace(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

fn from_object(mut object: Map<String, Value>) -> Result<Envelope, EnvelopeError> {
    // An empty id is accepted: DeepSeek Harness's bridge sends `""` when a tool runs
    // outside any agent session. The hook judges such calls without state.
    let session_id = match object.get("session_id") {
        Some(Value::String(text)) if text.is_empty() => String::new(),
        _ => required_string(&object, "session_id")?,
    };
    let cwd = absolute_cwd(required_string(&object, "cwd")?, "cwd")?;
    let event_name = required_string(&object, "hook_event_name")?;
    let permission_mode = optional_string(&object, "permission_mode")?;

    let event = match event_name.as_str() {
        "SessionStart" => HookEvent::SessionStart,
        // Gemini CLI's names for the same moments (no host uses the other's names).
        "UserPromptSubmit" | "BeforeAgent" => HookEvent::UserPromptSubmit,
        "PreToolUse" | "BeforeTool" => HookEvent::PreToolUse {
            tool_name: required_string(&object, "tool_name")?,
            tool_input: tool_input(&mut object)?,
        },
        "PostToolUse" | "AfterTool" => HookEvent::PostToolUse {
            tool_name: required_string(&object, "tool_name")?,
            tool_input: tool_input(&mut object)?,
            tool_response: object.remove("tool_response"),
        },
        _ => HookEvent::Other(event_name),
    };
    Ok(Envelope {
        session_id,
        cwd,
        permission_mode,
        event,
    })
}

/// Which Copilot hook wrote `object`, from its fields (Copilot sends no event name):
/// `toolResult` after a tool (`postToolUse`), `error` beside a tool name after a
/// failed one (`postToolUseFailure`), `toolName` before one (`preToolUse`),
/// `source` at session start, `prompt` with a prompt. A tool call is recognised
/// before anything else, so an event facet misreads can only be judged, never let
/// through unjudged.
pub fn copilot_event(object: &Map<String, Value>) -> &'static str {
    let has = |field: &str| object.get(field).is_some_and(|value| !value.is_null());
    if has("toolName") {
        if has("toolResult") {
            "postToolUse"
        } else if has("error") {
            "postToolUseFailure"
        } else {
            "preToolUse"
        }
    } else if has("source") {
        "sessionStart"
    } else if has("prompt") {
        "userPromptSubmitted"
    } else {
        "other"
    }
}

fn from_copilot_object(mut object: Map<String, Value>) -> Result<Envelope, EnvelopeError> {
    if object.contains_key("hook_event_name") {
        return Err(EnvelopeError::ClaudeForm);
    }
    let session_id = match object.get("sessionId") {
        Some(Value::String(text)) if text.is_empty() => String::new(),
        _ => required_string(&object, "sessionId")?,
    };
    let cwd = absolute_cwd(required_string(&object, "cwd")?, "cwd")?;
    let event = match copilot_event(&object) {
        "preToolUse" => HookEvent::PreToolUse {
            tool_name: required_string(&object, "toolName")?,
            tool_input: copilot_tool_args(&mut object)?,
        },
        "postToolUse" => HookEvent::PostToolUse {
            tool_name: required_string(&object, "toolName")?,
            tool_input: copilot_tool_args(&mut object)?,
            tool_response: object.remove("toolResult"),
        },
        "sessionStart" => HookEvent::SessionStart,
        "userPromptSubmitted" => HookEvent::UserPromptSubmit,
        other => HookEvent::Other(other.to_string()),
    };
    Ok(Envelope {
        session_id,
        cwd,
        permission_mode: None,
        event,
    })
}

/// Copilot's `toolArgs`: an object as is; text holding a JSON object as that object;
/// any other text as text (a free-form tool's input, `apply_patch`'s patch — the hook
/// refuses text for a tool whose arguments it must read); absent or `null` as no
/// arguments.
fn copilot_tool_args(object: &mut Map<String, Value>) -> Result<Value, EnvelopeError> {
    match object.remove("toolArgs") {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(value @ Value::Object(_)) => Ok(value),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => Ok(value),
            _ => Ok(Value::String(text)),
        },
        Some(_) => Err(EnvelopeError::Invalid {
            field: "toolArgs",
            problem: "is neither an object nor text",
        }),
    }
}

/// The session directory (from the envelope's `field`), checked: relative paths are
/// resolved against it, so a relative one would make them relative to the hook's own
/// cwd, which is exactly the leak the design forbids; a NUL byte names no directory.
fn absolute_cwd(cwd: String, field: &'static str) -> Result<String, EnvelopeError> {
    if cwd.contains('\0') {
        return Err(EnvelopeError::Invalid {
            field,
            problem: "contains a NUL byte",
        });
    }
    if !cwd.starts_with('/') {
        return Err(EnvelopeError::Invalid {
            field,
            problem: "is not an absolute path",
        });
    }
    Ok(cwd)
}

fn required_string(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<String, EnvelopeError> {
    match object.get(field) {
        None | Some(Value::Null) => Err(EnvelopeError::Missing(field)),
        Some(Value::String(text)) if text.is_empty() => Err(EnvelopeError::Invalid {
            field,
            problem: "is empty",
        }),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(EnvelopeError::Invalid {
            field,
            problem: "is not a string",
        }),
    }
}

fn optional_string(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, EnvelopeError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(EnvelopeError::Invalid {
            field,
            problem: "is not a string",
        }),
    }
}

/// `tool_input` must be an object when present. Absent or `null` reads as "no
/// arguments" (a tool that names no path); anything else is a malformed event.
fn tool_input(object: &mut Map<String, Value>) -> Result<Value, EnvelopeError> {
    tool_input_field(object, "tool_input")
}

fn tool_input_field(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Value, EnvelopeError> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(value @ Value::Object(_)) => Ok(value),
        Some(_) => Err(EnvelopeError::Invalid {
            field,
            problem: "is not an object",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bytes(value: Value) -> Vec<u8> {
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn reads_a_claude_code_pre_tool_use() {
        let envelope = parse(&bytes(json!({
            "session_id": "s1",
            "transcript_path": "/t.jsonl",
            "cwd": "/w/proj",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "/etc/passwd"},
            "tool_use_id": "toolu_1",
            "permission_mode": "default"
        })))
        .unwrap();
        assert_eq!(envelope.session_id, "s1");
        assert_eq!(envelope.cwd, "/w/proj");
        assert!(!envelope.bypasses_permissions());
        assert_eq!(
            envelope.event,
            HookEvent::PreToolUse {
                tool_name: "Read".into(),
                tool_input: json!({"file_path": "/etc/passwd"}),
            }
        );
    }

    #[test]
    fn reads_a_codex_apply_patch_with_extra_fields() {
        let envelope = parse(&bytes(json!({
            "session_id": "0199",
            "turn_id": "t",
            "transcript_path": null,
            "cwd": "/w",
            "hook_event_name": "PreToolUse",
            "model": "gpt-5",
            "permission_mode": "bypassPermissions",
            "tool_name": "apply_patch",
            "tool_input": {"command": "*** Begin Patch\n*** End Patch"},
            "tool_use_id": "call"
        })))
        .unwrap();
        assert!(envelope.bypasses_permissions());
        assert!(
            matches!(envelope.event, HookEvent::PreToolUse { ref tool_name, .. } if tool_name == "apply_patch")
        );
    }

    #[test]
    fn reads_gemini_cli_events_by_their_own_names() {
        // As Gemini CLI 0.61.0 sent it to a BeforeTool command hook.
        let envelope = parse(&bytes(json!({
            "session_id": "4c18b038-5dba-495e-b8e8-6b81621a69be",
            "transcript_path": "/h/.gemini/tmp/proj/chats/session-4c18b038.jsonl",
            "cwd": "/w/proj",
            "hook_event_name": "BeforeTool",
            "timestamp": "2026-12-07T01:13:34.068Z",
            "tool_name": "glob",
            "tool_input": {"pattern": "../outside/*.txt"}
        })))
        .unwrap();
        assert_eq!(
            envelope.event,
            HookEvent::PreToolUse {
                tool_name: "glob".into(),
                tool_input: json!({"pattern": "../outside/*.txt"}),
            }
        );
        let event = |name: &str| {
            parse(&bytes(
                json!({"session_id": "s", "cwd": "/w", "hook_event_name": name,
                "tool_name": "read_file", "tool_input": {}, "tool_response": {}}),
            ))
            .unwrap()
            .event
        };
        assert_eq!(event("BeforeAgent"), HookEvent::UserPromptSubmit);
        assert!(matches!(event("AfterTool"), HookEvent::PostToolUse { .. }));
        assert!(looks_like_pre_tool_use(
            br#"{"hook_event_name": "BeforeTool", "x": [[["#
        ));
    }

    #[test]
    fn reads_what_the_opencode_shim_sends_and_names_what_is_wrong() {
        fn parse_as_opencode(input: &[u8]) -> Result<Envelope, EnvelopeError> {
            parse_as(input, Dialect::OpenCode)
        }
        let envelope = parse_as_opencode(&bytes(json!({
            "hook": "tool.execute.before", "directory": "/w/room", "worktree": "/",
            "input": {"tool": "read", "sessionID": "ses_1", "callID": "c"},
            "output": {"args": {"filePath": "../x"}},
        })))
        .unwrap();
        assert_eq!(envelope.session_id, "ses_1");
        assert_eq!(envelope.cwd, "/w/room");
        assert_eq!(
            envelope.event,
            HookEvent::PreToolUse {
                tool_name: "read".into(),
                tool_input: json!({"filePath": "../x"}),
            }
        );
        let other = parse_as_opencode(br#"{"hook":"chat.message","directory":"/w"}"#).unwrap();
        assert_eq!(other.event, HookEvent::Other("chat.message".into()));
        let system = parse_as_opencode(br#"{"hook":"experimental.chat.system.transform","directory":"/w","input":{"sessionID":"ses_2"}}"#,
        )
        .unwrap();
        assert_eq!(
            (system.session_id.as_str(), &system.event),
            ("ses_2", &HookEvent::SessionStart)
        );
        let side = parse_as_opencode(
            br#"{"hook":"experimental.chat.system.transform","directory":"/w","input":{}}"#,
        )
        .unwrap();
        assert!(matches!(side.event, HookEvent::Other(_)));
        assert_eq!(
            parse_as_opencode(br#"{"hook":"tool.execute.before","directory":"w"}"#),
            Err(EnvelopeError::Invalid {
                field: "directory",
                problem: "is not an absolute path"
            })
        );
        assert_eq!(
            parse_as_opencode(br#"{"hook":"tool.execute.before","directory":"/w"}"#),
            Err(EnvelopeError::Missing("input"))
        );
        assert_eq!(
            parse_as_opencode(br#"{"hook":"tool.execute.before","directory":"/w","input":{"tool":"read","sessionID":"s"},"output":{"args":"x"}}"#
            ),
            Err(EnvelopeError::Invalid {
                field: "args",
                problem: "is not an object"
            })
        );
        assert!(looks_like_pre_tool_use(
            br#"{"hook" : "tool.execute.before", [[["#
        ));
    }

    #[test]
    fn other_events_are_not_errors() {
        let envelope = parse(br#"{"session_id":"s","cwd":"/w","hook_event_name":"Stop"}"#).unwrap();
        assert_eq!(envelope.event, HookEvent::Other("Stop".into()));
    }

    #[test]
    fn names_what_is_wrong() {
        assert_eq!(parse(b"  \n"), Err(EnvelopeError::Empty));
        assert!(matches!(parse(b"{nope"), Err(EnvelopeError::NotJson(_))));
        assert_eq!(parse(b"[1]"), Err(EnvelopeError::NotAnObject));
        assert_eq!(
            parse(br#"{"cwd":"/w","hook_event_name":"Stop"}"#),
            Err(EnvelopeError::Missing("session_id"))
        );
        assert_eq!(
            parse(br#"{"session_id":"s","cwd":"rel","hook_event_name":"Stop"}"#),
            Err(EnvelopeError::Invalid {
                field: "cwd",
                problem: "is not an absolute path"
            })
        );
        assert_eq!(
            parse(br#"{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":"x"}"#),
            Err(EnvelopeError::Invalid {
                field: "tool_input",
                problem: "is not an object"
            })
        );
        assert_eq!(
            parse(br#"{"session_id":7,"cwd":"/w","hook_event_name":"Stop"}"#),
            Err(EnvelopeError::Invalid {
                field: "session_id",
                problem: "is not a string"
            })
        );
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let rewrite = |text: &str| -> String {
            String::from_utf8(replace_lone_surrogates(text.as_bytes()).into_owned()).unwrap()
        };
        // A valid pair is kept, and borrowed untouched.
        let pair = r#"{"p":"/a/\ud83d\ude00"}"#;
        assert!(matches!(
            replace_lone_surrogates(pair.as_bytes()),
            Cow::Borrowed(_)
        ));
        assert_eq!(rewrite(pair), pair);
        // A lone high, a lone low, a high followed by a non-low escape.
        assert_eq!(rewrite(r#""\ud800x""#), r#""\uFFFDx""#);
        assert_eq!(rewrite(r#""x\uDC00""#), r#""x\uFFFD""#);
        assert_eq!(rewrite(r#""\uD800\u0041""#), r#""\uFFFD\u0041""#);
        assert_eq!(
            rewrite(r#""\ud800\ud800\udc00""#),
            r#""\uFFFD\ud800\udc00""#
        );
        // An escaped backslash followed by text is not an escape.
        assert_eq!(rewrite(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(rewrite(r#""\\\ud800""#), r#""\\\uFFFD""#);
        // Truncated escapes are left for serde_json to name.
        assert_eq!(rewrite(r#""\ud8"#), r#""\ud8"#);
        assert_eq!(rewrite("\\"), "\\");

        let envelope = parse(
            br#"{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/etc/\ud800x"}}"#,
        )
        .unwrap();
        assert_eq!(
            envelope.event,
            HookEvent::PreToolUse {
                tool_name: "Read".into(),
                tool_input: json!({"file_path": "/etc/\u{FFFD}x"}),
            }
        );
    }

    #[test]
    fn pre_tool_use_is_recognised_in_raw_bytes() {
        assert!(looks_like_pre_tool_use(
            br#"{"hook_event_name":"PreToolUse","tool_input":[[[["#
        ));
        assert!(looks_like_pre_tool_use(
            b"{ \"x\": 1, \"hook_event_name\" \n:\t \"PreToolUse\" , \"tool_input\":"
        ));
        assert!(!looks_like_pre_tool_use(
            br#"{"hook_event_name":"PostToolUse"}"#
        ));
        assert!(!looks_like_pre_tool_use(br#"{"hook_event_name":"#));
        assert!(!looks_like_pre_tool_use(br#"{"event":"PreToolUse"}"#));
        assert!(!looks_like_pre_tool_use(b""));
    }
}
