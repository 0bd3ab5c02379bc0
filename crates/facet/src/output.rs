//! What the hook writes back: the exact JSON shapes hosts read on stdout.
//!
//! One shape per purpose, shared by both dialects (Codex reads the same
//! `hookSpecificOutput` block as Claude Code; it only refuses `ask`, which the
//! caller never emits for Codex):
//!
//! - a decision: `{"hookSpecificOutput":{"hookEventName":"PreToolUse",
//!   "permissionDecision":"ask"|"deny","permissionDecisionReason":"…"}}`;
//! - added context: `{"hookSpecificOutput":{"hookEventName":"SessionStart"|
//!   "UserPromptSubmit"|"PostToolUse","additionalContext":"…"}}`;
//! - OpenCode (the plugin shim throws what it is given): a refusal is
//!   `{"decision":"deny","reason":"…"}`; there is no question; the rule and the binding
//!   are `{"system":"…"}`, which the shim adds to the model request's system prompt;
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

/// A `PreToolUse` decision with its reason sentence.
pub fn decision(permission: Permission, reason: &str) -> String {
    render(&Output {
        hook_specific_output: HookSpecificOutput {
            hook_event_name: "PreToolUse",
            permission_decision: Some(permission),
            permission_decision_reason: Some(reason),
            additional_context: None,
        },
    })
}

/// A tool call refused, in `dialect`'s answer shape: every refusal the hook gives
/// goes through here.
pub fn refusal(dialect: Dialect, reason: &str) -> HookAnswer {
    HookAnswer::json(match dialect {
        Dialect::ClaudeCode | Dialect::Codex => decision(Permission::Deny, reason),
        Dialect::OpenCode => render_plain(&PlainDecision {
            decision: Permission::Deny,
            reason,
        }),
    })
}

/// A tool call put to the user, where `dialect` can ask; refused where it cannot
/// (an `ask` would be rejected by Codex's parser and has no form in OpenCode).
pub fn question(dialect: Dialect, reason: &str) -> HookAnswer {
    if dialect.honours_ask() {
        HookAnswer::json(decision(Permission::Ask, reason))
    } else {
        refusal(dialect, reason)
    }
}

/// Context for the model on `event` (`SessionStart`, `UserPromptSubmit`,
/// `PostToolUse`), in `dialect`'s shape: OpenCode takes it as system-prompt text.
pub fn context(dialect: Dialect, event: &str, text: &str) -> HookAnswer {
    HookAnswer::json(match dialect {
        Dialect::ClaudeCode | Dialect::Codex => additional_context(event, text),
        Dialect::OpenCode => serde_json::json!({ "system": text }).to_string(),
    })
}

/// OpenCode's answer: the decision and the sentence the shim throws.
#[derive(Serialize)]
struct PlainDecision<'a> {
    decision: Permission,
    reason: &'a str,
}

fn render_plain(answer: &PlainDecision<'_>) -> String {
    // As `render`: a struct of a string and a unit enum always serializes.
    serde_json::to_string(answer).unwrap_or_default()
}

/// Context added to the conversation on `event` (`SessionStart`,
/// `UserPromptSubmit`, `PostToolUse`).
pub fn additional_context(event: &str, context: &str) -> String {
    render(&Output {
        hook_specific_output: HookSpecificOutput {
            hook_event_name: event,
            permission_decision: None,
            permission_decision_reason: None,
            additional_context: Some(context),
        },
    })
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
            decision(Permission::Ask, "why"),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"why"}}"#
        );
        assert_eq!(
            refusal(Dialect::OpenCode, "why").stdout.as_deref(),
            Some(r#"{"decision":"deny","reason":"why"}"#)
        );
        assert_eq!(
            question(Dialect::OpenCode, "why"),
            refusal(Dialect::OpenCode, "why")
        );
        assert_eq!(
            question(Dialect::Codex, "why").stdout.as_deref(),
            Some(decision(Permission::Deny, "why").as_str())
        );
        assert_eq!(
            additional_context("SessionStart", "ctx"),
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"ctx"}}"#
        );
    }
}
