//! What the hook writes back: the exact JSON shapes hosts read on stdout.
//!
//! One shape per purpose and dialect, written by one function each ([`decision`],
//! [`additional_context`]), so no caller can send a host a shape it does not read.
//! Codex reads the same `hookSpecificOutput` block as Claude Code, but rejects `ask`;
//! Gemini CLI reads its own:
//!
//! - a decision, Claude Code and Codex: `{"hookSpecificOutput":{"hookEventName":
//!   "PreToolUse","permissionDecision":"ask"|"deny","permissionDecisionReason":"…"}}`;
//!   Gemini CLI: `{"decision":"deny","reason":"…"}` (it ignores the Claude Code
//!   block and runs the call — tested). A dialect that cannot ask is sent `deny`.
//! - added context: `{"hookSpecificOutput":{"hookEventName":"SessionStart"|
//!   "UserPromptSubmit"|"PostToolUse","additionalContext":"…"}}`; Gemini CLI reads
//!   the same block (its event names: `SessionStart`, `BeforeAgent`, `AfterTool`);
//! - a Gemini search pinned to the session folder ([`pinned_tool_input`]):
//!   `{"hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{…}}}`, the
//!   call's whole input with `dir_path` added (Gemini replaces the input with it);
//! - no opinion: nothing on stdout and exit code 0, so the host's own
//!   permission rules stay in charge. `allow` is deliberately never emitted: it
//!   would skip the host's prompt for a call the facet merely has no objection to.

use serde::Serialize;

use crate::envelope::Dialect;

/// Exit code for "read, acted on, or had no opinion".
pub const EXIT_OK: i32 = 0;
/// Exit code for a hook that could not do its job but must not block the host:
/// Claude Code, Codex and the DeepSeek Harness bridge all treat any code other
/// than 0 and 2 as a non-blocking failure and log stderr. 2 would block.
pub const EXIT_NON_BLOCKING_ERROR: i32 = 1;

/// The permission decisions facet ever gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    /// Put the call to the user.
    Ask,
    /// Refuse the call; the reason goes to the model.
    Deny,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HookSpecificOutput<'a> {
    hook_event_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision: Option<Permission>,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_context: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    hook_specific_output: HookSpecificOutput<'a>,
}

fn render(output: &Output<'_>) -> String {
    // Serializing a struct of strings and a unit enum cannot fail; the fallback
    // keeps the no-unwrap rule without inventing an output.
    serde_json::to_string(output).unwrap_or_default()
}

/// Gemini CLI's answer to a `BeforeTool` hook.
#[derive(Serialize)]
struct GeminiDecision<'a> {
    decision: Permission,
    reason: &'a str,
}

/// A `PreToolUse` decision with its reason sentence, in `dialect`'s shape. Every
/// refusal and question the hook gives goes through here; a dialect that cannot ask
/// ([`Dialect::honours_ask`]) is sent `deny` whatever `permission` says.
pub fn decision(dialect: Dialect, permission: Permission, reason: &str) -> String {
    let permission = if dialect.honours_ask() {
        permission
    } else {
        Permission::Deny
    };
    if dialect == Dialect::Gemini {
        return serde_json::to_string(&GeminiDecision {
            decision: permission,
            reason,
        })
        .unwrap_or_default();
    }
    render(&Output {
        hook_specific_output: HookSpecificOutput {
            hook_event_name: "PreToolUse",
            permission_decision: Some(permission),
            permission_decision_reason: Some(reason),
            additional_context: None,
        },
    })
}

/// Context added to the conversation on `event` (`SessionStart`,
/// `UserPromptSubmit`, `PostToolUse`), named as `dialect` names it.
pub fn additional_context(dialect: Dialect, event: &str, context: &str) -> String {
    let event = match (dialect, event) {
        (Dialect::Gemini, "UserPromptSubmit") => "BeforeAgent",
        (Dialect::Gemini, "PostToolUse") => "AfterTool",
        (_, event) => event,
    };
    render(&Output {
        hook_specific_output: HookSpecificOutput {
            hook_event_name: event,
            permission_decision: None,
            permission_decision_reason: None,
            additional_context: Some(context),
        },
    })
}

/// Gemini CLI's `BeforeTool` answer replacing a call's input with `tool_input`.
pub fn pinned_tool_input(tool_input: &serde_json::Value) -> String {
    serde_json::json!({"hookSpecificOutput": {
        "hookEventName": "BeforeTool",
        "tool_input": tool_input,
    }})
    .to_string()
}

/// What one hook run produces: stdout (if any), a stderr message (if any) and
/// the exit code. Kept as data so the library is testable without a process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HookAnswer {
    /// JSON for stdout, or `None` for no output at all.
    pub stdout: Option<String>,
    /// A message for stderr (never a credential, never the raw envelope).
    pub stderr: Option<String>,
    /// The process exit code.
    pub exit_code: i32,
}

impl HookAnswer {
    /// No opinion: empty stdout, exit 0.
    pub fn no_opinion() -> Self {
        Self::default()
    }

    /// A JSON answer on stdout, exit 0.
    pub fn json(stdout: String) -> Self {
        Self {
            stdout: Some(stdout),
            stderr: None,
            exit_code: EXIT_OK,
        }
    }

    /// A failure that must not block the host: message on stderr, exit 1.
    pub fn non_blocking_error(message: String) -> Self {
        Self {
            stdout: None,
            stderr: Some(message),
            exit_code: EXIT_NON_BLOCKING_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_exactly_the_hosts() {
        assert_eq!(
            decision(Dialect::ClaudeCode, Permission::Ask, "why"),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"why"}}"#
        );
        assert_eq!(
            additional_context(Dialect::ClaudeCode, "SessionStart", "ctx"),
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"ctx"}}"#
        );
        // Codex rejects `ask`: it is sent the refusal.
        assert_eq!(
            decision(Dialect::Codex, Permission::Ask, "why"),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"why"}}"#
        );
        // Gemini CLI reads only its own shape, and is never asked.
        for permission in [Permission::Ask, Permission::Deny] {
            assert_eq!(
                decision(Dialect::Gemini, permission, "why"),
                r#"{"decision":"deny","reason":"why"}"#
            );
        }
        assert_eq!(
            additional_context(Dialect::Gemini, "UserPromptSubmit", "ctx"),
            r#"{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"ctx"}}"#
        );
    }
}
