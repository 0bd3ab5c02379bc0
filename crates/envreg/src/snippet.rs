//! Diagnostics shown the way compilers show them: `severity[CODE]: message`, then
//! `--> file:line:col`, the offending YAML line and a caret under the spot.
//!
//! Where the core gives a line and column (YAML syntax errors), those are used. For
//! everything else the core gives a field path (`ruleProfileRefs[0]`, `match.serviceRef`)
//! and [`locate`] finds that field in the file's text. The locator is a line scanner for
//! the block and flow styles people write by hand, not a YAML parser: a decision — the
//! core already parsed the file, and a second full parse with spans just to draw a caret
//! is not worth a dependency. When it cannot find the field it points at the file only,
//! never at a wrong line.

use std::fmt::Write as _;
use std::path::{Component, Path};

use serde_json::Value;

use crate::style::Palette;

/// Where a field is: 1-based line and column, and how many characters to underline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub line: usize,
    pub column: usize,
    pub len: usize,
}

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

#[derive(Debug, PartialEq, Eq)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[2].c` → Key(a), Key(b), Index(2), Key(c).
fn segments(path: &str) -> Option<Vec<Segment<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push(Segment::Key(key));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped.find(']')?;
            out.push(Segment::Index(stripped[..end].parse().ok()?));
            rest = &stripped[end + 1..];
        }
    }
    Some(out)
}

/// Find the field `path` in YAML `text`: the span of its value when the value sits on
/// the same line, else of its key.
pub fn locate(text: &str, path: &str) -> Option<Span> {
    let segs = segments(path)?;
    let lines: Vec<&str> = text.lines().collect();
    // The block of lines being searched, and the column (0-based byte offset) below
    // which a line ends the block.
    let mut range = 0..lines.len();
    let mut parent_indent: Option<usize> = None;
    let mut found: Option<Span> = None;
    // When the current value is written inline (`key: [a, b]` / `key: { a: 1 }`), the
    // rest of the search happens inside that one line.
    let mut inline: Option<(usize, usize)> = None; // (line index, byte offset of value)

    for seg in &segs {
        if let Some((line_idx, start)) = inline {
            let line = lines[line_idx];
            let span = match seg {
                Segment::Key(k) => find_flow_key(line, start, k),
                Segment::Index(i) => find_flow_item(line, start, *i),
            };
            match span {
                Some((value_start, len)) => {
                    found = Some(span_at(line, line_idx, value_start, len));
                    inline = Some((line_idx, value_start));
                }
                None => return found,
            }
            continue;
        }
        match seg {
            Segment::Key(k) => {
                let hit = range.clone().find_map(|i| {
                    let line = lines[i];
                    let indent = block_indent(line);
                    if parent_indent.is_some_and(|p| indent <= p) {
                        return None;
                    }
                    let key_at = key_position(line, k)?;
                    Some((i, indent, key_at))
                })?;
                let (i, _, key_at) = hit;
                let line = lines[i];
                let after_colon =
                    key_at + k.len() + 1 + usize::from(line[key_at..].starts_with('"')) * 2;
                let value_start = skip_spaces(line, after_colon);
                let value = line[value_start..].trim_end();
                let key_indent = key_at;
                if value.is_empty() || value.starts_with('#') {
                    found = Some(span_at(line, i, key_at, k.len()));
                    range = (i + 1)..block_end(&lines, i + 1, key_indent, true);
                    parent_indent = Some(key_indent);
                } else {
                    found = Some(span_at(line, i, value_start, value_len(value)));
                    inline = Some((i, value_start));
                }
            }
            Segment::Index(n) => {
                // Block sequence items: lines starting with `- ` at the first dash indent.
                let mut dash_indent = None;
                let mut seen = 0usize;
                let mut hit = None;
                for i in range.clone() {
                    let line = lines[i];
                    let trimmed = line.trim_start();
                    if !trimmed.starts_with("- ") && trimmed != "-" {
                        continue;
                    }
                    let indent = line.len() - trimmed.len();
                    if *dash_indent.get_or_insert(indent) != indent {
                        continue;
                    }
                    if seen == *n {
                        hit = Some((i, indent));
                        break;
                    }
                    seen += 1;
                }
                let (i, indent) = hit?;
                let line = lines[i];
                let value_start = skip_spaces(line, indent + 1);
                let value = line[value_start..].trim_end();
                found = Some(span_at(line, i, value_start, value_len(value)));
                if value.starts_with('{') || value.starts_with('[') {
                    inline = Some((i, value_start));
                } else {
                    // `- key: v` style: the item's fields are on this line and the
                    // lines indented deeper than the dash.
                    range = i..block_end(&lines, i + 1, indent, false);
                    parent_indent = Some(indent);
                }
            }
        }
    }
    found
}

/// Byte offset of `key:` on this line when the line defines that key (after any `- `).
fn key_position(line: &str, key: &str) -> Option<usize> {
    let mut at = line.len() - line.trim_start().len();
    while line[at..].starts_with("- ") {
        at = skip_spaces(line, at + 1);
    }
    let rest = &line[at..];
    let quoted = format!("\"{key}\":");
    if rest.starts_with(&format!("{key}:")) || rest.starts_with(&quoted) {
        Some(at)
    } else {
        None
    }
}

fn block_indent(line: &str) -> usize {
    let trimmed = line.trim_start();
    let mut indent = line.len() - trimmed.len();
    let mut rest = trimmed;
    while let Some(r) = rest.strip_prefix("- ") {
        indent += 2 + (r.len() - r.trim_start().len());
        rest = r.trim_start();
    }
    indent
}

/// First line at or after `from` that is indented no deeper than `indent` (blank and
/// comment lines do not end a block). With `dash_continues`, a `- ` item at exactly
/// `indent` still belongs to the block: YAML lets a key's sequence sit at the key's own
/// indentation (`credentials:` then `- ref: x`), which is how serializers write it.
fn block_end(lines: &[&str], from: usize, indent: usize, dash_continues: bool) -> usize {
    (from..lines.len())
        .find(|&i| {
            let t = lines[i].trim_start();
            let at = lines[i].len() - t.len();
            if t.is_empty() || t.starts_with('#') {
                return false;
            }
            at < indent || (at == indent && !(dash_continues && (t.starts_with("- ") || t == "-")))
        })
        .unwrap_or(lines.len())
}

fn skip_spaces(line: &str, from: usize) -> usize {
    let from = from.min(line.len());
    from + (line[from..].len() - line[from..].trim_start_matches(' ').len())
}

/// How much of an inline value to underline: a flow collection or a scalar up to a comment.
fn value_len(value: &str) -> usize {
    let end = value.find(" #").unwrap_or(value.len());
    value[..end].trim_end().chars().count().max(1)
}

fn span_at(line: &str, idx: usize, byte: usize, len: usize) -> Span {
    Span {
        line: idx + 1,
        column: line[..byte.min(line.len())].chars().count() + 1,
        len,
    }
}

/// Inside a flow mapping starting at `start`, the value of `key` at depth 1.
fn find_flow_key(line: &str, start: usize, key: &str) -> Option<(usize, usize)> {
    for (item_start, item) in flow_items(line, start)? {
        let trimmed = item.trim_start();
        let lead = item.len() - trimmed.len();
        let name = trimmed.split(':').next()?.trim().trim_matches('"');
        if name == key && trimmed.contains(':') {
            let colon = item_start + lead + trimmed.find(':')?;
            let vs = skip_spaces(line, colon + 1);
            let value = line[vs..item_start + item.len()].trim_end();
            return Some((vs, value.chars().count().max(1)));
        }
    }
    None
}

/// Inside a flow sequence starting at `start`, item `n`.
fn find_flow_item(line: &str, start: usize, n: usize) -> Option<(usize, usize)> {
    let (item_start, item) = flow_items(line, start)?.into_iter().nth(n)?;
    let lead = item.len() - item.trim_start().len();
    Some((item_start + lead, item.trim().chars().count().max(1)))
}

/// The depth-1 items of the flow collection whose opening bracket is at `start`.
fn flow_items(line: &str, start: usize) -> Option<Vec<(usize, &str)>> {
    let bytes = line.as_bytes();
    if !matches!(bytes.get(start), Some(b'[') | Some(b'{')) {
        return None;
    }
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut item_start = start + 1;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if let Some(q) = quote {
            if b == q {
                quote = None;
            }
            continue;
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    if !line[item_start..i].trim().is_empty() {
                        items.push((item_start, &line[item_start..i]));
                    }
                    return Some(items);
                }
            }
            b',' if depth == 1 => {
                items.push((item_start, &line[item_start..i]));
                item_start = i + 1;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: &str = "\
# yaml-language-server: $schema=../.schemas/service.json
id: checkout-api
name: Checkout API
ruleProfileRefs: [spring-boot, java-commn]
variables:
  appName: checkout-api
  httpPort: \"8080\"
match: { environmentRef: staging, serviceRef: checkout-api }
hosts:
  - { id: node-1, address: 10.0.0.1 }
  - id: node-2
    address: 10.0.0.2
logSources:
  - id: app
    path: /x
";

    fn at(path: &str) -> (usize, usize, usize) {
        let s = locate(SERVICE, path).unwrap_or_else(|| panic!("{path} not found"));
        (s.line, s.column, s.len)
    }

    #[test]
    fn finds_top_level_scalars() {
        assert_eq!(at("name"), (3, 7, 12));
    }

    #[test]
    fn finds_items_of_flow_sequences() {
        assert_eq!(at("ruleProfileRefs[1]"), (4, 32, 10));
        assert_eq!(at("ruleProfileRefs[0]"), (4, 19, 11));
    }

    #[test]
    fn finds_nested_block_keys() {
        assert_eq!(at("variables.httpPort"), (7, 13, 6));
    }

    #[test]
    fn finds_keys_of_flow_mappings() {
        assert_eq!(at("match.serviceRef"), (8, 47, 12));
    }

    #[test]
    fn finds_block_sequence_items_in_both_styles() {
        assert_eq!(at("hosts[0].address"), (10, 28, 8));
        assert_eq!(at("hosts[1].address"), (12, 14, 8));
        assert_eq!(at("logSources[0].path"), (15, 11, 2));
    }

    #[test]
    fn finds_sequences_written_at_the_key_indentation() {
        let text = "id: prod\ncredentials:\n- ref: kube-prod\n  source: env:A\n- ref: grafana\n  source: file:b\ncreatedAt: x\n";
        assert_eq!(locate(text, "credentials[1]").map(|s| s.line), Some(5));
        assert_eq!(
            locate(text, "credentials[1].source").map(|s| (s.line, s.column)),
            Some((6, 11))
        );
        assert_eq!(locate(text, "createdAt").map(|s| s.line), Some(7));
    }

    proptest::proptest! {
        /// The locator reads files from disk: whatever they hold, it answers or says
        /// "not found", and a found span is on a real line.
        #[test]
        fn locate_never_panics(
            text in "([a-z\\[\\]{}:,\\- \"'#\\n]|é|\t){0,200}",
            path in "[a-z]{1,3}(\\.[a-z]{1,3}|\\[[0-9]\\]){0,3}",
        ) {
            if let Some(span) = locate(&text, &path) {
                proptest::prop_assert!(span.line >= 1 && span.line <= text.lines().count());
            }
        }
    }

    #[test]
    fn unknown_fields_are_not_guessed() {
        assert_eq!(locate(SERVICE, "nope"), None);
        assert_eq!(
            locate(SERVICE, "ruleProfileRefs[7]").map(|s| s.line),
            Some(4)
        );
    }

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
