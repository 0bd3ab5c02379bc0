//! [`Snapshot`]: an immutable, consistent view of the registry at one instant.
//!
//! Every read works on one snapshot, so a call never sees half of a concurrent edit.
//! A snapshot is cheap to hand out (`Arc`) and is replaced, never mutated, when files
//! change. Records are kept per kind in id order (the order every listing uses), with
//! the two indexes that resolution needs on its hot path built once per snapshot:
//! deployments by `(environment, service)` and bindings by operation.
//!
//! Cross-record validation is computed lazily on first use and then cached in the
//! snapshot: a resolve does not pay for validating 10,000 records after a hand edit.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use crate::config::Config;
use crate::diagnostic::Diagnostic;
use crate::kind::RecordKind;
use crate::model::{Deployment, Environment, OperationBinding, Record, RuleProfile, Service, Tier};

/// One record's search fields, lower-cased.
#[derive(Debug)]
pub(crate) struct SearchEntry {
    pub record: Arc<Record>,
    pub id: String,
    pub name: String,
    pub aliases: Vec<String>,
    pub category: Option<String>,
}

/// Records of one kind, by id.
pub type RecordMap = BTreeMap<String, Arc<Record>>;

/// An immutable registry view. Obtain with [`crate::Registry::snapshot`].
#[derive(Debug)]
pub struct Snapshot {
    pub(crate) records: [RecordMap; 5],
    /// Diagnostics found while loading files (YAML, schema, id, size, duplicates).
    pub(crate) load_diagnostics: Vec<Diagnostic>,
    pub(crate) config: Arc<Config>,
    /// Deployment ids per `(environmentRef, serviceRef)`, in id order.
    deployments_by_placement: HashMap<(String, String), Vec<String>>,
    /// Binding ids per operation, in id order.
    bindings_by_operation: HashMap<String, Vec<String>>,
    /// Load + cross-record diagnostics, computed on first use by
    /// [`Snapshot::diagnostics`] (in `validate`, which reads the snapshot; the snapshot
    /// never calls the validator).
    pub(crate) all_diagnostics: OnceLock<Vec<Diagnostic>>,
    /// `env_validate`'s proof of every deployment's Service Context and operations,
    /// computed on first use by `prove.rs` (it reads only this snapshot).
    pub(crate) proof: OnceLock<Vec<Diagnostic>>,
    /// Lower-cased search fields for `find` / `list --query`, built on first use.
    search_index: OnceLock<Vec<SearchEntry>>,
    /// Increases with every rebuild; lets callers cache per-snapshot results.
    pub generation: u64,
}

impl Snapshot {
    pub(crate) fn build(
        records: [RecordMap; 5],
        load_diagnostics: Vec<Diagnostic>,
        config: Arc<Config>,
        generation: u64,
    ) -> Snapshot {
        let mut deployments_by_placement: HashMap<(String, String), Vec<String>> = HashMap::new();
        for (id, rec) in &records[RecordKind::Deployment.index()] {
            if let Some(d) = rec.as_deployment() {
                deployments_by_placement
                    .entry((d.environment_ref.clone(), d.service_ref.clone()))
                    .or_default()
                    .push(id.clone());
            }
        }
        let mut bindings_by_operation: HashMap<String, Vec<String>> = HashMap::new();
        for (id, rec) in &records[RecordKind::OperationBinding.index()] {
            if let Some(b) = rec.as_operation_binding() {
                bindings_by_operation
                    .entry(b.operation.clone())
                    .or_default()
                    .push(id.clone());
            }
        }
        Snapshot {
            records,
            load_diagnostics,
            config,
            deployments_by_placement,
            bindings_by_operation,
            all_diagnostics: OnceLock::new(),
            proof: OnceLock::new(),
            search_index: OnceLock::new(),
            generation,
        }
    }

    /// An empty registry with default config.
    pub fn empty() -> Snapshot {
        Snapshot::build(
            Default::default(),
            Vec::new(),
            Arc::new(Config::default()),
            0,
        )
    }

    /// The config this snapshot was loaded with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// One record by kind and id.
    pub fn get(&self, kind: RecordKind, id: &str) -> Option<&Arc<Record>> {
        self.records[kind.index()].get(id)
    }

    /// All records of a kind, in id order.
    pub fn records(&self, kind: RecordKind) -> impl ExactSizeIterator<Item = &Arc<Record>> + '_ {
        self.records[kind.index()].values()
    }

    /// Number of loaded records of a kind.
    pub fn count(&self, kind: RecordKind) -> usize {
        self.records[kind.index()].len()
    }

    /// Number of loaded records of all kinds.
    pub fn total(&self) -> usize {
        self.records.iter().map(BTreeMap::len).sum()
    }

    /// The registry-relative file of a record (`services/aicoservice.yaml`).
    pub fn file_of(&self, kind: RecordKind, id: &str) -> Option<&str> {
        self.get(kind, id).map(|r| r.file.as_str())
    }

    pub fn environment(&self, id: &str) -> Option<&Environment> {
        self.get(RecordKind::Environment, id)
            .and_then(|r| r.as_environment())
    }

    pub fn service(&self, id: &str) -> Option<&Service> {
        self.get(RecordKind::Service, id)
            .and_then(|r| r.as_service())
    }

    pub fn deployment(&self, id: &str) -> Option<&Deployment> {
        self.get(RecordKind::Deployment, id)
            .and_then(|r| r.as_deployment())
    }

    pub fn rule_profile(&self, id: &str) -> Option<&RuleProfile> {
        self.get(RecordKind::RuleProfile, id)
            .and_then(|r| r.as_rule_profile())
    }

    pub fn operation_binding(&self, id: &str) -> Option<&OperationBinding> {
        self.get(RecordKind::OperationBinding, id)
            .and_then(|r| r.as_operation_binding())
    }

    /// Whether an environment is production (`tier: production`).
    pub fn is_production(&self, environment_id: &str) -> bool {
        self.environment(environment_id)
            .is_some_and(|e| e.tier == Tier::Production)
    }

    /// Ids of the deployments of `service` in `environment`, in id order.
    pub fn deployments_of(&self, environment: &str, service: &str) -> &[String] {
        // A borrowed-tuple lookup without allocating would need a custom Borrow impl;
        // the two short clones cost less than the hashing itself.
        self.deployments_by_placement
            .get(&(environment.to_owned(), service.to_owned()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Ids of the bindings for an operation, in id order.
    pub fn bindings_for(&self, operation: &str) -> &[String] {
        self.bindings_by_operation
            .get(operation)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Whether any binding names this operation.
    pub fn is_bound_operation(&self, operation: &str) -> bool {
        self.bindings_by_operation.contains_key(operation)
    }

    /// A rule profile followed by its ancestors, in application order: depth-first,
    /// parents before children, each profile once (data model §3, §5). Unknown parents
    /// are skipped (validation reports them). `Err` carries the cycle, e.g.
    /// `["a", "b", "a"]`.
    pub fn profile_chain(&self, profile_id: &str) -> Result<Vec<&RuleProfile>, Vec<String>> {
        let mut out: Vec<&RuleProfile> = Vec::new();
        let mut stack: Vec<String> = Vec::new();
        self.visit_profile(profile_id, &mut stack, &mut out)?;
        Ok(out)
    }

    fn visit_profile<'s>(
        &'s self,
        id: &str,
        stack: &mut Vec<String>,
        out: &mut Vec<&'s RuleProfile>,
    ) -> Result<(), Vec<String>> {
        if let Some(pos) = stack.iter().position(|s| s == id) {
            let mut cycle = stack[pos..].to_vec();
            cycle.push(id.to_owned());
            return Err(cycle);
        }
        let Some(profile) = self.rule_profile(id) else {
            return Ok(());
        };
        if out.iter().any(|p| p.id == id) {
            return Ok(());
        }
        stack.push(id.to_owned());
        for parent in &profile.extends {
            self.visit_profile(parent, stack, out)?;
        }
        stack.pop();
        out.push(profile);
        Ok(())
    }

    /// Every record's lower-cased search fields, in kind then id order. Built once per
    /// snapshot so `find` compares plain lower-case strings instead of folding case for
    /// 10,000 records on every call.
    pub(crate) fn search_index(&self) -> &[SearchEntry] {
        self.search_index.get_or_init(|| {
            let mut out = Vec::with_capacity(self.total());
            for kind in RecordKind::ALL {
                for rec in self.records(kind) {
                    let c = rec.common();
                    out.push(SearchEntry {
                        record: rec.clone(),
                        id: c.id().to_lowercase(),
                        name: c.name().to_lowercase(),
                        aliases: c.aliases().iter().map(|a| a.to_lowercase()).collect(),
                        category: c.category().map(str::to_lowercase),
                    });
                }
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_record_text;

    fn snapshot_of(profiles: &[(&str, &[&str])]) -> Snapshot {
        let mut records: [RecordMap; 5] = Default::default();
        for (id, parents) in profiles {
            let text = format!(
                "id: {id}\nschemaVersion: 1\nname: {id}\nextends: [{}]\n",
                parents.join(", ")
            );
            let (rec, _) =
                parse_record_text(RecordKind::RuleProfile, id, "rule-profiles/x.yaml", text);
            records[RecordKind::RuleProfile.index()]
                .insert((*id).to_owned(), Arc::new(rec.unwrap()));
        }
        Snapshot::build(records, Vec::new(), Arc::new(Config::default()), 1)
    }

    #[test]
    fn profile_chain_is_depth_first_parents_first_each_once() {
        let s = snapshot_of(&[
            ("base", &[]),
            ("java", &["base"]),
            ("jmx", &["base"]),
            ("app", &["java", "jmx"]),
        ]);
        let chain: Vec<&str> = s
            .profile_chain("app")
            .unwrap()
            .iter()
            .map(|p| p.id.as_str())
            .collect();
        assert_eq!(chain, ["base", "java", "jmx", "app"]);
    }

    #[test]
    fn profile_chain_reports_the_cycle() {
        let s = snapshot_of(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
        assert_eq!(s.profile_chain("a").unwrap_err(), ["a", "b", "c", "a"]);
    }
}
