//! Synthetic registries for benchmarks, load tests and fuzz seeds.
//!
//! [`generate`] writes a registry of [`SynthSpec`] size (by default the issue's
//! 10,000 records: 100 environments, 2,000 services, 6,000 deployments, 200 rule
//! profiles, 1,700 operation bindings) that validates without errors, so every resolve
//! the benchmarks run takes the full, successful path. It is deterministic: the same
//! spec always writes byte-identical files (no clock, no randomness), so figures from
//! two runs compare like for like.
//!
//! Shape: each service is deployed in three distinct environments (no ambiguity); rule
//! profiles extend each other in chains of up to four, with templates that reference
//! environment, service and deployment variables; bindings cover every match level
//! without two sharing an operation and a match (no `BINDING_CONFLICT`); the skills
//! they name exist under `skills/` (configured in `envreg.yaml`).

use std::fmt::Write as _;
use std::path::Path;

use crate::model::STANDARD_OPERATIONS;

/// How many records of each kind to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthSpec {
    pub environments: usize,
    pub services: usize,
    /// Each deployment places a service in an environment; at most
    /// `services * environments`, and at most 3 per service are distinct by design.
    pub deployments: usize,
    pub rule_profiles: usize,
    pub bindings: usize,
}

impl Default for SynthSpec {
    fn default() -> SynthSpec {
        SynthSpec {
            environments: 100,
            services: 2000,
            deployments: 6000,
            rule_profiles: 200,
            bindings: 1700,
        }
    }
}

impl SynthSpec {
    /// A spec scaled down by `divisor` (at least one of each kind), for quick tests.
    pub fn scaled_down(divisor: usize) -> SynthSpec {
        let d = divisor.max(1);
        let s = SynthSpec::default();
        SynthSpec {
            environments: (s.environments / d).max(3),
            services: (s.services / d).max(1),
            deployments: (s.deployments / d).max(1),
            rule_profiles: (s.rule_profiles / d).max(1),
            bindings: (s.bindings / d).max(1),
        }
    }

    pub fn total(&self) -> usize {
        self.environments + self.services + self.deployments + self.rule_profiles + self.bindings
    }
}

/// Ids to query a generated registry with: a deployment and its environment and
/// service, and an operation bound at environment-service level for exactly them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthSample {
    pub environment: String,
    pub service: String,
    pub deployment: String,
    pub operation: String,
    /// A fragment `env_find` matches on many records.
    pub find_query: String,
}

pub fn environment_id(i: usize) -> String {
    format!("env-{i:03}")
}
pub fn service_id(i: usize) -> String {
    format!("svc-{i:04}")
}
pub fn deployment_id(i: usize) -> String {
    format!("dep-{i:05}")
}
pub fn profile_id(i: usize) -> String {
    format!("profile-{i:03}")
}
pub fn binding_id(i: usize) -> String {
    format!("binding-{i:05}")
}

const SKILLS: [&str; 6] = [
    "deploy-helm",
    "redeploy-k8s-service",
    "k8s-rolling-restart",
    "rollback-release",
    "collect-logs-ssh",
    "http-health-check",
];

/// The (environment, service) of deployment `i`: services round-robin, each service's
/// k-th deployment in a different environment.
fn placement(spec: &SynthSpec, i: usize) -> (usize, usize) {
    let service = i % spec.services;
    let round = i / spec.services;
    let env = (service + round * 33 + round) % spec.environments;
    (env, service)
}

/// The sample the benchmarks query: deployment 0, which binding 6+envs*2 covers.
pub fn sample(spec: &SynthSpec) -> SynthSample {
    let (env, service) = placement(spec, 0);
    SynthSample {
        environment: environment_id(env),
        service: service_id(service),
        deployment: deployment_id(0),
        operation: "redeploy".to_owned(),
        find_query: "svc-01".to_owned(),
    }
}

/// Write a synthetic registry into `root` (created if missing; existing files of the
/// same names are overwritten).
pub fn generate(root: &Path, spec: &SynthSpec) -> std::io::Result<()> {
    assert_feasible(spec)?;
    for kind in crate::RecordKind::ALL {
        std::fs::create_dir_all(root.join(kind.dir_name()))?;
    }
    std::fs::write(
        root.join("envreg.yaml"),
        format!(
            "limits: {{ maxRecords: {}, maxRecordBytes: 262144 }}\nskills: {{ dirs: [skills] }}\n",
            spec.total().max(10_000)
        ),
    )?;
    for skill in SKILLS {
        let dir = root.join("skills").join(skill);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: {skill}\ndescription: Synthetic skill {skill}.\n---\n\nDoes {skill}.\n"
            ),
        )?;
    }
    for i in 0..spec.environments {
        write_record(root, "environments", &environment_id(i), &environment(i))?;
    }
    for i in 0..spec.rule_profiles {
        write_record(root, "rule-profiles", &profile_id(i), &rule_profile(i))?;
    }
    for i in 0..spec.services {
        write_record(root, "services", &service_id(i), &service(spec, i))?;
    }
    for i in 0..spec.deployments {
        write_record(root, "deployments", &deployment_id(i), &deployment(spec, i))?;
    }
    for i in 0..spec.bindings {
        write_record(
            root,
            "operation-bindings",
            &binding_id(i),
            &binding(spec, i),
        )?;
    }
    Ok(())
}

fn assert_feasible(spec: &SynthSpec) -> std::io::Result<()> {
    let bad = |why: &str| {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            why.to_owned(),
        ))
    };
    if spec.environments < 3 || spec.services == 0 || spec.rule_profiles == 0 {
        return bad("need at least 3 environments, 1 service and 1 rule profile");
    }
    if spec.deployments > spec.services * 3 || spec.deployments > spec.services * spec.environments
    {
        return bad("at most 3 deployments per service");
    }
    if spec.bindings > STANDARD_OPERATIONS.len() + spec.environments * 2 + spec.deployments {
        return bad("too many bindings for distinct matches");
    }
    Ok(())
}

fn write_record(root: &Path, dir: &str, id: &str, body: &str) -> std::io::Result<()> {
    std::fs::write(root.join(dir).join(format!("{id}.yaml")), body)
}

fn header(out: &mut String, id: &str, name: &str) {
    let _ = write!(out, "id: {id}\nschemaVersion: 1\nname: {name}\n");
}

fn environment(i: usize) -> String {
    let mut s = String::with_capacity(512);
    let id = environment_id(i);
    header(&mut s, &id, &format!("Environment {i}"));
    let tier = ["dev", "test", "staging", "production"][i % 4];
    let platform = ["kubernetes", "vm", "docker", "bare-metal"][i % 4];
    let _ = write!(
        s,
        "description: Synthetic environment number {i}.\ntier: {tier}\nplatform: {platform}\nlabels: {{ region: r{}, team: t{} }}\nhosts:\n",
        i % 7,
        i % 13
    );
    for h in 0..3 {
        let _ = writeln!(
            s,
            "  - {{ id: node-{h}, address: 10.{}.{}.{}, roles: [worker] }}",
            i / 250,
            i % 250,
            h + 1
        );
    }
    let _ = write!(
        s,
        "variables:\n  logRoot: /data/logs/{id}\n  cluster: k8s-{:02}\n  domain: {id}.example.internal\ncredentials:\n  - {{ ref: kube-{id}, source: \"env:PATH\" }}\n",
        i % 10
    );
    s
}

fn rule_profile(i: usize) -> String {
    let mut s = String::with_capacity(512);
    header(&mut s, &profile_id(i), &format!("Layout {i}"));
    // Chains of four: profile 4k+1 extends 4k, 4k+2 extends 4k+1, ...
    if !i.is_multiple_of(4) {
        let _ = writeln!(s, "extends: [{}]", profile_id(i - 1));
    }
    let _ = write!(
        s,
        "variables:\n  logDir{i}: \"{{{{logRoot}}}}/{{{{appName}}}}/p{i}\"\n  home: /opt/{{{{appName}}}}\npaths:\n  home{i}: \"{{{{home}}}}\"\n  config{i}: \"{{{{home}}}}/conf\"\n  logs{i}: \"{{{{logDir{i}}}}}\"\nlogSources:\n  - {{ id: app, path: \"{{{{logDir{i}}}}}/app.log\", format: logback }}\n  - {{ id: gc{i}, path: \"{{{{logDir{i}}}}}/gc.log\", format: text }}\nclassLocations:\n  - \"{{{{home}}}}/lib/*.jar\"\n  - \"{{{{home}}}}/plugins{i}/*.jar\"\n"
    );
    s
}

fn service(spec: &SynthSpec, i: usize) -> String {
    let mut s = String::with_capacity(400);
    let id = service_id(i);
    header(&mut s, &id, &format!("Service {i}"));
    let _ = write!(
        s,
        "aliases: [s{i}, app{i}]\ncategory: {}\nruleProfileRefs: [{}]\nvariables:\n  appName: {id}\n  mainClass: com.example.s{i}.Application\n  port: {}\n",
        ["backend", "frontend", "batch", "data"][i % 4],
        profile_id(i % spec.rule_profiles),
        8000 + i % 1000
    );
    s
}

fn deployment(spec: &SynthSpec, i: usize) -> String {
    let mut s = String::with_capacity(400);
    let (env, service) = placement(spec, i);
    header(
        &mut s,
        &deployment_id(i),
        &format!("{} on {}", service_id(service), environment_id(env)),
    );
    let _ = write!(
        s,
        "environmentRef: {}\nserviceRef: {}\nruleProfileRefs: [{}]\nvariables:\n  namespace: ns-{}\n  workload: {}\n  replicas: {}\n",
        environment_id(env),
        service_id(service),
        profile_id((i * 7 + 3) % spec.rule_profiles),
        env % 20,
        service_id(service),
        1 + i % 5
    );
    s
}

fn binding(spec: &SynthSpec, i: usize) -> String {
    let mut s = String::with_capacity(400);
    let globals = STANDARD_OPERATIONS.len();
    let env_level = spec.environments * 2;
    let (operation, matches, skill) = if i < globals {
        (
            STANDARD_OPERATIONS[i].to_owned(),
            "{}".to_owned(),
            SKILLS[i],
        )
    } else if i < globals + env_level {
        let j = i - globals;
        let op = if j.is_multiple_of(2) {
            "restart"
        } else {
            "health-check"
        };
        (
            op.to_owned(),
            format!("{{ environmentRef: {} }}", environment_id(j / 2)),
            SKILLS[2 + 3 * (j % 2)],
        )
    } else {
        let d = i - globals - env_level;
        let (env, service) = placement(spec, d);
        if d.is_multiple_of(2) {
            (
                "redeploy".to_owned(),
                format!(
                    "{{ environmentRef: {}, serviceRef: {} }}",
                    environment_id(env),
                    service_id(service)
                ),
                SKILLS[1],
            )
        } else {
            (
                "rollback".to_owned(),
                format!("{{ deploymentRef: {} }}", deployment_id(d)),
                SKILLS[3],
            )
        }
    };
    header(&mut s, &binding_id(i), &format!("{operation} binding {i}"));
    let _ = write!(
        s,
        "operation: {operation}\nmatch: {matches}\nskill: {{ name: {skill}, provider: dsh-skills }}\nparameters:\n  target: \"{{{{appName}}}}\"\n  environment: \"{{{{env.id}}}}\"\n  logs: \"{{{{logRoot}}}}\"\npolicy: {{ requiresApproval: {}, allowProduction: {} }}\n",
        i.is_multiple_of(2),
        i.is_multiple_of(3)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_synthetic_registry_validates_without_errors_and_is_deterministic() {
        let spec = SynthSpec::scaled_down(50);
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        generate(a.path(), &spec).unwrap();
        generate(b.path(), &spec).unwrap();
        let registry = crate::Registry::open(a.path()).unwrap();
        let report = registry.validate();
        let errors: Vec<_> = report
            .diagnostics
            .iter()
            .filter(|d| d.severity == crate::Severity::Error)
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(registry.snapshot().total(), spec.total());
        let sample = sample(&spec);
        assert_eq!(
            registry
                .snapshot()
                .deployments_of(&sample.environment, &sample.service),
            std::slice::from_ref(&sample.deployment)
        );
        for kind in crate::RecordKind::ALL {
            for entry in std::fs::read_dir(a.path().join(kind.dir_name())).unwrap() {
                let name = entry.unwrap().file_name();
                let x = std::fs::read(a.path().join(kind.dir_name()).join(&name)).unwrap();
                let y = std::fs::read(b.path().join(kind.dir_name()).join(&name)).unwrap();
                assert_eq!(x, y);
            }
        }
    }

    #[test]
    fn infeasible_specs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SynthSpec {
            deployments: 10,
            services: 2,
            ..SynthSpec::scaled_down(100)
        };
        assert!(generate(dir.path(), &spec).is_err());
    }
}
