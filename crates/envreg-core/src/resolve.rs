//! `env_resolve`: the Service Context of a service in an environment (data model §5,
//! §6; contract §2.4).
//!
//! # Pipeline
//! 1. **Target selection** ([`select_target`]): environment (explicit argument, else the
//!    chosen deployment's environment, else the session / config default of contract
//!    §1.4), service, deployment (the argument; else the single deployment of the
//!    service in the environment; none → `DEPLOYMENT_NOT_FOUND`; several →
//!    `DEPLOYMENT_AMBIGUOUS` with `details.candidates`).
//! 2. **Merge** ([`Merged::build`]): rule profiles in `ruleProfileRefs` order (the
//!    service's, then the deployment's), each after its `extends` parents (depth-first,
//!    each profile once); then the variable layers of §5 — built-ins, profiles,
//!    environment, service, deployment — later layers winning, each override noted as a
//!    `VARIABLE_SHADOWED` info. Maps merge by key, `logSources` by `id`,
//!    `classLocations` concatenate without duplicates.
//! 3. **Resolve**: every path, log source field, class location and variable goes
//!    through [`crate::template::Resolver`] (recursive, memoised, cycle- and
//!    depth-bounded). A failure is `PARAMETER_RESOLUTION_FAILED` naming the template,
//!    the field path, the missing name (or the cycle) and the layers searched.
//!
//! # Decisions
//! - A `deploymentId` implies its environment: when `environmentId` is not given, the
//!   deployment's environment is used rather than the session default (which could
//!   only produce a mismatch). An explicit environment or service that contradicts the
//!   deployment is `INVALID_ARGUMENT`, never silently corrected.
//! - Provenance covers *every* resolved value, literal ones included, keyed by output
//!   field path (`paths.logs`, `logSources[0].path`, `classLocations[1]`,
//!   `variables.appName`). `from` lists the records of the variables the template
//!   references directly (data model §6 example); `definedBy` says which record and
//!   field the template itself came from (an addition: without it a literal path has
//!   no provenance at all).
//! - Credentials are reported as `{ref, configured, source}`; `configured` is presence
//!   only ([`crate::model::CredentialRef::is_configured`]). The value is never read into
//!   this module's memory, output, warnings or errors. An unconfigured credential adds a
//!   `CREDENTIAL_MISSING` warning naming the reference and where it should be.
//! - Profiles are applied once each, at their first position, even when reached twice
//!   (a diamond of `extends`, or the same profile on service and deployment). Applying
//!   it again would re-override whatever came between, which nobody writing the second
//!   reference means.
//!
//! # Invariants
//! - Nothing here writes a file or reads anything but the snapshot and credential
//!   presence; the snapshot is borrowed, never cloned.
//! - Output order is deterministic: profile order, then layer order, then key order.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use crate::diagnostic::{Diagnostic, codes};
use crate::error::{EnvError, ErrorCode};
use crate::kind::RecordKind;
use crate::model::{
    Deployment, Environment, Host, LogSource, Platform, Record, RuleProfile, Service, Tier,
};
use crate::snapshot::Snapshot;
use crate::template::{self, NameHasher, ResolveError, Resolver, Variable, Variables};

/// The maps of the output: insertion-ordered (deterministic, in merge order) and hashed
/// with [`NameHasher`] (SipHash was a visible share of a warm resolve).
pub type OutputMap<V> = IndexMap<String, V, NameHasher>;

// ---------------------------------------------------------------------------------
// Output types (contract §2.4, data model §6)
// ---------------------------------------------------------------------------------

/// The Service Context: the authoritative answer to "where is what for this service in
/// this environment".
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceContext {
    pub environment: EnvironmentSummary,
    pub service: RecordRef,
    pub deployment: DeploymentSummary,
    /// The deployment's own `hosts` when it has them, else the environment's.
    pub hosts: Vec<Host>,
    /// Resolved `paths` of the merged rule profiles.
    pub paths: OutputMap<String>,
    pub log_sources: Vec<ResolvedLogSource>,
    pub class_locations: Vec<String>,
    /// Every merged variable of layers 2–5 (built-ins excluded), resolved.
    pub variables: OutputMap<String>,
    pub credentials: Vec<CredentialStatus>,
    /// Keyed by output field path, e.g. `paths.logs`.
    pub provenance: OutputMap<Provenance>,
    /// `VARIABLE_SHADOWED` infos and `CREDENTIAL_MISSING` warnings.
    pub warnings: Vec<Diagnostic>,
}

impl ServiceContext {
    /// What the render line counts as "paths": paths + log sources + class locations.
    pub fn path_count(&self) -> usize {
        self.paths.len() + self.log_sources.len() + self.class_locations.len()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSummary {
    pub id: String,
    pub name: String,
    pub tier: Tier,
    pub platform: Platform,
}

/// `{ id, name, platform? }` of the deployment. `platform` is present when the
/// deployment sets its own (replacing `environment.platform` for it): the effective
/// platform is `deployment.platform`, else `environment.platform`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSummary {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

/// `{ id, name }` of a service or deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordRef {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedLogSource {
    pub id: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// Whether a credential is configured, never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialStatus {
    #[serde(rename = "ref")]
    pub reference: String,
    /// The env var is set and non-empty, or the file exists.
    pub configured: bool,
    pub source: CredentialSourceKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CredentialSourceKind {
    Env,
    File,
    /// Neither `env:` nor `file:` (schema validation reports it too).
    Unknown,
}

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// The template as written, before resolution.
    pub template: String,
    /// The records of the variables the template references directly, in order of
    /// first reference.
    pub from: Vec<ValueOrigin>,
    /// The record and field that supplied the template itself.
    pub defined_by: ValueOrigin,
}

/// A record field: kind, id, registry-relative file and field path.
///
/// The strings are shared ([`SharedStr`]): one resolve mentions the same few records
/// dozens of times, and copying their ids and file names for every mention was the
/// largest cost of a warm resolve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValueOrigin {
    pub kind: RecordKind,
    pub id: SharedStr,
    pub file: SharedStr,
    pub path: SharedStr,
}

/// An immutable, cheaply cloned string that serializes (and has the schema of) a
/// plain JSON string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> SharedStr {
        SharedStr(Arc::from(s))
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> SharedStr {
        SharedStr(Arc::from(s))
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl std::fmt::Display for SharedStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl JsonSchema for SharedStr {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "String".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

/// Turns borrowed [`Origin`]s into shared [`ValueOrigin`]s, building each distinct
/// one (and each distinct id and file string) once per resolve.
#[derive(Default)]
pub(crate) struct OriginCache<'s> {
    done: HashMap<Origin<'s>, ValueOrigin, NameHasher>,
    strings: HashMap<&'s str, SharedStr, NameHasher>,
}

impl<'s> OriginCache<'s> {
    fn shared(&mut self, s: &'s str) -> SharedStr {
        self.strings
            .entry(s)
            .or_insert_with(|| SharedStr::from(s))
            .clone()
    }

    pub(crate) fn get(&mut self, origin: Origin<'s>) -> ValueOrigin {
        if let Some(found) = self.done.get(&origin) {
            return found.clone();
        }
        let value = ValueOrigin {
            kind: origin.kind,
            id: self.shared(origin.id),
            file: self.shared(origin.file),
            path: SharedStr::from(origin.field.to_string()),
        };
        self.done.insert(origin, value.clone());
        value
    }
}

// ---------------------------------------------------------------------------------
// Target selection
// ---------------------------------------------------------------------------------

/// The records a resolution is about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'s> {
    pub env_record: &'s Record,
    pub environment: &'s Environment,
    pub service_record: &'s Record,
    pub service: &'s Service,
    pub deployment: Option<(&'s Record, &'s Deployment)>,
}

/// What to do when the service has no deployment in the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WithoutDeployment {
    /// `env_resolve`: `DEPLOYMENT_NOT_FOUND`.
    Refuse,
    /// `env_resolve_operation`: resolve against environment + service only (a `deploy`
    /// is asked about before any deployment record exists; `deployment.id` is then
    /// simply not defined).
    Allow,
}

/// Picks environment, service and deployment. `default_environment` implements contract
/// §1.4 (explicit → session → config → `INVALID_ARGUMENT`); it is called only when the
/// environment is neither given nor implied by the deployment.
pub(crate) fn select_target<'s>(
    snapshot: &'s Snapshot,
    environment: Option<&str>,
    service: Option<&str>,
    deployment: Option<&str>,
    without_deployment: WithoutDeployment,
    default_environment: impl FnOnce() -> Result<String, EnvError>,
) -> Result<Target<'s>, EnvError> {
    for (what, value) in [
        ("environmentId", environment),
        ("serviceId", service),
        ("deploymentId", deployment),
    ] {
        if let Some(value) = value {
            crate::id::check_id(what, value)?;
        }
    }

    let chosen_deployment = match deployment {
        Some(id) => Some(lookup_deployment(snapshot, id)?),
        None => None,
    };

    // Environment: explicit, else implied by the deployment, else the default chain.
    let env_id: Cow<'_, str> = match (environment, chosen_deployment) {
        (Some(env), Some((_, d))) if env != d.environment_ref => {
            return Err(EnvError::invalid_argument(format!(
                "deployment {} is in environment {}, not {env}; omit environmentId or pick a deployment of {env}",
                d.id, d.environment_ref
            ))
            .with_details(json!({
                "deploymentId": d.id,
                "deploymentEnvironmentId": d.environment_ref,
                "environmentId": env,
            })));
        }
        (Some(env), _) => Cow::Borrowed(env),
        (None, Some((_, d))) => Cow::Borrowed(d.environment_ref.as_str()),
        (None, None) => Cow::Owned(default_environment()?),
    };
    let env_record = snapshot
        .get(RecordKind::Environment, &env_id)
        .ok_or_else(|| EnvError::not_found(RecordKind::Environment, &env_id))?;
    let environment = env_record
        .as_environment()
        .ok_or_else(|| EnvError::internal("environment record has another kind's body"))?;

    let service_id: &str = match (service, chosen_deployment) {
        (Some(svc), Some((_, d))) if svc != d.service_ref => {
            return Err(EnvError::invalid_argument(format!(
                "deployment {} places service {}, not {svc}; omit serviceId or pick a deployment of {svc}",
                d.id, d.service_ref
            ))
            .with_details(json!({
                "deploymentId": d.id,
                "deploymentServiceId": d.service_ref,
                "serviceId": svc,
            })));
        }
        (Some(svc), _) => svc,
        (None, Some((_, d))) => d.service_ref.as_str(),
        (None, None) => {
            return Err(EnvError::invalid_argument(
                "give serviceId or deploymentId: an operation is resolved for a service or a deployment",
            ));
        }
    };
    let service_record = snapshot
        .get(RecordKind::Service, service_id)
        .ok_or_else(|| EnvError::not_found(RecordKind::Service, service_id))?;
    let service = service_record
        .as_service()
        .ok_or_else(|| EnvError::internal("service record has another kind's body"))?;

    let deployment = match chosen_deployment {
        Some(found) => Some(found),
        None => {
            let candidates = snapshot.deployments_of(&environment.id, &service.id);
            match candidates {
                [] => match without_deployment {
                    WithoutDeployment::Allow => None,
                    WithoutDeployment::Refuse => {
                        return Err(EnvError::new(
                            ErrorCode::DeploymentNotFound,
                            format!(
                                "service {} has no deployment in environment {}",
                                service.id, environment.id
                            ),
                        )
                        .with_details(json!({
                            "environmentId": environment.id,
                            "serviceId": service.id,
                            "candidates": [],
                        })));
                    }
                },
                [only] => Some(lookup_deployment(snapshot, only)?),
                several => {
                    return Err(EnvError::new(
                        ErrorCode::DeploymentAmbiguous,
                        format!(
                            "service {} has {} deployments in environment {}: {}; pass deploymentId",
                            service.id,
                            several.len(),
                            environment.id,
                            several.join(", ")
                        ),
                    )
                    .with_details(json!({
                        "environmentId": environment.id,
                        "serviceId": service.id,
                        "candidates": several,
                    })));
                }
            }
        }
    };

    Ok(Target {
        env_record,
        environment,
        service_record,
        service,
        deployment,
    })
}

fn lookup_deployment<'s>(
    snapshot: &'s Snapshot,
    id: &str,
) -> Result<(&'s Record, &'s Deployment), EnvError> {
    let record = snapshot
        .get(RecordKind::Deployment, id)
        .ok_or_else(|| EnvError::not_found(RecordKind::Deployment, id))?;
    let deployment = record
        .as_deployment()
        .ok_or_else(|| EnvError::internal("deployment record has another kind's body"))?;
    Ok((record, deployment))
}

// ---------------------------------------------------------------------------------
// Merging (data model §5)
// ---------------------------------------------------------------------------------

/// Where one value (a variable, a path, a log source, a class location) was defined.
/// Borrowed and `Copy`, so the resolver can carry it without allocating; turned into
/// an owned [`ValueOrigin`] only for the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Origin<'s> {
    pub kind: RecordKind,
    pub id: &'s str,
    pub file: &'s str,
    pub field: Field<'s>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Field<'s> {
    /// A top-level field (`id`, `name`, `tier`, `platform`).
    Plain(&'static str),
    /// `<map>.<key>`, e.g. `variables.appName`, `paths.logs`, `parameters.cluster`.
    Key(&'static str, &'s str),
    /// `logSources[i].<field>`.
    LogSource(usize, &'static str),
    /// `classLocations[i]`.
    ClassLocation(usize),
}

impl Origin<'_> {
    fn describe(self) -> String {
        format!("{} {} ({})", self.kind, self.id, self.field)
    }
}

impl std::fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Plain(name) => f.write_str(name),
            Field::Key(map, key) => write!(f, "{map}.{key}"),
            Field::LogSource(i, field) => write!(f, "logSources[{i}].{field}"),
            Field::ClassLocation(i) => write!(f, "classLocations[{i}]"),
        }
    }
}

/// One variable layer of §5, for the "layers searched" of an error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layer<'s> {
    pub kind: Option<RecordKind>,
    pub id: &'s str,
    pub file: &'s str,
}

impl Layer<'_> {
    fn describe(&self) -> String {
        match self.kind {
            None => "built-ins".to_owned(),
            Some(kind) => format!("{kind} {} ({})", self.id, self.file),
        }
    }
}

/// The merged view of a target: variables and profile fields, all still templates.
pub(crate) struct Merged<'s> {
    pub variables: Variables<'s, Origin<'s>>,
    /// Variables of layers 2–5 in first-definition order (built-ins excluded).
    pub variable_order: Vec<&'s str>,
    pub paths: IndexMap<&'s str, (&'s str, Origin<'s>), NameHasher>,
    pub log_sources: Vec<(&'s LogSource, &'s Record, usize)>,
    pub class_locations: Vec<(&'s str, Origin<'s>)>,
    pub layers: Vec<Layer<'s>>,
    pub shadowed: Vec<Diagnostic>,
}

impl<'s> Merged<'s> {
    pub(crate) fn build(
        snapshot: &'s Snapshot,
        target: &Target<'s>,
    ) -> Result<Merged<'s>, EnvError> {
        let profiles = applied_profiles(snapshot, target)?;
        let mut merged = Merged {
            variables: Variables::with_capacity_and_hasher(32, Default::default()),
            variable_order: Vec::new(),
            paths: IndexMap::default(),
            log_sources: Vec::new(),
            class_locations: Vec::new(),
            layers: Vec::with_capacity(profiles.len() + 4),
            shadowed: Vec::new(),
        };

        // Layer 1: built-ins.
        merged.layers.push(Layer {
            kind: None,
            id: "",
            file: "",
        });
        let env = target.environment;
        let env_file = target.env_record.file.as_str();
        let svc = target.service;
        let svc_file = target.service_record.file.as_str();
        let builtin = |kind, id, file, field| Origin {
            kind,
            id,
            file,
            field: Field::Plain(field),
        };
        let env_origin = |field| builtin(RecordKind::Environment, env.id.as_str(), env_file, field);
        let svc_origin = |field| builtin(RecordKind::Service, svc.id.as_str(), svc_file, field);
        let builtins: [(&'static str, &'s str, Origin<'s>); 6] = [
            ("env.id", env.id.as_str(), env_origin("id")),
            ("env.name", env.name.as_str(), env_origin("name")),
            ("env.tier", env.tier.as_str(), env_origin("tier")),
            (
                "env.platform",
                env.platform.as_str(),
                env_origin("platform"),
            ),
            ("service.id", svc.id.as_str(), svc_origin("id")),
            ("service.name", svc.name.as_str(), svc_origin("name")),
        ];
        for (name, value, origin) in builtins {
            merged.variables.insert(
                name,
                Variable {
                    value: Cow::Borrowed(value),
                    origin,
                },
            );
        }
        if let Some((record, deployment)) = target.deployment {
            merged.variables.insert(
                "deployment.id",
                Variable {
                    value: Cow::Borrowed(deployment.id.as_str()),
                    origin: builtin(
                        RecordKind::Deployment,
                        deployment.id.as_str(),
                        record.file.as_str(),
                        "id",
                    ),
                },
            );
            // The effective platform (the deployment's own, else the environment's):
            // what an operation's parameters should use in a mixed estate.
            let (platform, origin) = match deployment.platform {
                Some(p) => (
                    p,
                    builtin(
                        RecordKind::Deployment,
                        deployment.id.as_str(),
                        record.file.as_str(),
                        "platform",
                    ),
                ),
                None => (env.platform, env_origin("platform")),
            };
            merged.variables.insert(
                "deployment.platform",
                Variable {
                    value: Cow::Borrowed(platform.as_str()),
                    origin,
                },
            );
        }

        // Layer 2: rule profiles, in application order; their paths, log sources and
        // class locations merge in the same order.
        for (record, profile) in &profiles {
            let file = record.file.as_str();
            merged.layers.push(Layer {
                kind: Some(RecordKind::RuleProfile),
                id: &profile.id,
                file,
            });
            let origin = |field| Origin {
                kind: RecordKind::RuleProfile,
                id: profile.id.as_str(),
                file,
                field,
            };
            merged.define_all(&profile.variables, |key| {
                origin(Field::Key("variables", key))
            });
            for (key, value) in &profile.paths {
                merged.paths.insert(
                    key.as_str(),
                    (value.as_str(), origin(Field::Key("paths", key))),
                );
            }
            for (i, source) in profile.log_sources.iter().enumerate() {
                match merged
                    .log_sources
                    .iter_mut()
                    .find(|(existing, _, _)| existing.id == source.id)
                {
                    Some(slot) => *slot = (source, record, i),
                    None => merged.log_sources.push((source, record, i)),
                }
            }
            for (i, location) in profile.class_locations.iter().enumerate() {
                if !merged
                    .class_locations
                    .iter()
                    .any(|(existing, _)| *existing == location.as_str())
                {
                    merged
                        .class_locations
                        .push((location.as_str(), origin(Field::ClassLocation(i))));
                }
            }
        }

        // Layers 3–5: environment, service, deployment.
        merged.layers.push(Layer {
            kind: Some(RecordKind::Environment),
            id: &env.id,
            file: env_file,
        });
        merged.define_all(&env.variables, |key| Origin {
            kind: RecordKind::Environment,
            id: env.id.as_str(),
            file: env_file,
            field: Field::Key("variables", key),
        });
        merged.layers.push(Layer {
            kind: Some(RecordKind::Service),
            id: &svc.id,
            file: svc_file,
        });
        merged.define_all(&svc.variables, |key| Origin {
            kind: RecordKind::Service,
            id: svc.id.as_str(),
            file: svc_file,
            field: Field::Key("variables", key),
        });
        if let Some((record, deployment)) = target.deployment {
            let file = record.file.as_str();
            merged.layers.push(Layer {
                kind: Some(RecordKind::Deployment),
                id: &deployment.id,
                file,
            });
            merged.define_all(&deployment.variables, |key| Origin {
                kind: RecordKind::Deployment,
                id: deployment.id.as_str(),
                file,
                field: Field::Key("variables", key),
            });
        }
        Ok(merged)
    }

    fn define_all(
        &mut self,
        map: &'s IndexMap<String, String>,
        origin: impl Fn(&'s str) -> Origin<'s>,
    ) {
        for (key, value) in map {
            let key = key.as_str();
            let new = Variable {
                value: Cow::Borrowed(value.as_str()),
                origin: origin(key),
            };
            match self.variables.insert(key, new) {
                None => self.variable_order.push(key),
                Some(old) => {
                    let winner = origin(key);
                    // A built-in overridden by a variable was not in the output order yet.
                    if matches!(old.origin.field, Field::Plain(_))
                        && !self.variable_order.contains(&key)
                    {
                        self.variable_order.push(key);
                    }
                    self.shadowed.push(
                        Diagnostic::info(
                            codes::VARIABLE_SHADOWED,
                            format!(
                                "variable {key} from {} overrides {}",
                                winner.describe(),
                                old.origin.describe()
                            ),
                        )
                        .in_file(winner.file)
                        .at_path(winner.field.to_string()),
                    );
                }
            }
        }
    }

    pub(crate) fn layers_searched(&self) -> Vec<String> {
        self.layers.iter().map(Layer::describe).collect()
    }

    /// Resolves one template for an output field, mapping failure to
    /// `PARAMETER_RESOLUTION_FAILED`.
    /// `defined_by` is the record field the template came from; it is named in the
    /// error's `details.definedBy` (where `validate` points its diagnostic).
    pub(crate) fn resolve_field(
        &self,
        resolver: &mut Resolver<'_, 's, Origin<'s>>,
        field: &str,
        template: &str,
        defined_by: Origin<'s>,
    ) -> Result<template::Resolved<Origin<'s>>, EnvError> {
        resolver
            .resolve(template)
            .map_err(|e| self.resolution_failed(field, template, &e, defined_by))
    }

    pub(crate) fn resolution_failed(
        &self,
        field: &str,
        template: &str,
        err: &ResolveError,
        defined_by: Origin<'s>,
    ) -> EnvError {
        let layers = self.layers_searched();
        let mut message = format!("cannot resolve {field} = {template:?}: {err}");
        let mut details = json!({
            "field": field,
            "template": template,
            "layers": layers,
            "definedBy": {
                "kind": defined_by.kind,
                "id": defined_by.id,
                "file": defined_by.file,
                "path": defined_by.field.to_string(),
            },
        });
        match err {
            ResolveError::Unknown { name, via } => {
                let _ = write!(message, "; searched {}", layers.join(", "));
                details["missing"] = json!(name);
                details["via"] = json!(via);
                details["reason"] = json!("unknown-variable");
            }
            ResolveError::Cycle { cycle } => {
                details["cycle"] = json!(cycle);
                details["reason"] = json!("cycle");
            }
            ResolveError::Syntax {
                variable,
                error,
                via,
            } => {
                details["reason"] = json!(codes::TEMPLATE_INVALID);
                details["variable"] = json!(variable);
                details["offset"] = json!(error.offset);
                details["via"] = json!(via);
            }
            ResolveError::TooDeep { via } => {
                details["reason"] = json!("too-deep");
                details["via"] = json!(via);
            }
            ResolveError::TooLong { via } => {
                details["reason"] = json!("too-long");
                details["via"] = json!(via);
            }
            ResolveError::OutputTooLarge { used, largest } => {
                details["reason"] = json!("output-too-large");
                details["limit"] = json!(template::MAX_OUTPUT_LEN);
                details["used"] = json!(used);
                if let Some((name, len)) = largest {
                    details["largestVariable"] = json!({ "name": name, "bytes": len });
                }
                // Name the record and field that grew in the sentence itself.
                let _ = write!(
                    message,
                    " (template from {} {}, {})",
                    defined_by.kind.noun().0,
                    defined_by.id,
                    defined_by.field
                );
            }
        }
        EnvError::new(ErrorCode::ParameterResolutionFailed, message).with_details(details)
    }
}

/// The rule profiles of a target in application order: the service's `ruleProfileRefs`
/// then the deployment's, each preceded by its `extends` ancestors (depth-first,
/// parents first), each profile once.
fn applied_profiles<'s>(
    snapshot: &'s Snapshot,
    target: &Target<'s>,
) -> Result<Vec<(&'s Record, &'s RuleProfile)>, EnvError> {
    let mut refs: Vec<(&'s str, &'s Record, &'static str, usize)> = Vec::new();
    for (i, r) in target.service.rule_profile_refs.iter().enumerate() {
        refs.push((r, target.service_record, "ruleProfileRefs", i));
    }
    if let Some((record, deployment)) = target.deployment {
        for (i, r) in deployment.rule_profile_refs.iter().enumerate() {
            refs.push((r, record, "ruleProfileRefs", i));
        }
    }
    let mut out: Vec<(&'s Record, &'s RuleProfile)> = Vec::new();
    if refs.is_empty() {
        return Ok(out);
    }
    let mut applied: HashSet<&'s str, NameHasher> = HashSet::default();
    for (profile_id, referrer, field, index) in refs {
        if snapshot.rule_profile(profile_id).is_none() {
            return Err(EnvError::new(
                ErrorCode::RuleProfileNotFound,
                format!(
                    "{} {} references unknown rule profile {profile_id} ({field}[{index}])",
                    referrer.kind(),
                    referrer.id()
                ),
            )
            .with_details(json!({
                "id": profile_id,
                "referencedBy": { "kind": referrer.kind(), "id": referrer.id(), "file": referrer.file, "path": format!("{field}[{index}]") },
            })));
        }
        let chain = snapshot.profile_chain(profile_id).map_err(|cycle| {
            EnvError::new(
                ErrorCode::RuleProfileCycle,
                format!(
                    "rule profiles extend each other in a cycle: {}",
                    cycle.join(" → ")
                ),
            )
            .with_details(json!({ "cycle": cycle }))
        })?;
        for profile in chain {
            // `profile_chain` skips unknown parents (validation reports them); a resolve
            // must not silently drop a layer, so it fails here.
            for (i, parent) in profile.extends.iter().enumerate() {
                if snapshot.rule_profile(parent).is_none() {
                    return Err(EnvError::new(
                        ErrorCode::RuleProfileNotFound,
                        format!(
                            "rule profile {} extends unknown rule profile {parent} (extends[{i}])",
                            profile.id
                        ),
                    )
                    .with_details(json!({
                        "id": parent,
                        "referencedBy": { "kind": RecordKind::RuleProfile, "id": profile.id, "path": format!("extends[{i}]") },
                    })));
                }
            }
            if applied.insert(profile.id.as_str()) {
                let record = snapshot
                    .get(RecordKind::RuleProfile, &profile.id)
                    .ok_or_else(|| EnvError::internal("rule profile vanished from its snapshot"))?;
                out.push((record, profile));
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// The Service Context
// ---------------------------------------------------------------------------------

/// Builds the Service Context of a selected target.
pub(crate) fn service_context<'s>(
    snapshot: &'s Snapshot,
    target: &Target<'s>,
) -> Result<ServiceContext, EnvError> {
    let merged = Merged::build(snapshot, target)?;
    let mut resolver = Resolver::new(&merged.variables);
    context_of_merged(&merged, &mut resolver, target)
}

/// The Service Context from an already merged target, with the caller's resolver (so
/// `validate`, which then resolves the operations of the same deployment, resolves each
/// variable once).
pub(crate) fn context_of_merged<'s>(
    merged: &Merged<'s>,
    resolver: &mut Resolver<'_, 's, Origin<'s>>,
    target: &Target<'s>,
) -> Result<ServiceContext, EnvError> {
    let mut provenance: OutputMap<Provenance> =
        OutputMap::with_capacity_and_hasher(48, NameHasher::default());
    let mut origins = OriginCache::default();
    let mut record = |key: String,
                      template: &str,
                      resolved: &template::Resolved<Origin<'s>>,
                      defined_by: Origin<'s>| {
        let from = resolved.from.iter().map(|o| origins.get(*o)).collect();
        let defined_by = origins.get(defined_by);
        provenance.insert(
            key,
            Provenance {
                template: template.to_owned(),
                from,
                defined_by,
            },
        );
    };
    let mut paths = OutputMap::with_capacity_and_hasher(merged.paths.len(), NameHasher::default());
    for (key, (template, origin)) in &merged.paths {
        let field = format!("paths.{key}");
        let resolved = merged.resolve_field(resolver, &field, template, *origin)?;
        record(field, template, &resolved, *origin);
        paths.insert((*key).to_owned(), resolved.value);
    }

    let mut log_sources = Vec::with_capacity(merged.log_sources.len());
    for (source, profile_record, index_in_profile) in &merged.log_sources {
        let out_index = log_sources.len();
        let origin_of = |field| Origin {
            kind: RecordKind::RuleProfile,
            id: profile_record.id(),
            file: profile_record.file.as_str(),
            field: Field::LogSource(*index_in_profile, field),
        };
        let field = format!("logSources[{out_index}].path");
        let path = merged.resolve_field(resolver, &field, &source.path, origin_of("path"))?;
        record(field, &source.path, &path, origin_of("path"));
        let format = match &source.format {
            Some(template) => {
                let field = format!("logSources[{out_index}].format");
                let resolved =
                    merged.resolve_field(resolver, &field, template, origin_of("format"))?;
                record(field, template, &resolved, origin_of("format"));
                Some(resolved.value)
            }
            None => None,
        };
        log_sources.push(ResolvedLogSource {
            id: source.id.clone(),
            path: path.value,
            format,
        });
    }

    let mut class_locations: Vec<String> = Vec::with_capacity(merged.class_locations.len());
    for (template, origin) in &merged.class_locations {
        let field = format!("classLocations[{}]", class_locations.len());
        let resolved = merged.resolve_field(resolver, &field, template, *origin)?;
        // Two templates may resolve to one location; keep the first.
        if class_locations.contains(&resolved.value) {
            continue;
        }
        record(field, template, &resolved, *origin);
        class_locations.push(resolved.value);
    }

    let mut variables =
        OutputMap::with_capacity_and_hasher(merged.variable_order.len(), NameHasher::default());
    for name in &merged.variable_order {
        let Some(var) = merged.variables.get(name) else {
            continue;
        };
        let field = format!("variables.{name}");
        let resolved = resolver
            .resolve_variable(name)
            .map_err(|e| merged.resolution_failed(&field, &var.value, &e, var.origin))?;
        record(field, &var.value, &resolved, var.origin);
        variables.insert((*name).to_owned(), resolved.value);
    }

    let mut warnings = merged.shadowed.clone();
    let env = target.environment;
    let credentials = env
        .credentials
        .iter()
        .enumerate()
        .map(|(i, credential)| {
            let status = credential_status(credential);
            if !status.configured {
                warnings.push(credential_missing(credential, &target.env_record.file, i));
            }
            status
        })
        .collect();

    let (deployment_record, deployment) = target
        .deployment
        .ok_or_else(|| EnvError::internal("a Service Context needs a deployment"))?;
    let _ = deployment_record;
    Ok(ServiceContext {
        environment: EnvironmentSummary {
            id: env.id.clone(),
            name: env.name.clone(),
            tier: env.tier,
            platform: env.platform,
        },
        service: RecordRef {
            id: target.service.id.clone(),
            name: target.service.name.clone(),
        },
        deployment: DeploymentSummary {
            id: deployment.id.clone(),
            name: deployment.name.clone(),
            platform: deployment.platform,
        },
        hosts: deployment.effective_hosts(env).to_vec(),
        paths,
        log_sources,
        class_locations,
        variables,
        credentials,
        provenance,
        warnings,
    })
}

/// `{ref, configured, source}`: presence only, the value is never read.
pub fn credential_status(credential: &crate::model::CredentialRef) -> CredentialStatus {
    let source = match credential.source_kind() {
        "env" => CredentialSourceKind::Env,
        "file" => CredentialSourceKind::File,
        _ => CredentialSourceKind::Unknown,
    };
    CredentialStatus {
        reference: credential.reference.clone(),
        configured: credential.is_configured(),
        source,
    }
}

fn credential_missing(
    credential: &crate::model::CredentialRef,
    file: &str,
    index: usize,
) -> Diagnostic {
    use crate::model::CredentialSource;
    let where_ = match credential.parsed_source() {
        Some(CredentialSource::Env(var)) => format!("environment variable {var} is unset or empty"),
        Some(CredentialSource::File(path)) => format!("file {path} does not exist"),
        None => "its source is neither env: nor file:".to_owned(),
    };
    Diagnostic::warning(
        codes::CREDENTIAL_MISSING,
        format!(
            "credential {} is not configured: {where_}",
            credential.reference
        ),
    )
    .in_file(file)
    .at_path(format!("credentials[{index}]"))
}

// ---------------------------------------------------------------------------------
// The Registry entry point
// ---------------------------------------------------------------------------------

impl crate::registry::Registry {
    /// `env_resolve` (contract §2.4): the Service Context of `service` in the
    /// environment (explicit, else the deployment's, else the session / config default).
    pub fn resolve(
        &self,
        session: Option<&crate::session::SessionId>,
        environment: Option<&str>,
        service: &str,
        deployment: Option<&str>,
    ) -> Result<ServiceContext, EnvError> {
        let snapshot = self.snapshot();
        resolve_in_snapshot(&snapshot, environment, service, deployment, || {
            self.default_environment(session, None)
        })
    }
}

/// Resolves a service against one snapshot. `default_environment` is contract §1.4's
/// chain, consulted only when neither `environment` nor a deployment names one.
pub fn resolve_in_snapshot(
    snapshot: &Snapshot,
    environment: Option<&str>,
    service: &str,
    deployment: Option<&str>,
    default_environment: impl FnOnce() -> Result<String, EnvError>,
) -> Result<ServiceContext, EnvError> {
    let target = select_target(
        snapshot,
        environment,
        Some(service),
        deployment,
        WithoutDeployment::Refuse,
        default_environment,
    )?;
    service_context(snapshot, &target)
}

/// Builds in-memory snapshots from YAML text for the tests of this module and of
/// [`crate::operation`], so resolution is tested independently of the loader.
#[cfg(test)]
pub(crate) mod fixture {
    use std::sync::Arc;

    use crate::config::Config;
    use crate::kind::RecordKind;
    use crate::model::{Record, RecordBody};
    use crate::snapshot::{RecordMap, Snapshot};

    /// `(kind, yaml)` pairs → a snapshot. The file is `<kind dir>/<id>.yaml`.
    pub(crate) fn snapshot(records: &[(RecordKind, &str)]) -> Snapshot {
        let mut maps: [RecordMap; 5] = Default::default();
        for (kind, yaml) in records {
            fn parse<T: serde::de::DeserializeOwned>(yaml: &str) -> T {
                crate::load::parse_typed(yaml)
                    .unwrap_or_else(|e| panic!("fixture does not parse: {}\n{yaml}", e.message))
            }
            let body = match kind {
                RecordKind::Environment => RecordBody::Environment(parse(yaml)),
                RecordKind::Service => RecordBody::Service(parse(yaml)),
                RecordKind::Deployment => RecordBody::Deployment(parse(yaml)),
                RecordKind::RuleProfile => RecordBody::RuleProfile(parse(yaml)),
                RecordKind::OperationBinding => RecordBody::OperationBinding(parse(yaml)),
            };
            let id = body.common().id().to_owned();
            let record = Record {
                file: format!("{}/{id}.yaml", kind.dir_name()),
                body,
                text: Arc::from(*yaml),
            };
            maps[kind.index()].insert(id, Arc::new(record));
        }
        Snapshot::build(maps, Vec::new(), Arc::new(Config::default()), 1)
    }

    pub(crate) const TEST_A: &str = "
id: test-a
schemaVersion: 1
name: Test A
tier: test
platform: kubernetes
hosts:
  - { id: node-1, address: 10.20.0.11, roles: [worker] }
  - { id: node-2, address: 10.20.0.12, roles: [worker] }
variables: { logRoot: /data/logs, cluster: k8s-01 }
credentials:
  - { ref: kube-test-a, source: \"env:ENVREG_FIXTURE_SURELY_UNSET_VARIABLE\" }
";

    pub(crate) const PROD: &str = "
id: prod
schemaVersion: 1
name: Production
tier: production
platform: vm
variables: { logRoot: /var/log, cluster: k8s-prod }
";

    pub(crate) const AICO: &str = "
id: aicoservice
schemaVersion: 1
name: Aico Service
aliases: [aico]
ruleProfileRefs: [java-common]
variables: { appName: aicoservice, mainClass: com.example.aico.Application }
";

    pub(crate) const TWIN: &str = "
id: twin
schemaVersion: 1
name: Twin
ruleProfileRefs: [java-common]
variables: { appName: twin }
";

    pub(crate) const LONELY: &str = "
id: lonely
schemaVersion: 1
name: Lonely
variables: { appName: lonely }
";

    pub(crate) const DEPLOY_001: &str = "
id: deploy-001
schemaVersion: 1
name: aicoservice on test-a
environmentRef: test-a
serviceRef: aicoservice
variables: { namespace: dv-sop, workload: aicoservice }
";

    pub(crate) const AICO_PROD: &str = "
id: aico-prod
schemaVersion: 1
name: aicoservice on prod
environmentRef: prod
serviceRef: aicoservice
variables: { namespace: prod-ns, workload: aicoservice }
";

    pub(crate) const TWIN_A: &str = "
id: twin-a
schemaVersion: 1
name: twin a
environmentRef: test-a
serviceRef: twin
";

    pub(crate) const TWIN_B: &str = "
id: twin-b
schemaVersion: 1
name: twin b
environmentRef: test-a
serviceRef: twin
";

    pub(crate) const BASE: &str = "
id: base
schemaVersion: 1
name: Base layout
variables: { logDir: \"{{logRoot}}/{{appName}}\", tmp: /tmp }
paths:
  home: /opt/{{appName}}
  logs: /old/logs
logSources:
  - { id: app, path: /old/app.log, format: text }
  - { id: audit, path: \"{{logDir}}/audit.log\" }
classLocations:
  - /opt/{{appName}}/lib/*.jar
";

    pub(crate) const JAVA_COMMON: &str = "
id: java-common
schemaVersion: 1
name: Java service layout
extends: [base]
paths:
  config: /opt/{{ appName }}/conf
  logs: \"{{logDir}}\"
logSources:
  - { id: app, path: \"{{logDir}}/app.log\", format: logback }
  - { id: gc, path: \"{{logDir}}/gc.log\", format: text }
classLocations:
  - /opt/{{appName}}/lib/*.jar
  - /opt/aicoservice/lib/*.jar
  - /opt/{{appName}}/ext/*.jar
";

    /// The standard fixture registry.
    pub(crate) fn standard() -> Vec<(RecordKind, &'static str)> {
        use RecordKind::*;
        vec![
            (Environment, TEST_A),
            (Environment, PROD),
            (Service, AICO),
            (Service, TWIN),
            (Service, LONELY),
            (Deployment, DEPLOY_001),
            (Deployment, AICO_PROD),
            (Deployment, TWIN_A),
            (Deployment, TWIN_B),
            (RuleProfile, BASE),
            (RuleProfile, JAVA_COMMON),
        ]
    }

    pub(crate) fn no_default() -> Result<String, crate::EnvError> {
        Err(crate::EnvError::invalid_argument(
            "no environment: pass environmentId or set a session default",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{self, no_default};
    use super::*;
    use crate::diagnostic::Severity;
    use RecordKind::*;

    fn resolve(
        records: &[(RecordKind, &str)],
        env: Option<&str>,
        service: &str,
        deployment: Option<&str>,
    ) -> Result<ServiceContext, EnvError> {
        let snap = fixture::snapshot(records);
        resolve_in_snapshot(&snap, env, service, deployment, no_default)
    }

    fn standard_context() -> ServiceContext {
        resolve(&fixture::standard(), Some("test-a"), "aicoservice", None).unwrap()
    }

    #[test]
    fn resolves_the_data_model_example() {
        let ctx = standard_context();
        assert_eq!(ctx.environment.id, "test-a");
        assert_eq!(ctx.environment.platform, Platform::Kubernetes);
        assert_eq!(ctx.deployment.id, "deploy-001");
        assert_eq!(ctx.hosts.len(), 2);
        assert_eq!(ctx.paths["home"], "/opt/aicoservice");
        assert_eq!(ctx.paths["config"], "/opt/aicoservice/conf");
        assert_eq!(ctx.paths["logs"], "/data/logs/aicoservice");
        assert_eq!(ctx.variables["namespace"], "dv-sop");
        assert_eq!(ctx.variables["logDir"], "/data/logs/aicoservice");
        assert!(
            !ctx.variables.contains_key("env.id"),
            "built-ins are not output"
        );
        let logs = &ctx.provenance["paths.logs"];
        assert_eq!(logs.template, "{{logDir}}");
        assert_eq!(
            logs.from,
            vec![ValueOrigin {
                kind: RuleProfile,
                id: "base".into(),
                file: "rule-profiles/base.yaml".into(),
                path: "variables.logDir".into(),
            }]
        );
        assert_eq!(logs.defined_by.id, "java-common");
        assert_eq!(logs.defined_by.path, "paths.logs");
        assert_eq!(ctx.path_count(), 8);
        assert_eq!(ctx.variables.len(), 8);
    }

    #[test]
    fn profiles_merge_parents_first_by_key_by_id_and_without_duplicates() {
        let ctx = standard_context();
        // paths: child overrides the parent's `logs`, keeps the parent's key order.
        assert_eq!(
            ctx.paths.keys().collect::<Vec<_>>(),
            vec!["home", "logs", "config"]
        );
        // logSources: `app` replaced in place, `audit` kept, `gc` appended.
        let ids: Vec<(&str, &str, Option<&str>)> = ctx
            .log_sources
            .iter()
            .map(|s| (s.id.as_str(), s.path.as_str(), s.format.as_deref()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("app", "/data/logs/aicoservice/app.log", Some("logback")),
                ("audit", "/data/logs/aicoservice/audit.log", None),
                ("gc", "/data/logs/aicoservice/gc.log", Some("text")),
            ]
        );
        assert_eq!(
            ctx.provenance["logSources[0].path"].defined_by.id,
            "java-common"
        );
        assert_eq!(
            ctx.provenance["logSources[0].path"].defined_by.path,
            "logSources[0].path"
        );
        // classLocations: the repeated template dropped, and a literal equal to an
        // earlier resolved value dropped too.
        assert_eq!(
            ctx.class_locations,
            vec!["/opt/aicoservice/lib/*.jar", "/opt/aicoservice/ext/*.jar"]
        );
        assert_eq!(
            ctx.provenance["classLocations[1]"].template,
            "/opt/{{appName}}/ext/*.jar"
        );
    }

    #[test]
    fn every_resolved_value_has_provenance() {
        let ctx = standard_context();
        for key in ctx.paths.keys() {
            assert!(
                ctx.provenance.contains_key(&format!("paths.{key}")),
                "{key}"
            );
        }
        for key in ctx.variables.keys() {
            assert!(
                ctx.provenance.contains_key(&format!("variables.{key}")),
                "{key}"
            );
        }
        for i in 0..ctx.log_sources.len() {
            assert!(
                ctx.provenance
                    .contains_key(&format!("logSources[{i}].path"))
            );
        }
        for i in 0..ctx.class_locations.len() {
            assert!(ctx.provenance.contains_key(&format!("classLocations[{i}]")));
        }
        let literal = &ctx.provenance["variables.namespace"];
        assert!(literal.from.is_empty());
        assert_eq!(literal.defined_by.kind, Deployment);
        assert_eq!(literal.defined_by.file, "deployments/deploy-001.yaml");
    }

    #[test]
    fn later_layers_win_and_overrides_are_reported() {
        let mut records = fixture::standard();
        let svc = "
id: aicoservice
schemaVersion: 1
name: Aico Service
ruleProfileRefs: [java-common]
variables: { appName: aicoservice, logRoot: /svc/logs, namespace: svc-ns }
";
        records.retain(|(k, y)| !(*k == Service && y.contains("id: aicoservice")));
        records.push((Service, svc));
        let ctx = resolve(&records, Some("test-a"), "aicoservice", None).unwrap();
        // service beats environment, deployment beats service.
        assert_eq!(ctx.variables["logRoot"], "/svc/logs");
        assert_eq!(ctx.paths["logs"], "/svc/logs/aicoservice");
        assert_eq!(ctx.variables["namespace"], "dv-sop");
        let shadowed: Vec<&Diagnostic> = ctx
            .warnings
            .iter()
            .filter(|d| d.code == codes::VARIABLE_SHADOWED)
            .collect();
        assert_eq!(shadowed.len(), 2, "{shadowed:#?}");
        assert!(shadowed.iter().all(|d| d.severity == Severity::Info));
        assert_eq!(
            shadowed[0].file.as_deref(),
            Some("services/aicoservice.yaml")
        );
        assert_eq!(shadowed[0].path.as_deref(), Some("variables.logRoot"));
        assert!(
            shadowed[0].message.contains("environment test-a"),
            "{}",
            shadowed[0].message
        );
        assert_eq!(
            shadowed[1].file.as_deref(),
            Some("deployments/deploy-001.yaml")
        );
    }

    #[test]
    fn builtins_are_the_lowest_layer() {
        let mut records = fixture::standard();
        let dep = "
id: deploy-001
schemaVersion: 1
name: aicoservice on test-a
environmentRef: test-a
serviceRef: aicoservice
variables: { where: \"{{env.id}}/{{ env.tier }}/{{service.name}}/{{deployment.id}}/{{env.platform}}\" }
";
        records.retain(|(k, _)| *k != Deployment);
        records.push((Deployment, dep));
        let ctx = resolve(&records, Some("test-a"), "aicoservice", None).unwrap();
        assert_eq!(
            ctx.variables["where"],
            "test-a/test/Aico Service/deploy-001/kubernetes"
        );
        let from = &ctx.provenance["variables.where"].from;
        assert_eq!(from[0].kind, Environment);
        assert_eq!(from[0].path, "id");
        assert_eq!(from[3].kind, Deployment);
    }

    #[test]
    fn deployment_selection() {
        let records = fixture::standard();
        // Explicit.
        let ctx = resolve(&records, None, "aicoservice", Some("aico-prod")).unwrap();
        assert_eq!(
            ctx.environment.id, "prod",
            "the deployment implies its environment"
        );
        assert_eq!(ctx.paths["logs"], "/var/log/aicoservice");
        // Ambiguous.
        let err = resolve(&records, Some("test-a"), "twin", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::DeploymentAmbiguous);
        assert_eq!(
            err.details.unwrap()["candidates"],
            json!(["twin-a", "twin-b"])
        );
        // Disambiguated.
        assert_eq!(
            resolve(&records, Some("test-a"), "twin", Some("twin-b"))
                .unwrap()
                .deployment
                .id,
            "twin-b"
        );
        // None.
        let err = resolve(&records, Some("test-a"), "lonely", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::DeploymentNotFound);
        // Unknown id.
        let err = resolve(&records, Some("test-a"), "aicoservice", Some("nope")).unwrap_err();
        assert_eq!(err.code, ErrorCode::DeploymentNotFound);
        // Contradictions are refused, not corrected.
        let err = resolve(&records, Some("test-a"), "aicoservice", Some("aico-prod")).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        let err = resolve(&records, Some("test-a"), "twin", Some("deploy-001")).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn environment_defaults_and_not_found() {
        let snap = fixture::snapshot(&fixture::standard());
        let ctx =
            resolve_in_snapshot(&snap, None, "aicoservice", None, || Ok("prod".into())).unwrap();
        assert_eq!(ctx.deployment.id, "aico-prod");
        let err = resolve_in_snapshot(&snap, None, "aicoservice", None, no_default).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        let err = resolve_in_snapshot(&snap, Some("test-z"), "aicoservice", None, no_default)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::EnvNotFound);
        let err =
            resolve_in_snapshot(&snap, Some("test-a"), "nosuch", None, no_default).unwrap_err();
        assert_eq!(err.code, ErrorCode::ServiceNotFound);
        for bad in ["../etc", "Test-A", "a/b"] {
            let err =
                resolve_in_snapshot(&snap, Some(bad), "aicoservice", None, no_default).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn rule_profile_cycle_is_an_error() {
        let mut records = fixture::standard();
        records.retain(|(k, _)| *k != RuleProfile);
        records.push((
            RuleProfile,
            "id: java-common\nschemaVersion: 1\nname: J\nextends: [base]\n",
        ));
        records.push((
            RuleProfile,
            "id: base\nschemaVersion: 1\nname: B\nextends: [java-common]\n",
        ));
        let err = resolve(&records, Some("test-a"), "aicoservice", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::RuleProfileCycle);
        let cycle = err.details.unwrap()["cycle"].clone();
        assert_eq!(cycle, json!(["java-common", "base", "java-common"]));
    }

    #[test]
    fn missing_profiles_fail_instead_of_dropping_a_layer() {
        let mut records = fixture::standard();
        records.retain(|(k, _)| *k != RuleProfile);
        let err = resolve(&records, Some("test-a"), "aicoservice", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::RuleProfileNotFound);
        assert!(
            err.message.contains("ruleProfileRefs[0]"),
            "{}",
            err.message
        );

        records.push((RuleProfile, fixture::JAVA_COMMON));
        let err = resolve(&records, Some("test-a"), "aicoservice", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::RuleProfileNotFound);
        assert!(err.message.contains("extends[0]"), "{}", err.message);
    }

    #[test]
    fn diamond_profiles_apply_once() {
        let mut records = fixture::standard();
        records.retain(|(k, y)| !(*k == Deployment && y.contains("id: deploy-001")));
        // The deployment adds `base` again after java-common: it must not re-override
        // java-common's `logs` with base's `/old/logs`.
        records.push((
            Deployment,
            "id: deploy-001\nschemaVersion: 1\nname: d\nenvironmentRef: test-a\nserviceRef: aicoservice\nruleProfileRefs: [base]\n",
        ));
        let ctx = resolve(&records, Some("test-a"), "aicoservice", None).unwrap();
        assert_eq!(ctx.paths["logs"], "/data/logs/aicoservice");
    }

    #[test]
    fn unknown_variable_names_template_field_name_and_layers() {
        let mut records = fixture::standard();
        records.retain(|(k, y)| !(*k == Environment && y.contains("id: test-a")));
        records.push((
            Environment,
            "id: test-a\nschemaVersion: 1\nname: A\ntier: test\nplatform: vm\n",
        ));
        let err = resolve(&records, Some("test-a"), "aicoservice", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::ParameterResolutionFailed);
        let d = err.details.clone().unwrap();
        assert_eq!(d["missing"], "logRoot");
        assert_eq!(d["field"], "paths.logs");
        assert_eq!(d["template"], "{{logDir}}");
        assert_eq!(d["via"], json!(["logDir"]));
        let layers: Vec<String> = serde_json::from_value(d["layers"].clone()).unwrap();
        assert_eq!(
            layers,
            vec![
                "built-ins",
                "ruleProfile base (rule-profiles/base.yaml)",
                "ruleProfile java-common (rule-profiles/java-common.yaml)",
                "environment test-a (environments/test-a.yaml)",
                "service aicoservice (services/aicoservice.yaml)",
                "deployment deploy-001 (deployments/deploy-001.yaml)",
            ]
        );
        assert!(err.message.contains("paths.logs"), "{}", err.message);
        assert!(
            err.message.contains("unknown variable logRoot"),
            "{}",
            err.message
        );
        assert!(err.message.contains("built-ins"), "{}", err.message);
    }

    #[test]
    fn variable_cycle_is_parameter_resolution_failed() {
        let mut records = fixture::standard();
        records.retain(|(k, y)| !(*k == Deployment && y.contains("id: deploy-001")));
        records.push((
            Deployment,
            "id: deploy-001\nschemaVersion: 1\nname: d\nenvironmentRef: test-a\nserviceRef: aicoservice\nvariables: { appName: \"{{x}}\", x: \"{{appName}}-x\" }\n",
        ));
        let err = resolve(&records, Some("test-a"), "aicoservice", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::ParameterResolutionFailed);
        let d = err.details.unwrap();
        assert_eq!(d["reason"], "cycle");
        assert_eq!(d["cycle"], json!(["appName", "x", "appName"]));
    }

    #[test]
    fn malformed_template_is_parameter_resolution_failed_with_template_invalid_reason() {
        let mut records = fixture::standard();
        records.retain(|(k, y)| !(*k == Service && y.contains("id: aicoservice")));
        records.push((
            Service,
            "id: aicoservice\nschemaVersion: 1\nname: A\nruleProfileRefs: [java-common]\nvariables: { appName: \"{{oops\" }\n",
        ));
        let err = resolve(&records, Some("test-a"), "aicoservice", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::ParameterResolutionFailed);
        let d = err.details.unwrap();
        assert_eq!(d["reason"], "TEMPLATE_INVALID");
        assert_eq!(d["variable"], "appName");
    }

    #[test]
    fn credentials_report_presence_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kubeconfig");
        std::fs::write(&file, "not-read").unwrap();
        let env = format!(
            "id: test-a\nschemaVersion: 1\nname: A\ntier: test\nplatform: vm\nvariables: {{ logRoot: /l }}\ncredentials:\n  - {{ ref: present-file, source: \"file:{}\" }}\n  - {{ ref: absent-file, source: \"file:{}/nope\" }}\n  - {{ ref: unset-env, source: \"env:ENVREG_FIXTURE_SURELY_UNSET_VARIABLE\" }}\n  - {{ ref: path-env, source: \"env:PATH\" }}\n",
            file.display(),
            dir.path().display()
        );
        let mut records = fixture::standard();
        records.retain(|(k, y)| !(*k == Environment && y.contains("id: test-a")));
        let env: &'static str = Box::leak(env.into_boxed_str());
        records.push((Environment, env));
        let ctx = resolve(&records, Some("test-a"), "aicoservice", None).unwrap();
        let got: Vec<(&str, bool, CredentialSourceKind)> = ctx
            .credentials
            .iter()
            .map(|c| (c.reference.as_str(), c.configured, c.source))
            .collect();
        assert_eq!(
            got,
            vec![
                ("present-file", true, CredentialSourceKind::File),
                ("absent-file", false, CredentialSourceKind::File),
                ("unset-env", false, CredentialSourceKind::Env),
                ("path-env", true, CredentialSourceKind::Env),
            ]
        );
        let missing: Vec<&str> = ctx
            .warnings
            .iter()
            .filter(|d| d.code == codes::CREDENTIAL_MISSING)
            .map(|d| d.path.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(missing, vec!["credentials[1]", "credentials[2]"]);
        let json = serde_json::to_string(&ctx).unwrap();
        assert!(
            !json.contains("not-read"),
            "a credential file is never read"
        );
        let path_value = std::env::var("PATH").unwrap();
        assert!(
            !json.contains(&path_value),
            "an env credential value is never output"
        );
        assert_eq!(
            serde_json::to_value(&ctx.credentials[0]).unwrap(),
            json!({ "ref": "present-file", "configured": true, "source": "file" })
        );
    }

    /// The canary secret: set in a child process's environment as the value of a
    /// credential's env var, it must appear in no output and no error.
    const CANARY: &str = "canary-7Qx2-envreg-secret-value-0f3a9c";
    const CANARY_VAR: &str = "ENVREG_CANARY_SECRET_FOR_TEST";

    #[test]
    fn canary_secret_appears_in_no_output_or_error() {
        // Rust 2024 makes `set_var` unsafe (and this workspace denies unsafe), so the
        // test re-runs itself in a child process whose environment holds the canary.
        if std::env::var_os(CANARY_VAR).is_none() {
            let exe = std::env::current_exe().unwrap();
            let out = std::process::Command::new(exe)
                .args([
                    "--exact",
                    "resolve::tests::canary_secret_appears_in_no_output_or_error",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CANARY_VAR, CANARY)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
            assert!(
                stdout.contains("1 passed"),
                "the child did not run the test:\n{stdout}"
            );
            assert!(!stdout.contains(CANARY) && !stderr.contains(CANARY));
            return;
        }

        let mut outputs: Vec<String> = Vec::new();
        let env = "id: test-a\nschemaVersion: 1\nname: A\ntier: test\nplatform: kubernetes\nvariables: { logRoot: /data/logs, cluster: k8s-01 }\ncredentials:\n  - { ref: kube-test-a, source: \"env:ENVREG_CANARY_SECRET_FOR_TEST\" }\n";
        let mut records = fixture::standard();
        records.retain(|(k, y)| !(*k == Environment && y.contains("id: test-a")));
        records.push((Environment, env));
        records.push((
            OperationBinding,
            "id: b\nschemaVersion: 1\nname: b\noperation: restart\nmatch: {}\nskill: { name: nope }\nparameters: { kube: \"{{cluster}}\" }\npolicy: { allowProduction: true }\n",
        ));
        let snap = fixture::snapshot(&records);

        let ctx =
            resolve_in_snapshot(&snap, Some("test-a"), "aicoservice", None, no_default).unwrap();
        assert!(ctx.credentials[0].configured, "the child sees the variable");
        outputs.push(serde_json::to_string(&ctx).unwrap());
        outputs.push(format!("{ctx:?}"));
        outputs.push(crate::tools::render_line(
            "env_resolve",
            &json!({}),
            &serde_json::to_value(&ctx).unwrap(),
        ));

        // Errors on the same registry: every code this module raises.
        let errors = [
            resolve_in_snapshot(&snap, Some("test-a"), "twin", None, no_default),
            resolve_in_snapshot(&snap, Some("test-a"), "lonely", None, no_default),
            resolve_in_snapshot(&snap, Some("nope"), "aicoservice", None, no_default),
            resolve_in_snapshot(&snap, None, "aicoservice", None, no_default),
        ];
        for err in errors {
            let err = err.unwrap_err();
            outputs.push(err.to_string());
            outputs.push(serde_json::to_string(&err).unwrap());
        }
        let skills = tempfile::tempdir().unwrap();
        let catalog =
            crate::skills::SkillCatalog::from_locations(vec![crate::skills::SkillLocation {
                source: crate::skills::SkillSource::Custom,
                dir: skills.path().to_path_buf(),
                configured: true,
            }]);
        for result in [
            crate::operation::resolve_operation_in_snapshot(
                &snap,
                &catalog,
                "restart",
                Some("test-a"),
                Some("aicoservice"),
                None,
                no_default,
            ),
            crate::operation::resolve_operation_in_snapshot(
                &snap,
                &catalog,
                "restart",
                Some("test-a"),
                Some("twin"),
                None,
                no_default,
            ),
        ] {
            match result {
                Ok(v) => outputs.push(serde_json::to_string(&v).unwrap()),
                Err(e) => {
                    outputs.push(e.to_string());
                    outputs.push(serde_json::to_string(&e).unwrap());
                }
            }
        }
        assert!(outputs.len() >= 12);
        for output in &outputs {
            assert!(!output.contains(CANARY), "canary leaked into: {output}");
        }
    }

    /// Issue 19 finding 4: a VM service inside a Kubernetes environment showed the
    /// environment's platform and all its cluster nodes as its hosts. A deployment's own
    /// `platform` and `hosts` now replace the environment's for it; one without them
    /// resolves exactly as before.
    #[test]
    fn a_deployment_with_its_own_platform_and_hosts_replaces_the_environments() {
        let vm = "
id: aico-vm
schemaVersion: 1
name: aicoservice on two VMs
environmentRef: test-a
serviceRef: lonely
platform: vm
hosts:
  - { id: vm-1, address: 10.30.0.1, roles: [app] }
variables: { where: \"{{deployment.platform}}/{{env.platform}}\" }
";
        let mut records = fixture::standard();
        records.push((RecordKind::Deployment, vm));
        let ctx = resolve(&records, Some("test-a"), "lonely", None).unwrap();
        assert_eq!(ctx.deployment.platform, Some(Platform::Vm));
        assert_eq!(ctx.environment.platform, Platform::Kubernetes);
        let hosts: Vec<&str> = ctx.hosts.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(hosts, ["vm-1"]);
        assert_eq!(ctx.variables["where"], "vm/kubernetes");
        let json = serde_json::to_value(&ctx).unwrap();
        assert_eq!(json["deployment"]["platform"], "vm");

        let plain = standard_context();
        assert_eq!(plain.deployment.platform, None);
        assert_eq!(plain.hosts.len(), 2);
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json["deployment"].get("platform").is_none());
    }

    #[test]
    fn output_shape_snapshot() {
        insta::assert_json_snapshot!("service_context", standard_context());
    }
}
