//! Checks of one record on its own (data model §4): id format and id = file stem
//! (`ID_MISMATCH`), `schemaVersion` (`SCHEMA_VERSION_UNSUPPORTED`), name length and
//! operation id (`RECORD_INVALID`), template syntax (`TEMPLATE_INVALID`).
//!
//! They read one typed record and nothing else, so they sit between the model and the
//! loader: `load` runs them on every file it parses (a fatal finding keeps the record
//! out), `write` on every record it is about to save. The checks across records, which
//! read a whole snapshot, are in [`crate::validate`], which also re-exports the public
//! names here. Decision: a module of its own rather than part of `validate`, because
//! `validate` reads the snapshot and the loader runs before any snapshot exists; keeping
//! them together was the circle load → validate → snapshot → validate.

use crate::diagnostic::{Diagnostic, codes};
use crate::model::RecordBody;

/// Longest `name` allowed (data model §2).
pub const MAX_NAME_CHARS: usize = 200;

/// Per-record codes that keep a record out of the snapshot.
pub(crate) fn is_fatal_record_code(code: &str) -> bool {
    matches!(
        code,
        codes::ID_MISMATCH
            | codes::SCHEMA_VERSION_UNSUPPORTED
            | codes::RECORD_INVALID
            | codes::YAML_INVALID
    )
}

/// Checks of one record on its own. `stem` is the file stem when the record came from a
/// file; `None` when it is about to be saved (its file will be named after its id).
pub fn check_record(body: &RecordBody, stem: Option<&str>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let common = body.common();
    let id = common.id();
    if !crate::id::is_valid_id(id) {
        out.push(
            Diagnostic::error(
                codes::RECORD_INVALID,
                format!("id {:?} is not a valid id", truncate(id)),
            )
            .at_path("id"),
        );
    }
    if let Some(stem) = stem {
        if !crate::id::is_valid_id(stem) {
            out.push(Diagnostic::error(
                codes::RECORD_INVALID,
                format!(
                    "file name {:?} is not a valid id (ids are lower case, 1-64 characters)",
                    truncate(stem)
                ),
            ));
        } else if stem != id {
            out.push(
                Diagnostic::error(
                    codes::ID_MISMATCH,
                    format!(
                        "id {:?} does not match the file name {stem:?}; the file stem is the id",
                        truncate(id)
                    ),
                )
                .at_path("id"),
            );
        }
    }
    if common.schema_version() != 1 {
        out.push(
            Diagnostic::error(
                codes::SCHEMA_VERSION_UNSUPPORTED,
                format!(
                    "schemaVersion {} is not supported; this registry reads version 1",
                    common.schema_version()
                ),
            )
            .at_path("schemaVersion"),
        );
    }
    let name_chars = common.name().chars().count();
    if name_chars == 0 || name_chars > MAX_NAME_CHARS {
        out.push(
            Diagnostic::error(
                codes::RECORD_INVALID,
                format!("name must be 1-{MAX_NAME_CHARS} characters, has {name_chars}"),
            )
            .at_path("name"),
        );
    }
    for (path, template) in templates_of(body) {
        if let Err(why) = check_template(template) {
            out.push(
                Diagnostic::error(
                    codes::TEMPLATE_INVALID,
                    format!("template at {path} is invalid: {why}"),
                )
                .at_path(path),
            );
        }
    }
    if let RecordBody::OperationBinding(b) = body
        && !crate::id::is_valid_id(&b.operation)
    {
        out.push(
            Diagnostic::error(
                codes::RECORD_INVALID,
                format!(
                    "operation {:?} is not a valid operation id",
                    truncate(&b.operation)
                ),
            )
            .at_path("operation"),
        );
    }
    out
}

pub(crate) fn truncate(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        s.chars().take(80).collect::<String>() + "…"
    }
}

/// Every template-bearing field of a record, with its field path.
pub fn templates_of(body: &RecordBody) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    match body {
        RecordBody::Environment(r) => push_map(&mut out, "variables", &r.variables),
        RecordBody::Service(r) => push_map(&mut out, "variables", &r.variables),
        RecordBody::Deployment(r) => push_map(&mut out, "variables", &r.variables),
        RecordBody::RuleProfile(r) => {
            push_map(&mut out, "variables", &r.variables);
            push_map(&mut out, "paths", &r.paths);
            for (i, s) in r.log_sources.iter().enumerate() {
                out.push((format!("logSources[{i}].path"), s.path.as_str()));
            }
            for (i, c) in r.class_locations.iter().enumerate() {
                out.push((format!("classLocations[{i}]"), c.as_str()));
            }
        }
        RecordBody::OperationBinding(r) => push_map(&mut out, "parameters", &r.parameters),
    }
    out
}

fn push_map<'a>(
    out: &mut Vec<(String, &'a str)>,
    prefix: &str,
    map: &'a crate::model::TemplateMap,
) {
    for (k, v) in map {
        out.push((format!("{prefix}.{k}"), v.as_str()));
    }
}

/// A template's syntax (`TEMPLATE_INVALID`), checked by the same parser resolution uses
/// ([`crate::template::check`]), so validation and resolution agree on what is valid.
pub fn check_template(src: &str) -> Result<(), String> {
    crate::template::check(src).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_syntax() {
        assert!(check_template("/opt/{{appName}}/{{ env.id }}").is_ok());
        assert!(check_template("${HOME}/a{b}").is_ok());
        for bad in ["{{open", "close}}", "{{}}", "{{ a b }}"] {
            assert!(check_template(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn record_checks() {
        let body: RecordBody = RecordBody::Service(
            serde_json::from_value(serde_json::json!({
                "id": "svc", "schemaVersion": 3, "name": "", "variables": { "a": "{{x" }
            }))
            .unwrap(),
        );
        let codes: Vec<String> = check_record(&body, Some("other"))
            .into_iter()
            .map(|d| d.code)
            .collect();
        assert_eq!(
            codes,
            [
                "ID_MISMATCH",
                "SCHEMA_VERSION_UNSUPPORTED",
                "RECORD_INVALID",
                "TEMPLATE_INVALID"
            ]
        );
        assert!(is_fatal_record_code("ID_MISMATCH") && !is_fatal_record_code("TEMPLATE_INVALID"));
    }
}
