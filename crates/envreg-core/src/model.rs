//! The typed record model: one struct per kind, the fields data model §2–§3 names.
//!
//! These structs are the single description of a record: loading deserializes YAML
//! straight into them (so a wrong type is a `RECORD_INVALID` with a line and column),
//! validation reads them, and [`crate::schema`] derives each kind's JSON Schema from
//! them, so the schema an editor checks against and the checks the registry runs cannot
//! disagree.
//!
//! Unknown fields are *not* modelled here: the typed view ignores them, and the on-disk
//! text ([`Record::text`]) stays the source of truth for `env_get` and for what `env_save`
//! writes, which is how unknown fields survive load → get → save.
//!
//! This module knows no parser: [`Record::document`], which re-parses the text, is
//! defined in [`crate::load`], so the loader depends on the model and never the reverse.
//!
//! Variable and parameter values are templates (strings). YAML scalars that are numbers
//! or booleans (`port: 8080`) are accepted and kept as their text, because an operator
//! writing `replicas: 3` means the string `3` in a path or parameter.

use std::sync::Arc;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::kind::RecordKind;

/// A map of template strings (`variables`, `paths`, `parameters`).
pub type TemplateMap = IndexMap<String, String>;

/// The schema of a template-map value: what the loader accepts.
#[derive(JsonSchema)]
#[schemars(untagged)]
#[allow(dead_code)] // exists only to describe the accepted shapes in the JSON Schema
enum ScalarSchema {
    String(String),
    Number(f64),
    Bool(bool),
}

fn scalar_map<'de, D: Deserializer<'de>>(d: D) -> Result<TemplateMap, D::Error> {
    let raw: IndexMap<String, Scalar> = IndexMap::deserialize(d)?;
    Ok(raw.into_iter().map(|(k, v)| (k, v.0)).collect())
}

/// A YAML scalar kept as its text.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The fields every record has (data model §2), read without allocation of the rest.
pub trait CommonFields {
    fn id(&self) -> &str;
    fn schema_version(&self) -> i64;
    fn name(&self) -> &str;
    fn description(&self) -> Option<&str>;
    fn aliases(&self) -> &[String];
    fn category(&self) -> Option<&str>;
    fn labels(&self) -> &IndexMap<String, String>;
    fn created_at(&self) -> Option<&str>;
    fn updated_at(&self) -> Option<&str>;
}

/// Declares a record struct with the common fields of data model §2 followed by the
/// kind's own fields. A macro rather than `#[serde(flatten)]`: flatten buffers every
/// document into an intermediate map, which would cost the cold load its budget.
macro_rules! record_struct {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// Equals the file stem. `^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$`, no `..`.
            #[schemars(regex(pattern = r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$"), length(max = 64))]
            pub id: String,
            /// Always `1` in this version.
            #[schemars(range(min = 1, max = 1))]
            pub schema_version: i64,
            /// Human name, 1–200 characters.
            #[schemars(length(min = 1, max = 200))]
            pub name: String,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub description: Option<String>,
            /// Other names `env_find` and `env_list --query` match.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub aliases: Vec<String>,
            /// Free-form grouping `env_find` matches.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub category: Option<String>,
            #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
            pub labels: IndexMap<String, String>,
            /// Set by the registry on save (RFC 3339); a supplied value is ignored.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(extend("format" = "date-time"))]
            pub created_at: Option<String>,
            /// Set by the registry on save (RFC 3339); a supplied value is ignored.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(extend("format" = "date-time"))]
            pub updated_at: Option<String>,
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl CommonFields for $name {
            fn id(&self) -> &str { &self.id }
            fn schema_version(&self) -> i64 { self.schema_version }
            fn name(&self) -> &str { &self.name }
            fn description(&self) -> Option<&str> { self.description.as_deref() }
            fn aliases(&self) -> &[String] { &self.aliases }
            fn category(&self) -> Option<&str> { self.category.as_deref() }
            fn labels(&self) -> &IndexMap<String, String> { &self.labels }
            fn created_at(&self) -> Option<&str> { self.created_at.as_deref() }
            fn updated_at(&self) -> Option<&str> { self.updated_at.as_deref() }
        }
    };
}

/// `dev | test | staging | production`. `production` triggers contract §1.3 approval
/// and binding `allowProduction` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    Dev,
    Test,
    Staging,
    Production,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Dev => "dev",
            Tier::Test => "test",
            Tier::Staging => "staging",
            Tier::Production => "production",
        }
    }
}

/// `kubernetes | vm | docker | bare-metal | other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    Kubernetes,
    Vm,
    Docker,
    BareMetal,
    Other,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Kubernetes => "kubernetes",
            Platform::Vm => "vm",
            Platform::Docker => "docker",
            Platform::BareMetal => "bare-metal",
            Platform::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Host {
    pub id: String,
    pub address: String,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// A credential *reference*: where the secret lives, never the secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialRef {
    #[serde(rename = "ref")]
    pub reference: String,
    /// `env:VAR_NAME` or `file:PATH` (`~/` expands to the home directory).
    #[schemars(regex(pattern = r"^(env|file):.+$"))]
    pub source: String,
}

/// Where a credential source points, parsed from `env:…` / `file:…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource<'a> {
    Env(&'a str),
    File(&'a str),
}

impl CredentialRef {
    /// The parsed source, `None` when it has neither prefix.
    pub fn parsed_source(&self) -> Option<CredentialSource<'_>> {
        if let Some(var) = self.source.strip_prefix("env:") {
            Some(CredentialSource::Env(var))
        } else {
            self.source
                .strip_prefix("file:")
                .map(CredentialSource::File)
        }
    }

    /// Whether the secret is present (env var set and non-empty, or file exists).
    /// Only presence is checked: the value is never read.
    pub fn is_configured(&self) -> bool {
        match self.parsed_source() {
            Some(CredentialSource::Env(var)) => {
                std::env::var_os(var).is_some_and(|v| !v.is_empty())
            }
            Some(CredentialSource::File(path)) => expand_home(path).is_some_and(|p| p.exists()),
            None => false,
        }
    }

    /// `"env"` or `"file"` (the `source` of the contract's `{ref, configured, source}`).
    pub fn source_kind(&self) -> &'static str {
        match self.parsed_source() {
            Some(CredentialSource::Env(_)) => "env",
            Some(CredentialSource::File(_)) => "file",
            None => "unknown",
        }
    }
}

fn expand_home(path: &str) -> Option<std::path::PathBuf> {
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map(|h| h.join(rest)),
        None => Some(std::path::PathBuf::from(path)),
    }
}

record_struct! {
    /// Where things run (data model §3 `environment`).
    pub struct Environment {
        pub tier: Tier,
        pub platform: Platform,
        #[serde(default)]
        pub hosts: Vec<Host>,
        #[serde(default, deserialize_with = "scalar_map")]
        #[schemars(with = "IndexMap<String, ScalarSchema>")]
        pub variables: TemplateMap,
        #[serde(default)]
        pub credentials: Vec<CredentialRef>,
    }
}

record_struct! {
    /// What runs (data model §3 `service`).
    pub struct Service {
        #[serde(default)]
        pub rule_profile_refs: Vec<String>,
        #[serde(default, deserialize_with = "scalar_map")]
        #[schemars(with = "IndexMap<String, ScalarSchema>")]
        pub variables: TemplateMap,
    }
}

record_struct! {
    /// One service placed in one environment (data model §3 `deployment`).
    pub struct Deployment {
        pub environment_ref: String,
        pub service_ref: String,
        /// This deployment's own platform, replacing its environment's (a mixed estate:
        /// VM services inside a Kubernetes environment). Absent: the environment's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub platform: Option<Platform>,
        /// This deployment's own hosts, replacing its environment's in its Service
        /// Context. Absent: the environment's; `[]`: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub hosts: Option<Vec<Host>>,
        /// Applied after the service's profiles.
        #[serde(default)]
        pub rule_profile_refs: Vec<String>,
        #[serde(default, deserialize_with = "scalar_map")]
        #[schemars(with = "IndexMap<String, ScalarSchema>")]
        pub variables: TemplateMap,
    }
}

/// A log source of a rule profile; merged by `id` across profiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogSource {
    pub id: String,
    /// A template.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

record_struct! {
    /// Reusable layout rules (data model §3 `ruleProfile`).
    pub struct RuleProfile {
        /// Parent profiles, applied before this one (depth-first, parents first).
        #[serde(default)]
        pub extends: Vec<String>,
        #[serde(default, deserialize_with = "scalar_map")]
        #[schemars(with = "IndexMap<String, ScalarSchema>")]
        pub variables: TemplateMap,
        #[serde(default, deserialize_with = "scalar_map")]
        #[schemars(with = "IndexMap<String, ScalarSchema>")]
        pub paths: TemplateMap,
        #[serde(default)]
        pub log_sources: Vec<LogSource>,
        #[serde(default)]
        pub class_locations: Vec<String>,
    }
}

/// What a binding applies to; any subset, `{}` is global.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingMatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_ref: Option<String>,
}

/// The match level of data model §7, most specific first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum MatchLevel {
    Deployment,
    EnvironmentService,
    Service,
    Environment,
    Global,
}

impl BindingMatch {
    /// The level this match sits at. A match naming a deployment is `deployment`
    /// whatever else it names.
    pub fn level(&self) -> MatchLevel {
        match (
            &self.deployment_ref,
            &self.environment_ref,
            &self.service_ref,
        ) {
            (Some(_), _, _) => MatchLevel::Deployment,
            (None, Some(_), Some(_)) => MatchLevel::EnvironmentService,
            (None, None, Some(_)) => MatchLevel::Service,
            (None, Some(_), None) => MatchLevel::Environment,
            (None, None, None) => MatchLevel::Global,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// Binding policy. Defaults fail closed: approval required, production not allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingPolicy {
    #[serde(default = "yes")]
    pub requires_approval: bool,
    #[serde(default)]
    pub allow_production: bool,
}

fn yes() -> bool {
    true
}

impl Default for BindingPolicy {
    fn default() -> BindingPolicy {
        BindingPolicy {
            requires_approval: true,
            allow_production: false,
        }
    }
}

record_struct! {
    /// Which Skill performs an operation (data model §3 `operationBinding`).
    pub struct OperationBinding {
        /// A standard id (`deploy`, `redeploy`, `restart`, `rollback`, `collect-logs`,
        /// `health-check`) or a custom id.
        pub operation: String,
        #[serde(default, rename = "match")]
        pub matches: BindingMatch,
        pub skill: SkillRef,
        #[serde(default, deserialize_with = "scalar_map")]
        #[schemars(with = "IndexMap<String, ScalarSchema>")]
        pub parameters: TemplateMap,
        #[serde(default)]
        pub policy: BindingPolicy,
    }
}

/// The standard operation ids (data model §3).
pub const STANDARD_OPERATIONS: [&str; 6] = [
    "deploy",
    "redeploy",
    "restart",
    "rollback",
    "collect-logs",
    "health-check",
];

/// The typed body of a loaded record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    Environment(Environment),
    Service(Service),
    Deployment(Deployment),
    RuleProfile(RuleProfile),
    OperationBinding(OperationBinding),
}

impl RecordBody {
    pub fn kind(&self) -> RecordKind {
        match self {
            RecordBody::Environment(_) => RecordKind::Environment,
            RecordBody::Service(_) => RecordKind::Service,
            RecordBody::Deployment(_) => RecordKind::Deployment,
            RecordBody::RuleProfile(_) => RecordKind::RuleProfile,
            RecordBody::OperationBinding(_) => RecordKind::OperationBinding,
        }
    }

    /// The common fields, whatever the kind.
    pub fn common(&self) -> &dyn CommonFields {
        match self {
            RecordBody::Environment(r) => r,
            RecordBody::Service(r) => r,
            RecordBody::Deployment(r) => r,
            RecordBody::RuleProfile(r) => r,
            RecordBody::OperationBinding(r) => r,
        }
    }
}

/// One loaded record: its typed body, the file it came from and that file's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub body: RecordBody,
    /// Registry-relative path with `/` separators, e.g. `services/aicoservice.yaml`.
    pub file: String,
    /// The on-disk text, verbatim (what `env_get` returns as `yaml`).
    pub text: Arc<str>,
}

impl Deployment {
    /// The platform this deployment runs on: its own, else its environment's.
    pub fn effective_platform(&self, environment: &Environment) -> Platform {
        self.platform.unwrap_or(environment.platform)
    }

    /// The hosts this deployment runs on: its own, else its environment's.
    pub fn effective_hosts<'a>(&'a self, environment: &'a Environment) -> &'a [Host] {
        self.hosts.as_deref().unwrap_or(&environment.hosts)
    }
}

impl Record {
    pub fn kind(&self) -> RecordKind {
        self.body.kind()
    }

    pub fn id(&self) -> &str {
        self.body.common().id()
    }

    pub fn name(&self) -> &str {
        self.body.common().name()
    }

    pub fn common(&self) -> &dyn CommonFields {
        self.body.common()
    }

    pub fn as_environment(&self) -> Option<&Environment> {
        match &self.body {
            RecordBody::Environment(r) => Some(r),
            _ => None,
        }
    }

    pub fn as_service(&self) -> Option<&Service> {
        match &self.body {
            RecordBody::Service(r) => Some(r),
            _ => None,
        }
    }

    pub fn as_deployment(&self) -> Option<&Deployment> {
        match &self.body {
            RecordBody::Deployment(r) => Some(r),
            _ => None,
        }
    }

    pub fn as_rule_profile(&self) -> Option<&RuleProfile> {
        match &self.body {
            RecordBody::RuleProfile(r) => Some(r),
            _ => None,
        }
    }

    pub fn as_operation_binding(&self) -> Option<&OperationBinding> {
        match &self.body {
            RecordBody::OperationBinding(r) => Some(r),
            _ => None,
        }
    }
}
