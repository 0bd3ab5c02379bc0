//! The approval interface of contract §1.3, free of any transport.
//!
//! The core decides *whether* a write needs approval ([`crate::SavePlan::approval`],
//! [`crate::DeletePlan::approval`]); the edge decides *how* to ask: the MCP layer with
//! an elicitation request, the CLI on the terminal or via `--yes`. Only
//! [`ApprovalDecision::AllowedOnce`] grants; everything else is `POLICY_DENIED`.
//!
//! Decision: these types live here rather than in `tools.rs` so that the write path
//! (core-store) compiles without the tool layer; `tools.rs` re-exports them.

use std::future::Future;
use std::pin::Pin;

/// What the person is asked to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// `env_save` or `env_delete`.
    pub tool: &'static str,
    /// English, for the model and logs.
    pub reason: String,
    /// For the person (localizable; English today).
    pub display_reason: String,
}

/// The answer. Only `AllowedOnce` grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalDecision {
    AllowedOnce,
    Rejected,
    Cancelled,
    Unavailable,
}

/// Asks someone. Implemented by the transport (elicitation, terminal prompt, `--yes`).
pub trait Approver: Send + Sync {
    fn request<'a>(
        &'a self,
        req: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>>;
}
