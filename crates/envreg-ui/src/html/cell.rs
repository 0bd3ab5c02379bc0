//! A cell opened: each Service Context as tables, every value with its provenance one
//! click away (a native `<details>`, so keyboard and screen readers get it for free),
//! and an ambiguous cell's `DEPLOYMENT_AMBIGUOUS` above its candidates.

use envreg_core::resolve::{Provenance, ServiceContext};
use envreg_core::{ErrorCode, RecordKind, Snapshot};
use maud::{Markup, html};

use crate::cell::Cell;
use crate::html::layout::{Frame, agent_error, diagnostic, origin, page};
use crate::links;

fn provenance(snapshot: &Snapshot, key: &str, p: Option<&Provenance>) -> Markup {
    html! {
        @if let Some(p) = p {
            details.prov data-key=(key) {
                summary { "where from" }
                dl {
                    dt { "template" } dd { code.prov-template { (p.template) } }
                    dt { "defined by" } dd.prov-defined-by { (origin(snapshot, &p.defined_by)) }
                    dt { "from" }
                    dd {
                        @if p.from.is_empty() {
                            "a literal: it references no variable"
                        } @else {
                            ul.prov-from { @for o in &p.from { li { (origin(snapshot, o)) } } }
                        }
                    }
                }
            }
        }
    }
}

fn value_row(
    snapshot: &Snapshot,
    ctx: &ServiceContext,
    label: &str,
    key: &str,
    value: &str,
) -> Markup {
    html! {
        tr {
            th scope="row" { (label) }
            td { code.value { (value) } (provenance(snapshot, key, ctx.provenance.get(key))) }
        }
    }
}

fn context(snapshot: &Snapshot, cell: &Cell, ctx: &ServiceContext) -> Markup {
    html! {
        p.context-head {
            "environment " a href=(links::record(RecordKind::Environment, &ctx.environment.id)) { (ctx.environment.id) }
            " (" (ctx.environment.name) ", "
            @if ctx.environment.tier == envreg_core::model::Tier::Production { strong.prod { "production" } } @else { (ctx.environment.tier.as_str()) }
            ", " (ctx.environment.platform.as_str()) ") · service "
            a href=(links::record(RecordKind::Service, &ctx.service.id)) { (ctx.service.id) }
            " · deployment "
            a href=(links::record(RecordKind::Deployment, &ctx.deployment.id)) { (ctx.deployment.id) }
            @if let Some(p) = ctx.deployment.platform { " (" (p.as_str()) ")" }
            " · " a href=(links::operations(&cell.environment, &cell.service, Some(&ctx.deployment.id))) { "operations" }
        }
        @if !ctx.paths.is_empty() {
            h3 { "Paths" }
            table.kv { tbody { @for (k, v) in &ctx.paths { (value_row(snapshot, ctx, k, &format!("paths.{k}"), v)) } } }
        }
        @if !ctx.log_sources.is_empty() {
            h3 { "Log sources" }
            table.kv {
                tbody {
                    @for (i, l) in ctx.log_sources.iter().enumerate() {
                        (value_row(snapshot, ctx, &format!("{} path", l.id), &format!("logSources[{i}].path"), &l.path))
                        @if let Some(format) = &l.format {
                            (value_row(snapshot, ctx, &format!("{} format", l.id), &format!("logSources[{i}].format"), format))
                        }
                    }
                }
            }
        }
        @if !ctx.class_locations.is_empty() {
            h3 { "Class locations" }
            table.kv {
                tbody {
                    @for (i, c) in ctx.class_locations.iter().enumerate() {
                        (value_row(snapshot, ctx, &format!("[{i}]"), &format!("classLocations[{i}]"), c))
                    }
                }
            }
        }
        @if !ctx.variables.is_empty() {
            h3 { "Variables" }
            table.kv { tbody { @for (k, v) in &ctx.variables { (value_row(snapshot, ctx, k, &format!("variables.{k}"), v)) } } }
        }
        @if !ctx.hosts.is_empty() {
            h3 { "Hosts" }
            table.list {
                thead { tr { th scope="col" { "id" } th scope="col" { "address" } th scope="col" { "roles" } } }
                tbody { @for h in &ctx.hosts { tr { td { (h.id) } td { code { (h.address) } } td { (h.roles.join(", ")) } } } }
            }
        }
        @if !ctx.credentials.is_empty() {
            h3 { "Credentials" }
            p.note { "References only: whether each is configured is a presence check; no value is ever read." }
            table.list {
                thead { tr { th scope="col" { "ref" } th scope="col" { "configured" } th scope="col" { "source" } } }
                tbody {
                    @for c in &ctx.credentials {
                        tr.credential data-ref=(c.reference) {
                            td { (c.reference) }
                            td class=(if c.configured { "yes" } else { "no" }) { (if c.configured { "yes" } else { "no" }) }
                            td { (serde_json::to_value(c.source).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) }
                        }
                    }
                }
            }
        }
        @if !ctx.warnings.is_empty() {
            h3 { "Warnings" }
            @for w in &ctx.warnings { (diagnostic(w, None)) }
        }
    }
}

/// Why the agent's resolve of this cell did not answer with one context.
fn explain(cell: &Cell) -> Markup {
    let Some(error) = &cell.cell_error else {
        return html! {};
    };
    html! {
        section.cell-error aria-labelledby="cell-error-h" {
            h2 #cell-error-h {
                @match error.code {
                    ErrorCode::DeploymentAmbiguous => "Ambiguous: resolve would ask which deployment",
                    ErrorCode::DeploymentNotFound => "No deployment here",
                    _ => "This cell does not resolve",
                }
            }
            @if error.code == ErrorCode::DeploymentAmbiguous {
                p {
                    (cell.service) " has " (cell.contexts.len()) " deployments in " (cell.environment)
                    ", so env_resolve without a deploymentId refuses to guess; an agent gets this error and must name one. Each candidate's context follows."
                }
            }
            p { "env_resolve for " code { (cell.service) } " in " code { (cell.environment) } " answers:" }
            (agent_error(error))
        }
    }
}

pub fn render(snapshot: &Snapshot, cell: &Cell, frame: Frame) -> Markup {
    let title = format!("{} in {}", cell.service, cell.environment);
    let body = html! {
        nav.crumbs aria-label="Breadcrumbs" {
            a href=(links::matrix()) { "Matrix" } " › " (cell.environment) " › " (cell.service)
        }
        h1 { code { (cell.service) } " in " code { (cell.environment) } }
        p { a href=(links::operations(&cell.environment, &cell.service, None)) { "Operations for this cell" } }
        (explain(cell))
        @for r in &cell.contexts {
            section.context id={ "deployment-" (r.deployment) } data-deployment=(r.deployment) {
                h2 { "Deployment " a href=(links::cell_deployment(&cell.environment, &cell.service, &r.deployment)) { (r.deployment) } }
                @match &r.outcome {
                    Ok(ctx) => { (context(snapshot, cell, ctx)) }
                    Err(e) => { (agent_error(e)) }
                }
            }
        }
    };
    page(&title, frame, body)
}
