//! Loading records from disk: YAML parsing with safe options, and the file rules of
//! data model §1.

use serde::de::DeserializeOwned;

use crate::diagnostic::{Diagnostic, codes};

/// Longest parser message we pass on; longer ones are cut (they may quote input).
const MAX_PARSER_MESSAGE_CHARS: usize = 240;

/// The parser options every registry read uses.
///
/// - `strict_booleans`: only `true`/`false` are booleans, so `no`, `on`, `y` stay strings.
/// - `leading_zero_numbers_as_strings`: `0755` stays the string `0755`.
/// - alias limits: a "billion laughs" document is stopped after a few thousand replayed
///   events instead of expanding exponentially (records have no business using aliases
///   heavily; 1,000 expansions of one anchor is generous).
/// - no snippets: a diagnostic carries line and column; the CLI prints the source line
///   itself, so the message never embeds the file body.
pub(crate) fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.with_snippet = false;
    options.alias_limits.max_total_replayed_events = 20_000;
    options.alias_limits.max_alias_expansions_per_anchor = 1_000;
    options.alias_limits.max_replay_stack_depth = 16;
    options
}

/// Parse text into `T`, mapping a parser error to a `YAML_INVALID` / `RECORD_INVALID`
/// diagnostic with line and column.
pub(crate) fn parse_typed<T: DeserializeOwned>(text: &str) -> Result<T, Diagnostic> {
    serde_saphyr::from_str_with_options::<T>(text, yaml_options()).map_err(|e| parse_error(&e))
}

/// Parse text into `T`, also returning the field paths of every key `T` does not know
/// (`match.environment`, `hosts[0].role`), in document order. One parse: the keys are
/// reported by the deserializer as it skips them (`serde_ignored`).
pub(crate) fn parse_typed_tracking<T: DeserializeOwned>(
    text: &str,
) -> Result<(T, Vec<String>), Diagnostic> {
    let mut unknown = Vec::new();
    let value = serde_saphyr::with_deserializer_from_str_with_options(text, yaml_options(), |de| {
        serde_ignored::deserialize(de, |path| unknown.push(field_path(&path)))
    })
    .map_err(|e| parse_error(&e))?;
    Ok((value, unknown))
}

/// A `serde_ignored` path as a field path: `a.b[0].c`.
pub(crate) fn field_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    fn walk(p: &Path<'_>, out: &mut String) {
        match p {
            Path::Root => {}
            Path::Seq { parent, index } => {
                walk(parent, out);
                out.push_str(&format!("[{index}]"));
            }
            Path::Map { parent, key } => {
                walk(parent, out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => walk(parent, out),
        }
    }
    let mut out = String::new();
    walk(path, &mut out);
    out
}

/// Parse text into a JSON value (unknown fields and key order kept).
pub fn parse_document(text: &str) -> Result<serde_json::Value, Diagnostic> {
    parse_typed::<serde_json::Value>(text)
}

/// Parsing is the loader's job, so the two parse entry points of the typed data live
/// here rather than in `model` and `config`, which stay plain data: `load` depends on
/// them, never the reverse (that was the circle model → load → model).
impl crate::model::Record {
    /// The parsed document with unknown fields, as `env_get` returns it.
    pub fn document(&self) -> Result<serde_json::Value, crate::EnvError> {
        parse_document(&self.text).map_err(|d| {
            crate::EnvError::internal(format!("{} no longer parses: {}", self.file, d.message))
        })
    }
}

impl crate::config::Config {
    /// Parse config text. An error is returned as a diagnostic by the loader.
    pub fn parse(text: &str) -> Result<crate::config::Config, Diagnostic> {
        if text.trim().is_empty() {
            return Ok(crate::config::Config::default());
        }
        parse_typed::<crate::config::Config>(text).map_err(|mut d| {
            d.code = codes::CONFIG_INVALID.to_owned();
            d.file = Some(crate::config::CONFIG_FILE.to_owned());
            d
        })
    }

    /// Parse config text as the registry does: the config and every finding about it.
    /// A parse error, or an unknown key in `writePolicy` or `defaults` (an error of
    /// [`crate::record_checks::unknown_fields`]), means the defaults are used — the
    /// fail-closed choice; other unknown keys are warnings.
    pub fn parse_checked(text: &str) -> (crate::config::Config, Vec<Diagnostic>) {
        use crate::config::{CONFIG_FILE, Config};
        if text.trim().is_empty() {
            return (Config::default(), Vec::new());
        }
        match parse_typed_tracking::<Config>(text) {
            Err(mut d) => {
                d.code = codes::CONFIG_INVALID.to_owned();
                d.message = format!("{}; defaults used", d.message);
                (Config::default(), vec![d.in_file(CONFIG_FILE)])
            }
            Ok((config, unknown)) => {
                let diagnostics: Vec<Diagnostic> = crate::record_checks::unknown_fields(
                    crate::record_checks::FieldOwner::Config,
                    &unknown,
                    Some(text),
                )
                .into_iter()
                .map(|d| d.in_file(CONFIG_FILE))
                .collect();
                let refused = diagnostics
                    .iter()
                    .any(|d| d.severity == crate::diagnostic::Severity::Error);
                (
                    if refused { Config::default() } else { config },
                    diagnostics,
                )
            }
        }
    }
}

/// Turn a parser error into a diagnostic: syntax problems are `YAML_INVALID`, shape
/// problems (wrong type, missing field) `RECORD_INVALID`.
pub(crate) fn parse_error(err: &serde_saphyr::Error) -> Diagnostic {
    let bare = err.without_snippet();
    let mut message = bare.to_string();
    // The rendered form may end with its own " at line X column Y"; we keep it (it is
    // also in `line`/`column`) but cap the length, since messages may quote input.
    if message.chars().count() > MAX_PARSER_MESSAGE_CHARS {
        message = message
            .chars()
            .take(MAX_PARSER_MESSAGE_CHARS)
            .collect::<String>()
            + "…";
    }
    let code = if is_shape_error(bare, &message) {
        codes::RECORD_INVALID
    } else {
        codes::YAML_INVALID
    };
    let mut d = Diagnostic::error(code, message);
    if let Some(loc) = err.location() {
        let line = u32::try_from(loc.line()).unwrap_or(u32::MAX);
        let column = u32::try_from(loc.column()).unwrap_or(u32::MAX);
        if line > 0 {
            d = d.at_position(line, column);
            if !d.message.contains("line") {
                d.message = format!("{} (line {line}, column {column})", d.message);
            }
        }
    }
    d
}

/// A document that is valid YAML but not a valid record (wrong type, missing field,
/// bad enum value) is `RECORD_INVALID`; everything else the parser reports is
/// `YAML_INVALID`. The parser is streaming, so a type mismatch can be found before a
/// later syntax error in the same file; the first finding wins.
fn is_shape_error(err: &serde_saphyr::Error, message: &str) -> bool {
    use serde_saphyr::Error as E;
    match err {
        E::Message { .. } => [
            "invalid type",
            "missing field",
            "unknown variant",
            "invalid value",
            "invalid length",
        ]
        .iter()
        .any(|p| message.contains(p)),
        E::SerdeInvalidType { .. }
        | E::SerdeInvalidValue { .. }
        | E::SerdeInvalidLength { .. }
        | E::SerdeUnknownVariant { .. }
        | E::SerdeUnknownField { .. }
        | E::SerdeMissingField { .. }
        | E::SerdeVariantId { .. }
        | E::Unexpected { .. }
        | E::NullIntoString { .. }
        | E::InvalidBooleanStrict { .. }
        | E::InvalidScalar { .. }
        | E::InvalidCharNull { .. }
        | E::InvalidCharNotSingleScalar { .. }
        | E::UnexpectedValueForUnit { .. }
        | E::TaggedScalarCannotDeserializeIntoString { .. } => true,
        _ => false,
    }
}

/// Why a directory entry is skipped without a diagnostic (data model §1): hidden files
/// (which includes our own temp files and `.#*` lock files), editor leftovers (`*~`,
/// `*.swp`, `*.swo`), and anything not ending in `.yaml`/`.yml`.
pub fn is_ignored_file_name(name: &str) -> bool {
    name.starts_with('.')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swo")
        || record_stem(name).is_none()
}

/// The id part of a record file name: `a.yaml` / `a.yml` → `a`.
pub fn record_stem(name: &str) -> Option<&str> {
    name.strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .filter(|s| !s.is_empty())
}

/// What became of one record file.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileOutcome {
    /// The record, when the file loaded.
    pub record: Option<std::sync::Arc<crate::model::Record>>,
    /// Per-file findings (syntax, schema, id, size, templates).
    pub diagnostics: Vec<Diagnostic>,
    /// The stem (the id the file claims by its name).
    pub stem: String,
    /// Identity of the file version that was read; `None` when it could not be stat-ed
    /// (or was refused: a refused file is looked at again on every rescan).
    pub fingerprint: Option<crate::files::Fingerprint>,
}

/// Load one record file. Never fails: every problem is a diagnostic.
///
/// Order matters for safety: the canonical target must be inside the registry
/// (`files.rs`: a symbolic link out is refused, never opened), then the file type and
/// size are checked from metadata before the file is opened (a FIFO would block
/// `open`, a huge file would cost memory), and the read itself is capped at the limit
/// + 1 byte in case the file grows meanwhile.
pub(crate) fn load_record_file(
    root: &containment::Root,
    kind: crate::kind::RecordKind,
    file_name: &str,
    max_bytes: u64,
) -> FileOutcome {
    let rel = format!("{}/{}", kind.dir_name(), file_name);
    let stem = record_stem(file_name).unwrap_or(file_name).to_owned();
    let mut outcome = FileOutcome {
        record: None,
        diagnostics: Vec::new(),
        stem: stem.clone(),
        fingerprint: None,
    };
    match crate::files::read_capped(root, &rel, max_bytes, &mut outcome.fingerprint) {
        Ok(bytes) => {
            let (record, diagnostics) = parse_record_bytes(kind, &stem, &rel, bytes);
            outcome.record = record.map(std::sync::Arc::new);
            outcome.diagnostics = diagnostics;
        }
        Err(why) => outcome.diagnostics.push(why.diagnostic().in_file(rel)),
    }
    outcome
}

/// Parse the bytes of a record file claimed by `stem` into a record plus findings.
/// Pure (no I/O): the fuzz target drives this directly.
pub fn parse_record_bytes(
    kind: crate::kind::RecordKind,
    stem: &str,
    rel: &str,
    bytes: Vec<u8>,
) -> (Option<crate::model::Record>, Vec<Diagnostic>) {
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            let column = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            let d = Diagnostic::error(
                codes::YAML_INVALID,
                format!(
                    "file is not valid UTF-8 (first bad byte at offset {}, line {line}, column {column})",
                    valid.len()
                ),
            )
            .in_file(rel)
            .at_position(to_u32(line), to_u32(column));
            return (None, vec![d]);
        }
    };
    parse_record_text(kind, stem, rel, text)
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Parse the text of a record file. See [`parse_record_bytes`].
pub fn parse_record_text(
    kind: crate::kind::RecordKind,
    stem: &str,
    rel: &str,
    text: String,
) -> (Option<crate::model::Record>, Vec<Diagnostic>) {
    use crate::kind::RecordKind;
    use crate::model::RecordBody;
    fn typed<T: DeserializeOwned>(
        text: &str,
        wrap: fn(T) -> RecordBody,
    ) -> Result<(RecordBody, Vec<String>), Diagnostic> {
        parse_typed_tracking(text).map(|(body, unknown)| (wrap(body), unknown))
    }
    let parsed = match kind {
        RecordKind::Environment => typed(&text, RecordBody::Environment),
        RecordKind::Service => typed(&text, RecordBody::Service),
        RecordKind::Deployment => typed(&text, RecordBody::Deployment),
        RecordKind::RuleProfile => typed(&text, RecordBody::RuleProfile),
        RecordKind::OperationBinding => typed(&text, RecordBody::OperationBinding),
    };
    let (body, unknown) = match parsed {
        Ok(parsed) => parsed,
        Err(d) => return (None, vec![d.in_file(rel)]),
    };
    let mut diagnostics = crate::record_checks::check_record(&body, Some(stem));
    diagnostics.extend(crate::record_checks::unknown_fields(
        crate::record_checks::FieldOwner::Record(kind),
        &unknown,
        Some(&text),
    ));
    for d in &mut diagnostics {
        d.file = Some(rel.to_owned());
    }
    let fatal = diagnostics
        .iter()
        .any(crate::record_checks::is_fatal_record_finding);
    if fatal {
        return (None, diagnostics);
    }
    let record = crate::model::Record {
        body,
        file: rel.to_owned(),
        text: text.into(),
    };
    (Some(record), diagnostics)
}

/// Scan one kind folder: the record file names in it, sorted. A missing folder is an
/// empty kind; a folder that cannot be listed, or whose canonical target is outside the
/// registry (`services -> /etc`), is a diagnostic, and nothing in it is even named.
pub(crate) fn list_record_files(
    root: &containment::Root,
    kind: crate::kind::RecordKind,
) -> Result<Vec<String>, Diagnostic> {
    let refused = |why: &str| {
        Diagnostic::error(
            codes::FILE_UNREADABLE,
            format!("folder {} cannot be listed: {why}", kind.dir_name()),
        )
        .in_file(kind.dir_name())
    };
    let dir = crate::files::folder(root, kind.dir_name()).map_err(|why| refused(&why.reason()))?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(refused(&e.kind().to_string())),
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        // Non-UTF-8 names cannot be ids; they are ignored like any non-record file.
        if let Ok(name) = entry.file_name().into_string()
            && !is_ignored_file_name(&name)
        {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::RecordKind;
    use proptest::prelude::*;

    #[test]
    fn file_name_rules() {
        for ignored in [
            ".hidden.yaml",
            "a.yaml~",
            ".#a.yaml",
            "a.yaml.swp",
            "a.swo",
            "README.md",
            "a.json",
            ".yaml",
            ".a.yaml.tmp-1-2",
        ] {
            assert!(is_ignored_file_name(ignored), "{ignored}");
        }
        for record in ["a.yaml", "a.yml", "deploy-001.yaml"] {
            assert!(!is_ignored_file_name(record), "{record}");
        }
        assert_eq!(record_stem("a.b.yaml"), Some("a.b"));
        assert_eq!(record_stem("a.yml"), Some("a"));
        assert_eq!(record_stem("yaml"), None);
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let d = parse_document("a: 1\nb: [2,\nc: 3\n").unwrap_err();
        assert_eq!(d.code, codes::YAML_INVALID);
        assert!(d.line.is_some() && d.column.is_some());
        let d = parse_document("a: 1\na: 2\n").unwrap_err();
        assert!(
            d.message.to_lowercase().contains("duplicate"),
            "{}",
            d.message
        );
    }

    #[test]
    fn a_valid_record_loads_with_its_text() {
        let text = "id: a\nschemaVersion: 1\nname: A\nextra: kept\n";
        let (rec, diags) = parse_record_bytes(
            RecordKind::Service,
            "a",
            "services/a.yaml",
            text.as_bytes().to_vec(),
        );
        // The unknown field is reported where it is, and kept.
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(
            (diags[0].code.as_str(), diags[0].severity, diags[0].line),
            ("UNKNOWN_FIELD", crate::Severity::Warning, Some(4))
        );
        assert_eq!(diags[0].path.as_deref(), Some("extra"));
        let rec = rec.unwrap();
        assert_eq!(rec.id(), "a");
        assert_eq!(&*rec.text, text);
        assert_eq!(rec.document().unwrap()["extra"], "kept");
    }

    #[test]
    fn parser_messages_are_capped() {
        let long = format!("name: [{}", "x".repeat(5000));
        let d = parse_document(&long).unwrap_err();
        assert!(
            d.message.chars().count() <= MAX_PARSER_MESSAGE_CHARS + 40,
            "{}",
            d.message.len()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The loader never panics on arbitrary bytes (the fuzz target's property, in CI).
        #[test]
        fn never_panics_on_arbitrary_bytes(kind in 0usize..5, bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_record_bytes(RecordKind::ALL[kind], "x", "services/x.yaml", bytes);
        }

        /// Nor on YAML-ish text built from the grammar's own punctuation.
        #[test]
        fn never_panics_on_yamlish_text(text in "(id: x\n|schemaVersion: 1\n|name: n\n|[-:{}\\[\\],&*!|>'\"#%@` \n]|[a-z0-9]{1,4}){0,40}") {
            let _ = crate::config::Config::parse_checked(&text);
            let (rec, _) = parse_record_text(RecordKind::Environment, "x", "environments/x.yaml", text);
            if let Some(rec) = rec {
                prop_assert_eq!(rec.id(), "x");
            }
        }
    }
}
