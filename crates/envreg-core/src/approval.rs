//! The approval interface of contract §1.3, free of any transport.
//!
//! The core decides *whether* a write needs approval ([`crate::SavePlan::approval`],
//! [`crate::DeletePlan::approval`]); the edge decides *how* to ask: the MCP layer with
//! an elicitation request, the CLI on the terminal or via `--yes`. Only
//! [`ApprovalDecision::AllowedOnce`] grants; everything else is `POLICY_DENIED`.
//!
//! The table itself is [`required`]: one pure function that both the write path
//! ([`crate::Registry::plan_save`], [`crate::Registry::plan_delete`]) and the host gate
//! ([`crate::host_gate`], behind `envreg hook`) consult, so the server and a host's
//! PreToolUse hook can never disagree on which call needs a person.
//!
//! Decision: these types live here rather than in `tools.rs` so that the write path
//! (core-store) compiles without the tool layer; `tools.rs` re-exports them.

use std::future::Future;
use std::pin::Pin;

use crate::config::WritePolicy;
use crate::kind::RecordKind;

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

/// A write, as contract §1.3's table sees it: the facts the table reads, nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteCall<'a> {
    /// `env_save` of `kind`/`id`. `production`: the record is a production environment,
    /// or a deployment whose environment is production — before *or* after the save.
    Save {
        kind: RecordKind,
        id: &'a str,
        production: bool,
        dry_run: bool,
    },
    /// `env_delete` of `kind`/`id`; `confirm: false` only reports what refers to it.
    Delete {
        kind: RecordKind,
        id: &'a str,
        confirm: bool,
    },
}

/// Contract §1.3: the approval `call` needs under `policy`, or `None`.
///
/// | call | approval |
/// |---|---|
/// | `env_delete`, `confirm: true` | while `requireApprovalForDelete` |
/// | `env_save` of a production environment or of a deployment in one, not a dry run | while `requireApprovalForProductionSave` |
/// | anything else | none |
///
/// `approvalChannel` is not read: it says *who* approves, not *whether*.
pub fn required(policy: &WritePolicy, call: &WriteCall<'_>) -> Option<ApprovalRequest> {
    match *call {
        WriteCall::Save {
            kind,
            id,
            production,
            dry_run,
        } => {
            // A dry run writes nothing (contract §3.1), so there is nothing to approve.
            let gated = matches!(kind, RecordKind::Environment | RecordKind::Deployment);
            (gated && production && !dry_run && policy.require_approval_for_production_save).then(
                || ApprovalRequest {
                    tool: "env_save",
                    reason: format!("env_save writes production {kind} {id}"),
                    display_reason: format!("Save production {kind} {id}?"),
                },
            )
        }
        WriteCall::Delete { kind, id, confirm } => (confirm && policy.require_approval_for_delete)
            .then(|| ApprovalRequest {
                tool: "env_delete",
                reason: format!(
                    "env_delete removes {kind} {id} ({}/{id}.yaml); a backup is kept",
                    kind.dir_name()
                ),
                display_reason: format!(
                    "Delete {} {id}? A backup copy is kept in .backups/.",
                    kind.noun().0
                ),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApprovalChannel;

    fn policy(delete: bool, production_save: bool) -> WritePolicy {
        WritePolicy {
            require_approval_for_delete: delete,
            require_approval_for_production_save: production_save,
            approval_channel: ApprovalChannel::Elicitation,
        }
    }

    fn save(kind: RecordKind, production: bool, dry_run: bool) -> WriteCall<'static> {
        WriteCall::Save {
            kind,
            id: "x",
            production,
            dry_run,
        }
    }

    /// The whole table: every kind, production or not, dry run or not, each policy.
    #[test]
    fn save_needs_approval_only_for_a_production_environment_or_deployment_write() {
        for kind in RecordKind::ALL {
            for production in [false, true] {
                for dry_run in [false, true] {
                    for (delete_flag, save_flag) in
                        [(false, false), (false, true), (true, false), (true, true)]
                    {
                        let got = required(
                            &policy(delete_flag, save_flag),
                            &save(kind, production, dry_run),
                        );
                        let gated =
                            matches!(kind, RecordKind::Environment | RecordKind::Deployment);
                        let expected = gated && production && !dry_run && save_flag;
                        assert_eq!(
                            got.is_some(),
                            expected,
                            "{kind} production={production} dry_run={dry_run} policy=({delete_flag},{save_flag})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn delete_needs_approval_when_confirmed_and_the_policy_says_so() {
        for kind in RecordKind::ALL {
            for confirm in [false, true] {
                for (delete_flag, save_flag) in
                    [(false, false), (false, true), (true, false), (true, true)]
                {
                    let got = required(
                        &policy(delete_flag, save_flag),
                        &WriteCall::Delete {
                            kind,
                            id: "x",
                            confirm,
                        },
                    );
                    assert_eq!(got.is_some(), confirm && delete_flag, "{kind} {confirm}");
                }
            }
        }
    }

    #[test]
    fn the_channel_does_not_change_the_table() {
        let mut host = policy(true, true);
        host.approval_channel = ApprovalChannel::Host;
        let call = save(RecordKind::Environment, true, false);
        assert_eq!(required(&host, &call), required(&policy(true, true), &call));
    }

    #[test]
    fn reasons_name_the_record() {
        let request = required(
            &policy(true, true),
            &WriteCall::Save {
                kind: RecordKind::Deployment,
                id: "checkout-prod",
                production: true,
                dry_run: false,
            },
        )
        .expect("needs approval");
        assert_eq!(request.tool, "env_save");
        assert_eq!(
            request.reason,
            "env_save writes production deployment checkout-prod"
        );
        let request = required(
            &policy(true, true),
            &WriteCall::Delete {
                kind: RecordKind::Service,
                id: "checkout-api",
                confirm: true,
            },
        )
        .expect("needs approval");
        assert_eq!(
            request.reason,
            "env_delete removes service checkout-api (services/checkout-api.yaml); a backup is kept"
        );
    }
}
