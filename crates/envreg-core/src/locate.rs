//! Where a field of a record is in its YAML text: `ruleProfileRefs[1]` → line 4,
//! column 32, ten characters. Diagnostics carry a field path; the CLI draws a caret under
//! it (`envreg validate`) and `envreg ui` shows the diagnostic at that line, both with this
//! one locator.
//!
//! The locator is a line scanner for the block and flow styles people write by hand, not
//! a YAML parser: a decision — the loader already parsed the file, and a second full
//! parse with spans just to place a diagnostic is not worth a dependency. When it cannot
//! find the field it answers `None` (point at the file only), never a wrong line.

/// Where a field is: 1-based line and column, and how many characters to underline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub line: usize,
    pub column: usize,
    pub len: usize,
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
}
