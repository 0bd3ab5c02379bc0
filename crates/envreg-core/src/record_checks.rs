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

/// Whether a per-record finding keeps the record out of the snapshot: a fatal code, or
/// an unknown field where one decides what a binding applies to or who is asked
/// ([`unknown_fields`] makes those errors).
pub(crate) fn is_fatal_record_finding(d: &Diagnostic) -> bool {
    is_fatal_record_code(&d.code)
        || (d.code == codes::UNKNOWN_FIELD && d.severity == crate::diagnostic::Severity::Error)
}

pub use crate::schema::FieldOwner;

/// `UNKNOWN_FIELD` diagnostics for the field paths a typed parse ignored (`match.environment`,
/// `hosts[0].role`). `text` is the file's text, to give each its line and column.
///
/// Severity: a warning — the field is kept in the file (contract §2.2) and ignored —
/// except where a field decides what a record applies to or whether a person is asked:
/// inside an operation binding's `match` or `policy`, inside `envreg.yaml`'s
/// `writePolicy` or `defaults`, and a top-level key that looks like one of those
/// (`matches:`, `Policy:`, `writepolicy:`). There the misspelt key would silently widen
/// a binding to every environment or drop an approval, so it is an error and the record
/// (or the config) is not used: fail closed.
pub fn unknown_fields(owner: FieldOwner, paths: &[String], text: Option<&str>) -> Vec<Diagnostic> {
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let (parent, key) = split_last(path);
        let known = crate::schema::known_fields(owner, parent);
        let suggestion = known.as_deref().and_then(|k| did_you_mean(key, k));
        let elsewhere = match (owner, parent.is_empty(), suggestion) {
            (FieldOwner::Record(kind), true, None) => crate::schema::kind_with_field(kind, key),
            _ => None,
        };
        let guarded = guarded_section(owner, parent, key, suggestion);
        let place = if parent.is_empty() {
            String::new()
        } else {
            format!(" in {parent}")
        };
        let hint = match (suggestion, elsewhere) {
            (Some(s), _) => format!(" (did you mean {s}?)"),
            (None, Some(kind)) => format!(" ({key} is a field of a {kind}, not of this record)"),
            (None, None) => match &known {
                Some(k) if !k.is_empty() => format!(" (known fields here: {})", k.join(", ")),
                _ => String::new(),
            },
        };
        let mut d = match (guarded, owner) {
            (Some(section), FieldOwner::Record(_)) => Diagnostic::error(
                codes::UNKNOWN_FIELD,
                format!(
                    "unknown field {}{place}{hint}: this binding is not used until it is fixed, because a key envreg does not know in {section} could widen what it applies to or skip an approval",
                    truncate(key)
                ),
            ),
            (Some(section), FieldOwner::Config) => Diagnostic::error(
                codes::UNKNOWN_FIELD,
                format!(
                    "unknown field {}{place}{hint}: envreg.yaml is not used until it is fixed (every setting falls back to its default, approvals on), because a key envreg does not know in {section} could change who is asked",
                    truncate(key)
                ),
            ),
            (None, _) => Diagnostic::warning(
                codes::UNKNOWN_FIELD,
                format!(
                    "unknown field {}{place}{hint}; it is kept in the file but envreg ignores it",
                    truncate(key)
                ),
            ),
        }
        .at_path(path.clone());
        if let Some(span) = text.and_then(|t| crate::locate::locate(t, path)) {
            d = d.at_position(to_u32(span.line), to_u32(span.column));
        }
        out.push(d);
    }
    out
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `a.b[0].c` → (`a.b[0]`, `c`); `c` → (``, `c`).
fn split_last(path: &str) -> (&str, &str) {
    match path.rfind('.') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

/// The section whose unknown keys fail closed, when `parent`/`key` is in (or looks like) one.
fn guarded_section(
    owner: FieldOwner,
    parent: &str,
    key: &str,
    suggestion: Option<&str>,
) -> Option<&'static str> {
    let sections: &[&'static str] = match owner {
        FieldOwner::Record(crate::kind::RecordKind::OperationBinding) => &["match", "policy"],
        FieldOwner::Config => &["writePolicy", "defaults"],
        FieldOwner::Record(_) => return None,
    };
    let top = parent.split(['.', '[']).next().unwrap_or("");
    if let Some(s) = sections.iter().find(|s| **s == top) {
        return Some(s);
    }
    if !parent.is_empty() {
        return None;
    }
    // A top-level key that looks like a guarded section (`matches:`, `Policy:`).
    let lower = key.to_ascii_lowercase();
    sections
        .iter()
        .find(|s| {
            suggestion == Some(**s) || {
                let stem = &s.to_ascii_lowercase()[..s.len().min(5)];
                lower.contains(stem)
            }
        })
        .copied()
}

/// The known field closest to `key`: same letters in another case, one a prefix of the
/// other (`environment` → `environmentRef`), or an edit distance of at most a third of
/// its length (at least 2).
pub(crate) fn did_you_mean<'k>(key: &str, known: &'k [String]) -> Option<&'k str> {
    let lower = key.to_ascii_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in known {
        let c = candidate.to_ascii_lowercase();
        let score = if c == lower {
            0
        } else if lower.len() >= 3 && (c.starts_with(&lower) || lower.starts_with(&c)) {
            1
        } else {
            let d = edit_distance(&lower, &c);
            if d > (c.len() / 3).max(2) {
                continue;
            }
            d + 1
        };
        if best.is_none_or(|(b, _)| score < b) {
            best = Some((score, candidate.as_str()));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance over bytes (field names are ASCII; longer inputs are cut).
fn edit_distance(a: &str, b: &str) -> usize {
    let a = &a.as_bytes()[..a.len().min(64)];
    let b = &b.as_bytes()[..b.len().min(64)];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
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

    fn load(kind: crate::kind::RecordKind, text: &str) -> (bool, Vec<Diagnostic>) {
        let (rec, diags) = crate::load::parse_record_text(kind, "x", "x/x.yaml", text.to_owned());
        (rec.is_some(), diags)
    }

    /// Issue 19 finding 2: `match: { environment: prod, service: orders-api }` once
    /// loaded as a global binding. Now each misspelt key is an error at its line, with
    /// the field meant, and the binding is not loaded (so it matches nothing).
    #[test]
    fn an_unknown_key_in_a_binding_match_or_policy_keeps_the_binding_out() {
        let text = "id: x\nschemaVersion: 1\nname: X\noperation: restart\nmatch: { environment: prod, service: orders-api }\nskill: { name: k }\npolicy: { requiresApproval: true }\n";
        let (loaded, diags) = load(crate::kind::RecordKind::OperationBinding, text);
        assert!(!loaded, "{diags:?}");
        let found: Vec<(&str, Option<&str>, Option<u32>)> = diags
            .iter()
            .map(|d| (d.code.as_str(), d.path.as_deref(), d.line))
            .collect();
        assert_eq!(
            found,
            [
                ("UNKNOWN_FIELD", Some("match.environment"), Some(5)),
                ("UNKNOWN_FIELD", Some("match.service"), Some(5))
            ]
        );
        assert!(diags.iter().all(|d| d.severity == crate::Severity::Error));
        assert!(
            diags[0].message.contains("did you mean environmentRef?"),
            "{}",
            diags[0].message
        );
        assert!(
            diags[1].message.contains("did you mean serviceRef?"),
            "{}",
            diags[1].message
        );

        let policy = "id: x\nschemaVersion: 1\nname: X\noperation: restart\nskill: { name: k }\npolicy:\n  requireApproval: false\n";
        let (loaded, diags) = load(crate::kind::RecordKind::OperationBinding, policy);
        assert!(!loaded);
        assert_eq!(diags[0].path.as_deref(), Some("policy.requireApproval"));
        assert_eq!(diags[0].line, Some(7));

        // A top-level key that looks like `match` fails closed too.
        let matches = "id: x\nschemaVersion: 1\nname: X\noperation: restart\nmatches: { environmentRef: prod }\nskill: { name: k }\n";
        let (loaded, diags) = load(crate::kind::RecordKind::OperationBinding, matches);
        assert!(!loaded, "{diags:?}");
        assert_eq!(diags[0].severity, crate::Severity::Error);
    }

    #[test]
    fn other_unknown_keys_are_warnings_with_a_hint_and_the_record_loads() {
        let svc = "id: x\nschemaVersion: 1\nname: X\nlogSources:\n  - { id: app, path: /x }\nvariabels: { a: b }\n";
        let (loaded, diags) = load(crate::kind::RecordKind::Service, svc);
        assert!(loaded);
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(diags.iter().all(|d| d.severity == crate::Severity::Warning));
        assert_eq!(diags[0].line, Some(4));
        assert!(
            diags[0].message.contains("field of a rule profile"),
            "{}",
            diags[0].message
        );
        assert!(
            diags[1].message.contains("did you mean variables?"),
            "{}",
            diags[1].message
        );
        let env = "id: x\nschemaVersion: 1\nname: X\ntier: dev\nplatform: vm\nhosts:\n  - { id: a, address: 10.0.0.1, role: [web] }\n";
        let (loaded, diags) = load(crate::kind::RecordKind::Environment, env);
        assert!(loaded);
        assert_eq!(diags[0].path.as_deref(), Some("hosts[0].role"));
        assert_eq!(diags[0].line, Some(7));
        assert!(diags[0].message.contains("did you mean roles?"));
    }

    #[test]
    fn an_unknown_key_in_write_policy_or_defaults_means_the_default_config() {
        let (config, diags) = crate::config::Config::parse_checked(
            "writePolicy:\n  approvalChanel: host\n  requireApprovalForDelete: false\n",
        );
        assert_eq!(config, crate::config::Config::default());
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].severity, crate::Severity::Error);
        assert_eq!(diags[0].line, Some(2));
        assert!(diags[0].message.contains("did you mean approvalChannel?"));
        let (config, diags) =
            crate::config::Config::parse_checked("limits: { maxRecords: 5, maxRecrodBytes: 10 }\n");
        assert_eq!(config.limits.max_records, 5);
        assert_eq!(diags[0].severity, crate::Severity::Warning);
        let (config, diags) =
            crate::config::Config::parse_checked("default: { environmentId: prod }\n");
        assert_eq!(config, crate::config::Config::default());
        assert_eq!(diags[0].severity, crate::Severity::Error);
    }

    #[test]
    fn did_you_mean_picks_the_closest_known_field() {
        let known: Vec<String> = ["environmentRef", "serviceRef", "deploymentRef"]
            .map(String::from)
            .to_vec();
        assert_eq!(did_you_mean("environment", &known), Some("environmentRef"));
        assert_eq!(did_you_mean("deploymentref", &known), Some("deploymentRef"));
        assert_eq!(did_you_mean("servceRef", &known), Some("serviceRef"));
        assert_eq!(did_you_mean("cluster", &known), None);
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
