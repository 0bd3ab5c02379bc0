//! Records: one record's YAML with its diagnostics at their lines, and the validation
//! panel. A model only; `page.rs` draws it.
//!
//! Diagnostics are the registry's own ([`Snapshot::diagnostics`], what `envreg
//! validate` prints), placed the way the CLI places them: at the line and column the
//! loader gave (YAML syntax errors), else where [`envreg_core::locate::locate`] finds
//! the diagnostic's field path, else on the file as a whole.
//!
//! A file that does not load (broken YAML, a wrong type) is not in the snapshot, yet it
//! is what a person most needs to see. Its text is read from disk through
//! [`containment::Root`] (no link leading out of the registry is followed), only when it
//! is a regular file no larger than `limits.maxRecordBytes` (a FIFO is never opened).

use std::collections::BTreeMap;
use std::path::Path;

use envreg_core::locate::{Span, locate};
use envreg_core::{Diagnostic, EnvError, RecordKind, Registry, Severity, Snapshot, ValidateOutput};

/// A diagnostic and where it sits in the file's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub diagnostic: Diagnostic,
    pub span: Option<Span>,
}

/// One record page.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordPage {
    pub kind: RecordKind,
    pub id: String,
    pub name: Option<String>,
    /// Registry-relative file, when there is one.
    pub file: Option<String>,
    /// The file's text, when it could be shown.
    pub text: Option<String>,
    /// Whether the record loaded (else only its diagnostics know it).
    pub loaded: bool,
    pub diagnostics: Vec<Placed>,
}

/// Where the diagnostic's own line/column, or its field path, is in `text`.
pub fn place(diagnostic: &Diagnostic, text: Option<&str>) -> Option<Span> {
    if let Some(line) = diagnostic.line.filter(|l| *l > 0) {
        return Some(Span {
            line: line as usize,
            column: diagnostic.column.unwrap_or(1).max(1) as usize,
            len: 1,
        });
    }
    locate(text?, diagnostic.path.as_deref()?)
}

/// The record page of `kind`/`id`.
pub fn record(registry: &Registry, kind: RecordKind, id: &str) -> Result<RecordPage, EnvError> {
    envreg_core::id::check_id("id", id)?;
    let snapshot = registry.snapshot();
    let (file, text, name, loaded) = match snapshot.get(kind, id) {
        Some(rec) => (
            Some(rec.file.clone()),
            Some(rec.text.to_string()),
            Some(rec.name().to_owned()),
            true,
        ),
        None => {
            let candidates = [
                format!("{}/{id}.yaml", kind.dir_name()),
                format!("{}/{id}.yml", kind.dir_name()),
            ];
            let Some(file) = candidates.into_iter().find(|f| {
                snapshot
                    .diagnostics()
                    .iter()
                    .any(|d| d.file.as_deref() == Some(f.as_str()))
            }) else {
                return Err(EnvError::not_found(kind, id));
            };
            let limit = snapshot.config().limits.max_record_bytes;
            let text = read_record_file(registry.root(), &file, limit);
            (Some(file), text, None, false)
        }
    };
    let diagnostics = file
        .as_deref()
        .map(|f| diagnostics_of(&snapshot, f, text.as_deref()))
        .unwrap_or_default();
    Ok(RecordPage {
        kind,
        id: id.to_owned(),
        name,
        file,
        text,
        loaded,
        diagnostics,
    })
}

fn diagnostics_of(snapshot: &Snapshot, file: &str, text: Option<&str>) -> Vec<Placed> {
    snapshot
        .diagnostics()
        .iter()
        .filter(|d| d.file.as_deref() == Some(file))
        .map(|d| Placed {
            diagnostic: d.clone(),
            span: place(d, text),
        })
        .collect()
}

/// The text of a record file that did not load, or `None` when it is not a regular
/// file inside the registry, is too large, or is not UTF-8.
fn read_record_file(root: &Path, file: &str, limit: u64) -> Option<String> {
    let root = containment::Root::new(root).ok()?;
    let resolved = containment::resolve(file, root.path()).ok()?;
    let meta = std::fs::symlink_metadata(resolved.path()).ok()?;
    if !meta.is_file() || meta.len() > limit {
        return None;
    }
    let bytes = root.read(file, root.path()).ok()?;
    if bytes.len() as u64 > limit {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The validation panel: counts, and every diagnostic grouped by file.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    pub output: ValidateOutput,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// File (or `""` for registry-wide findings) → its diagnostics, in validate order.
    pub by_file: BTreeMap<String, Vec<Placed>>,
}

pub fn validation(registry: &Registry) -> Validation {
    let snapshot = registry.snapshot();
    // `env_validate`'s report, operations and Service Contexts proven included.
    let output: ValidateOutput = registry.validate();
    let count = |s: Severity| {
        output
            .diagnostics
            .iter()
            .filter(|d| d.severity == s)
            .count()
    };
    let (errors, warnings, infos) = (
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    );
    let mut by_file: BTreeMap<String, Vec<Placed>> = BTreeMap::new();
    for d in &output.diagnostics {
        let file = d.file.clone().unwrap_or_default();
        let text = snapshot_text(&snapshot, &file);
        by_file.entry(file).or_default().push(Placed {
            diagnostic: d.clone(),
            span: place(d, text.as_deref()),
        });
    }
    Validation {
        output,
        errors,
        warnings,
        infos,
        by_file,
    }
}

/// A loaded record's text by its file (diagnostics of unloaded files carry their own
/// line, or point at the file).
fn snapshot_text(snapshot: &Snapshot, file: &str) -> Option<String> {
    let (kind, id) = crate::links::record_of_file(file)?;
    snapshot
        .get(kind, &id)
        .filter(|r| r.file == file)
        .map(|r| r.text.to_string())
}

/// Error / warning counts of the whole registry, for the banner on every page.
pub fn counts(snapshot: &Snapshot) -> (usize, usize) {
    let d = snapshot.diagnostics();
    (
        d.iter().filter(|x| x.severity == Severity::Error).count(),
        d.iter().filter(|x| x.severity == Severity::Warning).count(),
    )
}
