//! Approval over MCP (contract §1.3, data model §12), behind one function: [`ask`].
//!
//! Decision: every way this server can obtain approval goes through [`ask`], so the
//! day a client negotiates protocol `2026-07-28` (which forbids server→client requests
//! and wants an `InputRequiredResult` round trip instead) only this function changes.
//! Today rmcp refuses the elicitation request on that version and [`ask`] answers
//! `Unavailable`, which the tool layer turns into `POLICY_DENIED` with a way forward —
//! failing closed, never approving by accident.
//!
//! Channels (`writePolicy.approvalChannel` in `envreg.yaml`):
//! - `elicitation` (default): a form elicitation with one boolean, `approve`. Only an
//!   explicit accept with `approve: true` is allowed-once; decline, cancel, a client
//!   without the capability, a timeout or any transport error deny.
//! - `host`: the host gates tool calls itself (permission rule, PreToolUse hook), so a
//!   call that reached us was approved there.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use envreg_core::config::ApprovalChannel;
use envreg_core::{ApprovalDecision, ApprovalRequest, Approver, Registry};
use rmcp::service::{ElicitationError, ServiceError};
use rmcp::{Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

/// How long a person has to answer an approval prompt before it counts as cancelled.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// The form shown to the person: one checkbox.
#[derive(Debug, Deserialize, JsonSchema)]
struct ApprovalForm {
    /// Tick to allow this one change.
    approve: bool,
}
rmcp::elicit_safe!(ApprovalForm);

/// The approver of one tool call: the client's peer and the registry whose
/// `writePolicy.approvalChannel` decides how to ask.
///
/// The channel is read when approval is actually needed, not when the call starts:
/// only writes ask, and reading the config costs a freshness check that a read tool
/// (every `env_resolve`) has no use for.
pub struct McpApprover<'r> {
    pub peer: Peer<RoleServer>,
    pub registry: &'r Registry,
    pub timeout: Duration,
}

impl Approver for McpApprover<'_> {
    fn request<'a>(
        &'a self,
        req: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>> {
        let channel = self.registry.config().write_policy.approval_channel;
        Box::pin(ask(&self.peer, channel, self.timeout, req))
    }
}

/// The one place approval is obtained over MCP.
pub async fn ask(
    peer: &Peer<RoleServer>,
    channel: ApprovalChannel,
    timeout: Duration,
    req: &ApprovalRequest,
) -> ApprovalDecision {
    if channel == ApprovalChannel::Host {
        tracing::info!(
            tool = req.tool,
            "approval delegated to the host (approvalChannel: host)"
        );
        return ApprovalDecision::AllowedOnce;
    }
    let message = format!(
        "{} — allow {} once? (reason: {})",
        req.display_reason, req.tool, req.reason
    );
    let answer = peer
        .elicit_with_timeout::<ApprovalForm>(message, Some(timeout))
        .await;
    let decision = match answer {
        Ok(Some(ApprovalForm { approve: true })) => ApprovalDecision::AllowedOnce,
        Ok(_) | Err(ElicitationError::UserDeclined) => ApprovalDecision::Rejected,
        Err(ElicitationError::ParseError { .. } | ElicitationError::NoContent) => {
            ApprovalDecision::Rejected
        }
        Err(ElicitationError::UserCancelled) => ApprovalDecision::Cancelled,
        Err(ElicitationError::Service(ServiceError::Timeout { .. })) => ApprovalDecision::Cancelled,
        Err(ElicitationError::CapabilityNotSupported) => ApprovalDecision::Unavailable,
        Err(other) => {
            tracing::warn!(tool = req.tool, error = %other, "elicitation failed; denying");
            ApprovalDecision::Unavailable
        }
    };
    tracing::info!(tool = req.tool, ?decision, "approval answered");
    decision
}
