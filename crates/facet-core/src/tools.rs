//! Which arguments of which tool name a location, per harness.
//!
//! One table serves DeepSeek Harness, Claude Code and Codex: DeepSeek Harness names
//! tools in lower case (`read`, `grep`), Claude Code capitalized (`Read`, `Grep`), and
//! MCP tools arrive host-qualified (`mcp__server__tool`), so the names never collide
//! and the guard need not know which of them is calling. Codex edits files through
//! `apply_patch` bodies, whose paths the hook extracts and hands to
//! [`crate::Policy::judge_paths`].
//!
//! GitHub Copilot CLI gets a table of its own ([`ToolTable::copilot`]): its `grep` and
//! `glob` collide with DeepSeek Harness's names but take other arguments (`paths`, a
//! string or a list, where dsh has `path`), so one shared table would read one host's
//! call with the other's arguments.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::seed::{IMPLICIT_SESSION_PATHS, PATH_ARGUMENTS, js_trim, string_arguments};

/// How one tool names locations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSpec {
    /// Top-level string arguments that are paths (relative to the session directory).
    pub path_args: Vec<String>,
    /// The tool searches the session directory when none of `path_args` is given.
    pub implicit_session_path: bool,
    /// Top-level string arguments that are glob patterns, taken relative to the first
    /// given path argument (or the session directory). Judged by their fixed prefix when
    /// that prefix is absolute or climbs with `..`; such a prefix is the search's real
    /// root, so it replaces the implicit session directory.
    pub pattern_args: Vec<String>,
    /// Top-level string arguments that are glob *filters* on a search whose root is
    /// the path argument (or the session directory): `grep`'s `include`, `Grep`'s
    /// `glob` (both ripgrep `--glob`). Judged by their escaping prefix like patterns —
    /// conservative: a filter never widens the search — but, unlike a pattern, a filter
    /// never stands in for the root: `{<facet>/x,*}` filters nothing out, so the bare
    /// search is still judged against the session directory.
    pub filter_args: Vec<String>,
    /// The tool reads everything below the folder it is given (a search: `grep`,
    /// `glob`, `recall`, `Grep`, `Glob`), so a root that *holds* facet's state or
    /// configuration reaches it, not only a path inside it. `LS` lists one level and
    /// is not one.
    pub searches_below: bool,
    /// Top-level arguments that name one path as a string *or* several as a list of
    /// strings (Copilot's `paths`). Every element is judged like a path argument; an
    /// empty list names none (the tool's own default applies); a list holding anything
    /// but strings is judged as the filesystem root, since the guard cannot tell what
    /// the tool would make of it (fail closed).
    pub list_path_args: Vec<String>,
    /// The host opens a path after normalizing it lexically (`path.join` /
    /// `path.resolve` against its directory: `..` removes the name before it without
    /// following a link), as OpenCode does. Such a path is judged both ways — as the
    /// kernel reads it and as the host will open it — and refused if either leaves:
    /// `inner/../../x`, with `inner` a link deeper into the facet, stays inside for
    /// the kernel but opens `../x` for the host.
    pub lexical_join: bool,
}

impl ToolSpec {
    fn new(path_args: &[&str], implicit: bool, pattern_args: &[&str]) -> ToolSpec {
        ToolSpec {
            path_args: path_args.iter().map(|name| name.to_string()).collect(),
            implicit_session_path: implicit,
            pattern_args: pattern_args.iter().map(|name| name.to_string()).collect(),
            filter_args: Vec::new(),
            searches_below: false,
            list_path_args: Vec::new(),
            lexical_join: false,
        }
    }

    /// A spec whose only path arguments take a string or a list of strings.
    fn listing(list_path_args: &[&str], implicit: bool, pattern_args: &[&str]) -> ToolSpec {
        ToolSpec {
            list_path_args: list_path_args.iter().map(|name| name.to_string()).collect(),
            ..ToolSpec::new(&[], implicit, pattern_args)
        }
    }

    fn searching(mut self) -> ToolSpec {
        self.searches_below = true;
        self
    }

    fn with_filters(mut self, filter_args: &[&str]) -> ToolSpec {
        self.filter_args = filter_args.iter().map(|name| name.to_string()).collect();
        self
    }

    fn joined_lexically(mut self) -> ToolSpec {
        self.lexical_join = true;
        self
    }
}

/// The tools the guard knows, by the name the host calls them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolTable {
    tools: BTreeMap<String, ToolSpec>,
}

impl ToolTable {
    /// DeepSeek Harness and Claude Code built-in tools.
    ///
    /// - DeepSeek Harness: the seed's [`PATH_ARGUMENTS`] and [`IMPLICIT_SESSION_PATHS`],
    ///   plus `lsp` (`file_path`, and `path` where a version names it so: judging an
    ///   argument a call does not carry costs nothing), the `pattern` of `glob` and the
    ///   `include` filter of `grep` (dsh 0.1.0-rc.8: `grep(path, pattern, include)`,
    ///   where `pattern` is a regular expression, not a path).
    /// - Claude Code: `Read`, `Write`, `Edit`, `MultiEdit` (`file_path`); `NotebookEdit`
    ///   (`notebook_path`); `Grep`, `Glob`, `LS` (`path`, searching the session
    ///   directory when it is absent); `Glob`'s `pattern` and `Grep`'s `glob` filter.
    pub fn builtin() -> ToolTable {
        let mut tools = BTreeMap::new();
        for (tool, names) in PATH_ARGUMENTS {
            let implicit = IMPLICIT_SESSION_PATHS.contains(tool);
            let spec = ToolSpec::new(names, implicit, &[]);
            // The seed's implicit tools are its searches (`grep`, `glob`, `recall`).
            let spec = if implicit { spec.searching() } else { spec };
            tools.insert(tool.to_string(), spec);
        }
        tools.insert(
            "lsp".into(),
            ToolSpec::new(&["file_path", "path"], false, &[]),
        );
        if let Some(glob) = tools.get_mut("glob") {
            glob.pattern_args = vec!["pattern".into()];
        }
        if let Some(grep) = tools.get_mut("grep") {
            grep.filter_args = vec!["include".into()];
        }
        for tool in ["Read", "Write", "Edit", "MultiEdit"] {
            tools.insert(tool.into(), ToolSpec::new(&["file_path"], false, &[]));
        }
        tools.insert(
            "NotebookEdit".into(),
            ToolSpec::new(&["notebook_path"], false, &[]),
        );
        tools.insert(
            "Grep".into(),
            ToolSpec::new(&["path"], true, &[])
                .with_filters(&["glob"])
                .searching(),
        );
        tools.insert(
            "Glob".into(),
            ToolSpec::new(&["path"], true, &["pattern"]).searching(),
        );
        tools.insert("LS".into(), ToolSpec::new(&["path"], true, &[]));
        ToolTable { tools }
    }

    /// Gemini CLI's built-in file tools (npm `@google/gemini-cli` 0.61.0, read from the
    /// function declarations it sends the model): `read_file`, `write_file`, `replace`
    /// (`file_path`); `list_directory` (`dir_path`, required); `glob` (`dir_path`, its
    /// `pattern` a glob taken against it) and `grep_search` (`dir_path`, its
    /// `include_pattern` a glob filter; `exclude_pattern` is a regular expression, not
    /// a path), both searching when no `dir_path` is given. A table of its own: Gemini's
    /// `glob` names its folder `dir_path`, DeepSeek Harness's `glob` names it `path`.
    ///
    /// Not listed: `run_shell_command` (a shell, deliberately unjudged, as `bash`);
    /// `read_many_files`, which 0.61.0 ships but does not register (its `include` is a
    /// list, which no table here reads).
    pub fn gemini_cli() -> ToolTable {
        let mut tools = BTreeMap::new();
        for tool in ["read_file", "write_file", "replace"] {
            tools.insert(tool.into(), ToolSpec::new(&["file_path"], false, &[]));
        }
        tools.insert(
            "list_directory".into(),
            ToolSpec::new(&["dir_path"], false, &[]),
        );
        tools.insert(
            "glob".into(),
            ToolSpec::new(&["dir_path"], true, &["pattern"]).searching(),
        );
        tools.insert(
            "grep_search".into(),
            ToolSpec::new(&["dir_path"], true, &[])
                .with_filters(&["include_pattern"])
                .searching(),
        );
        ToolTable { tools }
    }

    /// GitHub Copilot CLI's built-in file tools (1.0.102, read from the tool schemas it
    /// sends the model; which of them a session gets depends on the model):
    /// - `view`, `create`, `edit`: `path` (absolute, by the schema; a relative one is
    ///   judged against the session directory like any other);
    /// - `grep` (and `rg`, its name for GPT-5 codex models): `paths`, a string or a
    ///   list, searching the session directory when absent; `glob` is a file filter;
    /// - `glob`: `pattern`, taken below each of `paths` (or the session directory).
    ///
    /// `apply_patch` (GPT-5 family models) carries a patch body, not arguments: the
    /// hook reads its file headers. `bash` is not judged, as in every table.
    pub fn copilot() -> ToolTable {
        let mut tools = BTreeMap::new();
        for tool in ["view", "create", "edit"] {
            tools.insert(tool.to_string(), ToolSpec::new(&["path"], false, &[]));
        }
        for tool in ["grep", "rg"] {
            tools.insert(
                tool.to_string(),
                ToolSpec::listing(&["paths"], true, &[])
                    .with_filters(&["glob"])
                    .searching(),
            );
        }
        tools.insert(
            "glob".to_string(),
            ToolSpec::listing(&["paths"], true, &["pattern"]).searching(),
        );
        ToolTable { tools }
    }

    /// OpenCode's built-in file tools (opencode-ai 1.18.33, read from the tool schemas
    /// it sends the model): `read` (a file or a directory, one level), `write`, `edit`
    /// and the experimental `lsp` name `filePath`; `glob` (`pattern`, `path`) and
    /// `grep` (`pattern` a regular expression, `path`, the `include` filter) search
    /// the session directory when `path` is absent. Its own table because the names
    /// collide with DeepSeek Harness's (`read` takes `file_path` there). Every tool
    /// joins a relative path to the session directory lexically
    /// ([`ToolSpec::lexical_join`]). `apply_patch` (offered to GPT models instead of
    /// `edit`/`write`) carries its paths in a patch body, which the hook extracts.
    pub fn opencode() -> ToolTable {
        let mut tools = BTreeMap::new();
        for tool in ["read", "write", "edit", "lsp"] {
            tools.insert(
                tool.to_string(),
                ToolSpec::new(&["filePath"], false, &[]).joined_lexically(),
            );
        }
        tools.insert(
            "glob".into(),
            ToolSpec::new(&["path"], true, &["pattern"])
                .searching()
                .joined_lexically(),
        );
        tools.insert(
            "grep".into(),
            ToolSpec::new(&["path"], true, &[])
                .with_filters(&["include"])
                .searching()
                .joined_lexically(),
        );
        ToolTable { tools }
    }

    /// Add (or replace) user-configured tools: name → path argument names. MCP tools
    /// are listed by the name the host calls them (`mcp__fs__read_file`); they are
    /// never implicit and carry no patterns.
    pub fn with_tools(mut self, configured: &BTreeMap<String, Vec<String>>) -> ToolTable {
        for (name, args) in configured {
            let names: Vec<&str> = args.iter().map(String::as_str).collect();
            self.tools
                .insert(name.clone(), ToolSpec::new(&names, false, &[]));
        }
        self
    }

    /// The spec of `tool_name`, if the guard knows it.
    pub fn get(&self, tool_name: &str) -> Option<&ToolSpec> {
        self.tools.get(tool_name)
    }

    /// Every tool name in the table, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

/// What one call asks the guard to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A path the model wrote (or the fixed prefix of a pattern), relative to the
    /// session directory unless absolute.
    Named(String),
    /// The model named no path, so the tool searches the session directory.
    SessionDefault,
    /// A path whose absolute form the caller computed as the host will (a Codex patch
    /// path joined to the folder Codex applies the patch in): judged by `absolute`,
    /// named in a sentence as `written`.
    Placed {
        /// The path as the model wrote it.
        written: String,
        /// The absolute path the host will open (before symbolic links).
        absolute: String,
    },
}

/// The locations a call names, per its spec. Empty: the call names none (no opinion).
pub fn locations(spec: &ToolSpec, args: &Value) -> Vec<Location> {
    let names: Vec<&str> = spec.path_args.iter().map(String::as_str).collect();
    let mut paths = string_arguments(args, &names);
    let mut raws = untrimmed(args, &names);
    for name in &spec.list_path_args {
        let (listed, listed_raws) = list_argument(args, name);
        paths.extend(listed);
        raws.extend(listed_raws);
    }
    let mut out: Vec<Location> = paths.iter().cloned().map(Location::Named).collect();
    // The seed judges trimmed paths, but the tool opens the string as sent: `"link "`
    // is another entry than `"link"`, and may be a symbolic link out. Where trimming
    // changed a path, the untrimmed one is judged too (after the trimmed one, so the
    // reason names what the model meant when both are outside).
    for raw in raws {
        out.push(Location::Named(raw));
    }

    let mut patterned = false;
    let patterns = spec.pattern_args.iter().map(|name| (name, true));
    let filters = spec.filter_args.iter().map(|name| (name, false));
    for (pattern_name, is_root) in patterns.chain(filters) {
        let Some(pattern) = args.get(pattern_name).and_then(Value::as_str) else {
            continue;
        };
        let mut prefixes = pattern_escape_prefixes(js_trim(pattern));
        if js_trim(pattern) != pattern {
            prefixes.extend(pattern_escape_prefixes(pattern));
        }
        for prefix in prefixes {
            patterned |= is_root;
            if prefix.starts_with(['/', '~']) || paths.is_empty() {
                out.push(Location::Named(prefix));
                continue;
            }
            // A relative prefix is taken below the search's root; with a list of
            // roots (Copilot's `paths`), below each of them.
            let bases = if spec.list_path_args.is_empty() {
                &paths[..1]
            } else {
                &paths[..]
            };
            for base in bases {
                let judged = format!("{}/{prefix}", base.trim_end_matches('/'));
                out.push(Location::Named(judged));
            }
        }
    }
    // A pattern with an absolute or climbing prefix is the search's real root, so the
    // session default it would otherwise search is not what is at issue.
    if paths.is_empty() && spec.implicit_session_path && !patterned {
        out.push(Location::SessionDefault);
    }
    out
}

/// The paths a string-or-list argument names: (trimmed, non-empty ones; untrimmed
/// ones whose trimmed form differs), as [`string_arguments`] and [`untrimmed`] read a
/// string. A list element that is not a string makes the whole argument `/`: the
/// guard cannot tell what the tool would search, so it judges the widest root.
fn list_argument(args: &Value, name: &str) -> (Vec<String>, Vec<String>) {
    let texts: Vec<&str> = match args.get(name) {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(items)) => {
            let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            if texts.len() != items.len() {
                return (vec!["/".to_string()], Vec::new());
            }
            texts
        }
        // Absent or `null`: the tool's default. Any other type is no list of paths
        // the tool can use; judged as the widest root, like a bad element.
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return (vec!["/".to_string()], Vec::new()),
    };
    let mut paths = Vec::new();
    let mut raws = Vec::new();
    for text in texts {
        let trimmed = js_trim(text);
        if trimmed.is_empty() {
            continue;
        }
        paths.push(trimmed.to_string());
        if trimmed != text {
            raws.push(text.to_string());
        }
    }
    (paths, raws)
}

/// The named string arguments whose trimmed form differs from what was sent (and is
/// not empty: an argument of only whitespace is skipped, as the seed skips it).
fn untrimmed(args: &Value, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter_map(|name| args.get(*name)?.as_str())
        .filter(|raw| {
            let trimmed = js_trim(raw);
            !trimmed.is_empty() && trimmed != *raw
        })
        .map(str::to_string)
        .collect()
}

/// Whether a component holds glob syntax (extglob's parentheses included), so it is
/// not part of a pattern's fixed prefix.
fn is_glob_meta(component: &str) -> bool {
    component.contains(['*', '?', '[', ']', '{', '}', '\\', '(', ')'])
}

/// The fixed prefix of a glob pattern, when the pattern can reach outside the directory
/// it is taken against: it is absolute, starts with `~`, or has a component that can
/// match `..` ([`may_match_parent`]: `..` itself, `\.\.`, `[.][.]`, `@(..)`, …).
///
/// The prefix is the leading run of components with no glob syntax. A climbing
/// component after the first wildcard is counted too: each wildcard component descends
/// zero or more levels (`**` may match none) and each climbing one climbs one, so
/// appending a `..` for every later climbing component to the prefix gives the highest
/// directory the pattern can reach — a sound bound, not an exact one. Returns `None`
/// for a pattern that stays below its base (`src/**/*.rs`).
///
/// Why the conservative reading: glob engines differ (one unescapes `\.\.` into a
/// literal base folder `..`, another matches `[.][.]` against a directory's entries),
/// and the guard does not know which engine a host uses.
pub fn pattern_escape_prefix(pattern: &str) -> Option<String> {
    // `~` and `~/…` name the home folder to tools that expand them; judging them as
    // absolute can only ask about a folder the tool would not have left.
    let from_home = pattern == "~" || pattern.starts_with("~/");
    if from_home {
        let rest = pattern_escape_prefix(&pattern[1..])
            .map(|prefix| prefix.trim_start_matches('/').to_string())
            .unwrap_or_default();
        return Some(if rest.is_empty() {
            "~".to_string()
        } else {
            format!("~/{rest}")
        });
    }
    // `~name/…` is another user's home to a tool that expands it: the first component
    // is the prefix, which the guard cannot place, so it is judged outside.
    if pattern.starts_with('~') {
        let first = pattern.split('/').next().unwrap_or(pattern);
        return Some(first.to_string());
    }
    let absolute = pattern.starts_with('/');
    let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let fixed = components
        .iter()
        .position(|component| is_glob_meta(component))
        .unwrap_or(components.len());
    let later_climbs = components[fixed..]
        .iter()
        .filter(|c| may_match_parent(c))
        .count();
    let climbs = components.iter().any(|c| may_match_parent(c));
    if !absolute && !climbs {
        return None;
    }
    let mut parts: Vec<&str> = components[..fixed].to_vec();
    parts.extend(std::iter::repeat_n("..", later_climbs));
    let joined = parts.join("/");
    Some(match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    })
}

/// Whether one pattern component can match the entry `..`, read conservatively.
///
/// Its first character must be matchable by a literal `.` (plain or escaped `\.`) or a
/// bracket class that can hold `.` (`[.]`, `[!a]`); `*` and `?` never match a leading
/// dot (as in every common engine, which is also why `*` and `**` never climb). The
/// rest may be matched by anything. An extglob group (`@(…)`, `?(…)`, `+(…)`, `*(…)`,
/// `!(…)`) whose inside names a `.` or glob syntax is taken as able to climb.
pub fn may_match_parent(component: &str) -> bool {
    if component == ".." {
        return true;
    }
    if has_extglob_that_may_climb(component) {
        return true;
    }
    let tokens = glob_tokens(component);
    matches_dot_dot(&tokens)
}

/// One unit of a glob component: what single character (or run) it can match.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GlobToken {
    /// Exactly this character (an escaped one included).
    Literal(char),
    /// `?`: any one character, but not a leading dot.
    AnyOne,
    /// `*`: any run, but not starting with a leading dot.
    AnyRun,
    /// `[…]`: one character of the class; `dot` says whether `.` is one of them.
    Class { dot: bool },
}

fn glob_tokens(component: &str) -> Vec<GlobToken> {
    let chars: Vec<char> = component.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        match chars[index] {
            '\\' => {
                if let Some(next) = chars.get(index + 1) {
                    tokens.push(GlobToken::Literal(*next));
                    index += 2;
                } else {
                    tokens.push(GlobToken::Literal('\\'));
                    index += 1;
                }
            }
            '?' => {
                tokens.push(GlobToken::AnyOne);
                index += 1;
            }
            '*' => {
                tokens.push(GlobToken::AnyRun);
                index += 1;
            }
            '[' => match class_end(&chars, index) {
                Some(end) => {
                    tokens.push(GlobToken::Class {
                        dot: class_may_hold_dot(&chars[index + 1..end]),
                    });
                    index = end + 1;
                }
                None => {
                    tokens.push(GlobToken::Literal('['));
                    index += 1;
                }
            },
            other => {
                tokens.push(GlobToken::Literal(other));
                index += 1;
            }
        }
    }
    tokens
}

/// The index of the `]` closing the class opened at `open` (a `]` right after `[`,
/// `[!` or `[^` is a member, not the end).
fn class_end(chars: &[char], open: usize) -> Option<usize> {
    let mut index = open + 1;
    if matches!(chars.get(index), Some('!' | '^')) {
        index += 1;
    }
    if chars.get(index) == Some(&']') {
        index += 1;
    }
    while index < chars.len() {
        match chars[index] {
            '\\' => index += 2,
            ']' => return Some(index),
            // `[:punct:]`, `[.a.]`, `[=a=]` inside a class end at their own `:]`.
            '[' if matches!(chars.get(index + 1), Some(':' | '.' | '=')) => {
                let kind = chars[index + 1];
                let close = (index + 2..chars.len().saturating_sub(1))
                    .find(|&at| chars[at] == kind && chars[at + 1] == ']');
                index = close.map_or(index + 1, |at| at + 2);
            }
            _ => index += 1,
        }
    }
    None
}

/// Whether a bracket class's inside can match `.`: a negated class (it holds
/// everything it does not name), a `.` or `\.` member, a range spanning `.`, or a
/// POSIX class such as `[:punct:]` — over-approximated as any `[:` inside.
fn class_may_hold_dot(inside: &[char]) -> bool {
    if matches!(inside.first(), Some('!' | '^')) {
        return !inside.contains(&'.');
    }
    if inside.contains(&'.') || inside.windows(2).any(|pair| pair == ['[', ':']) {
        return true;
    }
    inside
        .windows(3)
        .any(|range| range[1] == '-' && range[0] <= '.' && '.' <= range[2])
}

/// Whether `tokens` can match exactly `..`, the leading dot matched explicitly.
fn matches_dot_dot(tokens: &[GlobToken]) -> bool {
    // States: how many of the two dots are matched so far, after each token prefix.
    let mut states = vec![0usize];
    for token in tokens {
        let mut next = Vec::new();
        for &matched in &states {
            let leading = matched == 0;
            let mut push = |state: usize| {
                if !next.contains(&state) {
                    next.push(state);
                }
            };
            match token {
                GlobToken::Literal('.') if matched < 2 => push(matched + 1),
                GlobToken::Literal(_) => {}
                GlobToken::Class { dot: true } if matched < 2 => push(matched + 1),
                GlobToken::Class { .. } => {}
                GlobToken::AnyOne if !leading && matched < 2 => push(matched + 1),
                GlobToken::AnyOne => {}
                GlobToken::AnyRun => {
                    push(matched);
                    if !leading && matched < 2 {
                        push(2);
                    }
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        states = next;
    }
    states.contains(&2)
}

/// Whether the component holds an extglob group whose inside names a `.`, an escape,
/// a class or a wildcard: `@(..)`, `+(.)`, `?(*)`. `!(node_modules)` does not.
fn has_extglob_that_may_climb(component: &str) -> bool {
    let bytes = component.as_bytes();
    for (open, _) in component.match_indices('(') {
        if open == 0 || !matches!(bytes[open - 1], b'@' | b'?' | b'+' | b'*' | b'!') {
            continue;
        }
        let inside = &component[open + 1..];
        let inside = inside.split(')').next().unwrap_or(inside);
        if inside.contains(['.', '\\', '[', '*', '?']) {
            return true;
        }
    }
    false
}

/// At most this many patterns are judged for one pattern's brace alternatives; past it
/// the pattern is judged as reaching the filesystem root.
const MAX_BRACE_EXPANSIONS: usize = 64;
/// Longest pattern with braces that may escape that is expanded at all.
const MAX_BRACE_PATTERN_LEN: usize = 4096;
/// Most `{` in a pattern with braces that may escape that is expanded at all.
const MAX_BRACE_GROUPS: usize = 32;

/// The escape prefixes of a glob pattern, brace alternatives included: `{..,a}/**`,
/// `{/etc,a}/*` and `a/{../../..,b}/f` reach outside through one alternative, which
/// [`pattern_escape_prefix`] alone (braces are glob syntax to it) would not see.
///
/// A pattern whose brace alternatives could escape (see `braces_may_escape`: one is
/// empty, starts with `/` or `~`, or holds a `.`, an escape, a class, an extglob or a
/// wildcard) is expanded into its alternatives and each is judged by its own prefix. Braces are matched without regard to backslashes: taking an escaped
/// brace for a group can only judge more, never less. When the expansion would exceed
/// [`MAX_BRACE_EXPANSIONS`], the pattern is judged as reaching `/` — a sound bound.
pub fn pattern_escape_prefixes(pattern: &str) -> Vec<String> {
    // A cheap necessary condition first: most patterns never pay for the scan.
    let suspicious = pattern.contains(['.', '\\', '[', '(', '*', '?'])
        || ["{/", ",/", "{~", ",~", "{,", ",,", ",}"]
            .iter()
            .any(|start| pattern.contains(start));
    if !suspicious || !pattern.contains('{') {
        return pattern_escape_prefix(pattern).into_iter().collect();
    }
    // Bounds on work (the scan is quadratic, the expansion recursive): a pattern too
    // long or with too many groups to read cheaply is judged as reaching `/`.
    if pattern.len() > MAX_BRACE_PATTERN_LEN || pattern.matches('{').count() > MAX_BRACE_GROUPS {
        return vec!["/".to_string()];
    }
    if !braces_may_escape(pattern) {
        return pattern_escape_prefix(pattern).into_iter().collect();
    }
    let mut expanded = Vec::new();
    if !expand_braces(pattern, &mut expanded) {
        return vec!["/".to_string()];
    }
    let mut prefixes: Vec<String> = Vec::new();
    for alternative in &expanded {
        if let Some(prefix) = pattern_escape_prefix(alternative)
            && !prefixes.contains(&prefix)
        {
            prefixes.push(prefix);
        }
    }
    prefixes
}

/// Whether some brace group's alternative could help make a component that climbs or
/// a prefix that leaves: it is empty, starts with `/` or `~`, or holds a `.`, an
/// escape, a class, an extglob or a wildcard (`.{,}.` and `.{*,b}` climb only once
/// expanded). Checked on every group, nested ones included; a group with none of these
/// expands to components no more able to climb than the unexpanded one.
fn braces_may_escape(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    for (open, _) in pattern.match_indices('{') {
        let Some(close) = matching_brace(bytes, open) else {
            continue;
        };
        for alternative in split_alternatives(&pattern[open + 1..close]) {
            if alternative.is_empty()
                || alternative.starts_with(['/', '~'])
                || alternative.contains(['.', '\\', '[', '(', '*', '?'])
            {
                return true;
            }
        }
    }
    false
}

/// The index of the `}` closing the `{` at `open`, if the group is closed.
fn matching_brace(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, byte) in bytes.iter().enumerate().skip(open) {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// The alternatives of a group's inside, split at its own (depth 0) commas.
fn split_alternatives(inside: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, byte) in inside.bytes().enumerate() {
        match byte {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                parts.push(&inside[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&inside[start..]);
    parts
}

/// Appends every brace expansion of `pattern` to `out`; false when there would be more
/// than [`MAX_BRACE_EXPANSIONS`]. An unclosed `{` is literal text.
fn expand_braces(pattern: &str, out: &mut Vec<String>) -> bool {
    let bytes = pattern.as_bytes();
    let group = pattern
        .match_indices('{')
        .find_map(|(open, _)| matching_brace(bytes, open).map(|close| (open, close)));
    let Some((open, close)) = group else {
        if out.len() >= MAX_BRACE_EXPANSIONS {
            return false;
        }
        out.push(pattern.to_string());
        return true;
    };
    let (before, after) = (&pattern[..open], &pattern[close + 1..]);
    split_alternatives(&pattern[open + 1..close])
        .into_iter()
        .all(|alternative| expand_braces(&format!("{before}{alternative}{after}"), out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_that_can_match_dot_dot_are_climbing() {
        for component in [
            "..",
            "\\.\\.",
            ".\\.",
            "[.][.]",
            "[.].",
            ".[.]",
            "[!a][.]",
            "[--0].",
            ".*",
            ".?",
            "[[:punct:]].",
            "@(..)",
            "+(.)",
            "?(*)",
            "*(.|a)",
        ] {
            assert!(may_match_parent(component), "{component}");
        }
        for component in [
            "*",
            "**",
            "??",
            "*.",
            "?.",
            "a..",
            "..x",
            "[a-z][a-z]",
            "[!.].",
            "!(node_modules)",
            "@(src|lib)",
            ".git",
            "x",
        ] {
            assert!(!may_match_parent(component), "{component}");
        }
    }

    #[test]
    fn patterns_that_climb_without_a_literal_dot_dot_are_judged_by_their_prefix() {
        let prefix = |pattern: &str| pattern_escape_prefix(pattern);
        assert_eq!(prefix("\\.\\./\\.\\./x/*").as_deref(), Some("../.."));
        assert_eq!(prefix("a/[.][.]/*").as_deref(), Some("a/.."));
        assert_eq!(prefix("@(..)/**").as_deref(), Some(".."));
        assert_eq!(prefix("~root/*").as_deref(), Some("~root"));
        assert_eq!(prefix("~root").as_deref(), Some("~root"));
        assert_eq!(prefix("~/[.][.]/x").as_deref(), Some("~/.."));
        assert_eq!(prefix("src/**/*.rs"), None);
        assert_eq!(prefix("!(node_modules)/**"), None);
        // Braces whose alternatives only climb once expanded.
        assert_eq!(pattern_escape_prefixes(".{,}./x"), vec!["../x"]);
        assert_eq!(pattern_escape_prefixes(".{*,b}/x"), vec![".."]);
        assert_eq!(pattern_escape_prefixes("{[.][.],src}/*"), vec![".."]);
        assert!(pattern_escape_prefixes("**/*.{rs,toml}").is_empty());
    }

    #[test]
    fn brace_alternatives_that_escape_are_judged_by_each_alternative() {
        let prefixes = |pattern: &str| pattern_escape_prefixes(pattern);
        assert_eq!(prefixes("{..,a}/**"), vec![".."]);
        assert_eq!(prefixes("{/etc,a}/*"), vec!["/etc"]);
        assert_eq!(prefixes("a/{../../..,b}/f"), vec!["a/../../../f"]);
        assert_eq!(prefixes("{~/.ssh,a}/*"), vec!["~/.ssh"]);
        assert_eq!(prefixes("{a,{b,..}}/x"), vec!["../x"]);
        assert_eq!(
            prefixes("{a,..}/{b,..}/x"),
            vec!["a/../x", "../b/x", "../../x"]
        );
        // Braces that stay below their base, or none at all: as before.
        assert!(prefixes("src/**/*.{rs,toml}").is_empty());
        assert!(prefixes("{a,b}/..x/*").is_empty());
        assert_eq!(prefixes("../*.rs"), vec![".."]);
        // Too many alternatives, too long: the root, a sound bound.
        let many = "{..,a,b,c}".repeat(4);
        assert_eq!(prefixes(&many), vec!["/"]);
        let long = format!("{{..,a}}/{}", "x".repeat(5000));
        assert_eq!(prefixes(&long), vec!["/"]);
        let deep = "{..,".repeat(40);
        assert_eq!(prefixes(&deep), vec!["/"]);
    }
}
