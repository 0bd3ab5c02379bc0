//! What the hook writes back: the exact JSON shapes hosts read on stdout.
//!
//! One shape per purpose and dialect; every decision and every added context goes
//! through [`decision`] and [`additional_context`], which pick the dialect's shape, so
//! no caller can send a host a shape it does not read. Claude Code and Codex read the
//! same `hookSpecificOutput` block (Codex rejects `ask`); Gemini CLI and Copilot CLI
//! read their own:
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
//! - GitHub Copilot CLI reads the decision's and the context's fields at the top
//!   level, with no event name (its hook knows which event it ran):
//!   `{"permissionDecision":"deny","permissionDecisionReason":"…"}`,
//!   `{"additionalContext":"…"}`;
//! - OpenCode (the plugin shim throws what it is given): a refusal is Gemini CLI's
//!   `{"decision":"deny","reason":"…"}`; there is no question; the rule and the
//!   binding are `{"system":"…"}`, which the shim adds to the model request's system
//!   prompt;
//! - no opinion: nothing on stdout and exit code 0, so the host's own
//!   permission rules stay in charge. `allow` is deliberately never emitted: it
//!   would skip the host's prompt for a call the facet merely has no objection to.

use serde::Serialize;

use crate::envelope::Dialect;

/// Exit code for "read, acted on, or had no opinion".
pub const EXIT_OK: i32 = 0;
/// Exit code for a hook that could not do its job but must not block the host:
/// Claude Code, Codex and the DeepSeek Harness bridge all treat any code other
/// than 0 and 2 as a non-blocking failure and log stderr. 2 would block. Copilot
/// CLI refuses a tool call whose `preToolUse` hook exits with any code but 0 (and
/// logs the failure of any other hook), so there it fails closed.
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

/// Copilot's answer: the same fields, top level, no event name.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CopilotOutput<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision: Option<Permission>,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_context: Option<&'a str>,
}

fn render(dialect: Dialect, output: HookSpecificOutput<'_>) -> String {
    // Serializing a struct of strings and a unit enum cannot fail; the fallback
    // keeps the no-unwrap rule without inventing an output.
    match dialect {
        // OpenCode's decisions and context never come here ([`decision`],
        // [`additional_context`] write its shapes); it would get Claude Code's block.
        Dialect::ClaudeCode | Dialect::Codex | Dialect::Gemini | Dialect::OpenCode => {
            serde_json::to_string(&Output {
                hook_specific_output: output,
            })
        }
        Dialect::Copilot => serde_json::to_string(&CopilotOutput {
            permission_decision: output.permission_decision,
            permission_decision_reason: output.permission_decision_reason,
            additional_context: output.additional_context,
        }),
    }
    .unwrap_or_default()
}

/// Gemini CLI's answer to a `BeforeTool` hook; the OpenCode shim reads the same.
#[derive(Serialize)]
struct PlainDecision<'a> {
    decision: Permission,
    reason: &'a str,
}

/// A `PreToolUse` decision with its reason sentence, in `dialect`'s shape: the one
/// place every ask and refusal of the hook is written. A dialect that cannot ask
/// ([`Dialect::honours_ask`]) is sent `deny` whatever `permission` says.
pub fn decision(dialect: Dialect, permission: Permission, reason: &str) -> String {
    let permission = if dialect.honours_ask() {
        permission
    } else {
        Permission::Deny
    };
    if matches!(dialect, Dialect::Gemini | Dialect::OpenCode) {
        return serde_json::to_string(&PlainDecision {
            decision: permission,
            reason,
        })
        .unwrap_or_default();
    }
    render(
        dialect,
        HookSpecificOutput {
            hook_event_name: "PreToolUse",
            permission_decision: Some(permission),
            permission_decision_reason: Some(reason),
            additional_context: None,
        },
    )
}

/// Context added to the conversation on `event` (`SessionStart`,
/// `UserPromptSubmit`, `PostToolUse`), in `dialect`'s shape and named as `dialect`
/// names it.
pub fn additional_context(dialect: Dialect, event: &str, context: &str) -> String {
    if dialect == Dialect::OpenCode {
        // The shim adds it to the model request's system prompt.
        return serde_json::json!({ "system": context }).to_string();
    }
    let event = match (dialect, event) {
        (Dialect::Gemini, "UserPromptSubmit") => "BeforeAgent",
        (Dialect::Gemini, "PostToolUse") => "AfterTool",
        (_, event) => event,
    };
    render(
        dialect,
        HookSpecificOutput {
            hook_event_name: event,
            permission_decision: None,
            permission_decision_reason: None,
            additional_context: Some(context),
        },
    )
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
        for dialect in [Dialect::ClaudeCode, Dialect::Codex] {
            assert_eq!(
                additional_context(dialect, "SessionStart", "ctx"),
                r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"ctx"}}"#
            );
        }
        assert_eq!(
            decision(Dialect::Copilot, Permission::Ask, "why"),
            r#"{"permissionDecision":"ask","permissionDecisionReason":"why"}"#
        );
        assert_eq!(
            decision(Dialect::Copilot, Permission::Deny, "why"),
            r#"{"permissionDecision":"deny","permissionDecisionReason":"why"}"#
        );
        assert_eq!(
            additional_context(Dialect::Copilot, "SessionStart", "ctx"),
            r#"{"additionalContext":"ctx"}"#
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
        // OpenCode: Gemini's refusal shape, never asked; context as system-prompt text.
        for permission in [Permission::Ask, Permission::Deny] {
            assert_eq!(
                decision(Dialect::OpenCode, permission, "why"),
                r#"{"decision":"deny","reason":"why"}"#
            );
        }
        assert_eq!(
            additional_context(Dialect::OpenCode, "SessionStart", "ctx"),
            r#"{"system":"ctx"}"#
        );
    }
}
