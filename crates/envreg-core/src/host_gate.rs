//! The host gate: contract §1.3 judged *before* a host runs `env_save` / `env_delete`,
//! for hosts whose MCP client cannot ask a person itself (no elicitation) but that run
//! a PreToolUse hook (`envreg hook`, in the `envreg` crate, reads the host's envelope
//! and writes its answer; this module decides).
//!
//! A call is judged exactly as the server would judge it: a save is planned with
//! [`crate::Registry::plan_save`] (so "is this production, before or after" is the
//! write path's own answer), a delete goes through [`crate::approval::required`]. The
//! verdicts:
//!
//! - [`GateVerdict::NoOpinion`]: not a write the table gates (a read tool, a dry run, a
//!   staging save, `confirm: false`, a policy that turned approval off). The host's own
//!   rules decide.
//! - [`GateVerdict::Approval`]: the table wants a person. Claude Code asks
//!   ([`GateVerdict::ask_reason`]); Codex, whose hooks cannot ask, refuses with the way
//!   forward ([`GateVerdict::refusal_reason`]).
//! - [`GateVerdict::Unjudged`]: arguments that cannot be read, a record that cannot be
//!   planned, a registry that cannot be opened. Fail closed: treated like
//!   [`GateVerdict::Approval`], never as no opinion.
//!
//! Decision: `writePolicy.approvalChannel` is not read here. The gate applies the
//! table whichever channel is set; under `elicitation` a person may be asked twice
//! (the hook, then the server), which is safe, while skipping the gate on a channel
//! value would make the hook's safety depend on the server's configuration.
//!
//! Not done: the registry can change between the hook's verdict and the server's
//! commit (a hand edit making an environment production in between). The server
//! applies the same table again at commit time, under its own channel.

use serde_json::Value;

use crate::approval::{ApprovalRequest, WriteCall};
use crate::error::EnvError;
use crate::kind::RecordKind;
use crate::registry::Registry;

/// The two tools the gate judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteTool {
    Save,
    Delete,
}

impl WriteTool {
    pub fn name(self) -> &'static str {
        match self {
            WriteTool::Save => "env_save",
            WriteTool::Delete => "env_delete",
        }
    }
}

/// What the gate says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    /// Not gated; the host decides.
    NoOpinion,
    /// Contract §1.3 wants a person's approval.
    Approval {
        request: ApprovalRequest,
        /// The `writePolicy` key that makes it so.
        policy_key: &'static str,
        /// The envreg CLI command that makes the same change and asks on a terminal.
        cli: String,
    },
    /// The call could not be judged; fail closed. `tool` is `env_save`, `env_delete`,
    /// or `tool` when even the tool's name could not be read.
    Unjudged { tool: &'static str, cause: String },
}

impl GateVerdict {
    /// The sentence a host that can ask shows the person (and DeepSeek Harness's
    /// hooks bridge passes to its approval prompt). `None` for no opinion.
    pub fn ask_reason(&self) -> Option<String> {
        match self {
            GateVerdict::NoOpinion => None,
            GateVerdict::Approval {
                request,
                policy_key,
                ..
            } => Some(format!(
                "envreg: this call needs your approval — {} (writePolicy.{policy_key} in envreg.yaml). Allow it once only if this change is meant.",
                request.reason
            )),
            GateVerdict::Unjudged { tool, cause } => Some(format!(
                "envreg could not judge this {tool} call ({cause}), so it asks instead of letting it through. Allow it only if you know what it writes."
            )),
        }
    }

    /// The sentence for a host that cannot ask (Codex): why the call is refused and
    /// how to proceed. `None` for no opinion.
    pub fn refusal_reason(&self) -> Option<String> {
        match self {
            GateVerdict::NoOpinion => None,
            GateVerdict::Approval {
                request,
                policy_key,
                cli,
            } => Some(format!(
                "envreg refused this call: it needs a person's approval — {} (writePolicy.{policy_key} in envreg.yaml) — and this host cannot ask from a hook. Do not retry; tell the user, who can make the change with `{cli}` in a terminal, where envreg asks them.",
                request.reason
            )),
            GateVerdict::Unjudged { tool, cause } => Some(format!(
                "envreg refused this {tool} call: it could not be judged ({cause}), and an unjudged write is refused. Fix the cause, or ask the user to make the change with the envreg CLI in a terminal."
            )),
        }
    }
}

/// The verdict on a hook event that could not be read at all: fail closed.
pub fn unreadable(cause: impl Into<String>) -> GateVerdict {
    GateVerdict::Unjudged {
        tool: "tool",
        cause: cause.into(),
    }
}

/// Judges a call of the write tool `tool` with `input` (which host tool name stands
/// for it is the host's protocol, read by `envreg hook`). `open` opens the registry
/// the call will write to; it is called only for a call that may need approval, so
/// every other call costs no registry load.
pub fn judge(
    tool: WriteTool,
    input: &Value,
    open: impl FnOnce() -> Result<Registry, EnvError>,
) -> GateVerdict {
    let unjudged = |cause: String| GateVerdict::Unjudged {
        tool: tool.name(),
        cause,
    };
    let Some(args) = input.as_object() else {
        return unjudged("its arguments are not a JSON object".to_owned());
    };
    let flag = |key: &str| match args.get(key) {
        None | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(_) => Err(format!("`{key}` is neither true nor false")),
    };
    let kind = match args.get("kind").and_then(Value::as_str).map(str::parse) {
        Some(Ok(kind)) => kind,
        _ => return unjudged("`kind` is missing or not a record kind".to_owned()),
    };
    match tool {
        WriteTool::Save => {
            match flag("dryRun") {
                Ok(true) => return GateVerdict::NoOpinion,
                Ok(false) => {}
                Err(cause) => return unjudged(cause),
            }
            // Only these two kinds are ever gated; no registry load for the rest.
            if !matches!(kind, RecordKind::Environment | RecordKind::Deployment) {
                return GateVerdict::NoOpinion;
            }
            let registry = match open() {
                Ok(registry) => registry,
                Err(e) => return unjudged(format!("the registry cannot be read: {}", e.message)),
            };
            let record = args.get("record").cloned().unwrap_or(Value::Null);
            match registry.plan_save(kind, record, false) {
                Ok(plan) => match plan.approval() {
                    Some(request) => GateVerdict::Approval {
                        request,
                        policy_key: "requireApprovalForProductionSave",
                        cli: format!("envreg save {kind} FILE"),
                    },
                    None => GateVerdict::NoOpinion,
                },
                Err(e) => unjudged(format!(
                    "the record cannot be checked: {}: {}",
                    e.code.as_str(),
                    e.message
                )),
            }
        }
        WriteTool::Delete => {
            match flag("confirm") {
                Ok(true) => {}
                Ok(false) => return GateVerdict::NoOpinion,
                Err(cause) => return unjudged(cause),
            }
            let id = match args.get("id").and_then(Value::as_str) {
                Some(id) if crate::id::is_valid_id(id) => id,
                _ => return unjudged("`id` is missing or not a record id".to_owned()),
            };
            let registry = match open() {
                Ok(registry) => registry,
                Err(e) => return unjudged(format!("the registry cannot be read: {}", e.message)),
            };
            let call = WriteCall::Delete {
                kind,
                id,
                confirm: true,
            };
            match crate::approval::required(&registry.config().write_policy, &call) {
                Some(request) => GateVerdict::Approval {
                    request,
                    policy_key: "requireApprovalForDelete",
                    cli: format!("envreg delete {kind} {id} --confirm"),
                },
                None => GateVerdict::NoOpinion,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn never_opened() -> Result<Registry, EnvError> {
        panic!("the registry must not be opened for this call")
    }

    #[test]
    fn calls_that_cannot_need_approval_do_not_open_the_registry() {
        for (tool, input) in [
            (
                WriteTool::Save,
                json!({"kind": "environment", "record": {}, "dryRun": true}),
            ),
            (
                WriteTool::Save,
                json!({"kind": "service", "record": {"id": "x"}}),
            ),
            (
                WriteTool::Save,
                json!({"kind": "ruleProfile", "record": {}}),
            ),
            (
                WriteTool::Delete,
                json!({"kind": "environment", "id": "prod", "confirm": false}),
            ),
            (
                WriteTool::Delete,
                json!({"kind": "environment", "id": "prod"}),
            ),
        ] {
            assert_eq!(
                judge(tool, &input, never_opened),
                GateVerdict::NoOpinion,
                "{tool:?} {input}"
            );
        }
    }

    #[test]
    fn unreadable_arguments_fail_closed() {
        for (tool, input) in [
            (WriteTool::Save, json!("not an object")),
            (WriteTool::Save, json!({"record": {}})),
            (WriteTool::Save, json!({"kind": "planet", "record": {}})),
            (
                WriteTool::Save,
                json!({"kind": "environment", "record": {}, "dryRun": "yes"}),
            ),
            (
                WriteTool::Delete,
                json!({"kind": "environment", "id": "prod", "confirm": 1}),
            ),
            (
                WriteTool::Delete,
                json!({"kind": "environment", "id": "../prod", "confirm": true}),
            ),
            (
                WriteTool::Delete,
                json!({"kind": "environment", "confirm": true}),
            ),
        ] {
            let verdict = judge(tool, &input, never_opened);
            assert!(
                matches!(verdict, GateVerdict::Unjudged { .. }),
                "{tool:?} {input}: {verdict:?}"
            );
            assert!(verdict.ask_reason().is_some() && verdict.refusal_reason().is_some());
        }
    }

    #[test]
    fn a_registry_that_cannot_be_opened_fails_closed() {
        let verdict = judge(
            WriteTool::Delete,
            &json!({"kind": "service", "id": "a", "confirm": true}),
            || Err(EnvError::invalid_argument("no registry found")),
        );
        assert_eq!(
            verdict,
            GateVerdict::Unjudged {
                tool: "env_delete",
                cause: "the registry cannot be read: no registry found".to_owned()
            }
        );
    }

    #[test]
    fn no_opinion_has_no_sentence() {
        assert_eq!(GateVerdict::NoOpinion.ask_reason(), None);
        assert_eq!(GateVerdict::NoOpinion.refusal_reason(), None);
    }
}
