//! The matrix page: a `role="grid"` table, environments as columns, services as rows.
//! Every cell is a grid cell the keyboard reaches (the script gives them a roving
//! tabindex; arrow keys, Home/End, PageUp/PageDown move, Enter opens).

use maud::{Markup, html};

use crate::html::layout::{Frame, page};
use crate::links;
use crate::matrix::{Column, DeploymentBadge, Filter, Matrix, PLATFORMS, Placement, TIERS};

/// The query string for `filter` at `page`.
fn filter_href(filter: &Filter, page: usize) -> String {
    let mut parts = Vec::new();
    if let Some(t) = filter.tier {
        parts.push(format!("tier={}", t.as_str()));
    }
    if let Some(p) = filter.platform {
        parts.push(format!("platform={}", p.as_str()));
    }
    if let Some(q) = &filter.text {
        parts.push(format!("q={}", links::query_value(q)));
    }
    if page > 1 {
        parts.push(format!("page={page}"));
    }
    if parts.is_empty() {
        links::matrix()
    } else {
        format!("/?{}", parts.join("&"))
    }
}

fn column_header(c: &Column) -> Markup {
    html! {
        th scope="col" class={ "env tier-" (c.tier.as_str()) } data-env=(c.id) {
            a href=(links::record(envreg_core::RecordKind::Environment, &c.id)) { (c.id) }
            span.name { (c.name) }
            span.meta {
                @if c.is_production() { strong.prod { "production" } } @else { (c.tier.as_str()) }
                " · " (c.platform.as_str())
            }
        }
    }
}

fn placement(p: &Placement) -> Markup {
    html! {
        @match p {
            Placement::Workload { namespace, workload } => {
                span.where {
                    @if let Some(ns) = namespace { (ns) }
                    @if namespace.is_some() && workload.is_some() { "/" }
                    @if let Some(w) = workload { (w) }
                }
            }
            Placement::Hosts { ids, more } => {
                span.where {
                    @for (i, id) in ids.iter().enumerate() { @if i > 0 { ", " } (id) }
                    @if *more > 0 { " +" (more) }
                }
            }
            Placement::Unspecified => {}
            Placement::Unresolved(code) => { span.unresolved { (code) } }
        }
    }
}

fn cell(column: &Column, service: &str, deployments: &[DeploymentBadge]) -> Markup {
    let key = format!("{}/{}", column.id, service);
    html! {
        @if deployments.is_empty() {
            td data-cell=(key) {}
        } @else {
            td data-cell=(key) class=[(deployments.len() > 1).then_some("ambiguous")] {
                a href=(links::cell(&column.id, service)) {
                    @for d in deployments {
                        span.dep {
                            b { (d.id) } " "
                            small { (d.platform.as_str()) " " (placement(&d.placement)) }
                        }
                    }
                    @if deployments.len() > 1 {
                        span.ask { (deployments.len()) " deployments: resolve asks which" }
                    }
                }
            }
        }
    }
}

pub fn render(matrix: &Matrix, frame: Frame) -> Markup {
    let f = &matrix.filter;
    let first = (f.page - 1) * crate::matrix::PAGE_ROWS + 1;
    let last = first + matrix.rows.len().saturating_sub(1);
    let body = html! {
        h1 { "Registry" }
        form.filters method="get" action="/" role="search" {
            label { "Tier "
                select name="tier" {
                    option value="" selected[f.tier.is_none()] { "any" }
                    @for t in TIERS { option value=(t.as_str()) selected[f.tier == Some(t)] { (t.as_str()) } }
                }
            }
            label { "Platform "
                select name="platform" {
                    option value="" selected[f.platform.is_none()] { "any" }
                    @for p in PLATFORMS { option value=(p.as_str()) selected[f.platform == Some(p)] { (p.as_str()) } }
                }
            }
            label { "Text "
                input type="search" name="q" value=(f.text.as_deref().unwrap_or("")) placeholder="id, name, alias, category" minlength="2";
            }
            button type="submit" { "Filter" }
            @if *f != (Filter { page: 1, ..Filter::default() }) { " " a href=(links::matrix()) { "clear" } }
        }
        p.summary #summary {
            (matrix.total_services) " services × " (matrix.total_environments) " environments. "
            @if matrix.rows.is_empty() {
                "No service matches."
            } @else {
                "Showing services " (first) "–" (last) " of " (matrix.total_rows)
                " in " (matrix.columns.len()) " environments."
            }
        }
        @if !matrix.rows.is_empty() {
            div.grid-wrap {
                table #matrix role="grid" aria-label="Deployments: services by environment"
                    aria-rowcount=(matrix.rows.len() + 1) aria-colcount=(matrix.columns.len() + 1) {
                    thead {
                        tr {
                            th.corner scope="col" { "service \\ environment" }
                            @for c in &matrix.columns { (column_header(c)) }
                        }
                    }
                    tbody {
                        @for row in &matrix.rows {
                            tr data-service=(row.id) {
                                th scope="row" {
                                    a href=(links::record(envreg_core::RecordKind::Service, &row.id)) { (row.id) }
                                    span.name { (row.name) }
                                }
                                @for (c, deployments) in matrix.columns.iter().zip(&row.cells) {
                                    (cell(c, &row.id, deployments))
                                }
                            }
                        }
                    }
                }
            }
        }
        @if matrix.pages > 1 {
            nav.pages aria-label="Pages" {
                @if f.page > 1 { a rel="prev" href=(filter_href(f, f.page - 1)) { "← previous" } " " }
                span { "page " (f.page) " of " (matrix.pages) }
                @if f.page < matrix.pages { " " a rel="next" href=(filter_href(f, f.page + 1)) { "next →" } }
            }
        }
    };
    page("Matrix", frame, body)
}
