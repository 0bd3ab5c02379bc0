//! The command line, exactly as issue 2 §3 spells it: `envreg [--registry DIR] [--json]
//! COMMAND`, one subcommand per tool plus `init`, `schema` and `serve`.
//!
//! Decision: KIND is checked by clap (a usage error, exit 2, with clap's "did you
//! mean"), not passed through to the tool as a free string. The tool would answer
//! `INVALID_ARGUMENT` (exit 1); a misspelt kind on a command line is a usage error.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `0.1.0 (commit 644296a1b2c3)`: the version and the commit built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_GIT_COMMIT"),
    ")"
);

/// Environment registry: environments, services, deployments, rule profiles and
/// operation bindings as YAML records, resolved into concrete paths and skills.
#[derive(Debug, Parser)]
#[command(name = "envreg", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Registry folder. Else $ENVREG_REGISTRY, else the nearest folder holding
    /// envreg.yaml, walking up from the current directory.
    #[arg(long, global = true, value_name = "DIR", env = "ENVREG_REGISTRY")]
    pub registry: Option<PathBuf>,

    /// Print exactly the tool's JSON value (errors as {"error": {code, message, details}}).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a small working registry in DIR (which must not exist or be empty).
    Init {
        /// Folder to create.
        dir: PathBuf,
    },
    /// List records, sorted by kind then id (tool env_list).
    List {
        /// Restrict to one record kind.
        #[arg(long, value_enum)]
        kind: Option<Kind>,
        /// Case-insensitive match over id, name and alias.
        #[arg(long)]
        query: Option<String>,
    },
    /// Show one record and its on-disk YAML (tool env_get).
    Get {
        #[arg(value_enum)]
        kind: Kind,
        /// Record id, e.g. staging.
        id: String,
    },
    /// Find candidate ids by a fragment of id, name, alias or category (tool env_find).
    Find {
        /// At least 2 characters.
        query: String,
    },
    /// Resolve a service's concrete paths, logs and variables in an environment (tool env_resolve).
    Resolve {
        /// Service id.
        service: String,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        session: SessionArg,
    },
    /// Which skill handles an operation here, and with which parameters (tool env_resolve_operation).
    #[command(name = "resolve-operation")]
    ResolveOperation {
        /// deploy | redeploy | restart | rollback | collect-logs | health-check | a bound custom id.
        operation: String,
        /// Service id (this or --deployment is required).
        #[arg(long)]
        service: Option<String>,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        session: SessionArg,
    },
    /// Show or change this session's default environment (tools env_get_context / env_set_context).
    Context {
        /// Make ENV the default environment of this session.
        #[arg(long, value_name = "ENV", conflicts_with = "clear")]
        set: Option<String>,
        /// Forget this session's default environment.
        #[arg(long)]
        clear: bool,
        #[command(flatten)]
        session: SessionArg,
    },
    /// Create or replace a record from a YAML or JSON file; `-` reads stdin (tool env_save).
    Save {
        #[arg(value_enum)]
        kind: Kind,
        /// The complete record. A path on this machine, read by the CLI, never by the tool.
        file: PathBuf,
        /// Validate and report without writing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        approval: YesArg,
    },
    /// Report what references a record; with --confirm, delete it (tool env_delete).
    Delete {
        #[arg(value_enum)]
        kind: Kind,
        id: String,
        /// Actually delete (after approval). Without it, only blockers are reported.
        #[arg(long)]
        confirm: bool,
        #[command(flatten)]
        approval: YesArg,
    },
    /// Check every record and reference; show problems with their YAML lines (tool env_validate).
    Validate,
    /// Print the JSON Schema of a record kind (for `# yaml-language-server: $schema=`).
    Schema {
        #[arg(value_enum)]
        kind: SchemaKind,
    },
    /// Serve the ten env_* tools over MCP (stdio by default).
    Serve(crate::serve::ServeArgs),
    /// Serve the ten env_* tools to the DeepSeek Harness plugin dsh-envreg: JSON lines
    /// on stdin/stdout (started by the plugin; needs --registry).
    #[command(name = "dsh-bridge")]
    DshBridge,
    /// A host's PreToolUse hook: contract §1.3's approval table for hosts that cannot
    /// ask through MCP (event JSON on stdin, decision on stdout; see docs/hosts.md).
    Hook(crate::hook::HookArgs),
    /// Serve the registry as a read-only web page: the matrix, cells with provenance,
    /// operations, records and validation (crate envreg-ui, docs/envreg-ui.md).
    Ui(envreg_ui::UiArgs),
    /// Write a synthetic registry (for benchmarks): 10,000 records by default.
    #[command(hide = true)]
    Synth {
        /// Folder to write (created if missing).
        dir: PathBuf,
        /// Divide every count by N (1 = 100 environments, 2,000 services, 6,000
        /// deployments, 200 rule profiles, 1,700 bindings).
        #[arg(long, default_value_t = 1)]
        divisor: usize,
    },
}

#[derive(Debug, Args)]
pub struct Target {
    /// Environment id. Defaults to the session environment, then envreg.yaml defaults.environmentId.
    #[arg(long = "env", value_name = "E")]
    pub environment: Option<String>,
    /// Deployment id; needed only when the service is deployed more than once there.
    #[arg(long, value_name = "D")]
    pub deployment: Option<String>,
}

/// The session whose default environment `context`, `resolve` and `resolve-operation`
/// use. Default `cli`: every shell of this user shares one CLI session, so `envreg
/// context --set staging` sticks for later commands (decision; a per-terminal id would
/// surprise people who open a second terminal).
#[derive(Debug, Args)]
pub struct SessionArg {
    /// Session id [default: cli].
    #[arg(long = "session", value_name = "ID", env = "ENVREG_SESSION_ID")]
    pub id: Option<String>,
}

pub const DEFAULT_SESSION_ID: &str = "cli";

impl SessionArg {
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or(DEFAULT_SESSION_ID)
    }
}

#[derive(Debug, Args)]
pub struct YesArg {
    /// Approve without asking (otherwise asked on the terminal; with no terminal, denied).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// The contract's `RecordKind` names, spelt exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    #[value(name = "environment")]
    Environment,
    #[value(name = "service")]
    Service,
    #[value(name = "deployment")]
    Deployment,
    #[value(name = "ruleProfile")]
    RuleProfile,
    #[value(name = "operationBinding")]
    OperationBinding,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Environment => "environment",
            Kind::Service => "service",
            Kind::Deployment => "deployment",
            Kind::RuleProfile => "ruleProfile",
            Kind::OperationBinding => "operationBinding",
        }
    }

    pub fn record_kind(self) -> envreg_core::RecordKind {
        use envreg_core::RecordKind as K;
        match self {
            Kind::Environment => K::Environment,
            Kind::Service => K::Service,
            Kind::Deployment => K::Deployment,
            Kind::RuleProfile => K::RuleProfile,
            Kind::OperationBinding => K::OperationBinding,
        }
    }

    pub const ALL: [Kind; 5] = [
        Kind::Environment,
        Kind::Service,
        Kind::Deployment,
        Kind::RuleProfile,
        Kind::OperationBinding,
    ];
}

/// What `envreg schema` can print: the five record kinds, and `config` for envreg.yaml.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    #[value(name = "environment")]
    Environment,
    #[value(name = "service")]
    Service,
    #[value(name = "deployment")]
    Deployment,
    #[value(name = "ruleProfile")]
    RuleProfile,
    #[value(name = "operationBinding")]
    OperationBinding,
    /// envreg.yaml itself.
    #[value(name = "config")]
    Config,
}

impl SchemaKind {
    pub fn record(self) -> Option<Kind> {
        Some(match self {
            SchemaKind::Environment => Kind::Environment,
            SchemaKind::Service => Kind::Service,
            SchemaKind::Deployment => Kind::Deployment,
            SchemaKind::RuleProfile => Kind::RuleProfile,
            SchemaKind::OperationBinding => Kind::OperationBinding,
            SchemaKind::Config => return None,
        })
    }

    /// The JSON Schema `envreg schema KIND` prints and `envreg init` writes.
    pub(crate) fn schema(self) -> serde_json::Value {
        match self.record() {
            Some(kind) => envreg_core::schema::record_schema(kind.record_kind()),
            None => envreg_core::schema::config_schema(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn kind_names_are_the_contract_names() {
        let names: Vec<_> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "environment",
                "service",
                "deployment",
                "ruleProfile",
                "operationBinding"
            ]
        );
        for kind in Kind::ALL {
            let parsed = Kind::from_str(kind.as_str(), false).unwrap();
            assert_eq!(parsed, kind);
        }
    }
}
