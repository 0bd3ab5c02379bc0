//! Answering `session/request_permission` from the request's [`ToolPolicy`].
//!
//! A tool is known by its programmatic name when the agent gives one, and by its ACP
//! kind (`read`, `edit`, `delete`, `move`, `search`, `execute`, `think`, `fetch`,
//! `switch_mode`, `other`) — see [`super::updates::tool_identity`]. It is allowed when
//! either appears in the allowed set:
//!
//! * a non-empty `allowlist` is the allowed set, and only it (the contract's default
//!   reading: "when the implementation declares nothing else, only the allowlist");
//! * with an empty allowlist, the profile decides: `workspace` allows the file kinds
//!   `read`, `search`, `edit`, `delete`, `move` and `think`; `reasoning` (also the empty
//!   profile) allows only `think`; any other profile name is refused before the agent
//!   starts (`agent.tool_rejected`), as the codex, claude-code and pi backends do.
//!
//! The answer picks an option by its *kind*, never by position or label: allowed →
//! `allow_once` (never `allow_always`, which would outlive this request); refused →
//! `reject_once`, else `reject_always`; when the agent offers no reject option, the
//! request is answered `cancelled`, which the protocol defines as "not allowed".
//!
//! Not done, deliberately: the policy sees only what the agent asks about. An agent
//! that runs a tool without asking (codex in its `auto` mode runs commands in its own
//! sandbox) is not stopped here; its tool calls still appear as events, and the
//! runtime's workspace checks still apply to deliverables.

use crate::agent_cli::ToolPolicyRefused;
use agent_client_protocol::v1::schema::{
    PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, ToolKind,
};
use agent_exec_contract::ToolPolicy;

use super::updates::{kind_name, tool_identity};

/// Kinds the `workspace` profile allows.
const WORKSPACE_KINDS: &[&str] = &["read", "search", "edit", "delete", "move", "think"];
/// Kinds the `reasoning` profile (and the empty profile) allows.
const REASONING_KINDS: &[&str] = &["think"];

/// A policy decision, with the tool it was about (for events and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub tool: String,
    pub allowed: bool,
    pub response: RequestPermissionResponse,
}

/// The tool policy of one execution.
#[derive(Debug, Clone)]
pub struct Policy {
    allowed: Vec<String>,
}

impl Policy {
    /// The allowed set of `policy` (see the module doc); an unknown profile is an
    /// error naming the known ones.
    pub fn new(policy: &ToolPolicy) -> Result<Self, ToolPolicyRefused> {
        let kinds = match policy.profile.as_str() {
            "workspace" => WORKSPACE_KINDS,
            "" | "reasoning" => REASONING_KINDS,
            other => {
                return Err(ToolPolicyRefused(format!(
                    "tool profile `{other}` is not known to the acp backend \
                     (known: `workspace`, `reasoning`, or empty)"
                )));
            }
        };
        let allowed = if policy.allowlist.is_empty() {
            kinds.iter().map(|kind| (*kind).to_owned()).collect()
        } else {
            policy.allowlist.clone()
        };
        Ok(Policy { allowed })
    }

    /// Whether a tool with this name and kind may run.
    pub fn allows(&self, name: Option<&str>, kind: ToolKind) -> bool {
        let kind = kind_name(kind);
        self.allowed
            .iter()
            .any(|allowed| Some(allowed.as_str()) == name || allowed == kind)
    }

    /// Whether the agent may write files through `fs/write_text_file`: the same rule
    /// as an `edit` tool.
    pub fn allows_writes(&self) -> bool {
        self.allows(None, ToolKind::Edit)
    }

    /// The answer to a permission request.
    pub fn decide(&self, request: &RequestPermissionRequest) -> Decision {
        let fields = &request.tool_call.fields;
        let kind = fields.kind.unwrap_or_default();
        let tool = tool_identity(fields.name.as_deref(), kind);
        let allowed = self.allows(fields.name.as_deref(), kind);
        let preference: &[PermissionOptionKind] = if allowed {
            &[PermissionOptionKind::AllowOnce]
        } else {
            &[
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
            ]
        };
        let chosen = preference.iter().find_map(|wanted| {
            request
                .options
                .iter()
                .find(|option| option.kind == *wanted)
                .map(|option| option.option_id.clone())
        });
        let (allowed, outcome) = match chosen {
            Some(id) => (
                allowed,
                RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
            ),
            // No `allow_once` to pick (only `allow_always`): refusing is the narrow
            // answer; no reject option either: `cancelled` means "not allowed".
            None => (false, RequestPermissionOutcome::Cancelled),
        };
        Decision {
            tool,
            allowed,
            response: RequestPermissionResponse::new(outcome),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        PermissionOption, ToolCallUpdate, ToolCallUpdateFields,
    };

    fn request(name: Option<&str>, kind: ToolKind) -> RequestPermissionRequest {
        let mut fields = ToolCallUpdateFields::new().kind(kind).title("t".to_owned());
        fields.name = name.map(str::to_owned);
        RequestPermissionRequest::new(
            "s",
            ToolCallUpdate::new("call", fields),
            vec![
                PermissionOption::new("always", "Always", PermissionOptionKind::AllowAlways),
                PermissionOption::new("once", "Yes", PermissionOptionKind::AllowOnce),
                PermissionOption::new("no", "No", PermissionOptionKind::RejectOnce),
            ],
        )
    }

    fn selected(decision: &Decision) -> Option<String> {
        match &decision.response.outcome {
            RequestPermissionOutcome::Selected(s) => Some(s.option_id.0.to_string()),
            _ => None,
        }
    }

    fn policy(profile: &str, allowlist: &[&str]) -> Policy {
        Policy::new(&ToolPolicy {
            profile: profile.into(),
            allowlist: allowlist.iter().map(|s| (*s).to_owned()).collect(),
        })
        .unwrap()
    }

    #[test]
    fn allowlisted_kind_is_allowed_once_never_always() {
        let decision = policy("", &["execute"]).decide(&request(None, ToolKind::Execute));
        assert!(decision.allowed);
        assert_eq!(selected(&decision).as_deref(), Some("once"));
    }

    #[test]
    fn a_tool_outside_the_policy_is_rejected() {
        let decision = policy("workspace", &[]).decide(&request(None, ToolKind::Execute));
        assert!(!decision.allowed);
        assert_eq!(selected(&decision).as_deref(), Some("no"));
        assert_eq!(decision.tool, "execute");
    }

    #[test]
    fn the_allowlist_alone_decides_when_given() {
        // `edit` would be in the workspace profile, but the allowlist names only `read`.
        let p = policy("workspace", &["read"]);
        assert!(!p.allows(None, ToolKind::Edit));
        assert!(p.allows(None, ToolKind::Read));
        assert!(!p.allows_writes());
    }

    #[test]
    fn a_tool_is_matched_by_its_name_too() {
        let p = policy("", &["exec_command"]);
        assert!(p.allows(Some("exec_command"), ToolKind::Execute));
        assert!(!p.allows(Some("apply_patch"), ToolKind::Edit));
    }

    #[test]
    fn an_unknown_profile_is_an_error() {
        let err = Policy::new(&ToolPolicy {
            profile: "root".into(),
            allowlist: vec!["execute".into()],
        })
        .unwrap_err();
        assert!(err.to_string().contains("`root`"), "{err}");
    }

    #[test]
    fn reasoning_allows_no_real_tool() {
        for profile in ["", "reasoning"] {
            let p = policy(profile, &[]);
            for kind in [
                ToolKind::Execute,
                ToolKind::Edit,
                ToolKind::Fetch,
                ToolKind::Other,
            ] {
                assert!(!p.allows(None, kind), "{profile} allowed {kind:?}");
            }
        }
    }

    #[test]
    fn without_a_reject_option_the_answer_is_cancelled() {
        let mut req = request(None, ToolKind::Fetch);
        req.options
            .retain(|o| o.kind == PermissionOptionKind::AllowOnce);
        let decision = policy("", &[]).decide(&req);
        assert!(!decision.allowed);
        assert_eq!(
            decision.response.outcome,
            RequestPermissionOutcome::Cancelled
        );
    }

    #[test]
    fn only_allow_always_offered_is_refused_not_widened() {
        let mut req = request(None, ToolKind::Execute);
        req.options
            .retain(|o| o.kind == PermissionOptionKind::AllowAlways);
        let decision = policy("", &["execute"]).decide(&req);
        assert!(!decision.allowed);
        assert_eq!(
            decision.response.outcome,
            RequestPermissionOutcome::Cancelled
        );
    }
}
