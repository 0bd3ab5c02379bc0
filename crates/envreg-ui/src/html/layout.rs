//! The frame every page shares, and the pieces several views use: an error as the agent
//! would get it, a diagnostic line, a link to a record field.

use envreg_core::locate::locate;
use envreg_core::resolve::ValueOrigin;
use envreg_core::{Diagnostic, EnvError, Snapshot};
use maud::{DOCTYPE, Markup, html};

use crate::links;

/// What the frame shows about the registry as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The snapshot generation the page was built from (the live script compares it).
    pub generation: u64,
    pub errors: usize,
    pub warnings: usize,
}

impl Frame {
    pub fn of(snapshot: &Snapshot) -> Frame {
        let (errors, warnings) = crate::records::counts(snapshot);
        Frame {
            generation: snapshot.generation,
            errors,
            warnings,
        }
    }
}

/// A whole page: `title`, the navigation, and `body` inside `<main>`.
pub fn page(title: &str, frame: Frame, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · envreg" }
                link rel="stylesheet" href="/assets/app.css";
                script src="/assets/app.js" defer {}
            }
            body data-generation=(frame.generation) {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    nav aria-label="envreg" {
                        a.brand href=(links::matrix()) { "envreg" }
                        a href=(links::matrix()) { "Matrix" }
                        a #validation-link href=(links::validation()) {
                            "Validation"
                            @if frame.errors > 0 {
                                " " span.count.error { (frame.errors) " error" @if frame.errors != 1 { "s" } }
                            }
                            @if frame.warnings > 0 {
                                " " span.count.warning { (frame.warnings) " warning" @if frame.warnings != 1 { "s" } }
                            }
                        }
                    }
                    p #live role="status" aria-live="polite" { "read-only" }
                }
                main #main { (body) }
            }
        }
    }
}

/// An expected failure exactly as an agent gets it from the tool: `CODE: message`,
/// then `{code, message, details}`.
pub fn agent_error(error: &EnvError) -> Markup {
    let json = serde_json::to_string_pretty(error).unwrap_or_default();
    html! {
        div.agent-error data-code=(error.code.as_str()) {
            p { code.code { (error.code.as_str()) } ": " span.message { (error.message) } }
            details {
                summary { "The error as JSON" }
                pre { code { (json) } }
            }
        }
    }
}

/// `severity[CODE]: message`, as `envreg validate` heads a diagnostic.
pub fn diagnostic(d: &Diagnostic, span: Option<envreg_core::locate::Span>) -> Markup {
    let severity = severity_name(d.severity);
    html! {
        div class={ "diag diag-" (severity) } data-code=(d.code) role="note" {
            span.sev { (severity) "[" (d.code) "]" } ": " (d.message)
            @if let Some(file) = &d.file {
                " " span.where {
                    "--> " (file)
                    @if let Some(span) = span { ":" (span.line) ":" (span.column) }
                }
            }
            @if let Some(path) = &d.path { " " span.field { "= field: " (path) } }
        }
    }
}

/// The wire spelling of a severity (`error`, `warning`, `info`).
pub fn severity_name(severity: envreg_core::Severity) -> &'static str {
    match severity {
        envreg_core::Severity::Error => "error",
        envreg_core::Severity::Warning => "warning",
        envreg_core::Severity::Info => "info",
    }
}

/// A link to the record field a value came from, at its line when it can be found.
pub fn origin(snapshot: &Snapshot, origin: &ValueOrigin) -> Markup {
    let line = snapshot
        .get(origin.kind, &origin.id)
        .and_then(|rec| locate(&rec.text, &origin.path))
        .map(|span| span.line);
    html! {
        a.origin href=(links::record_line(origin.kind, &origin.id, line))
            data-kind=(origin.kind.as_str()) data-id=(origin.id.as_str())
            data-file=(origin.file.as_str()) data-path=(origin.path.as_str()) {
            (origin.kind.as_str()) " " strong { (origin.id.as_str()) } " · " code { (origin.path.as_str()) }
            " (" (origin.file.as_str()) @if let Some(line) = line { ":" (line) } ")"
        }
    }
}

/// The page for a request the registry refused (unknown id, bad filter).
pub fn error_page(frame: Frame, heading: &str, error: &EnvError) -> Markup {
    page(
        heading,
        frame,
        html! {
            h1 { (heading) }
            (agent_error(error))
            p { a href=(links::matrix()) { "Back to the matrix" } }
        },
    )
}
