//! Operations for a cell: one row per operation — the skill `env_resolve_operation`
//! picks, the binding and match level, the policy — or the error the agent would get.

use envreg_core::model::Tier;
use envreg_core::operation::{Availability, OperationResolution};
use envreg_core::{RecordKind, Snapshot};
use maud::{Markup, html};

use crate::html::layout::{Frame, agent_error, diagnostic, page};
use crate::links;
use crate::operations::Operation;

fn resolved(snapshot: &Snapshot, r: &OperationResolution) -> Markup {
    let production = snapshot.is_production(&r.requested.environment_id);
    html! {
        dl.op {
            dt { "skill" }
            dd.skill {
                code { (r.skill.name) }
                @match r.skill.available {
                    Availability::Available => {
                        " — installed"
                        @if let Some(source) = &r.skill.source {
                            " (" (serde_json::to_value(source).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) ")"
                        }
                    }
                    Availability::Unavailable => " — not installed",
                    Availability::Unknown => " — availability unknown (the skill catalog is incomplete)",
                }
                @if let Some(p) = &r.skill.provider { " · provider " (p) }
            }
            dt { "binding" }
            dd { a href=(links::record(RecordKind::OperationBinding, &r.matched_binding_id)) { (r.matched_binding_id) } }
            dt { "match level" }
            dd.level { (serde_json::to_value(r.match_level).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) }
            dt { "policy" }
            dd.policy {
                @if r.policy.requires_approval { strong { "requires approval" } } @else { "no approval needed" }
                @if production {
                    " · " strong.prod { "production" } ": allowed by this binding (allowProduction: true)"
                } @else if r.policy.allow_production {
                    " · allowed in production"
                } @else {
                    " · not allowed in production"
                }
            }
            @if !r.parameters.is_empty() {
                dt { "parameters" }
                dd { table.kv { tbody { @for (k, v) in &r.parameters { tr { th scope="row" { (k) } td { code { (v) } } } } } } }
            }
            @if let Some(d) = &r.requested.deployment_id {
                dt { "deployment" } dd { (d) }
            } @else {
                dt { "deployment" } dd { "none (allowed: an operation can be asked before a deployment exists)" }
            }
        }
        @for d in &r.diagnostics { (diagnostic(d, None)) }
    }
}

pub fn render(
    snapshot: &Snapshot,
    environment: &str,
    service: &str,
    deployment: Option<&str>,
    operations: &[Operation],
    frame: Frame,
) -> Markup {
    let production = snapshot
        .environment(environment)
        .is_some_and(|e| e.tier == Tier::Production);
    let title = format!("Operations: {service} in {environment}");
    let body = html! {
        nav.crumbs aria-label="Breadcrumbs" {
            a href=(links::matrix()) { "Matrix" } " › "
            a href=(links::cell(environment, service)) { (environment) " › " (service) }
            @if let Some(d) = deployment { " › " (d) }
            " › operations"
        }
        h1 { "Operations for " code { (service) } " in " code { (environment) }
             @if let Some(d) = deployment { " (" code { (d) } ")" } }
        @if production {
            p.note { strong.prod { "production" } ": a binding must say allowProduction: true, or the agent is refused (POLICY_DENIED)." }
        }
        table.ops {
            thead { tr { th scope="col" { "operation" } th scope="col" { "what env_resolve_operation answers" } } }
            tbody {
                @for op in operations {
                    tr data-operation=(op.operation) data-outcome=(match &op.outcome { Ok(_) => "ok", Err(e) => e.code.as_str() }) {
                        th scope="row" { code { (op.operation) } br; small { @if op.standard { "standard" } @else { "bound" } } }
                        td { @match &op.outcome { Ok(r) => { (resolved(snapshot, r)) } Err(e) => { (agent_error(e)) } } }
                    }
                }
            }
        }
    };
    page(&title, frame, body)
}
