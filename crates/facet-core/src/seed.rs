//! The seed's pure half (`dsh-facet/lib/scope.js`), ported line for line.
//!
//! Every user-facing sentence here is byte-identical to the seed's; the snapshot tests
//! in `tests/sentences.rs` hold them. Containment is not decided here: these functions
//! extract arguments and write text. The seed's reasoning is kept in the comments
//! because it is the reason the behaviour is what it is.

use serde_json::Value;

/// Model-supplied arguments that name a location, per tool (DeepSeek Harness names).
///
/// Deliberately conservative: only tools whose path argument is a plain top-level
/// string are listed. A tool that takes a path in a shape this table cannot read is not
/// guessed at — it is left unguarded, which is a decision, not an oversight. `bash` is
/// the deliberate one: a shell command cannot be judged reliably from argv, so the facet
/// is enforced on the file tools and `bash` remains a legitimate way out. The prompt
/// says so rather than pretending otherwise.
///
/// This is the seed's table exactly; the harness tables the guard actually uses (which
/// add `lsp`, Claude Code's names and configured MCP tools) are in [`crate::tools`].
pub const PATH_ARGUMENTS: &[(&str, &[&str])] = &[
    ("read", &["file_path"]),
    ("write", &["file_path"]),
    ("edit", &["file_path"]),
    ("read_image", &["file_path"]),
    ("grep", &["path"]),
    ("glob", &["path"]),
    ("str_replace_editor", &["path"]),
    ("recall", &["path", "focus"]),
];

/// Tools that will search the session directory when the model names no path.
///
/// A call naming no path cannot leave the facet — except for these: their *own* default
/// is the session workspace (`recall` falls back to an ancestor its marker search
/// picks). An absent argument is not an absent path; it is the default one, and that is
/// the path the guard judges.
pub const IMPLICIT_SESSION_PATHS: &[&str] = &["grep", "glob", "recall"];

/// The tool this plugin registers.
pub const FACET_TOOL: &str = "facet";
/// The action on [`FACET_TOOL`] that widens the scope.
pub const WIDENING_ACTION: &str = "add";

/// JavaScript's `String.prototype.trim` set (WhiteSpace + LineTerminator), which is not
/// Rust's `char::is_whitespace`: JS trims U+FEFF and keeps U+0085; Rust does the
/// opposite. The seed's behaviour is the one kept.
pub(crate) fn is_js_trim_char(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `value.trim()` as JavaScript does it.
pub fn js_trim(value: &str) -> &str {
    value.trim_matches(is_js_trim_char)
}

/// The named string arguments of `args`, trimmed, non-empty, in `names` order.
///
/// Tolerant by design: arguments arrive as unvalidated JSON, and a policy that fails on
/// a malformed call would break tools it has no business breaking. Anything that is not
/// a non-empty string is skipped.
pub fn string_arguments(args: &Value, names: &[&str]) -> Vec<String> {
    let Some(record) = args.as_object() else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| record.get(*name)?.as_str())
        .map(js_trim)
        .filter(|trimmed| !trimmed.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every path a tool call names (seed table), as the model wrote them.
///
/// An empty result means "no opinion" — either the tool names no path or it names one
/// in a shape we refuse to guess at; the tools whose own default is a directory are in
/// [`IMPLICIT_SESSION_PATHS`].
pub fn path_arguments_for(tool_name: &str, args: &Value) -> Vec<String> {
    PATH_ARGUMENTS
        .iter()
        .find(|(tool, _)| *tool == tool_name)
        .map(|(_, names)| string_arguments(args, names))
        .unwrap_or_default()
}

/// True when this call would widen the facet and therefore needs the user.
///
/// Only `add` widens. `status` reads, `remove` narrows, `reset` returns to the session's
/// own folder — none of them can show the agent anything it could not already see.
/// Keeping the interruption to the single case that matters is what stops the approval
/// from becoming something to click through.
///
/// `facet_tool_names` are the names the host calls the tool by (the seed has only
/// `facet`; hosts qualify MCP tools, e.g. `mcp__facet__facet`).
pub fn is_widening_call(tool_name: &str, args: &Value, facet_tool_names: &[String]) -> bool {
    if !facet_tool_names.iter().any(|name| name == tool_name) {
        return false;
    }
    args.get("action").and_then(Value::as_str) == Some(WIDENING_ACTION)
}

/// The stable half of the facet, for the system prompt. It states the rule and never
/// the binding, so it never changes and never invalidates a prompt cache.
pub fn facet_rule_text() -> String {
    [
        "# Facet scope",
        "",
        "This session is scoped to one facet of the project — one module rather than the whole system. Your runtime context states which, and says how a call outside it is treated.",
        "",
        "Work inside the facet.",
        "",
        "Never widen the scope on your own initiative: a grant is the user\u{2019}s decision, and an unrequested one is a bug, not initiative. Do not add paths you merely expect to need — ask when you actually need them.",
        "",
        "`bash` is not scope-checked, so it is not a way to look outside the facet without asking. Use the file tools when the answer is a file.",
    ]
    .join("\n")
}

/// Split a path into the form worth showing a reader: relative under the session,
/// absolute otherwise. Presentation only — containment is decided on canonical targets,
/// never on strings.
pub fn display_path(cwd: &str, path: &str) -> String {
    if cwd.is_empty() {
        return path.to_string();
    }
    let prefix = if cwd.ends_with('/') {
        cwd.to_string()
    } else {
        format!("{cwd}/")
    };
    if path == cwd {
        ".".to_string()
    } else if let Some(rest) = path.strip_prefix(prefix.as_str()) {
        rest.to_string()
    } else {
        path.to_string()
    }
}

/// How an out-of-scope call is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Put to the user as a question.
    Ask,
    /// Refused.
    Deny,
    /// The guard is off: no opinion on anything.
    Off,
}

impl Mode {
    /// The seed's spelling: `ask`, `deny`, `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Deny => "deny",
            Mode::Off => "off",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(value: &str) -> Result<Mode, String> {
        match value {
            "ask" => Ok(Mode::Ask),
            "deny" => Ok(Mode::Deny),
            "off" => Ok(Mode::Off),
            other => Err(format!(
                "unknown mode {other:?}: expected one of ask, deny, off"
            )),
        }
    }
}

/// What [`facet_context_text`] says about a call outside the facet when there is no
/// approval channel. Also the refusal of a widening call in that case: the one sentence
/// the seed has for "widening cannot be granted here".
pub const NO_CHANNEL_REACH: &str = "refused — this session has no approval channel, so `facet action=add` cannot be granted; ask the user to widen the facet from its context panel";
const DENY_REACH: &str = "refused — ask the user to widen the facet from its context panel, or with `facet action=add` where that can be granted";
const ASK_REACH: &str = "put to the user as a question — say in one line what you need and why, then record it with `facet action=add` so the rest of the session does not have to ask again";

/// The input of [`facet_context_text`].
#[derive(Debug, Clone)]
pub struct ContextInput<'a> {
    /// The session working directory.
    pub cwd: &'a str,
    /// The facet root, or `None` when unscoped.
    pub root: Option<&'a str>,
    /// Absolute granted paths, outside the root.
    pub extras: &'a [String],
    /// How an out-of-scope call is handled.
    pub mode: Mode,
    /// Whether an approval request can reach the user.
    pub can_ask: bool,
}

/// The mutable half of the facet, for the runtime-context snapshot: the binding (root,
/// grants) and how a call outside it is treated. `""` contributes nothing (mode `off`,
/// or unscoped).
pub fn facet_context_text(input: &ContextInput<'_>) -> String {
    let root = match input.root {
        Some(root) if input.mode != Mode::Off && !root.is_empty() => root,
        _ => return String::new(),
    };
    // `can_ask` comes first because it collapses the other two: with no approval
    // channel an out-of-facet call is refused whatever `mode` says, and widening is
    // refused with it, because widening is itself a question.
    let reach = if !input.can_ask {
        NO_CHANNEL_REACH
    } else if input.mode == Mode::Deny {
        DENY_REACH
    } else {
        ASK_REACH
    };
    // The root is stated absolutely: `facet: .` is true and useless.
    let mut lines = vec![format!("facet: {root}")];
    if !input.extras.is_empty() {
        let shown: Vec<String> = input
            .extras
            .iter()
            .map(|path| display_path(input.cwd, path))
            .collect();
        lines.push(format!("granted outside it: {}", shown.join(", ")));
    }
    lines.push(format!("outside the facet: {reach}"));
    lines.join("\n")
}

/// Why one call is being questioned: the user's approval prompt and the model's error
/// text at once, so it names the path, the boundary, and the way forward.
///
/// `path` is the raw path the model named; `mode` is the decision this reason explains
/// ([`Mode::Deny`] reads "refused", anything else "outside").
pub fn outside_reason(cwd: &str, path: &str, root: &str, mode: Mode) -> String {
    let what = display_path(cwd, path);
    let verb = if mode == Mode::Deny {
        "refused"
    } else {
        "outside"
    };
    format!(
        "{what} is {verb} — this session's facet is {root}. Ask the user to grant it (`facet action=add`), or work within the facet."
    )
}

/// Why a search that named no directory is being questioned: the path at issue is the
/// tool's own default, and the fix is a second argument, not a grant.
pub fn implicit_search_reason(cwd: &str, root: &str) -> String {
    format!(
        "This search names no `path`, so it would cover this session's directory {cwd} — and this session's facet is {root}. Name a folder inside the facet, or ask the user to grant the one you need."
    )
}

/// Why widening the scope is being put to the user.
pub fn widen_reason(paths: &[String]) -> String {
    let list = if paths.is_empty() {
        "nothing".to_string()
    } else {
        paths.join(", ")
    };
    format!("Grant {list} to this session — outside its facet — for the rest of the conversation?")
}

// ---------------------------------------------------------------------------------
// Not the seed's: the ways forward where the seed's own sentence would send the model
// toward a step that is refused. The seed's `outsideReason` always names
// `facet action=add`; where no approval channel exists that call is refused too (the
// seed's `facetContextText` knows this through `canAsk`, its per-call sentence does
// not). There only the person can widen, from the panel, so these sentences name the
// exact panel command, session included, that does it.
// ---------------------------------------------------------------------------------

/// `facet grant PATH… [--allow-missing] --session ID`, as a person types it in a
/// terminal: the one way to widen a session that has no approval channel. Every word
/// is shell-quoted where it needs it; `allow_missing` for a path that does not exist
/// yet (a file about to be written), which `facet grant` refuses without it.
pub fn panel_grant_command(paths: &[String], session: &str, allow_missing: bool) -> String {
    let mut words = vec!["facet".to_string(), "grant".to_string()];
    words.extend(paths.iter().map(|path| shell_word(path)));
    if allow_missing {
        words.push("--allow-missing".to_string());
    }
    words.push("--session".to_string());
    words.push(shell_word(session));
    words.join(" ")
}

/// `word` as one POSIX shell word: as is when it holds only characters no shell
/// treats specially, else single-quoted (a `'` inside written `'\''`).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._,:@%+=-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What the binding adds when the way past the facet is the panel (no approval
/// channel, or mode `deny`): the seed says "the facet's context panel"; this names it.
pub fn panel_line(session: &str) -> String {
    format!(
        "the panel: the user widens the facet with `facet grant PATH --session {}` in a terminal",
        shell_word(session)
    )
}

/// Why a call outside the facet is refused where nobody can be asked. `grant` is the
/// panel command that would let it through ([`panel_grant_command`]), or `None` when
/// the call belongs to no recorded session (then nothing can widen it).
pub fn outside_reason_no_channel(cwd: &str, path: &str, root: &str, grant: Option<&str>) -> String {
    let what = display_path(cwd, path);
    match grant {
        Some(command) => format!(
            "{what} is refused — this session's facet is {root}, and this session has no approval channel, so nobody can be asked to grant it here. Ask the user to run `{command}` in a terminal, or work within the facet."
        ),
        None => format!(
            "{what} is refused — this session's facet is {root}, and this call belongs to no recorded session, so nothing can grant it. Work within the facet."
        ),
    }
}

/// Why a search naming no directory is refused where nobody can be asked: the fix is
/// still a folder inside the facet; a grant can only come from the panel (none at all
/// for a call that belongs to no recorded session: `session` empty).
pub fn implicit_search_reason_no_channel(cwd: &str, root: &str, session: &str) -> String {
    let lead = format!(
        "This search names no `path`, so it would cover this session's directory {cwd} — and this session's facet is {root}. Name a folder inside the facet"
    );
    if session.is_empty() {
        return format!("{lead}.");
    }
    format!(
        "{lead}; this session has no approval channel, so only the user can grant another one, with `facet grant PATH --session {}` in a terminal.",
        shell_word(session)
    )
}

/// Why `facet action=add` is refused where nobody can be asked, naming the panel
/// command that grants the same paths (`None`: the call belongs to no recorded
/// session, so nothing can).
pub fn widen_refused_no_channel(grant: Option<&str>) -> String {
    match grant {
        Some(command) => format!(
            "`facet action=add` cannot be granted here — this session has no approval channel, so nobody can approve it. Ask the user to run `{command}` in a terminal, or work within the facet."
        ),
        None => "`facet action=add` cannot be granted here — this call belongs to no recorded session and nobody can approve it. Work within the facet.".to_string(),
    }
}
