//! `env_validate`'s proof that the registry's operations and Service Contexts resolve:
//! a registry that validates clean answers every `env_resolve` of a deployment and
//! every `env_resolve_operation` that picks a binding, instead of failing later.
//!
//! What is proven, against one snapshot and the registry's skill catalog:
//! - every binding's skill is installed (`SKILL_UNAVAILABLE` when a complete catalog
//!   lacks it; an incomplete catalog proves nothing and adds nothing);
//! - for every deployment: its Service Context (each path, log source, class location
//!   and variable), and for every operation any binding names, the binding the five
//!   match levels pick for it (`BINDING_CONFLICT` when two tie at a level with
//!   different matches — identical matches are already reported by the snapshot's
//!   checks) and that binding's parameters (`PARAMETER_RESOLUTION_FAILED`, template
//!   errors). A production deployment whose binding says `allowProduction: false` is
//!   denied by design, not a failure, and is not resolved.
//!
//! The same functions as `env_resolve` / `env_resolve_operation` do the work
//! ([`crate::resolve::context_of_merged`], [`crate::operation::most_specific`],
//! [`crate::operation::resolve_parameters`]), so the proof and the call cannot
//! disagree; the bindings of a deployment are found through an index
//! ([`BindingIndex`]) instead of a scan of every binding of the operation. Each deployment is merged once and its variables resolved once (one
//! memoising resolver for its context and all its operations).
//!
//! One failure usually repeats across many deployments (a global binding, a shared
//! rule profile): findings with the same code, file, field and reason are one
//! diagnostic listing the deployments (the first five, then a count), at the record
//! field the template came from (`details.definedBy` of the resolution error).
//!
//! Not proven: a binding that matches no deployment (e.g. a `deploy` for a service not
//! yet placed) beyond its skill; policy denials.

use std::collections::{BTreeMap, HashMap};

use crate::diagnostic::Diagnostic;
use crate::error::{EnvError, ErrorCode};
use crate::kind::RecordKind;
use crate::model::{Record, Tier};
use crate::resolve::{Merged, Target, context_of_merged};
use crate::skills::{SkillCatalog, SkillLookup, SkillRoots};
use crate::snapshot::Snapshot;
use crate::template::Resolver;
use crate::validate::ValidateOutput;

/// Deployments named in one grouped diagnostic before "and N more".
const NAMED_DEPLOYMENTS: usize = 5;

impl crate::registry::Registry {
    /// `env_validate`: every diagnostic of the current snapshot, plus the proof that
    /// its operations and Service Contexts resolve. Always succeeds; `ok: false` is a
    /// report. Writes nothing.
    pub fn validate(&self) -> ValidateOutput {
        let snapshot = self.snapshot();
        let catalog = SkillCatalog::new(&SkillRoots::discover(
            self.root(),
            &snapshot.config().skills.dirs,
        ));
        ValidateOutput::with(&snapshot, prove(&snapshot, &catalog))
    }
}

/// Findings of one kind: where, and for which deployments.
struct Group {
    code: ErrorCode,
    file: String,
    path: String,
    /// The sentence before the deployment list.
    head: String,
    deployments: Vec<String>,
}

#[derive(Default)]
struct Groups {
    by_key: BTreeMap<(String, String, String, String), Group>,
}

impl Groups {
    fn add(&mut self, code: ErrorCode, file: &str, path: &str, head: String, deployment: String) {
        let key = (
            code.as_str().to_owned(),
            file.to_owned(),
            path.to_owned(),
            head.clone(),
        );
        self.by_key
            .entry(key)
            .or_insert_with(|| Group {
                code,
                file: file.to_owned(),
                path: path.to_owned(),
                head,
                deployments: Vec::new(),
            })
            .deployments
            .push(deployment);
    }

    fn merge(&mut self, other: Groups) {
        for (key, group) in other.by_key {
            match self.by_key.entry(key) {
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    e.get_mut().deployments.extend(group.deployments)
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(group);
                }
            }
        }
    }

    fn into_diagnostics(self) -> impl Iterator<Item = Diagnostic> {
        self.by_key.into_values().map(|g| {
            let n = g.deployments.len();
            let named = g.deployments[..n.min(NAMED_DEPLOYMENTS)].join(", ");
            let list = match n {
                1 => format!("deployment {named}"),
                _ if n <= NAMED_DEPLOYMENTS => format!("{n} deployments: {named}"),
                _ => format!(
                    "{n} deployments: {named} and {} more",
                    n - NAMED_DEPLOYMENTS
                ),
            };
            Diagnostic::error(g.code.as_str(), format!("{}, for {list}", g.head))
                .in_file(g.file)
                .at_path(g.path)
        })
    }
}

/// The proof of module docs, as diagnostics (errors), in no particular order. The
/// skill check is made on every call (skill folders are not part of the snapshot); the
/// rest reads only the snapshot and is computed once per snapshot.
pub(crate) fn prove(snapshot: &Snapshot, catalog: &SkillCatalog) -> Vec<Diagnostic> {
    let mut out = missing_skills(snapshot, catalog);
    out.extend(
        snapshot
            .proof
            .get_or_init(|| prove_deployments(snapshot))
            .iter()
            .cloned(),
    );
    out
}

/// Every deployment's Service Context and picked bindings, on up to as many threads as
/// the machine has cores (each with its own resolvers; the findings merge in deployment
/// order, so the report does not depend on the thread count).
fn prove_deployments(snapshot: &Snapshot) -> Vec<Diagnostic> {
    let mut operations: Vec<&str> = snapshot
        .records(RecordKind::OperationBinding)
        .filter_map(|r| r.as_operation_binding())
        .map(|b| b.operation.as_str())
        .collect();
    operations.sort_unstable();
    operations.dedup();
    let deployments: Vec<&Record> = snapshot
        .records(RecordKind::Deployment)
        .map(|r| &**r)
        .collect();
    let index = BindingIndex::of(snapshot);
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 8);
    let chunk = deployments.len().div_ceil(threads).max(64);
    let parts: Vec<Groups> = std::thread::scope(|scope| {
        let handles: Vec<_> = deployments
            .chunks(chunk)
            .map(|part| scope.spawn(|| prove_part(snapshot, &index, &operations, part)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut all = Groups::default();
    for part in parts {
        all.merge(part);
    }
    all.into_diagnostics().collect()
}

/// The bindings of each operation keyed by the most specific ref their match names, so
/// a deployment's candidates are five lookups instead of a scan of every binding of
/// the operation (the synthetic registry binds `redeploy` 1,300 times). The candidates
/// go through the same [`crate::operation::most_specific`] as a call, so the pick is
/// the call's.
#[derive(Default)]
struct BindingIndex<'s> {
    by_operation: HashMap<&'s str, OperationIndex<'s>>,
}

#[derive(Default)]
struct OperationIndex<'s> {
    deployment: HashMap<&'s str, Vec<&'s Record>>,
    environment_service: HashMap<(&'s str, &'s str), Vec<&'s Record>>,
    service: HashMap<&'s str, Vec<&'s Record>>,
    environment: HashMap<&'s str, Vec<&'s Record>>,
    global: Vec<&'s Record>,
}

impl<'s> BindingIndex<'s> {
    fn of(snapshot: &'s Snapshot) -> BindingIndex<'s> {
        let mut index = BindingIndex::default();
        for record in snapshot.records(RecordKind::OperationBinding) {
            let Some(b) = record.as_operation_binding() else {
                continue;
            };
            let op = index.by_operation.entry(b.operation.as_str()).or_default();
            let m = &b.matches;
            let slot = match (
                m.deployment_ref.as_deref(),
                m.environment_ref.as_deref(),
                m.service_ref.as_deref(),
            ) {
                (Some(d), _, _) => op.deployment.entry(d).or_default(),
                (None, Some(e), Some(s)) => op.environment_service.entry((e, s)).or_default(),
                (None, None, Some(s)) => op.service.entry(s).or_default(),
                (None, Some(e), None) => op.environment.entry(e).or_default(),
                (None, None, None) => &mut op.global,
            };
            slot.push(&**record);
        }
        index
    }

    fn most_specific(
        &self,
        operation: &str,
        target: &Target<'s>,
    ) -> (
        Option<crate::model::MatchLevel>,
        Vec<(&'s Record, &'s crate::model::OperationBinding)>,
    ) {
        let Some(op) = self.by_operation.get(operation) else {
            return (None, Vec::new());
        };
        let env = target.environment.id.as_str();
        let svc = target.service.id.as_str();
        let none: &[&Record] = &[];
        let dep = target
            .deployment
            .and_then(|(_, d)| op.deployment.get(d.id.as_str()))
            .map_or(none, Vec::as_slice);
        let candidates = dep
            .iter()
            .chain(
                op.environment_service
                    .get(&(env, svc))
                    .map_or(none, Vec::as_slice),
            )
            .chain(op.service.get(svc).map_or(none, Vec::as_slice))
            .chain(op.environment.get(env).map_or(none, Vec::as_slice))
            .chain(&op.global)
            .copied();
        crate::operation::most_specific(candidates, target)
    }
}

fn prove_part(
    snapshot: &Snapshot,
    index: &BindingIndex<'_>,
    operations: &[&str],
    deployments: &[&Record],
) -> Groups {
    let mut groups = Groups::default();
    for record in deployments.iter().copied() {
        let Some(target) = deployment_target(snapshot, record) else {
            continue; // a broken environmentRef / serviceRef: reported as a reference
        };
        let deployment = describe(&target);
        let merged = match Merged::build(snapshot, &target) {
            Ok(merged) => merged,
            Err(e) => {
                // Unknown or cyclic rule profiles are reported as references already.
                if !matches!(
                    e.code,
                    ErrorCode::RuleProfileNotFound | ErrorCode::RuleProfileCycle
                ) {
                    let file = record.file.as_str();
                    groups.add(e.code, file, "", e.message, deployment);
                }
                continue;
            }
        };
        let mut resolver = Resolver::new(&merged.variables);
        if let Err(e) = context_of_merged(&merged, &mut resolver, &target) {
            let (file, path) = defined_by(&e).unwrap_or((record.file.as_str(), ""));
            let head = format!("Service Context: {}", reason(&e));
            groups.add(e.code, file, path, head, deployment.clone());
        }
        for operation in operations {
            let (level, picked) = index.most_specific(operation, &target);
            match (level, picked.as_slice()) {
                (Some(_), [(binding_record, binding)]) => {
                    let denied = target.environment.tier == Tier::Production
                        && !binding.policy.allow_production;
                    if denied {
                        continue;
                    }
                    if let Err(e) = crate::operation::resolve_parameters(
                        &merged,
                        &mut resolver,
                        binding_record,
                        binding,
                    ) {
                        let (file, path) =
                            defined_by(&e).unwrap_or((binding_record.file.as_str(), "parameters"));
                        let head = format!("binding {} ({operation}): {}", binding.id, reason(&e));
                        groups.add(e.code, file, path, head, deployment.clone());
                    }
                }
                (Some(level), several) if several.len() > 1 => {
                    // Identical matches are the snapshot's own BINDING_CONFLICT already.
                    if several.windows(2).all(|p| p[0].1.matches == p[1].1.matches) {
                        continue;
                    }
                    let mut ids: Vec<(&str, &str)> = several
                        .iter()
                        .map(|(r, b)| (b.id.as_str(), r.file.as_str()))
                        .collect();
                    ids.sort_unstable();
                    let head = format!(
                        "{} bindings match {operation} at level {} for this context: {}; make one more specific or remove one",
                        ids.len(),
                        crate::operation::level_name(level),
                        ids.iter().map(|(id, _)| *id).collect::<Vec<_>>().join(", ")
                    );
                    groups.add(
                        ErrorCode::BindingConflict,
                        ids[0].1,
                        "match",
                        head,
                        deployment.clone(),
                    );
                }
                _ => {} // no binding for this deployment
            }
        }
    }
    groups
}

/// `SKILL_UNAVAILABLE` for every binding whose skill a complete catalog lacks.
fn missing_skills(snapshot: &Snapshot, catalog: &SkillCatalog) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut looked_up: HashMap<&str, SkillLookup> = HashMap::new();
    for record in snapshot.records(RecordKind::OperationBinding) {
        let Some(binding) = record.as_operation_binding() else {
            continue;
        };
        let name = binding.skill.name.as_str();
        let lookup = looked_up
            .entry(name)
            .or_insert_with(|| catalog.lookup(name));
        if let SkillLookup::Missing { searched } = lookup {
            let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
            out.push(
                Diagnostic::error(
                    ErrorCode::SkillUnavailable.as_str(),
                    format!(
                        "skill {name} bound by {} is not installed in any skill folder (searched: {}); install it (e.g. <project>/.agents/skills/{name}/SKILL.md) or fix the name",
                        binding.id,
                        searched.join(", ")
                    ),
                )
                .in_file(record.file.clone())
                .at_path("skill.name"),
            );
        }
    }
    out
}

/// The target of one deployment, when its environment and service exist.
fn deployment_target<'s>(snapshot: &'s Snapshot, record: &'s Record) -> Option<Target<'s>> {
    let deployment = record.as_deployment()?;
    let env_record = snapshot.get(RecordKind::Environment, &deployment.environment_ref)?;
    let service_record = snapshot.get(RecordKind::Service, &deployment.service_ref)?;
    Some(Target {
        env_record,
        environment: env_record.as_environment()?,
        service_record,
        service: service_record.as_service()?,
        deployment: Some((record, deployment)),
    })
}

fn describe(target: &Target<'_>) -> String {
    let id = target.deployment.map(|(_, d)| d.id.as_str()).unwrap_or("");
    format!(
        "{id} (service {} in environment {})",
        target.service.id, target.environment.id
    )
}

/// The record file and field a failing template came from.
fn defined_by(e: &EnvError) -> Option<(&str, &str)> {
    let d = e.details.as_ref()?.get("definedBy")?;
    Some((d.get("file")?.as_str()?, d.get("path")?.as_str()?))
}

/// The error's message without the per-deployment list of layers searched, so equal
/// failures of many deployments group into one diagnostic.
fn reason(e: &EnvError) -> String {
    let message = e.message.as_str();
    message
        .split_once("; searched ")
        .map_or(message, |(head, _)| head)
        .to_owned()
}
