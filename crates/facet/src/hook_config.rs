//! How the hook runs: its configuration, which the session state reads too (so it
//! sits below both `hook` and `state`; `facet::hook::HookConfig` re-exports it).

use std::path::PathBuf;

use crate::envelope::{Dialect, Envelope};

/// How the hook runs: dialect, names, where state lives.
#[derive(Debug, Clone)]
pub struct HookConfig {
    /// Which host wrote the event.
    pub dialect: Dialect,
    /// The guard's configuration (tables, facet tool names, project markers, mode).
    pub core: facet_core::Config,
    /// An explicit state folder; `None` lets [`crate::state::state_dir`] read
    /// `FACET_STATE_DIR` (the one place the folder is decided).
    pub state_dir: Option<PathBuf>,
    /// Why the user's configuration file could not be used, when it could not: then
    /// every `PreToolUse` is refused (the guard does not know which tools to judge).
    pub config_problem: Option<String>,
    /// `--no-approval`: this host has no way to put a question to the user.
    pub no_approval: bool,
}

impl HookConfig {
    /// The configuration for a run: the user's configuration file
    /// (`$FACET_CONFIG`, else `$XDG_CONFIG_HOME/facet/config.toml`; missing is the
    /// default), with the facet tool's host-qualified name added to the names the
    /// guard recognises. A file that cannot be read or parsed is kept as
    /// [`HookConfig::config_problem`] — never silently the default.
    pub fn from_env(dialect: Dialect, facet_tool: String, no_approval: bool) -> Self {
        let (mut core, config_problem) = match facet_core::Config::load_chosen() {
            Ok(core) => (core, None),
            Err(error) => (facet_core::Config::default(), Some(error.to_string())),
        };
        if !core.facet_tool_names.contains(&facet_tool) {
            core.facet_tool_names.push(facet_tool);
        }
        Self {
            dialect,
            core,
            state_dir: None,
            config_problem,
            no_approval,
        }
    }

    /// The default configuration with an explicit state folder (tests, fuzzing).
    pub fn with_state_dir(dialect: Dialect, state_dir: PathBuf) -> Self {
        Self {
            dialect,
            core: facet_core::Config::default(),
            state_dir: Some(state_dir),
            config_problem: None,
            no_approval: false,
        }
    }

    pub(crate) fn can_ask(&self, envelope: &Envelope) -> bool {
        self.dialect.honours_ask() && !self.no_approval && !envelope.bypasses_permissions()
    }
}
