//! Validation (data model §4): per-record checks run when a file loads (and cached with
//! it), cross-record checks run once per snapshot, lazily.
//!
//! Per record: id format and id = file stem (`ID_MISMATCH`), `schemaVersion`
//! (`SCHEMA_VERSION_UNSUPPORTED`), name length (`RECORD_INVALID`), template braces
//! (`TEMPLATE_INVALID`). Across records: every reference (`ENV_NOT_FOUND`,
//! `SERVICE_NOT_FOUND`, `DEPLOYMENT_NOT_FOUND`, `RULE_PROFILE_NOT_FOUND`; also
//! `defaults.environmentId` in `envreg.yaml`, as `ENV_NOT_FOUND`),
//! `RULE_PROFILE_CYCLE`, `BINDING_CONFLICT`, `CREDENTIAL_MISSING` (presence only, the
//! value is never read), `VARIABLE_SHADOWED` and `RECORD_LIMIT_EXCEEDED`.
//!
//! A record with a fatal per-record finding (unparseable, wrong id, unsupported schema
//! version, invalid fields) is not loaded; one with a template error is loaded, and
//! resolving that template later fails with `PARAMETER_RESOLUTION_FAILED`.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Severity, codes};
use crate::kind::RecordKind;
use crate::model::RecordBody;
use crate::snapshot::Snapshot;

/// Record counts per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub environment: usize,
    pub service: usize,
    pub deployment: usize,
    pub rule_profile: usize,
    pub operation_binding: usize,
}

impl Counts {
    pub fn of(snapshot: &Snapshot) -> Counts {
        Counts {
            environment: snapshot.count(RecordKind::Environment),
            service: snapshot.count(RecordKind::Service),
            deployment: snapshot.count(RecordKind::Deployment),
            rule_profile: snapshot.count(RecordKind::RuleProfile),
            operation_binding: snapshot.count(RecordKind::OperationBinding),
        }
    }
}

/// `env_validate` result: a report, never a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateOutput {
    /// `true` when no diagnostic has severity `error`.
    pub ok: bool,
    pub counts: Counts,
    pub diagnostics: Vec<Diagnostic>,
}

impl ValidateOutput {
    /// The snapshot's own diagnostics (records, references, config). `env_validate`
    /// adds the proof of every operation and Service Context ([`crate::Registry::validate`]).
    pub fn of(snapshot: &Snapshot) -> ValidateOutput {
        ValidateOutput::with(snapshot, Vec::new())
    }

    /// The snapshot's diagnostics plus `extra`, sorted together.
    pub fn with(snapshot: &Snapshot, extra: Vec<Diagnostic>) -> ValidateOutput {
        let mut diagnostics = snapshot.diagnostics().to_vec();
        if !extra.is_empty() {
            diagnostics.extend(extra);
            sort_diagnostics(&mut diagnostics);
        }
        diagnostics.extend(host_channel_warning(snapshot.config()));
        ValidateOutput {
            ok: !diagnostics.iter().any(|d| d.severity == Severity::Error),
            counts: Counts::of(snapshot),
            diagnostics,
        }
    }
}

// The per-record checks run while a file loads, before any snapshot exists, so they
// live below the snapshot in `record_checks`; their public names stay here.
use crate::record_checks::truncate;
pub use crate::record_checks::{MAX_NAME_CHARS, check_record, check_template, templates_of};

/// `approvalChannel: host` while a write still needs approval: `envreg serve` then
/// approves every such call that reaches it, so the host's gate — the PreToolUse hook
/// `envreg hook` of docs/hosts.md — is the only thing that asks. A warning, not an
/// error: the setting is right for such hosts, as long as the hook is installed.
///
/// Decision: reported by `env_validate` only, not on every snapshot, so read tools
/// do not repeat it in their `warnings`.
fn host_channel_warning(config: &crate::config::Config) -> Option<Diagnostic> {
    let policy = &config.write_policy;
    let gated = policy.require_approval_for_delete || policy.require_approval_for_production_save;
    (policy.approval_channel == crate::config::ApprovalChannel::Host && gated).then(|| {
        Diagnostic::warning(
            codes::APPROVAL_DELEGATED_TO_HOST,
            "writePolicy.approvalChannel is host: envreg serve approves every env_save and env_delete that reaches it, so the host must ask — install the approval hook `envreg hook` (docs/hosts.md) in every host that uses this registry, or production saves and deletes go through unasked",
        )
        .in_file(crate::config::CONFIG_FILE)
        .at_path("writePolicy.approvalChannel")
    })
}

/// Validation extends the snapshot (rather than the snapshot calling the validator), so
/// data flows one way: load → typed records → snapshot → validation.
impl Snapshot {
    /// Every diagnostic: load findings plus cross-record validation, sorted by file,
    /// then path. Computed once per snapshot.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        self.all_diagnostics.get_or_init(|| validate_snapshot(self))
    }
}

/// Load diagnostics plus every cross-record check, sorted for a stable report.
pub(crate) fn validate_snapshot(snapshot: &Snapshot) -> Vec<Diagnostic> {
    let mut out = snapshot.load_diagnostics.clone();
    check_references(snapshot, &mut out);
    check_default_environment(snapshot, &mut out);
    check_profile_cycles(snapshot, &mut out);
    check_binding_conflicts(snapshot, &mut out);
    check_credentials(snapshot, &mut out);
    check_shadowing(snapshot, &mut out);
    let max = snapshot.config().limits.max_records;
    let total = snapshot.total();
    if total > max {
        out.push(Diagnostic::error(
            codes::RECORD_LIMIT_EXCEEDED,
            format!("registry holds {total} records, over limits.maxRecords ({max})"),
        ));
    }
    sort_diagnostics(&mut out);
    out
}

pub(crate) fn sort_diagnostics(out: &mut [Diagnostic]) {
    out.sort_by(|a, b| {
        (
            a.file.as_deref(),
            a.line,
            a.path.as_deref(),
            &a.code,
            &a.message,
        )
            .cmp(&(
                b.file.as_deref(),
                b.line,
                b.path.as_deref(),
                &b.code,
                &b.message,
            ))
    });
}

/// One outgoing reference of a record: field path, target kind, target id.
pub(crate) fn references_of(body: &RecordBody) -> Vec<(String, RecordKind, &str)> {
    let mut out = Vec::new();
    match body {
        RecordBody::Environment(_) => {}
        RecordBody::Service(s) => {
            push_profile_refs(&mut out, "ruleProfileRefs", &s.rule_profile_refs)
        }
        RecordBody::Deployment(d) => {
            out.push((
                "environmentRef".to_owned(),
                RecordKind::Environment,
                d.environment_ref.as_str(),
            ));
            out.push((
                "serviceRef".to_owned(),
                RecordKind::Service,
                d.service_ref.as_str(),
            ));
            push_profile_refs(&mut out, "ruleProfileRefs", &d.rule_profile_refs);
        }
        RecordBody::RuleProfile(p) => push_profile_refs(&mut out, "extends", &p.extends),
        RecordBody::OperationBinding(b) => {
            if let Some(e) = &b.matches.environment_ref {
                out.push((
                    "match.environmentRef".to_owned(),
                    RecordKind::Environment,
                    e.as_str(),
                ));
            }
            if let Some(s) = &b.matches.service_ref {
                out.push((
                    "match.serviceRef".to_owned(),
                    RecordKind::Service,
                    s.as_str(),
                ));
            }
            if let Some(d) = &b.matches.deployment_ref {
                out.push((
                    "match.deploymentRef".to_owned(),
                    RecordKind::Deployment,
                    d.as_str(),
                ));
            }
        }
    }
    out
}

fn push_profile_refs<'a>(
    out: &mut Vec<(String, RecordKind, &'a str)>,
    field: &str,
    refs: &'a [String],
) {
    for (i, r) in refs.iter().enumerate() {
        out.push((format!("{field}[{i}]"), RecordKind::RuleProfile, r.as_str()));
    }
}

/// Broken references of one record against a snapshot (also used by save for warnings).
pub(crate) fn broken_references(
    snapshot: &Snapshot,
    body: &RecordBody,
    file: &str,
) -> Vec<Diagnostic> {
    let kind = body.kind();
    let id = body.common().id();
    let mut out = Vec::new();
    for (path, target_kind, target) in references_of(body) {
        if snapshot.get(target_kind, target).is_none() {
            let code = target_kind.not_found_code().as_str();
            out.push(
                Diagnostic::error(
                    code,
                    format!(
                        "{kind} {id} references unknown {} {}",
                        target_kind.noun().0,
                        truncate(target)
                    ),
                )
                .in_file(file)
                .at_path(path),
            );
        }
    }
    out
}

fn check_references(snapshot: &Snapshot, out: &mut Vec<Diagnostic>) {
    for kind in RecordKind::ALL {
        for rec in snapshot.records(kind) {
            out.extend(broken_references(snapshot, &rec.body, &rec.file));
        }
    }
}

/// `defaults.environmentId` (envreg.yaml) is a reference like any other: when it names
/// no environment, every call that falls back to it (contract §1.4, step 3) fails with
/// `ENV_NOT_FOUND`, so validation reports it under that same code, as it does a broken
/// `environmentRef`. Decision: reuse the not-found code of the data model's broken
/// references (§4) rather than `CONFIG_INVALID`, which means the file itself could not be
/// used and defaults were applied; here the file is fine and the target is missing.
fn check_default_environment(snapshot: &Snapshot, out: &mut Vec<Diagnostic>) {
    let Some(id) = snapshot.config().defaults.environment_id.as_deref() else {
        return;
    };
    if snapshot.environment(id).is_none() {
        out.push(
            Diagnostic::error(
                codes::ENV_NOT_FOUND,
                format!(
                    "defaults.environmentId names unknown environment {}; calls that rely on the default environment fail until it exists",
                    truncate(id)
                ),
            )
            .in_file(crate::config::CONFIG_FILE)
            .at_path("defaults.environmentId"),
        );
    }
}

fn check_profile_cycles(snapshot: &Snapshot, out: &mut Vec<Diagnostic>) {
    let mut reported: HashSet<Vec<String>> = HashSet::new();
    for rec in snapshot.records(RecordKind::RuleProfile) {
        if let Err(cycle) = snapshot.profile_chain(rec.id()) {
            // Report each cycle once, keyed by its member set.
            let mut members: Vec<String> = cycle[..cycle.len().saturating_sub(1)].to_vec();
            members.sort();
            members.dedup();
            if !members.iter().any(|m| m == rec.id()) || !reported.insert(members) {
                continue;
            }
            out.push(
                Diagnostic::error(
                    codes::RULE_PROFILE_CYCLE,
                    format!(
                        "rule profile {} extends itself through {}",
                        rec.id(),
                        cycle.join(" → ")
                    ),
                )
                .in_file(&rec.file)
                .at_path("extends"),
            );
        }
    }
}

fn check_binding_conflicts(snapshot: &Snapshot, out: &mut Vec<Diagnostic>) {
    let mut groups: BTreeMap<(String, String, String, String), Vec<&str>> = BTreeMap::new();
    let mut files: HashMap<&str, &str> = HashMap::new();
    for rec in snapshot.records(RecordKind::OperationBinding) {
        if let Some(b) = rec.as_operation_binding() {
            let m = &b.matches;
            let key = (
                b.operation.clone(),
                m.environment_ref.clone().unwrap_or_default(),
                m.service_ref.clone().unwrap_or_default(),
                m.deployment_ref.clone().unwrap_or_default(),
            );
            groups.entry(key).or_default().push(rec.id());
            files.insert(rec.id(), rec.file.as_str());
        }
    }
    for ((operation, ..), ids) in groups {
        if ids.len() < 2 {
            continue;
        }
        for id in &ids {
            let others: Vec<&str> = ids.iter().copied().filter(|o| o != id).collect();
            out.push(
                Diagnostic::error(
                    codes::BINDING_CONFLICT,
                    format!(
                        "binding {id} has the same operation ({operation}) and match as {}",
                        others.join(", ")
                    ),
                )
                .in_file(files.get(id).copied().unwrap_or_default())
                .at_path("match"),
            );
        }
    }
}

fn check_credentials(snapshot: &Snapshot, out: &mut Vec<Diagnostic>) {
    for rec in snapshot.records(RecordKind::Environment) {
        if let Some(env) = rec.as_environment() {
            out.extend(credential_warnings(env, &rec.file));
        }
    }
}

/// `CREDENTIAL_MISSING` warnings of one environment. Only presence is checked.
pub(crate) fn credential_warnings(env: &crate::model::Environment, file: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, c) in env.credentials.iter().enumerate() {
        if !c.is_configured() {
            let source = match c.parsed_source() {
                Some(crate::model::CredentialSource::Env(var)) => {
                    format!("environment variable {var} is not set")
                }
                Some(crate::model::CredentialSource::File(path)) => {
                    format!("file {path} does not exist")
                }
                None => "source must start with env: or file:".to_owned(),
            };
            out.push(
                Diagnostic::warning(
                    codes::CREDENTIAL_MISSING,
                    format!(
                        "credential {} of environment {}: {source}",
                        c.reference, env.id
                    ),
                )
                .in_file(file)
                .at_path(format!("credentials[{i}]")),
            );
        }
    }
    out
}

/// A deployment variable that overrides the same name in its environment or service.
fn check_shadowing(snapshot: &Snapshot, out: &mut Vec<Diagnostic>) {
    for rec in snapshot.records(RecordKind::Deployment) {
        let Some(d) = rec.as_deployment() else {
            continue;
        };
        let env = snapshot.environment(&d.environment_ref);
        let svc = snapshot.service(&d.service_ref);
        for key in d.variables.keys() {
            let layer = if svc.is_some_and(|s| s.variables.contains_key(key)) {
                Some(("service", d.service_ref.as_str()))
            } else if env.is_some_and(|e| e.variables.contains_key(key)) {
                Some(("environment", d.environment_ref.as_str()))
            } else {
                None
            };
            if let Some((kind, id)) = layer {
                out.push(
                    Diagnostic::info(
                        codes::VARIABLE_SHADOWED,
                        format!(
                            "deployment {} overrides variable {key} of {kind} {id}",
                            d.id
                        ),
                    )
                    .in_file(&rec.file)
                    .at_path(format!("variables.{key}")),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_cover_every_reference_field() {
        let binding: RecordBody = RecordBody::OperationBinding(
            serde_json::from_value(serde_json::json!({
                "id": "b", "schemaVersion": 1, "name": "B", "operation": "restart",
                "match": { "environmentRef": "e", "serviceRef": "s", "deploymentRef": "d" },
                "skill": { "name": "k" }
            }))
            .unwrap(),
        );
        let refs: Vec<(String, RecordKind)> = references_of(&binding)
            .into_iter()
            .map(|(p, k, _)| (p, k))
            .collect();
        assert_eq!(
            refs,
            [
                ("match.environmentRef".to_owned(), RecordKind::Environment),
                ("match.serviceRef".to_owned(), RecordKind::Service),
                ("match.deploymentRef".to_owned(), RecordKind::Deployment),
            ]
        );
    }
}
