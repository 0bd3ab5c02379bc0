//! Diagnostics shown the way compilers show them: `severity[CODE]: message`, then
//! `--> file:line:col`, the offending YAML line and a caret under the spot.
//!
//! Where the core gives a line and column (YAML syntax errors), those are used. For
//! everything else the core gives a field path (`ruleProfileRefs[0]`, `match.serviceRef`)
//! and [`locate`] (`envreg_core::locate`, shared with `envreg ui`) finds that field in
//! the file's text. When it cannot find the field the diagnostic points at the file
//! only, never at a wrong line.

use std::fmt::Write as _;
use std::path::{Component, Path};

use serde_json::Value;

use crate::style::Palette;

pub use envreg_core::locate::{Span, locate};

/// One diagnostic, drawn like a compiler error. `root` is the registry folder the
/// diagnostic's `file` is relative to.
pub fn render_diagnostic(diag: &Value, root: &Path, palette: &Palette) -> String {
    let severity = diag["severity"].as_str().unwrap_or("error");
    let code = diag["code"].as_str().unwrap_or("");
    let message = diag["message"].as_str().unwrap_or("");
    let file = diag["file"].as_str();
    let path = diag["path"].as_str();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}{}",
        palette.severity(severity, code),
        palette.bold(&format!(": {message}"))
    );
    let Some(file) = file else {
        if let Some(path) = path {
            let _ = writeln!(out, "  = field: {path}");
        }
        return out;
    };
    let text = read_inside(root, file);
    let given = given_span(diag);
    let span = given.or_else(|| {
        let text = text.as_deref()?;
        locate(text, path?)
    });
    match span {
        Some(span) => {
            let _ = writeln!(
                out,
                "  {} {file}:{}:{}",
                palette.cyan("-->"),
                span.line,
                span.column
            );
            if let Some(source) = text.as_deref().and_then(|t| t.lines().nth(span.line - 1)) {
                let number = span.line.to_string();
                let pad = " ".repeat(number.len());
                let bar = palette.cyan("|");
                let _ = writeln!(out, "{pad} {bar}");
                let _ = writeln!(out, "{} {bar} {source}", palette.cyan(&number));
                let caret = "^".repeat(span.len.max(1));
                let indent = " ".repeat(display_width_before(source, span.column));
                let _ = writeln!(
                    out,
                    "{pad} {bar} {indent}{}",
                    colored_caret(&caret, severity, palette)
                );
            }
        }
        None => {
            let _ = writeln!(out, "  {} {file}", palette.cyan("-->"));
        }
    }
    if let Some(path) = path {
        let _ = writeln!(out, "  = field: {path}");
    }
    out
}

fn colored_caret(caret: &str, severity: &str, palette: &Palette) -> String {
    match severity {
        "error" => palette.red(caret),
        "warning" => palette.yellow(caret),
        _ => palette.cyan(caret),
    }
}

/// Columns before `column` (1-based, in characters), keeping tabs so the caret lines up.
fn display_width_before(source: &str, column: usize) -> usize {
    source.chars().take(column.saturating_sub(1)).count()
}

/// Line and column the core reported, when it did (YAML syntax errors).
fn given_span(diag: &Value) -> Option<Span> {
    let line = diag["line"].as_u64()? as usize;
    let column = diag["column"].as_u64().unwrap_or(1) as usize;
    (line > 0).then_some(Span {
        line,
        column: column.max(1),
        len: 1,
    })
}

/// Files larger than this are not quoted (a snippet is a few lines; the loader's own
/// size cap has already reported a file this large).
const MAX_SNIPPET_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `file` when it is a plain relative path inside `root` and a regular file
/// of sane size. The diagnostic's `file` comes from our own core, but a path that climbs
/// out is still not opened, and neither is a FIFO or a device: opening a FIFO blocks
/// until a writer comes, which would hang `envreg validate` on the very file it reports
/// as unreadable. The file is read by the core's registry reader, so a file that is (or
/// passes through) a symbolic link out of the registry is never quoted (issue 14 §1).
fn read_inside(root: &Path, file: &str) -> Option<String> {
    let rel = Path::new(file);
    if !rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    envreg_core::files::read_registry_text(root, file, MAX_SNIPPET_FILE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: &str = "\
# yaml-language-server: $schema=../.schemas/service.json
id: checkout-api
name: Checkout API
ruleProfileRefs: [spring-boot, java-commn]
";

    #[test]
    fn renders_like_a_compiler() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("services")).unwrap();
        std::fs::write(tmp.path().join("services/checkout-api.yaml"), SERVICE).unwrap();
        let diag = serde_json::json!({
            "severity": "error", "code": "RULE_PROFILE_NOT_FOUND",
            "message": "service checkout-api references unknown rule profile java-commn",
            "file": "services/checkout-api.yaml", "path": "ruleProfileRefs[1]"
        });
        let shown = render_diagnostic(&diag, tmp.path(), &Palette { color: false });
        assert_eq!(
            shown,
            "error[RULE_PROFILE_NOT_FOUND]: service checkout-api references unknown rule profile java-commn
  --> services/checkout-api.yaml:4:32
  |
4 | ruleProfileRefs: [spring-boot, java-commn]
  |                                ^^^^^^^^^^
  = field: ruleProfileRefs[1]
"
        );
    }

    #[test]
    fn never_reads_outside_the_registry() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read_inside(tmp.path(), "../etc/passwd"), None);
        assert_eq!(read_inside(tmp.path(), "/etc/passwd"), None);
    }

    /// A plain relative name that is a symbolic link out of the registry is not quoted
    /// (issue 14 §1). Quoted the outside line on the old code.
    #[test]
    fn never_quotes_a_file_behind_a_link_out() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = tmp.path().join("registry");
        std::fs::create_dir_all(registry.join("services")).unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "CANARY-line-one\n").unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("secret.txt"),
            registry.join("services/x.yaml"),
        )
        .unwrap();
        assert_eq!(read_inside(&registry, "services/x.yaml"), None);
        let diag = serde_json::json!({
            "severity": "error", "code": "YAML_INVALID", "message": "bad",
            "file": "services/x.yaml", "line": 1, "column": 1
        });
        let shown = render_diagnostic(&diag, &registry, &Palette { color: false });
        assert!(!shown.contains("CANARY"), "{shown}");
    }

    #[test]
    fn prefers_the_line_the_core_gave() {
        let diag = serde_json::json!({
            "severity": "error", "code": "YAML_INVALID", "message": "bad", "line": 3, "column": 5
        });
        assert_eq!(
            given_span(&diag),
            Some(Span {
                line: 3,
                column: 5,
                len: 1
            })
        );
    }
}
