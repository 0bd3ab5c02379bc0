//! What a Codex (or GitHub Copilot CLI) tool call would patch, and in which folder.
//!
//! Codex edits files through `apply_patch`, whose hook `tool_input` is
//! `{"command": "<patch text>"}`. The patch names every file it touches in a
//! header line:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: src/new.rs
//! *** Update File: src/old.rs
//! *** Move to: src/renamed.rs
//! *** Delete File: src/gone.rs
//! *** End Patch
//! ```
//!
//! Codex also applies a patch sent through its shell (hook `tool_name: "Bash"`),
//! but only in the two forms its invocation parser accepts (Codex 0.171,
//! `codex-rs/apply-patch/src/invocation.rs`): the whole script is one statement,
//! `apply_patch <<'EOF' … EOF` or `cd DIR && apply_patch <<'EOF' … EOF` (`DIR` one
//! plain word, `"…"` or `'…'`; `applypatch` too). Codex then joins `DIR` to its
//! working directory and each patch path to that, lexically (`..` removes the name
//! before it, `~` and `~/` are the home folder), and opens the result. Any other
//! shell command that runs `apply_patch` (`cd a && cd b && apply_patch …`,
//! `apply_patch < p.diff`, a patch piped in) is not Codex's to apply: the shell runs
//! Codex's `apply_patch` helper wherever the shell happens to be.
//!
//! ## Decisions
//! - Every header is judged, including `Move to` (a rename writes its target)
//!   and `Delete File` (a deletion is a write). Nothing else in the body names a
//!   file.
//! - Header lines are recognised after trimming surrounding whitespace, as
//!   Codex's own lenient parser does. A content line of an added file starts
//!   with `+`, so it can never be mistaken for a header. A context line of an
//!   update hunk that happens to read `*** Add File: x` after its leading
//!   space would be judged too: an extra path judged fails closed, a path
//!   missed would fail open, so the tolerant reading is the safe one.
//! - The folder is placed only where Codex places it: the intercepted forms above
//!   (recognised by a stricter reader than Codex's: what this one does not accept is
//!   unplaceable, never judged in the wrong folder), plus a `workdir` argument when
//!   the hook is sent one. Codex 0.171 does not send its shell tool's `workdir` to
//!   hooks; that argument is invisible here (docs/facet.md says so).
//! - Everything else that runs `apply_patch` from a shell, or carries a patch body
//!   naming files (`*** Begin Patch` and a file header), or names an `*** Environment ID:` (another environment's
//!   folder, unknown here), is [`PatchCall::Unplaceable`]: judged as outside the
//!   facet, never let through.
//! - Reading is bounded by the event (16 MiB) and linear in it; it never panics.

use std::path::{Path, PathBuf};

use facet_core::judge::{expand_home, lexical_absolute};
use serde_json::Value;

/// What a Codex tool call would patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchCall {
    /// Not a patch: no opinion.
    NotPatch,
    /// A patch Codex applies itself: the paths its headers name, and the folders
    /// (relative to the event's `cwd`, in order: `workdir`, then `cd`'s) it applies
    /// them in.
    Placed {
        /// The header paths, as written.
        paths: Vec<String>,
        /// The folders joined to the event's `cwd`, in order.
        folders: Vec<String>,
    },
    /// A patch facet cannot place; the sentence says why and what works.
    Unplaceable(&'static str),
}

/// The refusal of a shell command that runs `apply_patch` in a form Codex does not
/// apply itself.
pub const SHELL_FORM: &str = "facet cannot tell which folder this `apply_patch` would write in: Codex applies a patch itself only when the whole command is `apply_patch <<'EOF' … EOF`, or `cd DIR && apply_patch <<'EOF' … EOF` with one plain folder; in any other form the shell runs it wherever it happens to be. Send the patch in one of those forms (or through the `apply_patch` tool), with paths inside the facet.";

/// The refusal of a patch that names another environment.
pub const ENVIRONMENT: &str = "facet cannot tell which folder this patch would write in: it names an `*** Environment ID:`, whose folder facet does not know. Send the patch without it, with paths inside the facet.";

/// The refusal of a shell command sent with a `workdir` facet cannot read.
pub const WORKDIR: &str = "facet cannot tell which folder this `apply_patch` would write in: the shell's working directory was not sent as text. Send the patch through the `apply_patch` tool, with paths inside the facet.";

/// The refusal of an OpenCode `apply_patch` call whose `patchText` is not text.
pub const NOT_TEXT_OPENCODE: &str = "facet could not read this `apply_patch` call (its `patchText` is not text), so it is refused. Send the patch as text, with paths inside the facet.";

/// The refusal of a Codex `apply_patch` call whose body is not text.
pub const NOT_TEXT: &str = "facet could not read this `apply_patch` call (its `command` is not text), so it is refused. Send the patch as text, with paths inside the facet.";

/// The refusal of a Copilot `apply_patch` call whose patch is not text.
pub const COPILOT_NOT_TEXT: &str = "facet could not read this `apply_patch` call (its patch is not text), so it cannot tell which files the patch writes. Send the patch as text, with paths inside the facet.";

/// What a GitHub Copilot CLI tool call would patch. Copilot's `apply_patch` (GPT-5
/// family models) is a free-form tool: its hook `toolArgs` is the patch text itself
/// (an `{"input": …}` object is read too, the shape a Chat Completions function call
/// for it takes), and Copilot applies the patch's relative paths in the session's
/// directory, the event's `cwd` (1.0.102, seen live). Its shell has no `apply_patch`
/// helper, so no other tool carries a patch.
pub fn classify_copilot(tool_name: &str, tool_input: &Value) -> PatchCall {
    if tool_name != "apply_patch" {
        return PatchCall::NotPatch;
    }
    let body = match tool_input {
        Value::String(body) => body.as_str(),
        Value::Object(_) => match tool_input.get("input") {
            Some(Value::String(body)) => body.as_str(),
            _ => return PatchCall::Unplaceable(COPILOT_NOT_TEXT),
        },
        _ => return PatchCall::Unplaceable(COPILOT_NOT_TEXT),
    };
    placed(body, Vec::new())
}

/// Codex's shell tools, as its hooks name them (`Bash` for all of them since
/// 0.124; the others as older versions and `local_shell` spell them).
const SHELL_TOOLS: [&str; 5] = [
    "Bash",
    "shell",
    "exec_command",
    "local_shell",
    "shell_command",
];

/// The names under which Codex's parser and its helper accept a patch.
const APPLY_PATCH_NAMES: [&str; 2] = ["apply_patch", "applypatch"];

/// What OpenCode's `apply_patch` tool would patch: the body is `patchText`, applied
/// in the session directory (opencode-ai 1.18.33 takes each header path with
/// `path.resolve(directory, path)`). Every other tool is not a patch.
pub fn classify_opencode(tool_name: &str, tool_input: &Value) -> PatchCall {
    if tool_name != "apply_patch" {
        return PatchCall::NotPatch;
    }
    match tool_input.get("patchText").and_then(Value::as_str) {
        Some(body) => placed(body, Vec::new()),
        None => PatchCall::Unplaceable(NOT_TEXT_OPENCODE),
    }
}

/// What `tool_name` with `tool_input` would patch, as Codex would apply it.
pub fn classify(tool_name: &str, tool_input: &Value) -> PatchCall {
    if tool_name == "apply_patch" {
        let Some(body) = tool_input.get("command").and_then(Value::as_str) else {
            return PatchCall::Unplaceable(NOT_TEXT);
        };
        return placed(body, Vec::new());
    }
    if !SHELL_TOOLS.contains(&tool_name) {
        return PatchCall::NotPatch;
    }
    let script = match tool_input.get("command") {
        Some(Value::String(script)) => script.clone(),
        Some(Value::Array(argv)) => {
            let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [name, body] if APPLY_PATCH_NAMES.contains(name) => {
                    return with_workdir(tool_input, placed(body, Vec::new()));
                }
                [_, flag, script] if matches!(*flag, "-c" | "-lc") => (*script).to_string(),
                _ => words.join(" "),
            }
        }
        _ => return PatchCall::NotPatch,
    };
    let call = match intercepted(&script) {
        Some((cd, body)) => placed(body, cd.into_iter().collect()),
        None if runs_apply_patch(&script) || carries_patch(&script) => {
            PatchCall::Unplaceable(SHELL_FORM)
        }
        None => PatchCall::NotPatch,
    };
    with_workdir(tool_input, call)
}

/// `call` taken in the shell call's `workdir`, when the hook was sent one.
fn with_workdir(tool_input: &Value, call: PatchCall) -> PatchCall {
    let PatchCall::Placed { paths, mut folders } = call else {
        return call;
    };
    if tool_input
        .get("environment_id")
        .is_some_and(|id| !id.is_null())
    {
        return PatchCall::Unplaceable(ENVIRONMENT);
    }
    match tool_input.get("workdir") {
        None => {}
        Some(Value::String(workdir)) if workdir.is_empty() => {}
        Some(Value::String(workdir)) => folders.insert(0, workdir.clone()),
        Some(_) => return PatchCall::Unplaceable(WORKDIR),
    }
    PatchCall::Placed { paths, folders }
}

fn placed(body: &str, folders: Vec<String>) -> PatchCall {
    if body
        .lines()
        .any(|line| line.trim().starts_with("*** Environment ID:"))
    {
        return PatchCall::Unplaceable(ENVIRONMENT);
    }
    let paths = patch_paths(body);
    if paths.is_empty() {
        return PatchCall::NotPatch;
    }
    PatchCall::Placed { paths, folders }
}

/// The absolute path Codex opens for `path`, applying the patch in `folders` (joined
/// in order) below `cwd`: each joined lexically, `~` and `~/…` as the home folder (a
/// `~name` is an ordinary relative name to Codex). `None` when the home folder is
/// needed but unknown.
pub fn place(cwd: &Path, folders: &[String], path: &str) -> Option<PathBuf> {
    let mut base = cwd.to_path_buf();
    for folder in folders {
        base = lexical_absolute(&base, &codex_home(folder)?);
    }
    Some(lexical_absolute(&base, &codex_home(path)?))
}

fn codex_home(raw: &str) -> Option<PathBuf> {
    if raw == "~" || raw.starts_with("~/") {
        return expand_home(raw).map(|home| PathBuf::from(home.as_ref()));
    }
    Some(PathBuf::from(raw))
}

/// The `cd` folder (if any) and the heredoc body of a script Codex intercepts as a
/// patch: the whole script one statement, `[cd DIR && ](apply_patch|applypatch)
/// <<[-]DELIM`, the body, and a line holding only `DELIM`. `None` for anything else.
fn intercepted(script: &str) -> Option<(Option<String>, &str)> {
    let text = script.trim_start();
    let (cd, rest) = match text.strip_prefix("cd") {
        Some(after) if after.starts_with([' ', '\t']) => {
            let (folder, rest) = cd_folder(after.trim_start_matches([' ', '\t']))?;
            let rest = rest.trim_start_matches([' ', '\t']).strip_prefix("&&")?;
            (Some(folder), rest.trim_start_matches([' ', '\t']))
        }
        _ => (None, text),
    };
    let rest = APPLY_PATCH_NAMES
        .iter()
        .find_map(|name| rest.strip_prefix(name))?;
    let rest = rest.trim_start_matches([' ', '\t']).strip_prefix("<<")?;
    let (strip_tabs, rest) = match rest.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let rest = rest.trim_start_matches([' ', '\t']);
    let (delimiter, rest) = heredoc_delimiter(rest)?;
    let (first_line, body_and_after) = rest.split_once('\n')?;
    if !first_line.trim_end_matches([' ', '\t', '\r']).is_empty() {
        return None;
    }
    let mut offset = 0;
    for line in body_and_after.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let bare = if strip_tabs {
            bare.trim_start_matches('\t')
        } else {
            bare
        };
        if bare == delimiter {
            let after = &body_and_after[offset + line.len()..];
            return after
                .trim()
                .is_empty()
                .then_some((cd, &body_and_after[..offset]));
        }
        offset += line.len();
    }
    None
}

/// The folder of `cd` as Codex's parser takes it: one plain word, a `"…"` string
/// without expansions or escapes, or a `'…'` string; followed by a blank or `&`.
fn cd_folder(text: &str) -> Option<(String, &str)> {
    let (folder, rest) = if let Some(quoted) = text.strip_prefix('\'') {
        let end = quoted.find('\'')?;
        (&quoted[..end], &quoted[end + 1..])
    } else if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted.find('"')?;
        let inside = &quoted[..end];
        if inside.contains(['$', '`', '\\']) {
            return None;
        }
        (inside, &quoted[end + 1..])
    } else {
        let end = text.find([' ', '\t']).unwrap_or(text.len());
        let word = &text[..end];
        let plain = |c: char| c.is_ascii_alphanumeric() || "._-/~+,:@%=".contains(c);
        if !word.chars().all(plain) {
            return None;
        }
        (word, &text[end..])
    };
    if folder.is_empty() || !rest.starts_with([' ', '\t', '&']) {
        return None;
    }
    Some((folder.to_string(), rest))
}

/// A heredoc delimiter: `'WORD'`, `"WORD"` or `WORD` (letters, digits, `_`).
fn heredoc_delimiter(text: &str) -> Option<(&str, &str)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for quote in ['\'', '"'] {
        if let Some(quoted) = text.strip_prefix(quote) {
            let end = quoted.find(quote)?;
            let delimiter = &quoted[..end];
            return (!delimiter.is_empty() && delimiter.chars().all(word))
                .then_some((delimiter, &quoted[end + 1..]));
        }
    }
    let end = text.find(|c: char| !word(c)).unwrap_or(text.len());
    (end > 0).then_some((&text[..end], &text[end..]))
}

/// Whether a shell script carries a patch body that names files (`*** Begin Patch`
/// and a file header): fed to `apply_patch` in some way facet did not recognise.
/// A command that only mentions the marker (`grep -rn '*** Begin Patch' src`) names
/// no file and is not one.
fn carries_patch(script: &str) -> bool {
    script.contains("*** Begin Patch") && !patch_paths(script).is_empty()
}

/// Whether a shell script runs `apply_patch` (or `applypatch`) as a command: in
/// command position after a separator (`;`, `&`, `|`, a newline, a parenthesis,
/// brace or backtick), past variable assignments and wrappers (`env`, `exec`,
/// `command`, `sudo`, `bash -c`, …), by name or by a path ending in it, quoted or
/// not. A heuristic for a shell that facet does not parse: it errs towards finding
/// one (`grep apply_patch src` is not one; `FOO=1 /x/apply_patch` is).
pub fn runs_apply_patch(script: &str) -> bool {
    const WRAPPERS: [&str; 20] = [
        "command", "exec", "env", "time", "nohup", "builtin", "sudo", "then", "do", "else", "elif",
        "if", "while", "until", "!", "xargs", "nice", "bash", "sh", "zsh",
    ];
    script
        .split([';', '&', '|', '\n', '(', ')', '{', '}', '`'])
        .any(|segment| {
            let mut words = segment
                .split_whitespace()
                .map(|word| word.trim_matches(|c| matches!(c, '\'' | '"' | '\\' | '$')));
            let first = words.find(|word| {
                let assignment = word
                    .split_once('=')
                    .is_some_and(|(name, _)| !name.is_empty() && !name.contains('/'));
                !(assignment || WRAPPERS.contains(word) || word.starts_with('-') || word.is_empty())
            });
            first.is_some_and(|word| {
                let name = word.rsplit('/').next().unwrap_or(word);
                APPLY_PATCH_NAMES.contains(&name)
            })
        })
}

/// The header prefixes that name a file, in the grammar's spelling.
const FILE_HEADERS: [&str; 4] = [
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
];

/// Every path a patch body names, in order, as written (trimmed). Empty names are
/// skipped: a header without a path names nothing we could judge, and Codex
/// rejects such a patch itself.
pub fn patch_paths(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|line| {
            let line = line.trim();
            FILE_HEADERS
                .iter()
                .find_map(|header| line.strip_prefix(header))
                .map(str::trim)
                .filter(|path| !path.is_empty())
                .map(str::to_owned)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_header_kind() {
        let body = "*** Begin Patch\n*** Add File: a/new.txt\n+hello\n*** Update File: ../outside.rs\n*** Move to: /abs/renamed.rs\n@@\n-x\n+y\n*** Delete File: gone.md\n*** End Patch\n";
        assert_eq!(
            patch_paths(body),
            vec!["a/new.txt", "../outside.rs", "/abs/renamed.rs", "gone.md"]
        );
    }

    #[test]
    fn added_content_is_not_a_header() {
        let body =
            "*** Begin Patch\n*** Add File: notes.md\n+*** Add File: /etc/shadow\n*** End Patch";
        assert_eq!(patch_paths(body), vec!["notes.md"]);
    }

    #[test]
    fn tolerates_indentation_crlf_and_heredoc_wrapping() {
        let body = "apply_patch <<'EOF'\r\n  *** Begin Patch\r\n  *** Update File:   src/x.rs  \r\n*** End Patch\r\nEOF";
        assert_eq!(patch_paths(body), vec!["src/x.rs"]);
    }

    fn placed_in(script: &str) -> Option<Vec<String>> {
        match classify("Bash", &serde_json::json!({ "command": script })) {
            PatchCall::Placed { folders, .. } => Some(folders),
            _ => None,
        }
    }

    #[test]
    fn reads_the_forms_codex_intercepts_and_no_other() {
        let body = "*** Begin Patch\n*** Add File: x\n+x\n*** End Patch\n";
        assert_eq!(
            placed_in(&format!("apply_patch <<'EOF'\n{body}EOF")),
            Some(vec![])
        );
        assert_eq!(
            placed_in(&format!(
                "  cd ../a && applypatch << \"END\"\n{body}END\n\n"
            )),
            Some(vec!["../a".to_owned()])
        );
        assert_eq!(
            placed_in(&format!("cd 'a b' && apply_patch <<-EOF\n{body}\t\tEOF")),
            Some(vec!["a b".to_owned()])
        );
        for script in [
            format!("cd a && cd b && apply_patch <<'EOF'\n{body}EOF"),
            format!("cd \"$X\" && apply_patch <<'EOF'\n{body}EOF"),
            format!("apply_patch <<'EOF' > log\n{body}EOF"),
            format!("apply_patch <<'EOF'\n{body}EOF\necho done"),
            format!("apply_patch <<'EOF'\n{body}"),
            format!("cd''x && apply_patch <<'EOF'\n{body}EOF"),
            format!("apply_patch <<''\n{body}\n"),
        ] {
            assert_eq!(
                classify("Bash", &serde_json::json!({ "command": script })),
                PatchCall::Unplaceable(SHELL_FORM),
                "{script}"
            );
        }
        assert_eq!(
            classify(
                "Bash",
                &serde_json::json!({"command": ["apply_patch", body]})
            ),
            PatchCall::Placed {
                paths: vec!["x".into()],
                folders: vec![]
            }
        );
        assert_eq!(
            classify("Read", &serde_json::json!({ "command": body })),
            PatchCall::NotPatch
        );
    }

    #[test]
    fn finds_apply_patch_in_command_position_only() {
        for script in [
            "apply_patch < p",
            "x; FOO=1 apply_patch",
            "sudo -E /opt/bin/apply_patch",
            "(cd a && 'apply_patch')",
            "echo $(applypatch)",
            "if true; then apply_patch; fi",
        ] {
            assert!(runs_apply_patch(script), "{script}");
        }
        for script in [
            "grep apply_patch src",
            "echo apply_patch",
            "apply_patch_v2 x",
            "",
        ] {
            assert!(!runs_apply_patch(script), "{script}");
        }
    }

    #[test]
    fn places_paths_as_codex_joins_them() {
        let cwd = std::path::Path::new("/w/proj/room");
        let place = |folders: &[&str], path: &str| {
            let folders: Vec<String> = folders.iter().map(|f| f.to_string()).collect();
            place(cwd, &folders, path).map(|p| p.display().to_string())
        };
        assert_eq!(place(&[], "a/../b").as_deref(), Some("/w/proj/room/b"));
        assert_eq!(
            place(&[".."], "other/x").as_deref(),
            Some("/w/proj/other/x")
        );
        assert_eq!(place(&["/abs", "c"], "../../../x").as_deref(), Some("/x"));
        assert_eq!(place(&[], "/etc/x").as_deref(), Some("/etc/x"));
        assert_eq!(
            place(&[], "~user/x").as_deref(),
            Some("/w/proj/room/~user/x")
        );
    }

    #[test]
    fn empty_names_are_skipped() {
        assert!(patch_paths("*** Add File:   \n*** Delete File:").is_empty());
        assert!(patch_paths("").is_empty());
    }
}
