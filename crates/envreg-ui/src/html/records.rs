//! A record's YAML, line by line (each line has its own anchor, `#L7`), with its
//! diagnostics under the line they point at; and the validation panel.

use maud::{Markup, html};

use crate::html::layout::{Frame, diagnostic, page, severity_name};
use crate::links;
use crate::records::{Placed, RecordPage, Validation};

pub fn render_record(r: &RecordPage, frame: Frame) -> Markup {
    let title = format!("{} {}", r.kind.as_str(), r.id);
    let mut at_line: std::collections::BTreeMap<usize, Vec<&Placed>> = Default::default();
    let mut whole_file = Vec::new();
    let lines: Vec<&str> = r
        .text
        .as_deref()
        .map(|t| t.lines().collect())
        .unwrap_or_default();
    for p in &r.diagnostics {
        match p.span.filter(|s| s.line >= 1 && s.line <= lines.len()) {
            Some(s) => at_line.entry(s.line).or_default().push(p),
            None => whole_file.push(p),
        }
    }
    let body = html! {
        nav.crumbs aria-label="Breadcrumbs" { a href=(links::matrix()) { "Matrix" } " › " (r.kind.as_str()) " › " (r.id) }
        h1 { (r.kind.as_str()) " " code { (r.id) } @if let Some(n) = &r.name { " — " (n) } }
        p.file {
            @if let Some(f) = &r.file { code { (f) } }
            @if !r.loaded { " " strong.error { "does not load" } ": the registry leaves it out until it is fixed." }
        }
        @for p in &whole_file { (diagnostic(&p.diagnostic, p.span)) }
        @if lines.is_empty() {
            p.note { "The file's text cannot be shown (not a regular file inside the registry, too large, or not UTF-8)." }
        } @else {
            ol.yaml aria-label="YAML" {
                @for (i, line) in lines.iter().enumerate() {
                    li id={ "L" (i + 1) } {
                        code { (line) }
                        @if let Some(ds) = at_line.get(&(i + 1)) {
                            @for p in ds { (diagnostic(&p.diagnostic, p.span)) }
                        }
                    }
                }
            }
        }
    };
    page(&title, frame, body)
}

pub fn render_validation(v: &Validation, frame: Frame) -> Markup {
    let c = &v.output.counts;
    let body = html! {
        h1 { "Validation" }
        p.summary {
            @if v.output.ok { "The registry validates: no errors. " } @else { strong.error { "The registry has errors. " } }
            (v.errors) " errors, " (v.warnings) " warnings, " (v.infos) " infos."
        }
        table.list.counts {
            thead { tr { th scope="col" { "kind" } th scope="col" { "records loaded" } } }
            tbody {
                tr { td { "environment" } td { (c.environment) } }
                tr { td { "service" } td { (c.service) } }
                tr { td { "deployment" } td { (c.deployment) } }
                tr { td { "ruleProfile" } td { (c.rule_profile) } }
                tr { td { "operationBinding" } td { (c.operation_binding) } }
            }
        }
        @for (file, diags) in &v.by_file {
            section.file-diags {
                h2 {
                    @if file.is_empty() { "Registry" }
                    @else if let Some((kind, id)) = links::record_of_file(file) { a href=(links::record(kind, &id)) { (file) } }
                    @else { (file) }
                }
                ul {
                    @for p in diags {
                        li class={ "sev-" (severity_name(p.diagnostic.severity)) } {
                            @if let Some((kind, id)) = links::record_of_file(file) {
                                a href=(links::record_line(kind, &id, p.span.map(|s| s.line))) { (diagnostic(&p.diagnostic, p.span)) }
                            } @else {
                                (diagnostic(&p.diagnostic, p.span))
                            }
                        }
                    }
                }
            }
        }
    };
    page("Validation", frame, body)
}
