//! Read outputs: `env_list`, `env_get`, `env_find` (contract §2.1–§2.3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::kind::RecordKind;

/// Registry warnings shown by `env_list`: at most this many, plus a count of the rest.
pub const MAX_LIST_WARNINGS: usize = 20;
/// `env_find` returns at most this many hits.
pub const MAX_FIND_HITS: usize = 25;
/// `env_find` queries shorter than this are `INVALID_ARGUMENT`.
pub const MIN_FIND_QUERY_CHARS: usize = 2;

/// One line of an inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordSummary {
    pub kind: RecordKind,
    pub id: String,
    pub name: String,
    /// Kind-specific one-liner, e.g. `test · 2 hosts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// `env_list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListOutput {
    /// Sorted by kind (contract order), then id.
    pub items: Vec<RecordSummary>,
    /// Registry diagnostics of severity warning or error, at most 20.
    pub warnings: Vec<Diagnostic>,
    /// How many further warnings were left out of `warnings`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted_warnings: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `env_get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetOutput {
    /// The parsed document, unknown fields included.
    pub record: serde_json::Value,
    /// The on-disk text.
    pub yaml: String,
}

/// Which field an `env_find` hit matched, in rank order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum MatchField {
    /// Exact or prefix id match.
    Id,
    Name,
    Alias,
    Category,
}

/// One `env_find` candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindHit {
    pub kind: RecordKind,
    pub id: String,
    pub name: String,
    pub field: MatchField,
}

/// `env_find` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FindOutput {
    /// Ranked: exact id, prefix id, name, alias, category; ties by kind then id. ≤ 25.
    pub hits: Vec<FindHit>,
}

impl crate::Registry {
    /// `env_list`: records sorted by kind then id, optionally of one kind and matching
    /// `query` (case-insensitive over id, name and aliases), with registry warnings.
    pub fn list(
        &self,
        kind: Option<RecordKind>,
        query: Option<&str>,
    ) -> Result<ListOutput, crate::EnvError> {
        let snapshot = self.snapshot();
        let needle = query
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_lowercase);
        let mut items = Vec::new();
        for entry in snapshot.search_index() {
            let rec = &entry.record;
            if kind.is_some_and(|k| k != rec.kind()) {
                continue;
            }
            let matched = needle.as_deref().is_none_or(|n| {
                entry.id.contains(n)
                    || entry.name.contains(n)
                    || entry.aliases.iter().any(|a| a.contains(n))
            });
            if matched {
                items.push(RecordSummary {
                    kind: rec.kind(),
                    id: rec.id().to_owned(),
                    name: rec.name().to_owned(),
                    summary: summary_of(&rec.body),
                });
            }
        }
        let mut warnings: Vec<Diagnostic> = snapshot
            .diagnostics()
            .iter()
            .filter(|d| d.severity >= crate::Severity::Warning)
            .cloned()
            .collect();
        let omitted_warnings = warnings.len().saturating_sub(MAX_LIST_WARNINGS);
        warnings.truncate(MAX_LIST_WARNINGS);
        Ok(ListOutput {
            items,
            warnings,
            omitted_warnings,
        })
    }

    /// `env_get`: the parsed document and the on-disk text. The id is checked before
    /// any I/O.
    pub fn get(&self, kind: RecordKind, id: &str) -> Result<GetOutput, crate::EnvError> {
        crate::id::check_id("id", id)?;
        let snapshot = self.snapshot();
        let Some(rec) = snapshot.get(kind, id) else {
            return Err(self.not_found_with_hint(kind, id));
        };
        Ok(GetOutput {
            record: rec.document()?,
            yaml: rec.text.to_string(),
        })
    }

    /// Not found, with a hint when a file for that id exists but did not load.
    pub(crate) fn not_found_with_hint(&self, kind: RecordKind, id: &str) -> crate::EnvError {
        let mut err = crate::EnvError::not_found(kind, id);
        let files = self.files_for_id(kind, id);
        if let Some(file) = files.first() {
            err.message = format!(
                "{kind} {id} not found: {}/{file} exists but has errors (run env_validate)",
                kind.dir_name()
            );
        }
        err
    }

    /// `env_find`: ranked candidates for a fragment of an id, name, alias or category.
    pub fn find(&self, query: &str) -> Result<FindOutput, crate::EnvError> {
        let query = query.trim();
        if query.chars().count() < MIN_FIND_QUERY_CHARS {
            return Err(crate::EnvError::invalid_argument(format!(
                "query must have at least {MIN_FIND_QUERY_CHARS} characters"
            )));
        }
        let needle = query.to_lowercase();
        let snapshot = self.snapshot();
        let mut ranked: Vec<(u8, RecordKind, &str, &str, MatchField)> = Vec::new();
        for entry in snapshot.search_index() {
            if let Some((rank, field)) = rank_lowered(entry, &needle) {
                let rec = &entry.record;
                ranked.push((rank, rec.kind(), rec.id(), rec.name(), field));
            }
        }
        ranked.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        ranked.truncate(MAX_FIND_HITS);
        let hits = ranked
            .into_iter()
            .map(|(_, kind, id, name, field)| FindHit {
                kind,
                id: id.to_owned(),
                name: name.to_owned(),
                field,
            })
            .collect();
        Ok(FindOutput { hits })
    }
}

/// The best rank of a record for a lower-cased needle: 0 exact id, 1 id prefix, 2 name,
/// 3 alias, 4 category, 5 id substring (contract §2.3 order, then the weakest id match).
pub fn rank_of(c: &dyn crate::model::CommonFields, needle: &str) -> Option<(u8, MatchField)> {
    let id = c.id();
    if id.eq_ignore_ascii_case(needle) {
        return Some((0, MatchField::Id));
    }
    if starts_with_ci(id, needle) {
        return Some((1, MatchField::Id));
    }
    if contains_ci(c.name(), needle) {
        return Some((2, MatchField::Name));
    }
    if c.aliases().iter().any(|a| contains_ci(a, needle)) {
        return Some((3, MatchField::Alias));
    }
    if c.category().is_some_and(|cat| contains_ci(cat, needle)) {
        return Some((4, MatchField::Category));
    }
    if contains_ci(id, needle) {
        return Some((5, MatchField::Id));
    }
    None
}

/// [`rank_of`] over pre-lowered fields (the hot path of `find`).
fn rank_lowered(e: &crate::snapshot::SearchEntry, needle: &str) -> Option<(u8, MatchField)> {
    if e.id == needle {
        Some((0, MatchField::Id))
    } else if e.id.starts_with(needle) {
        Some((1, MatchField::Id))
    } else if e.name.contains(needle) {
        Some((2, MatchField::Name))
    } else if e.aliases.iter().any(|a| a.contains(needle)) {
        Some((3, MatchField::Alias))
    } else if e.category.as_deref().is_some_and(|c| c.contains(needle)) {
        Some((4, MatchField::Category))
    } else if e.id.contains(needle) {
        Some((5, MatchField::Id))
    } else {
        None
    }
}

/// Case-insensitive substring test against an already lower-cased needle. ASCII text
/// (nearly every id and name) is compared in place without allocating.
pub fn contains_ci(haystack: &str, needle_lower: &str) -> bool {
    if haystack.is_ascii() && needle_lower.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle_lower.as_bytes());
        if n.is_empty() {
            return true;
        }
        return h.len() >= n.len() && h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    haystack.to_lowercase().contains(needle_lower)
}

fn starts_with_ci(haystack: &str, needle_lower: &str) -> bool {
    if haystack.is_ascii() && needle_lower.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle_lower.as_bytes());
        return h.len() >= n.len() && h[..n.len()].eq_ignore_ascii_case(n);
    }
    haystack.to_lowercase().starts_with(needle_lower)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The kind-specific one-liner of `env_list`.
pub fn summary_of(body: &crate::model::RecordBody) -> Option<String> {
    use crate::model::RecordBody;
    match body {
        RecordBody::Environment(e) => Some(format!(
            "{} · {}",
            e.tier.as_str(),
            plural(e.hosts.len(), "host", "hosts")
        )),
        RecordBody::Service(s) => {
            let profiles = plural(s.rule_profile_refs.len(), "rule profile", "rule profiles");
            Some(match &s.category {
                Some(cat) => format!("{cat} · {profiles}"),
                None => profiles,
            })
        }
        RecordBody::Deployment(d) => {
            let mut summary = format!("{} in {}", d.service_ref, d.environment_ref);
            // A deployment with its own platform or hosts says so (a mixed estate).
            if let Some(p) = d.platform {
                summary.push_str(&format!(" · {}", p.as_str()));
            }
            if let Some(hosts) = &d.hosts {
                summary.push_str(&format!(" · {}", plural(hosts.len(), "host", "hosts")));
            }
            Some(summary)
        }
        RecordBody::RuleProfile(p) => Some(format!(
            "{} · {}",
            plural(p.paths.len(), "path", "paths"),
            plural(p.log_sources.len(), "log source", "log sources")
        )),
        RecordBody::OperationBinding(b) => {
            let level = serde_json::to_value(b.matches.level()).ok();
            let level = level.as_ref().and_then(|v| v.as_str()).unwrap_or("global");
            Some(format!("{} · {level} · {}", b.operation, b.skill.name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn case_insensitive_matching() {
        assert!(contains_ci("Aico Service", "service"));
        assert!(contains_ci("ÄBC Straße", "straße"));
        assert!(!contains_ci("ab", "abc"));
        assert!(starts_with_ci("Payments", "pay"));
    }

    proptest! {
        /// The pre-lowered ranking used by `find` agrees with [`rank_of`].
        #[test]
        fn lowered_ranking_agrees(name in "[a-zA-Z ]{1,12}", alias in "[a-zA-Z]{1,6}", cat in "[a-zA-Z]{1,6}", needle in "[a-z]{2,3}") {
            let text = format!("id: ab-cd\nschemaVersion: 1\nname: \"{name}\"\naliases: [{alias}]\ncategory: {cat}\n");
            let (rec, _) = crate::load::parse_record_text(RecordKind::Service, "ab-cd", "services/ab-cd.yaml", text);
            let rec = std::sync::Arc::new(rec.unwrap());
            let c = rec.common();
            let entry = crate::snapshot::SearchEntry {
                id: c.id().to_lowercase(),
                name: c.name().to_lowercase(),
                aliases: c.aliases().iter().map(|a| a.to_lowercase()).collect(),
                category: c.category().map(str::to_lowercase),
                record: rec.clone(),
            };
            prop_assert_eq!(rank_lowered(&entry, &needle), rank_of(rec.common(), &needle));
        }

        /// The allocation-free ASCII path agrees with the obvious implementation.
        #[test]
        fn contains_ci_agrees_with_to_lowercase(h in "[a-zA-Z0-9 -]{0,20}", n in "[a-z0-9 -]{1,4}") {
            prop_assert_eq!(contains_ci(&h, &n), h.to_lowercase().contains(&n));
            prop_assert_eq!(starts_with_ci(&h, &n), h.to_lowercase().starts_with(&n));
        }
    }
}
