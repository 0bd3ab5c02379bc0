//! `envreg init DIR`: a small registry that validates clean and resolves, so a newcomer
//! has something working to edit: one environment, one service, its deployment, a rule
//! profile, a global health-check binding with its skill, the JSON Schemas editors use
//! and a `.gitignore` for the session and backup folders.
//!
//! Invariants: never overwrites — DIR must not exist or be empty, and every file is
//! published with the core's [`create_atomically`] (temp file, fsync, `link`, folder
//! fsync), which refuses a name that exists, so a concurrent writer cannot be clobbered
//! either. Atomic like every registry write: a crash or a full disk leaves each file
//! whole or absent (at worst a hidden temp file the loader never reads), never a torn
//! `envreg.yaml` or record.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use envreg_core::write::{create_atomically, sync_dir};

use envreg_core::{EnvError, ErrorCode};
use serde_json::json;

use crate::cli::{Kind, SchemaKind};

const ENVREG_YAML: &str = "\
# yaml-language-server: $schema=.schemas/config.json
defaults:
  environmentId: local
writePolicy:
  requireApprovalForDelete: true
  requireApprovalForProductionSave: true
  approvalChannel: elicitation
limits:
  maxRecords: 10000
  maxRecordBytes: 262144
skills:
  dirs: [skills]
";

const ENVIRONMENT: &str = "\
# yaml-language-server: $schema=../.schemas/environment.json
id: local
schemaVersion: 1
name: Local machine
tier: dev
platform: docker
hosts:
  - { id: localhost, address: 127.0.0.1, roles: [docker-host] }
variables:
  logRoot: /var/log
";

const SERVICE: &str = "\
# yaml-language-server: $schema=../.schemas/service.json
id: hello-api
schemaVersion: 1
name: Hello API
aliases: [hello]
category: backend
ruleProfileRefs: [basic-service]
variables:
  appName: hello-api
";

const DEPLOYMENT: &str = "\
# yaml-language-server: $schema=../.schemas/deployment.json
id: hello-api-local
schemaVersion: 1
name: hello-api on local
environmentRef: local
serviceRef: hello-api
variables:
  port: \"8080\"
";

const RULE_PROFILE: &str = "\
# yaml-language-server: $schema=../.schemas/ruleProfile.json
id: basic-service
schemaVersion: 1
name: Basic service layout
variables:
  logDir: \"{{logRoot}}/{{appName}}\"
  # The default port of the health-check binding; a deployment sets its own.
  port: \"8080\"
paths:
  home: /opt/{{appName}}
  logs: \"{{logDir}}\"
logSources:
  - { id: app, path: \"{{logDir}}/app.log\", format: text }
";

const BINDING: &str = "\
# yaml-language-server: $schema=../.schemas/operationBinding.json
id: health-check
schemaVersion: 1
name: HTTP health check
operation: health-check
match: {}
skill: { name: http-health-check }
parameters:
  url: \"http://127.0.0.1:{{port}}/health\"
policy: { requiresApproval: false, allowProduction: true }
";

const SKILL: &str = "\
---
name: http-health-check
description: Probe a service's HTTP health endpoint and report status and latency.
---

# http-health-check

Parameters: `url`.

`curl -fsS -m 5 -w \"%{http_code} %{time_total}\\n\" \"$url\"`; anything but 2xx is unhealthy.
";

const GITIGNORE: &str = "sessions/\n.backups/\n";

/// The files of a new registry, relative to DIR.
fn files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = vec![
        ("envreg.yaml".into(), ENVREG_YAML.into()),
        (".gitignore".into(), GITIGNORE.into()),
        ("environments/local.yaml".into(), ENVIRONMENT.into()),
        ("services/hello-api.yaml".into(), SERVICE.into()),
        ("deployments/hello-api-local.yaml".into(), DEPLOYMENT.into()),
        (
            "rule-profiles/basic-service.yaml".into(),
            RULE_PROFILE.into(),
        ),
        (
            "operation-bindings/health-check.yaml".into(),
            BINDING.into(),
        ),
        ("skills/http-health-check/SKILL.md".into(), SKILL.into()),
    ];
    files.extend(schema_files());
    files
}

/// `.schemas/<kind>.json` for the five kinds and `config.json`, as `envreg schema` prints them.
pub fn schema_files() -> Vec<(String, String)> {
    let kinds = Kind::ALL.iter().map(|k| (k.as_str(), schema_kind(*k)));
    kinds
        .chain(std::iter::once(("config", SchemaKind::Config)))
        .map(|(name, kind)| {
            let text =
                serde_json::to_string_pretty(&kind.schema()).unwrap_or_else(|_| "{}".to_owned());
            (format!(".schemas/{name}.json"), text + "\n")
        })
        .collect()
}

fn schema_kind(kind: Kind) -> SchemaKind {
    match kind {
        Kind::Environment => SchemaKind::Environment,
        Kind::Service => SchemaKind::Service,
        Kind::Deployment => SchemaKind::Deployment,
        Kind::RuleProfile => SchemaKind::RuleProfile,
        Kind::OperationBinding => SchemaKind::OperationBinding,
    }
}

pub fn run(dir: &Path, json_mode: bool) -> Result<(), EnvError> {
    let unwritable = |what: &str, e: std::io::Error| {
        EnvError::new(
            ErrorCode::StorageUnwritable,
            format!("cannot {what} in {}: {e}", dir.display()),
        )
    };
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(|e| unwritable("list files", e))?;
        if entries.next().is_some() {
            return Err(EnvError::invalid_argument(format!(
                "{} already exists and is not empty; `envreg init` only creates new registries",
                dir.display()
            )));
        }
    }
    let files = files();
    // Folders made here, so their own entries in their parents are synced too.
    let mut folders: BTreeSet<PathBuf> = BTreeSet::new();
    for (rel, text) in &files {
        let path = dir.join(rel);
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        std::fs::create_dir_all(parent).map_err(|e| unwritable("create folders", e))?;
        folders.extend(
            parent
                .ancestors()
                .take_while(|a| a.starts_with(dir))
                .map(Path::to_path_buf),
        );
        create_atomically(parent, &name.to_string_lossy(), text.as_bytes())
            .map_err(|e| unwritable(&format!("create {rel}"), e))?;
    }
    // DIR's own entry in the folder above it (`.` for a bare relative name).
    match dir.parent() {
        Some(above) if !above.as_os_str().is_empty() => folders.insert(above.to_path_buf()),
        _ => folders.insert(PathBuf::from(".")),
    };
    for folder in &folders {
        sync_dir(folder).map_err(|e| unwritable("sync folders", e))?;
    }
    let names: Vec<&str> = files.iter().map(|(rel, _)| rel.as_str()).collect();
    if json_mode {
        let value = json!({ "registry": dir.display().to_string(), "files": names });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    } else {
        outln!(
            "Created registry {} ({} files).",
            dir.display(),
            names.len()
        );
        outln!();
        for name in names.iter().filter(|n| !n.starts_with(".schemas/")) {
            outln!("  {name}");
        }
        outln!();
        outln!("Next:");
        outln!("  envreg --registry {} validate", dir.display());
        outln!("  envreg --registry {} resolve hello-api", dir.display());
        outln!(
            "  envreg --registry {} resolve-operation health-check --service hello-api",
            dir.display()
        );
    }
    Ok(())
}
