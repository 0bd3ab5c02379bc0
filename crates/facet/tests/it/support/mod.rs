//! Test support: real folder trees in temp dirs, and the real `facet` binary run
//! with a JSON event on stdin and its stdout read back as JSON.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// The built `facet` binary.
pub fn facet_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_facet"))
}

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as JSON; `None` when stdout is empty (no opinion).
    pub fn json(&self) -> Option<Value> {
        let text = self.stdout.trim();
        if text.is_empty() {
            None
        } else {
            Some(
                serde_json::from_str(text).unwrap_or_else(|error| {
                    panic!("stdout is not JSON ({error}): {:?}", self.stdout)
                }),
            )
        }
    }

    /// `(permissionDecision, permissionDecisionReason)` of a PreToolUse answer.
    pub fn decision(&self) -> Option<(String, String)> {
        let value = self.json()?;
        let output = &value["hookSpecificOutput"];
        assert_eq!(output["hookEventName"], "PreToolUse", "{value}");
        Some((
            output["permissionDecision"].as_str().unwrap().to_owned(),
            output["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .to_owned(),
        ))
    }

    /// `(decision, reason)` of a Gemini CLI `BeforeTool` answer, which must be in
    /// Gemini's own shape (Gemini ignores the Claude Code block and runs the call).
    pub fn gemini_decision(&self) -> Option<(String, String)> {
        let value = self.json()?;
        assert!(
            value.get("hookSpecificOutput").is_none(),
            "a Gemini refusal in another host's shape: {value}"
        );
        Some((
            value["decision"].as_str().unwrap().to_owned(),
            value["reason"].as_str().unwrap().to_owned(),
        ))
    }

    /// `(permissionDecision, permissionDecisionReason)` of a GitHub Copilot CLI
    /// `preToolUse` answer (top-level fields, no event name).
    pub fn copilot_decision(&self) -> Option<(String, String)> {
        let value = self.json()?;
        assert!(value.get("hookSpecificOutput").is_none(), "{value}");
        Some((
            value["permissionDecision"].as_str().unwrap().to_owned(),
            value["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .to_owned(),
        ))
    }

    /// The OpenCode dialect's refusal sentence, if the hook answered one (it answers
    /// nothing else: no question, no context).
    pub fn opencode_refusal(&self) -> Option<String> {
        let value = self.json()?;
        assert_eq!(value["decision"], "deny", "{value}");
        assert_eq!(value.as_object().map(|o| o.len()), Some(2), "{value}");
        Some(value["reason"].as_str().unwrap().to_owned())
    }

    /// `additionalContext` of an answer, with the event it names.
    pub fn context(&self) -> Option<(String, String)> {
        let value = self.json()?;
        let output = &value["hookSpecificOutput"];
        Some((
            output["hookEventName"].as_str().unwrap().to_owned(),
            output["additionalContext"].as_str().unwrap().to_owned(),
        ))
    }

    /// Asserts a clean no-opinion answer: exit 0, nothing on stdout.
    pub fn assert_no_opinion(&self, what: &str) {
        assert_eq!(self.code, 0, "{what}: exit code; stderr: {}", self.stderr);
        assert!(
            self.stdout.trim().is_empty(),
            "{what}: expected no opinion, got {}",
            self.stdout
        );
    }
}

/// Runs `facet ARGS` with `stdin`, the state folder `state`, in `current_dir`.
pub fn run_facet(args: &[&str], stdin: &[u8], state: &Path, current_dir: &Path) -> Run {
    run_facet_with(args, stdin, state, current_dir, &[])
}

/// [`run_facet`] with further environment variables (set last, so they may
/// override `FACET_STATE_DIR`). The user's own configuration is never read:
/// `XDG_CONFIG_HOME` points next to `state` and `FACET_CONFIG` is unset unless given.
pub fn run_facet_with(
    args: &[&str],
    stdin: &[u8],
    state: &Path,
    current_dir: &Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let mut command = Command::new(facet_bin());
    command
        .args(args)
        .env("FACET_STATE_DIR", state)
        .env("XDG_CONFIG_HOME", state.with_file_name("xdg-config"))
        .env_remove("FACET_CONFIG")
        .env_remove("FACET_TOOL_NAME")
        .env_remove("FACET_SESSION_ID");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .current_dir(current_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut input = child.stdin.take().unwrap();
        // The hook may exit before reading everything (it never should, but a
        // broken pipe here must not hide its answer).
        let _ = input.write_all(stdin);
    }
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// A project tree in a temp folder:
///
/// ```text
/// <tmp>/
///   project/            (.git: the project's top level)
///     src/room/         the session's folder: the facet
///       inside.txt
///     src/other/secret.txt
///     shared/types.rs
///   project2/           a sibling whose name starts with the project's
///   outside/file.txt    wholly outside the project
///   state/              FACET_STATE_DIR
///   elsewhere/          where the guard process runs
/// ```
pub struct Tree {
    pub tmp: tempfile::TempDir,
    /// Canonical temp root (on macOS /tmp is a symlink; keep one spelling).
    pub base: PathBuf,
}

impl Tree {
    pub fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        for dir in [
            "project/.git",
            "project/src/room",
            "project/src/other",
            "project/shared",
            "project2",
            "outside",
            "state",
            "elsewhere",
        ] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        for (file, text) in [
            ("project/src/room/inside.txt", "in"),
            ("project/src/other/secret.txt", "s"),
            ("project/shared/types.rs", "t"),
            ("project2/x.txt", "x"),
            ("outside/file.txt", "o"),
        ] {
            std::fs::write(base.join(file), text).unwrap();
        }
        Tree { tmp, base }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.base.join(relative)
    }

    /// The session's folder (the facet).
    pub fn room(&self) -> PathBuf {
        self.path("project/src/room")
    }

    pub fn state(&self) -> PathBuf {
        self.path("state")
    }

    pub fn symlink(&self, target: impl AsRef<Path>, link: &str) {
        std::os::unix::fs::symlink(target, self.path(link)).unwrap();
    }

    /// Runs the hook (`extra` are extra flags such as `--dialect codex`) with
    /// `event` on stdin, from the `elsewhere/` folder.
    pub fn hook(&self, extra: &[&str], event: &Value) -> Run {
        let mut args = vec!["hook"];
        args.extend_from_slice(extra);
        run_facet(
            &args,
            &serde_json::to_vec(event).unwrap(),
            &self.state(),
            &self.path("elsewhere"),
        )
    }

    /// Runs a panel command.
    pub fn panel(&self, args: &[&str]) -> Run {
        run_facet(args, b"", &self.state(), &self.path("elsewhere"))
    }

    /// Replaces the temp folder's path with `[TMP]`, for snapshots.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.base.display().to_string(), "[TMP]")
    }
}

/// A Claude Code PreToolUse event.
pub fn pre_tool_use(session: &str, cwd: &Path, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_test",
        "permission_mode": "default",
    })
}

/// A Gemini CLI event (`BeforeTool`, `AfterTool`, `SessionStart`, `BeforeAgent`),
/// as Gemini CLI 0.61.0 writes it.
pub fn gemini_event(session: &str, cwd: &Path, event: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": event,
        "timestamp": "2026-12-07T01:13:34.068Z",
        "tool_name": tool,
        "tool_input": input,
        "source": "startup",
        "prompt": "hello",
    })
}

/// What the OpenCode plugin shim (`integrations/opencode/plugin/facet.js`) sends for one
/// `tool.execute.before`: the hook's `input` and `output`, the plugin's `directory`
/// and `worktree`.
pub fn opencode_tool_call(
    session: &str,
    directory: &Path,
    worktree: &Path,
    tool: &str,
    args: Value,
) -> Value {
    json!({
        "hook": "tool.execute.before",
        "directory": directory,
        "worktree": worktree,
        "input": {"tool": tool, "sessionID": session, "callID": "call_test"},
        "output": {"args": args},
    })
}

/// A Claude Code PostToolUse event.
pub fn post_tool_use(
    session: &str,
    cwd: &Path,
    tool: &str,
    input: Value,
    response: Value,
) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_response": response,
        "tool_use_id": "toolu_test",
        "permission_mode": "default",
    })
}

/// A session-level event (SessionStart, UserPromptSubmit).
pub fn session_event(session: &str, cwd: &Path, event: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": event,
        "source": "startup",
        "prompt": "hello",
        "permission_mode": "default",
    })
}

/// A GitHub Copilot CLI `preToolUse` event (1.0.102, camelCase hook entries), as
/// Copilot writes it: no event name; `toolArgs` an object, or text.
pub fn copilot_pre_tool_use(session: &str, cwd: &Path, tool: &str, args: Value) -> Value {
    json!({
        "sessionId": session,
        "timestamp": 1_796_606_020_851_u64,
        "cwd": cwd,
        "toolName": tool,
        "toolArgs": args,
    })
}

/// A GitHub Copilot CLI `postToolUse` event.
pub fn copilot_post_tool_use(
    session: &str,
    cwd: &Path,
    tool: &str,
    args: Value,
    result: Value,
) -> Value {
    json!({
        "sessionId": session,
        "timestamp": 1_796_606_020_860_u64,
        "cwd": cwd,
        "toolName": tool,
        "toolArgs": args,
        "toolResult": result,
    })
}

/// A GitHub Copilot CLI `sessionStart` event.
pub fn copilot_session_start(session: &str, cwd: &Path) -> Value {
    json!({
        "sessionId": session,
        "timestamp": 1_796_606_020_546_u64,
        "cwd": cwd,
        "source": "new",
        "initialPrompt": "hello",
    })
}
