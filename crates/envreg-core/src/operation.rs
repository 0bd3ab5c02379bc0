//! `env_resolve_operation`: which Skill performs an operation for a context, with which
//! parameters and policy (data model §7; contract §2.5). Nothing is executed.
//!
//! # Order of checks (each failure is final — fail closed, never a fallback)
//! 1. Arguments: `serviceId` or `deploymentId` is required (`INVALID_ARGUMENT`).
//! 2. The operation must be a standard id or bound by some binding, else
//!    `OPERATION_UNKNOWN` (checked first: a typo deserves that answer whatever the
//!    context).
//! 3. The context, as for `env_resolve` (`ENV_NOT_FOUND`, `SERVICE_NOT_FOUND`,
//!    `DEPLOYMENT_NOT_FOUND`, `DEPLOYMENT_AMBIGUOUS`), except that a service with no
//!    deployment in the environment is allowed: `deploy` is asked before one exists.
//! 4. Bindings of the operation are matched at five levels, most specific first —
//!    `deployment` > `environment-service` > `service` > `environment` > `global`. A
//!    binding matches when every ref its `match` names equals the context. The most
//!    specific level with any candidate decides; two or more there is
//!    `BINDING_CONFLICT` listing every candidate. None anywhere is `BINDING_NOT_FOUND`.
//! 5. Policy: a production environment and `allowProduction: false` is `POLICY_DENIED`
//!    (checked before anything else is resolved, so a denied call leaks nothing).
//! 6. Parameters are templates resolved like `env_resolve` values (same layers);
//!    failures are `PARAMETER_RESOLUTION_FAILED` with field `parameters.<name>`.
//! 7. The skill is looked up in the catalog ([`crate::skills`]): found → `available:
//!    true`; missing from a complete catalog → `SKILL_UNAVAILABLE`; incomplete catalog →
//!    `available: "unknown"` plus a `SKILL_REGISTRY_UNAVAILABLE` warning.
//!
//! `requested` reports the effective context (environment after the default chain,
//! service implied by a deployment, the auto-selected deployment), so a caller sees
//! exactly what was matched.

use schemars::JsonSchema;
use serde::{Serialize, Serializer};
use serde_json::json;

use crate::diagnostic::{Diagnostic, codes};
use crate::error::{EnvError, ErrorCode};
use crate::kind::RecordKind;
use crate::model::{BindingPolicy, MatchLevel, OperationBinding, STANDARD_OPERATIONS, Tier};
use crate::registry::Registry;
use crate::resolve::{Field, Merged, Origin, OutputMap, Target, WithoutDeployment, select_target};
use crate::session::SessionId;
use crate::skills::{SkillCatalog, SkillLookup, SkillRoots, SkillSource};
use crate::snapshot::Snapshot;
use crate::template::Resolver;

/// The result of `env_resolve_operation` (data model §7, "§8.3").
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationResolution {
    /// Always `true`: a failure is an error, never `ok: false` (contract §1.2).
    pub ok: AlwaysTrue,
    pub operation: String,
    pub requested: RequestedContext,
    pub matched_binding_id: String,
    pub match_level: MatchLevel,
    pub skill: SkillStatus,
    /// The binding's parameters, resolved.
    pub parameters: OutputMap<String>,
    pub policy: BindingPolicy,
    /// `SKILL_REGISTRY_UNAVAILABLE` when the skill catalog is incomplete.
    pub diagnostics: Vec<Diagnostic>,
}

/// The effective context the operation was resolved for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedContext {
    pub environment_id: String,
    pub service_id: String,
    /// `null` when the service has no deployment in the environment.
    pub deployment_id: Option<String>,
}

/// The bound skill and whether it is installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillStatus {
    pub name: String,
    pub available: Availability,
    /// Where the skill was found; absent when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SkillSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// `true | false | "unknown"` (contract §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    Available,
    /// In the schema for contract fidelity; resolution reports a missing skill as
    /// `SKILL_UNAVAILABLE` instead (fail closed).
    Unavailable,
    /// The catalog is incomplete.
    Unknown,
}

impl Serialize for Availability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Availability::Available => s.serialize_bool(true),
            Availability::Unavailable => s.serialize_bool(false),
            Availability::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl JsonSchema for Availability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SkillAvailability".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "true when installed, false when missing, \"unknown\" when the skill catalog is incomplete",
            "oneOf": [
                { "type": "boolean" },
                { "type": "string", "const": "unknown" }
            ]
        })
    }
}

/// A `true` that says so in its schema (`const: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AlwaysTrue;

impl Serialize for AlwaysTrue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

impl JsonSchema for AlwaysTrue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AlwaysTrue".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "boolean", "const": true })
    }
}

impl Registry {
    /// `env_resolve_operation` (contract §2.5): which skill handles `operation` for the
    /// context, with resolved parameters and policy. Reads only; executes nothing.
    pub fn resolve_operation(
        &self,
        session: Option<&SessionId>,
        operation: &str,
        environment: Option<&str>,
        service: Option<&str>,
        deployment: Option<&str>,
    ) -> Result<OperationResolution, EnvError> {
        let snapshot = self.snapshot();
        let catalog = SkillCatalog::new(&SkillRoots::discover(
            self.root(),
            &snapshot.config().skills.dirs,
        ));
        resolve_operation_in_snapshot(
            &snapshot,
            &catalog,
            operation,
            environment,
            service,
            deployment,
            || self.default_environment(session, None),
        )
    }
}

/// Whether `operation` is one of the standard ids of data model §3.
pub fn is_standard_operation(operation: &str) -> bool {
    STANDARD_OPERATIONS.contains(&operation)
}

/// Resolves an operation against one snapshot. `catalog` is the skill catalog of the
/// registry; `default_environment` is contract §1.4's chain.
pub fn resolve_operation_in_snapshot(
    snapshot: &Snapshot,
    catalog: &SkillCatalog,
    operation: &str,
    environment: Option<&str>,
    service: Option<&str>,
    deployment: Option<&str>,
    default_environment: impl FnOnce() -> Result<String, EnvError>,
) -> Result<OperationResolution, EnvError> {
    if service.is_none() && deployment.is_none() {
        return Err(EnvError::invalid_argument(
            "give serviceId or deploymentId: an operation is resolved for a service or a deployment",
        ));
    }
    check_operation_id(operation)?;
    if !is_standard_operation(operation) && !snapshot.is_bound_operation(operation) {
        return Err(EnvError::new(
            ErrorCode::OperationUnknown,
            format!(
                "operation {operation:?} is neither a standard operation ({}) nor bound by any operation binding",
                STANDARD_OPERATIONS.join(", ")
            ),
        )
        .with_details(json!({ "operation": operation, "standard": STANDARD_OPERATIONS })));
    }

    let target = select_target(
        snapshot,
        environment,
        service,
        deployment,
        WithoutDeployment::Allow,
        default_environment,
    )?;
    let (binding_record, binding, level) = match_binding(snapshot, operation, &target)?;

    if target.environment.tier == Tier::Production && !binding.policy.allow_production {
        return Err(EnvError::new(
            ErrorCode::PolicyDenied,
            format!(
                "binding {} does not allow {operation} in production environment {}; ask an operator, or set policy.allowProduction: true on a binding meant for production",
                binding.id, target.environment.id
            ),
        )
        .with_details(json!({
            "operation": operation,
            "bindingId": binding.id,
            "environmentId": target.environment.id,
            "tier": "production",
        })));
    }

    let merged = Merged::build(snapshot, &target)?;
    let mut resolver = Resolver::new(&merged.variables);
    let parameters = resolve_parameters(&merged, &mut resolver, binding_record, binding)?;

    let mut diagnostics = Vec::new();
    let (available, source) = match catalog.lookup(&binding.skill.name) {
        SkillLookup::Found(entry) => (Availability::Available, Some(entry.source)),
        SkillLookup::Missing { searched } => {
            return Err(EnvError::new(
                ErrorCode::SkillUnavailable,
                format!(
                    "skill {} bound by {} is not installed in any skill folder; install it (e.g. <project>/.agents/skills/{}/SKILL.md) or fix the binding",
                    binding.skill.name, binding.id, binding.skill.name
                ),
            )
            .with_details(json!({
                "skill": binding.skill.name,
                "bindingId": binding.id,
                "searched": searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            })));
        }
        SkillLookup::Unknown { reasons } => {
            diagnostics.push(
                Diagnostic::warning(
                    codes::SKILL_REGISTRY_UNAVAILABLE,
                    format!(
                        "cannot tell whether skill {} is installed: {}",
                        binding.skill.name,
                        reasons.join("; ")
                    ),
                )
                .in_file(binding_record.file.clone())
                .at_path("skill.name"),
            );
            (Availability::Unknown, None)
        }
    };

    Ok(OperationResolution {
        ok: AlwaysTrue,
        operation: operation.to_owned(),
        requested: RequestedContext {
            environment_id: target.environment.id.clone(),
            service_id: target.service.id.clone(),
            deployment_id: target.deployment.map(|(_, d)| d.id.clone()),
        },
        matched_binding_id: binding.id.clone(),
        match_level: level,
        skill: SkillStatus {
            name: binding.skill.name.clone(),
            available,
            source,
            provider: binding.skill.provider.clone(),
        },
        parameters,
        policy: binding.policy.clone(),
        diagnostics,
    })
}

/// A binding's parameters, resolved against a merged context (§5 layers).
pub(crate) fn resolve_parameters<'s>(
    merged: &Merged<'s>,
    resolver: &mut Resolver<'_, 's, Origin<'s>>,
    record: &'s crate::model::Record,
    binding: &'s OperationBinding,
) -> Result<OutputMap<String>, EnvError> {
    resolver.start_output();
    let mut parameters =
        OutputMap::with_capacity_and_hasher(binding.parameters.len(), Default::default());
    for (name, template) in &binding.parameters {
        let field = format!("parameters.{name}");
        let defined_by = Origin {
            kind: RecordKind::OperationBinding,
            id: binding.id.as_str(),
            file: record.file.as_str(),
            field: Field::Key("parameters", name.as_str()),
        };
        let resolved = merged.resolve_field(resolver, &field, template, defined_by)?;
        parameters.insert(name.clone(), resolved.value);
    }
    Ok(parameters)
}

/// Operation ids are data: the record-id alphabet, which every standard id fits.
fn check_operation_id(operation: &str) -> Result<(), EnvError> {
    crate::id::check_id("operation", operation)
}

/// Does `binding` apply to `target`? Every ref its match names must equal the context.
fn binding_applies(binding: &OperationBinding, target: &Target<'_>) -> bool {
    let m = &binding.matches;
    m.environment_ref
        .as_deref()
        .is_none_or(|e| e == target.environment.id)
        && m.service_ref
            .as_deref()
            .is_none_or(|s| s == target.service.id)
        && m.deployment_ref
            .as_deref()
            .is_none_or(|d| target.deployment.is_some_and(|(_, dep)| dep.id == d))
}

pub(crate) type Matched<'s> = (&'s crate::model::Record, &'s OperationBinding, MatchLevel);

/// The bindings of `records` that apply to `target` at the most specific level any of
/// them reaches (data model §7), in the order given; `None` when none applies.
pub(crate) fn most_specific<'s>(
    records: impl IntoIterator<Item = &'s crate::model::Record>,
    target: &Target<'s>,
) -> (
    Option<MatchLevel>,
    Vec<(&'s crate::model::Record, &'s OperationBinding)>,
) {
    let mut best: Option<MatchLevel> = None;
    let mut candidates: Vec<(&'s crate::model::Record, &'s OperationBinding)> = Vec::new();
    for record in records {
        let Some(binding) = record.as_operation_binding() else {
            continue;
        };
        if !binding_applies(binding, target) {
            continue;
        }
        let level = binding.matches.level();
        match best {
            Some(b) if level > b => {}
            Some(b) if level == b => candidates.push((record, binding)),
            _ => {
                best = Some(level);
                candidates.clear();
                candidates.push((record, binding));
            }
        }
    }
    (best, candidates)
}

pub(crate) fn match_binding<'s>(
    snapshot: &'s Snapshot,
    operation: &str,
    target: &Target<'s>,
) -> Result<Matched<'s>, EnvError> {
    let records = snapshot
        .bindings_for(operation)
        .iter()
        .filter_map(|id| snapshot.get(RecordKind::OperationBinding, id))
        .map(|r| &**r);
    let (best, candidates) = most_specific(records, target);
    let requested = json!({
        "environmentId": target.environment.id,
        "serviceId": target.service.id,
        "deploymentId": target.deployment.map(|(_, d)| d.id.as_str()),
    });
    match (best, candidates.as_slice()) {
        (Some(level), [(record, binding)]) => Ok((record, binding, level)),
        (Some(level), several) if several.len() > 1 => {
            let ids: Vec<&str> = several.iter().map(|(_, b)| b.id.as_str()).collect();
            Err(EnvError::new(
                ErrorCode::BindingConflict,
                format!(
                    "{} bindings match {operation} at level {} for this context: {}; make one more specific or remove one",
                    several.len(),
                    level_name(level),
                    ids.join(", ")
                ),
            )
            .with_details(json!({
                "operation": operation,
                "matchLevel": level,
                "requested": requested,
                "candidates": several.iter().map(|(record, b)| json!({
                    "id": b.id,
                    "file": record.file,
                    "match": b.matches,
                    "skill": b.skill.name,
                })).collect::<Vec<_>>(),
            })))
        }
        _ => {
            let bound_elsewhere = snapshot.bindings_for(operation);
            let shown = &bound_elsewhere[..bound_elsewhere.len().min(25)];
            Err(EnvError::new(
                ErrorCode::BindingNotFound,
                format!(
                    "no operation binding for {operation} matches environment {}, service {}{}",
                    target.environment.id,
                    target.service.id,
                    target
                        .deployment
                        .map(|(_, d)| format!(", deployment {}", d.id))
                        .unwrap_or_default()
                ),
            )
            .with_details(json!({
                "operation": operation,
                "requested": requested,
                "bindingsForOperation": shown,
                "bindingsForOperationCount": bound_elsewhere.len(),
            })))
        }
    }
}

pub(crate) fn level_name(level: MatchLevel) -> &'static str {
    match level {
        MatchLevel::Deployment => "deployment",
        MatchLevel::EnvironmentService => "environment-service",
        MatchLevel::Service => "service",
        MatchLevel::Environment => "environment",
        MatchLevel::Global => "global",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::resolve::fixture::{self, no_default};
    use crate::skills::SkillLocation;
    use RecordKind::*;

    /// A catalog of one custom folder holding the given skills.
    struct Skills {
        dir: tempfile::TempDir,
    }

    impl Skills {
        fn with(names: &[&str]) -> Skills {
            let dir = tempfile::tempdir().unwrap();
            for name in names {
                let folder = dir.path().join(name);
                std::fs::create_dir_all(&folder).unwrap();
                std::fs::write(
                    folder.join("SKILL.md"),
                    format!("---\nname: {name}\ndescription: test skill {name}\n---\n"),
                )
                .unwrap();
            }
            Skills { dir }
        }

        fn catalog(&self) -> SkillCatalog {
            SkillCatalog::from_locations(vec![SkillLocation {
                source: SkillSource::Custom,
                dir: self.dir.path().to_path_buf(),
                configured: true,
            }])
        }
    }

    fn binding(id: &str, operation: &str, matches: &str, skill: &str, extra: &str) -> &'static str {
        Box::leak(
            format!(
                "id: {id}\nschemaVersion: 1\nname: {id}\noperation: {operation}\nmatch: {matches}\nskill: {{ name: {skill}, provider: dsh-skills }}\n{extra}"
            )
            .into_boxed_str(),
        )
    }

    fn all_levels() -> Vec<(RecordKind, &'static str)> {
        let mut records = fixture::standard();
        records.extend([
            (
                OperationBinding,
                binding(
                    "b-deployment",
                    "redeploy",
                    "{ deploymentRef: deploy-001 }",
                    "s-deployment",
                    "",
                ),
            ),
            (
                OperationBinding,
                binding(
                    "b-env-svc",
                    "redeploy",
                    "{ environmentRef: test-a, serviceRef: aicoservice }",
                    "s-env-svc",
                    "",
                ),
            ),
            (
                OperationBinding,
                binding(
                    "b-svc",
                    "redeploy",
                    "{ serviceRef: aicoservice }",
                    "s-svc",
                    "",
                ),
            ),
            (
                OperationBinding,
                binding(
                    "b-env",
                    "redeploy",
                    "{ environmentRef: test-a }",
                    "s-env",
                    "",
                ),
            ),
            (
                OperationBinding,
                binding(
                    "b-global",
                    "redeploy",
                    "{}",
                    "s-global",
                    "policy: { requiresApproval: false, allowProduction: true }\n",
                ),
            ),
        ]);
        records
    }

    fn run(
        records: &[(RecordKind, &str)],
        skills: &SkillCatalog,
        operation: &str,
        env: Option<&str>,
        service: Option<&str>,
        deployment: Option<&str>,
    ) -> Result<OperationResolution, EnvError> {
        let snap = fixture::snapshot(records);
        resolve_operation_in_snapshot(
            &snap, skills, operation, env, service, deployment, no_default,
        )
    }

    fn every_skill() -> Skills {
        Skills::with(&[
            "s-deployment",
            "s-env-svc",
            "s-svc",
            "s-env",
            "s-global",
            "redeploy-k8s-service",
        ])
    }

    #[test]
    fn most_specific_level_wins_at_each_step() {
        let skills = every_skill();
        let catalog = skills.catalog();
        let mut records = all_levels();
        let expect = [
            ("b-deployment", MatchLevel::Deployment),
            ("b-env-svc", MatchLevel::EnvironmentService),
            ("b-svc", MatchLevel::Service),
            ("b-env", MatchLevel::Environment),
            ("b-global", MatchLevel::Global),
        ];
        for (id, level) in expect {
            let got = run(
                &records,
                &catalog,
                "redeploy",
                Some("test-a"),
                Some("aicoservice"),
                None,
            )
            .unwrap();
            assert_eq!(got.matched_binding_id, id);
            assert_eq!(got.match_level, level);
            assert_eq!(got.requested.deployment_id.as_deref(), Some("deploy-001"));
            // Remove the winner: the next level must take over.
            records.retain(|(k, y)| {
                !(*k == OperationBinding && y.starts_with(&format!("id: {id}\n")))
            });
        }
        let err = run(
            &records,
            &catalog,
            "redeploy",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::BindingNotFound);
    }

    #[test]
    fn bindings_for_other_contexts_do_not_match() {
        let skills = every_skill();
        let records = all_levels();
        // In prod, only the service-level and global bindings apply; service wins.
        let got = run(
            &records,
            &skills.catalog(),
            "redeploy",
            Some("prod"),
            Some("aicoservice"),
            None,
        );
        // b-svc does not allow production: the policy decides, not a fallback to global.
        assert_eq!(got.unwrap_err().code, ErrorCode::PolicyDenied);
        // Another service in test-a: environment level.
        let got = run(
            &records,
            &skills.catalog(),
            "redeploy",
            Some("test-a"),
            Some("twin"),
            Some("twin-a"),
        )
        .unwrap();
        assert_eq!(got.matched_binding_id, "b-env");
    }

    #[test]
    fn conflict_lists_every_candidate_and_never_picks_one() {
        let skills = every_skill();
        let mut records = all_levels();
        records.push((
            OperationBinding,
            binding(
                "b-svc-2",
                "redeploy",
                "{ serviceRef: aicoservice }",
                "s-svc",
                "",
            ),
        ));
        records.push((
            OperationBinding,
            binding(
                "b-svc-3",
                "redeploy",
                "{ serviceRef: aicoservice }",
                "s-svc",
                "",
            ),
        ));
        records.retain(|(k, y)| {
            !(*k == OperationBinding
                && (y.contains("id: b-deployment") || y.contains("id: b-env-svc")))
        });
        let err = run(
            &records,
            &skills.catalog(),
            "redeploy",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::BindingConflict);
        let details = err.details.unwrap();
        let ids: Vec<&str> = details["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec!["b-svc", "b-svc-2", "b-svc-3"]);
        assert_eq!(details["matchLevel"], "service");
        assert_eq!(
            details["candidates"][0]["file"],
            "operation-bindings/b-svc.yaml"
        );
    }

    #[test]
    fn unknown_versus_unbound_operations() {
        let skills = every_skill();
        let records = all_levels();
        let err = run(
            &records,
            &skills.catalog(),
            "frobnicate",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::OperationUnknown);
        // Standard but bound nowhere.
        let err = run(
            &records,
            &skills.catalog(),
            "rollback",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::BindingNotFound);
        // Custom, bound elsewhere only.
        let mut records = records;
        records.push((
            OperationBinding,
            binding(
                "b-custom",
                "warm-cache",
                "{ serviceRef: twin }",
                "s-svc",
                "",
            ),
        ));
        let err = run(
            &records,
            &skills.catalog(),
            "warm-cache",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::BindingNotFound);
        assert_eq!(
            err.details.unwrap()["bindingsForOperation"],
            json!(["b-custom"])
        );
        let ok = run(
            &records,
            &skills.catalog(),
            "warm-cache",
            Some("test-a"),
            Some("twin"),
            Some("twin-b"),
        )
        .unwrap();
        assert_eq!(ok.matched_binding_id, "b-custom");
        // Malformed operation ids are arguments errors, before any lookup.
        let err = run(
            &records,
            &skills.catalog(),
            "../x",
            Some("test-a"),
            Some("twin"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn production_needs_allow_production() {
        let skills = every_skill();
        let mut records = fixture::standard();
        records.push((
            OperationBinding,
            binding(
                "b-deny",
                "restart",
                "{ serviceRef: aicoservice }",
                "s-svc",
                "policy: { requiresApproval: true, allowProduction: false }\n",
            ),
        ));
        let err = run(
            &records,
            &skills.catalog(),
            "restart",
            Some("prod"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::PolicyDenied);
        assert_eq!(err.details.unwrap()["bindingId"], "b-deny");
        // Same binding, test environment: fine.
        assert!(
            run(
                &records,
                &skills.catalog(),
                "restart",
                Some("test-a"),
                Some("aicoservice"),
                None
            )
            .is_ok()
        );
        // Default policy fails closed too.
        let mut records = fixture::standard();
        records.push((
            OperationBinding,
            binding(
                "b-default",
                "restart",
                "{ serviceRef: aicoservice }",
                "s-svc",
                "",
            ),
        ));
        let err = run(
            &records,
            &skills.catalog(),
            "restart",
            Some("prod"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::PolicyDenied);
        let mut records = fixture::standard();
        records.push((
            OperationBinding,
            binding(
                "b-allow",
                "restart",
                "{ serviceRef: aicoservice }",
                "s-svc",
                "policy: { requiresApproval: true, allowProduction: true }\n",
            ),
        ));
        let ok = run(
            &records,
            &skills.catalog(),
            "restart",
            Some("prod"),
            Some("aicoservice"),
            None,
        )
        .unwrap();
        assert!(ok.policy.requires_approval && ok.policy.allow_production);
    }

    #[test]
    fn parameters_resolve_against_the_context() {
        let skills = every_skill();
        let mut records = fixture::standard();
        records.push((
            OperationBinding,
            binding(
                "binding-001",
                "redeploy",
                "{ environmentRef: test-a, serviceRef: aicoservice }",
                "redeploy-k8s-service",
                "parameters: { namespace: \"{{namespace}}\", workload: \"{{ workload }}\", cluster: \"{{cluster}}\", logs: \"{{logDir}}\", replicas: 3 }\npolicy: { requiresApproval: true, allowProduction: false }\n",
            ),
        ));
        let got = run(
            &records,
            &skills.catalog(),
            "redeploy",
            None,
            None,
            Some("deploy-001"),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&got.parameters).unwrap(),
            json!({ "namespace": "dv-sop", "workload": "aicoservice", "cluster": "k8s-01", "logs": "/data/logs/aicoservice", "replicas": "3" })
        );
        assert_eq!(
            got.requested.service_id, "aicoservice",
            "implied by the deployment"
        );
        assert_eq!(got.requested.environment_id, "test-a");
        assert_eq!(got.skill.source, Some(SkillSource::Custom));
        assert_eq!(got.skill.available, Availability::Available);
        insta::assert_json_snapshot!("operation_resolution", got);

        // An unknown variable in a parameter.
        records.push((
            OperationBinding,
            binding(
                "b-bad",
                "restart",
                "{}",
                "s-svc",
                "parameters: { x: \"{{nope}}\" }\npolicy: { allowProduction: true }\n",
            ),
        ));
        let err = run(
            &records,
            &skills.catalog(),
            "restart",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::ParameterResolutionFailed);
        let d = err.details.unwrap();
        assert_eq!(d["field"], "parameters.x");
        assert_eq!(d["missing"], "nope");
    }

    #[test]
    fn service_without_deployment_resolves_for_deploy() {
        let skills = every_skill();
        let mut records = fixture::standard();
        records.push((
            OperationBinding,
            binding(
                "b-deploy",
                "deploy",
                "{ serviceRef: lonely }",
                "s-svc",
                "parameters: { app: \"{{appName}}-{{env.id}}\" }\n",
            ),
        ));
        let got = run(
            &records,
            &skills.catalog(),
            "deploy",
            Some("test-a"),
            Some("lonely"),
            None,
        )
        .unwrap();
        assert_eq!(got.requested.deployment_id, None);
        assert_eq!(got.parameters["app"], "lonely-test-a");
        let json = serde_json::to_value(&got).unwrap();
        assert_eq!(json["requested"]["deploymentId"], serde_json::Value::Null);
        // Two deployments are still ambiguous.
        records.push((
            OperationBinding,
            binding("b-twin", "deploy", "{ serviceRef: twin }", "s-svc", ""),
        ));
        let err = run(
            &records,
            &skills.catalog(),
            "deploy",
            Some("test-a"),
            Some("twin"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::DeploymentAmbiguous);
        // Neither service nor deployment.
        let err = run(
            &records,
            &skills.catalog(),
            "deploy",
            Some("test-a"),
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn skill_missing_from_complete_catalog_is_unavailable() {
        let skills = Skills::with(&["something-else"]);
        let err = run(
            &all_levels(),
            &skills.catalog(),
            "redeploy",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::SkillUnavailable);
        assert_eq!(err.details.unwrap()["skill"], "s-deployment");
    }

    #[test]
    fn incomplete_catalog_is_unknown_with_a_warning() {
        let catalog = SkillCatalog::from_locations(vec![SkillLocation {
            source: SkillSource::Custom,
            dir: Path::new("/nonexistent/envreg/skills").to_path_buf(),
            configured: true,
        }]);
        let got = run(
            &all_levels(),
            &catalog,
            "redeploy",
            Some("test-a"),
            Some("aicoservice"),
            None,
        )
        .unwrap();
        assert_eq!(got.skill.available, Availability::Unknown);
        assert_eq!(got.skill.source, None);
        assert_eq!(got.diagnostics.len(), 1);
        assert_eq!(got.diagnostics[0].code, codes::SKILL_REGISTRY_UNAVAILABLE);
        assert_eq!(got.diagnostics[0].severity, crate::Severity::Warning);
        let json = serde_json::to_value(&got).unwrap();
        assert_eq!(json["skill"]["available"], "unknown");
        assert_eq!(json["ok"], true);
    }

    #[test]
    fn schemas_are_truthful_about_available_and_ok() {
        let schema = serde_json::to_value(schemars::schema_for!(OperationResolution)).unwrap();
        assert_eq!(
            schema["$defs"]["SkillAvailability"]["oneOf"],
            json!([{ "type": "boolean" }, { "type": "string", "const": "unknown" }])
        );
        assert_eq!(
            schema["$defs"]["SkillStatus"]["properties"]["available"]["$ref"],
            "#/$defs/SkillAvailability"
        );
        assert_eq!(schema["properties"]["ok"]["$ref"], "#/$defs/AlwaysTrue");
        assert_eq!(schema["$defs"]["AlwaysTrue"]["const"], true);
        for field in [
            "ok",
            "operation",
            "requested",
            "matchedBindingId",
            "matchLevel",
            "skill",
            "parameters",
            "policy",
            "diagnostics",
        ] {
            assert!(
                schema["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f == field),
                "{field} is required"
            );
        }
        let ctx =
            serde_json::to_value(schemars::schema_for!(crate::resolve::ServiceContext)).unwrap();
        for field in [
            "environment",
            "service",
            "deployment",
            "hosts",
            "paths",
            "logSources",
            "classLocations",
            "variables",
            "credentials",
            "provenance",
            "warnings",
        ] {
            assert!(
                ctx["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f == field),
                "{field}"
            );
        }
    }
}
