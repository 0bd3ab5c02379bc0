//! The guard's configuration: which names the host gives the facet tool, which
//! further tools carry paths, what marks a project's top level, the starting mode.
//!
//! Read from a TOML file the user owns (the agent has no write path to it):
//!
//! ```toml
//! default_mode = "ask"                              # ask | deny | off
//! facet_tool_names = ["facet", "mcp__facet__facet"] # replaces the default list
//! project_markers = [".facet-top"]                  # besides .git
//!
//! prune_after_days = 30                             # forget sessions not seen for this long
//!
//! [tools]                                           # MCP tools, by host-qualified name
//! "mcp__fs__read_file" = ["path"]
//! "mcp__fs__move_file" = ["source", "destination"]
//!
//! [projects."/abs/monorepo"]                        # standing grants for every session
//! grants = ["libs/common"]                          # under this root, relative to it
//! ```
//!
//! A missing file is the default configuration; a file that cannot be read or parsed is
//! an error naming the file and the fault — never silently the default, because a guard
//! that quietly dropped its user's tool list would guard less than they think.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::seed::{FACET_TOOL, Mode};

/// The variable that names the configuration file, overriding the default path.
pub const CONFIG_ENV: &str = "FACET_CONFIG";

/// The guard's configuration (all fields optional in a configuration file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The names the host calls the facet tool by: the seed's bare `facet` and the
    /// host-qualified `mcp__facet__facet` (the server registered as `facet` in Claude
    /// Code or DeepSeek Harness).
    pub facet_tool_names: Vec<String>,
    /// User-configured tools (typically MCP): the name the host calls them by → the
    /// top-level string arguments that are paths.
    pub tools: BTreeMap<String, Vec<String>>,
    /// File names, besides `.git`, that mark a project's top level.
    pub project_markers: Vec<String>,
    /// The mode a session starts in.
    pub default_mode: Mode,
    /// Standing grants, per project root (an absolute path): every session whose
    /// folder lies under the root sees these paths (relative to the root) as granted.
    /// The person's decision: only this file, which no tool call may touch, sets them.
    pub projects: BTreeMap<String, ProjectConfig>,
    /// Sessions not seen for this many days are forgotten (their state files
    /// removed); `0` keeps them for ever.
    pub prune_after_days: u64,
}

/// One `[projects."/abs/root"]` table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectConfig {
    /// Paths relative to the project root, granted to every session under it.
    pub grants: Vec<String>,
}

/// The default of [`Config::prune_after_days`].
pub const DEFAULT_PRUNE_AFTER_DAYS: u64 = 30;

/// Check a list of standing grants: each a non-empty path relative to its root (an
/// absolute or `~` path would not be the project's), without NUL.
pub fn check_standing_grants(grants: &[String], origin: &str) -> Result<(), String> {
    for grant in grants {
        if grant.trim().is_empty() || grant.contains('\0') {
            return Err(format!(
                "{origin}: grant {grant:?} must be a non-empty path"
            ));
        }
        if grant.starts_with('/') || grant.starts_with('~') {
            return Err(format!(
                "{origin}: grant {grant:?} must be relative to the project root, e.g. \"libs/common\""
            ));
        }
    }
    Ok(())
}

impl Default for Config {
    fn default() -> Config {
        Config {
            facet_tool_names: vec![FACET_TOOL.to_string(), "mcp__facet__facet".to_string()],
            tools: BTreeMap::new(),
            project_markers: Vec::new(),
            default_mode: Mode::Ask,
            projects: BTreeMap::new(),
            prune_after_days: DEFAULT_PRUNE_AFTER_DAYS,
        }
    }
}

impl Config {
    /// `$XDG_CONFIG_HOME/facet/config.toml`, else `~/.config/facet/config.toml`.
    pub fn default_path() -> Option<PathBuf> {
        dirs::config_dir()
            .or_else(|| dirs::home_dir().map(|home| home.join(".config")))
            .map(|config| config.join("facet").join("config.toml"))
    }

    /// The configuration file this process uses: `$FACET_CONFIG` when set and not
    /// empty (it must be absolute: a relative one would be read against whatever folder
    /// the hook runs in, which is the agent's project), else [`Config::default_path`].
    /// The flag says whether the user named the file explicitly.
    pub fn chosen_path() -> Result<Option<(PathBuf, bool)>, ConfigError> {
        match std::env::var_os(CONFIG_ENV) {
            Some(path) if !path.is_empty() => {
                let path = PathBuf::from(path);
                if path.is_relative() {
                    return Err(ConfigError {
                        path,
                        message: format!("{CONFIG_ENV} must be an absolute path"),
                    });
                }
                Ok(Some((path, true)))
            }
            _ => Ok(Config::default_path().map(|path| (path, false))),
        }
    }

    /// Load the configuration this process uses (see [`Config::chosen_path`]). A
    /// missing default file is the default configuration; a file named by
    /// `$FACET_CONFIG` must exist, since the user said it holds their settings.
    pub fn load_chosen() -> Result<Config, ConfigError> {
        match Config::chosen_path()? {
            None => Ok(Config::default()),
            Some((path, false)) => Config::load(&path),
            Some((path, true)) => match std::fs::read_to_string(&path) {
                Ok(text) => Config::from_toml(&text, &path),
                Err(error) => Err(ConfigError {
                    path,
                    message: error.to_string(),
                }),
            },
        }
    }

    /// What file tools must not touch to keep the configuration the user's: the file
    /// `$FACET_CONFIG` names (its folder may be a wide one, such as the home), else the
    /// default configuration folder.
    pub fn guarded_location() -> Option<PathBuf> {
        match Config::chosen_path() {
            Ok(Some((path, true))) => Some(path),
            Ok(Some((path, false))) => path.parent().map(Path::to_path_buf),
            Ok(None) | Err(_) => None,
        }
    }

    /// Parse and check a configuration text. `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|error| {
            let line = error
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            ConfigError {
                path: origin.to_path_buf(),
                message: match line {
                    Some(line) => format!("line {line}: {}", error.message()),
                    None => error.message().to_string(),
                },
            }
        })?;
        config.check().map_err(|message| ConfigError {
            path: origin.to_path_buf(),
            message,
        })?;
        Ok(config)
    }

    /// Load `path`; a file that does not exist is the default configuration.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::from_toml(&text, path),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(error) => Err(ConfigError {
                path: path.to_path_buf(),
                message: error.to_string(),
            }),
        }
    }

    fn check(&self) -> Result<(), String> {
        if self
            .facet_tool_names
            .iter()
            .any(|name| name.trim().is_empty())
        {
            return Err("`facet_tool_names` holds an empty name".to_string());
        }
        for (tool, args) in &self.tools {
            if tool.trim().is_empty() {
                return Err("`[tools]` holds an empty tool name".to_string());
            }
            if args.is_empty() || args.iter().any(|arg| arg.trim().is_empty()) {
                return Err(format!(
                    "`[tools]` entry {tool:?} needs a list of argument names, e.g. [\"path\"]"
                ));
            }
        }
        for (root, project) in &self.projects {
            if !root.starts_with('/') || root.contains('\0') {
                return Err(format!(
                    "`[projects]` key {root:?} must be an absolute path to a project root"
                ));
            }
            check_standing_grants(&project.grants, &format!("`[projects.{root:?}]`"))?;
        }
        for marker in &self.project_markers {
            if marker.is_empty() || marker == "." || marker == ".." || marker.contains(['/', '\0'])
            {
                return Err(format!(
                    "`project_markers` entry {marker:?} must be a file name, not a path"
                ));
            }
        }
        Ok(())
    }
}

/// A configuration file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("facet configuration {path}: {message}")]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}
