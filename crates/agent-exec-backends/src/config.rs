//! The `agent-exec` configuration file (TOML) and the registry it declares.
//!
//! ```toml
//! [journal]                       # optional; default: the XDG state directory
//! path = "/var/lib/agent-exec/journal.sqlite3"   # or: url = "postgres://…"
//!
//! [backends.review]               # the table key is the backend's name
//! kind = "command"
//! argv = ["my-agent", "--headless"]
//!
//! [backends.deepseek]
//! kind = "openai"
//! base_url = "https://api.deepseek.com/v1"
//! model = "deepseek-chat"
//! api_key_env = "DEEPSEEK_API_KEY"
//!
//! [aliases]
//! old-review = "review"           # resolves, with a deprecation warning
//! ```
//!
//! Where it is found: `--config FILE`, else `$AGENT_EXEC_CONFIG`, else
//! `$XDG_CONFIG_HOME/agent-exec/config.toml` (`~/.config/…`). An explicit file that does
//! not exist is an error; the XDG default may be absent (no backends then).
//!
//! Invariants: loading never panics, whatever the bytes; every error names the file and
//! the key (`backends.review.argv`) or the line and column; an unknown `kind`, an unknown
//! key, a missing `argv` or an empty one are errors, never defaults. Backend names are
//! data — `[a-z0-9][a-z0-9._-]*`, at most 64 bytes — never paths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_exec_contract::Registry;
use serde::Deserialize;

use crate::agent_program::ProgramConfig;
use crate::command::{self, CommandBackend, CommandConfig};
use crate::openai::{self, OpenAiBackend, OpenAiConfig};
use crate::{acp, claude_code, codex, copilot, gemini, opencode, pi};

/// The environment variable naming the config file.
pub const CONFIG_ENV: &str = "AGENT_EXEC_CONFIG";

/// The kinds of backend a config can declare.
pub const KINDS: [&str; 9] = [
    command::KIND,
    openai::KIND,
    codex::KIND,
    claude_code::KIND,
    pi::KIND,
    acp::KIND,
    gemini::KIND,
    copilot::KIND,
    opencode::KIND,
];

/// The agent programs available without any config, under their kind's name, each
/// running the program found on PATH with its own login and settings. A
/// `[backends.NAME]` table of the same name replaces the built-in one.
pub const BUILT_IN: [&str; 6] = [
    codex::KIND,
    claude_code::KIND,
    pi::KIND,
    gemini::KIND,
    copilot::KIND,
    opencode::KIND,
];

/// An agent program driven headless; the table is the same for every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    Codex,
    ClaudeCode,
    AgentNative,
    Acp,
    Gemini,
    Copilot,
    OpenCode,
}

impl AgentKind {
    /// The kind for a `kind = "…"` value; `pi-native` is the deprecated name of
    /// `agent-native`.
    pub fn from_kind(kind: &str) -> Option<(AgentKind, bool)> {
        Some(match kind {
            codex::KIND => (AgentKind::Codex, false),
            claude_code::KIND => (AgentKind::ClaudeCode, false),
            pi::KIND => (AgentKind::AgentNative, false),
            pi::DEPRECATED_ALIAS => (AgentKind::AgentNative, true),
            acp::KIND => (AgentKind::Acp, false),
            gemini::KIND => (AgentKind::Gemini, false),
            copilot::KIND => (AgentKind::Copilot, false),
            opencode::KIND => (AgentKind::OpenCode, false),
            _ => return None,
        })
    }

    pub fn kind(self) -> &'static str {
        match self {
            AgentKind::Codex => codex::KIND,
            AgentKind::ClaudeCode => claude_code::KIND,
            AgentKind::AgentNative => pi::KIND,
            AgentKind::Acp => acp::KIND,
            AgentKind::Gemini => gemini::KIND,
            AgentKind::Copilot => copilot::KIND,
            AgentKind::OpenCode => opencode::KIND,
        }
    }

    fn backend(self, config: ProgramConfig) -> Arc<dyn agent_exec_contract::Backend> {
        match self {
            AgentKind::Codex => Arc::new(codex::CodexBackend::new(config)),
            AgentKind::ClaudeCode => Arc::new(claude_code::ClaudeCodeBackend::new(config)),
            AgentKind::AgentNative => Arc::new(pi::PiBackend::new(config)),
            AgentKind::Acp => Arc::new(acp::AcpBackend::new(config)),
            AgentKind::Gemini => Arc::new(gemini::GeminiBackend::new(config)),
            AgentKind::Copilot => Arc::new(copilot::CopilotBackend::new(config)),
            AgentKind::OpenCode => Arc::new(opencode::OpenCodeBackend::new(config)),
        }
    }
}

/// A bad configuration: always says which file, and where in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config {}: {message}", file.display())]
pub struct ConfigError {
    pub file: PathBuf,
    pub message: String,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The file it came from (`None`: no file, the built-in empty config).
    pub file: Option<PathBuf>,
    pub journal: JournalConfig,
    /// Backends by name, in name order.
    pub backends: BTreeMap<String, BackendConfig>,
    /// Alias → canonical name.
    pub aliases: BTreeMap<String, String>,
    /// Deprecations noticed while loading (e.g. `kind = "pi-native"`), for stderr.
    pub warnings: Vec<String>,
    /// `default_deadline` of each backend table that sets it: the deadline of a run
    /// of that backend when the caller gives none.
    pub default_deadlines: BTreeMap<String, Duration>,
}

/// `[journal]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalConfig {
    /// SQLite file.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// PostgreSQL URL (`postgres://…`). Mutually exclusive with `path`.
    #[serde(default)]
    pub url: Option<String>,
}

/// One `[backends.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendConfig {
    Command(CommandConfig),
    OpenAi(OpenAiConfig),
    Agent(AgentKind, ProgramConfig),
}

impl BackendConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            BackendConfig::Command(_) => command::KIND,
            BackendConfig::OpenAi(_) => openai::KIND,
            BackendConfig::Agent(kind, _) => kind.kind(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    journal: JournalConfig,
    #[serde(default)]
    backends: BTreeMap<String, toml::Table>,
    #[serde(default)]
    aliases: BTreeMap<String, String>,
}

/// Whether `name` may name a backend or an alias.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// Parses a duration as `--deadline` and `default_deadline` take it (`90s`, `5m`,
/// `1h30m`, `500ms`, `2h`, `7d`, or plain seconds `90`); the message says what is accepted.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let bad = || DurationError::Invalid(text.to_owned());
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    if let Ok(seconds) = text.parse::<u64>() {
        // Plain seconds take the same zero check as `0s` below.
        total = Duration::from_secs(seconds);
        rest = "";
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
            "d" => Duration::from_secs(n.checked_mul(86_400).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        total = total.checked_add(unit).ok_or_else(bad)?;
        rest = &rest[unit_len..];
    }
    if total.is_zero() {
        return Err(DurationError::Zero(text.to_owned()));
    }
    Ok(total)
}

/// Why [`parse_duration`] refused a text (quoted as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all, or too large.
    #[error("invalid duration {0:?}: use e.g. 90s, 5m, 1h30m or 500ms")]
    Invalid(String),
    /// A duration of nothing.
    #[error("invalid duration {0:?}: must be more than zero")]
    Zero(String),
}

/// The largest config file read (1 MiB; a config is a few kilobytes).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

impl Config {
    /// Parses `text` as the contents of `file`. Never panics.
    pub fn parse(file: &Path, text: &str) -> Result<Config, ConfigError> {
        let error = |message: String| ConfigError {
            file: file.to_owned(),
            message,
        };
        let raw: RawFile =
            toml::from_str(text).map_err(|e| error(e.to_string().trim_end().to_owned()))?;
        if raw.journal.path.is_some() && raw.journal.url.is_some() {
            return Err(error(
                "journal: set `path` (SQLite) or `url` (PostgreSQL), not both".into(),
            ));
        }
        let mut backends = BTreeMap::new();
        let mut warnings = Vec::new();
        let mut default_deadlines = BTreeMap::new();
        for (name, mut table) in raw.backends {
            if !valid_name(&name) {
                return Err(error(format!(
                    "backends.{name}: invalid backend name; use lower-case letters, digits, `.`, `_`, `-` (at most 64)"
                )));
            }
            let kind = match table.remove("kind") {
                Some(toml::Value::String(kind)) => kind,
                Some(other) => {
                    return Err(error(format!(
                        "backends.{name}.kind: expected a string, found {}",
                        other.type_str()
                    )));
                }
                None => {
                    return Err(error(format!(
                        "backends.{name}.kind: missing; one of: {}",
                        KINDS.join(", ")
                    )));
                }
            };
            // Any kind: taken out before the kind's own table is read.
            match table.remove("default_deadline") {
                None => {}
                Some(toml::Value::String(text)) => {
                    let deadline = parse_duration(&text)
                        .map_err(|e| error(format!("backends.{name}.default_deadline: {e}")))?;
                    default_deadlines.insert(name.clone(), deadline);
                }
                Some(other) => {
                    return Err(error(format!(
                        "backends.{name}.default_deadline: expected a string such as \"10m\", found {}",
                        other.type_str()
                    )));
                }
            }
            let in_table = |e: toml::de::Error| error(format!("backends.{name}: {}", e.message()));
            let backend = match kind.as_str() {
                command::KIND => {
                    let mut config: CommandConfig =
                        toml::Value::Table(table).try_into().map_err(in_table)?;
                    if config.argv.first().is_none_or(|p| p.trim().is_empty()) {
                        return Err(error(format!(
                            "backends.{name}.argv: must name a program, e.g. argv = [\"my-agent\", \"--headless\"]"
                        )));
                    }
                    config.name = name.clone();
                    BackendConfig::Command(config)
                }
                openai::KIND => {
                    let mut config: OpenAiConfig =
                        toml::Value::Table(table).try_into().map_err(in_table)?;
                    if !(config.base_url.starts_with("http://")
                        || config.base_url.starts_with("https://"))
                    {
                        return Err(error(format!(
                            "backends.{name}.base_url: must start with http:// or https://"
                        )));
                    }
                    if config.model.trim().is_empty() {
                        return Err(error(format!("backends.{name}.model: must not be empty")));
                    }
                    if config
                        .api_key_env
                        .as_deref()
                        .is_some_and(|v| v.trim().is_empty())
                    {
                        return Err(error(format!(
                            "backends.{name}.api_key_env: must name an environment variable (the key itself never goes in the file)"
                        )));
                    }
                    config.name = name.clone();
                    BackendConfig::OpenAi(config)
                }
                other => {
                    let Some((agent, deprecated)) = AgentKind::from_kind(other) else {
                        return Err(error(format!(
                            "backends.{name}.kind: unknown kind `{other}`; one of: {}",
                            KINDS.join(", ")
                        )));
                    };
                    if deprecated {
                        warnings.push(format!(
                            "{}: backends.{name}.kind: `{other}` is deprecated; write kind = \"{}\"",
                            file.display(),
                            agent.kind()
                        ));
                    }
                    let mut config: ProgramConfig =
                        toml::Value::Table(table).try_into().map_err(in_table)?;
                    if config
                        .program
                        .as_deref()
                        .is_some_and(|p| p.trim().is_empty())
                    {
                        return Err(error(format!(
                            "backends.{name}.program: must name a program or be left out"
                        )));
                    }
                    if agent == AgentKind::Acp && config.program.is_none() {
                        return Err(error(format!(
                            "backends.{name}.program: an acp backend must name its agent, e.g. program = \"codex-acp\""
                        )));
                    }
                    config.name = name.clone();
                    BackendConfig::Agent(agent, config)
                }
            };
            backends.insert(name, backend);
        }
        for (alias, target) in &raw.aliases {
            if !valid_name(alias) {
                return Err(error(format!("aliases.{alias}: invalid alias name")));
            }
            if backends.contains_key(alias) {
                return Err(error(format!(
                    "aliases.{alias}: a backend already has this name"
                )));
            }
            if !backends.contains_key(target) && !BUILT_IN.contains(&target.as_str()) {
                return Err(error(format!(
                    "aliases.{alias}: points at `{target}`, which is not a backend in this file"
                )));
            }
        }
        Ok(Config {
            file: Some(file.to_owned()),
            journal: raw.journal,
            backends,
            aliases: raw.aliases,
            warnings,
            default_deadlines,
        })
    }

    /// The `default_deadline` of the backend `name` (an alias is followed), if its
    /// table sets one.
    pub fn default_deadline(&self, name: &str) -> Option<Duration> {
        let name = self.aliases.get(name).map_or(name, String::as_str);
        self.default_deadlines.get(name).copied()
    }

    /// Reads (at most [`MAX_CONFIG_BYTES`], never waiting on a FIFO without a writer)
    /// and parses `file`.
    pub fn load(file: &Path) -> Result<Config, ConfigError> {
        let bytes =
            agent_exec_runtime::input::read_capped(file, MAX_CONFIG_BYTES).map_err(|e| {
                ConfigError {
                    file: file.to_owned(),
                    message: format!("cannot read: {e}"),
                }
            })?;
        let text = String::from_utf8(bytes).map_err(|_| ConfigError {
            file: file.to_owned(),
            message: "cannot read: not UTF-8 text".to_owned(),
        })?;
        Config::parse(file, &text)
    }

    /// Finds and loads the config: `explicit` (from `--config`), else `$AGENT_EXEC_CONFIG`,
    /// else the XDG default if it exists, else the empty config.
    pub fn discover(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        if let Some(file) = explicit {
            return Config::load(file);
        }
        if let Some(file) = std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty()) {
            return Config::load(Path::new(&file));
        }
        match default_path() {
            Some(file) if file.exists() => Config::load(&file),
            _ => Ok(Config::default()),
        }
    }

    /// The registry of every configured backend and alias (aliases declared here are
    /// deprecated names: they resolve with a warning).
    pub fn registry(&self) -> Result<Registry, ConfigError> {
        let file = self.file.clone().unwrap_or_default();
        let mut registry = Registry::new();
        let built_in = BUILT_IN
            .iter()
            .filter(|name| !self.backends.contains_key(**name))
            .filter_map(|name| {
                let (kind, _) = AgentKind::from_kind(name)?;
                Some(kind.backend(ProgramConfig::new(*name)))
            });
        let configured = self.backends.values().map(|backend| match backend {
            BackendConfig::Command(c) => {
                Arc::new(CommandBackend::new(c.clone())) as Arc<dyn agent_exec_contract::Backend>
            }
            BackendConfig::OpenAi(c) => Arc::new(OpenAiBackend::new(c.clone())),
            BackendConfig::Agent(kind, c) => kind.backend(c.clone()),
        });
        for backend in built_in.chain(configured) {
            registry.register(backend).map_err(|e| ConfigError {
                file: file.clone(),
                message: e.to_string(),
            })?;
        }
        for (alias, canonical) in &self.aliases {
            registry.alias(alias, canonical, true);
        }
        Ok(registry)
    }

    /// The kind of the backend called `name`: configured, or built in.
    pub fn kind_of(&self, name: &str) -> Option<&'static str> {
        match self.backends.get(name) {
            Some(backend) => Some(backend.kind()),
            None => BUILT_IN
                .iter()
                .find(|b| **b == name)
                .and_then(|b| AgentKind::from_kind(b))
                .map(|(kind, _)| kind.kind()),
        }
    }
}

/// `$XDG_CONFIG_HOME/agent-exec/config.toml`, falling back to `~/.config/…`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("agent-exec").join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/agent-exec.toml"), text)
    }

    fn message(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_full_config_parses() {
        let config = parse(
            r#"
[journal]
path = "/tmp/j.sqlite3"

[backends.review]
kind = "command"
argv = ["my-agent", "--headless"]
prompt = "argument"

[backends.deep]
kind = "openai"
base_url = "https://api.deepseek.com/v1"
model = "deepseek-chat"
api_key_env = "DEEPSEEK_API_KEY"

[aliases]
old-review = "review"
"#,
        )
        .unwrap();
        let BackendConfig::Command(review) = &config.backends["review"] else {
            panic!()
        };
        assert_eq!(review.name, "review");
        assert_eq!(review.argv, ["my-agent", "--headless"]);
        assert_eq!(review.prompt, command::PromptMode::Argument);
        let BackendConfig::OpenAi(deep) = &config.backends["deep"] else {
            panic!()
        };
        assert_eq!(deep.api_key_env.as_deref(), Some("DEEPSEEK_API_KEY"));
        assert_eq!(
            config.journal.path.as_deref(),
            Some(Path::new("/tmp/j.sqlite3"))
        );
        let registry = config.registry().unwrap();
        assert_eq!(
            registry.names(),
            [
                "agent-native",
                "claude-code",
                "codex",
                "copilot",
                "deep",
                "gemini",
                "opencode",
                "review"
            ],
            "the configured backends and the built-in agent programs"
        );
        let (canonical, warning) = registry.canonical("old-review").unwrap();
        assert_eq!(canonical, "review");
        assert!(warning.unwrap().contains("deprecated"));
    }

    #[test]
    fn bad_configs_name_the_file_and_the_key() {
        let m = message("[backends.review]\nkind = \"telepathy\"\nargv = [\"x\"]\n");
        assert!(m.starts_with("config /etc/agent-exec.toml: "), "{m}");
        assert!(
            m.contains("backends.review.kind: unknown kind `telepathy`"),
            "{m}"
        );
        assert!(m.contains("command, openai"), "{m}");

        let m = message("[backends.review]\nkind = \"command\"\n");
        assert!(m.contains("backends.review") && m.contains("argv"), "{m}");
        let m = message("[backends.review]\nkind = \"command\"\nargv = []\n");
        assert!(
            m.contains("backends.review.argv: must name a program"),
            "{m}"
        );
        let m = message("[backends.review]\nargv = [\"x\"]\n");
        assert!(m.contains("backends.review.kind: missing"), "{m}");
        let m = message("[backends.review]\nkind = \"command\"\nargv = [\"x\"]\nargs = 1\n");
        assert!(m.contains("backends.review") && m.contains("args"), "{m}");
        let m = message("[backends.review\nkind = 1");
        assert!(m.contains("line 1"), "{m}");
        let m = message("[backends.\"../etc\"]\nkind = \"command\"\nargv = [\"x\"]\n");
        assert!(m.contains("invalid backend name"), "{m}");
        let m = message("[backends.o]\nkind = \"openai\"\nbase_url = \"ftp://x\"\nmodel = \"m\"\n");
        assert!(m.contains("backends.o.base_url"), "{m}");
        let m = message("[aliases]\nold = \"nothing\"\n");
        assert!(m.contains("aliases.old"), "{m}");
        let m = message("[journal]\npath = \"a\"\nurl = \"postgres://h/d\"\n");
        assert!(m.contains("not both"), "{m}");
        let m = message("[telemetry]\non = true\n");
        assert!(m.contains("telemetry"), "{m}");
    }

    #[test]
    fn agent_kinds_parse_and_built_ins_are_there_without_config() {
        let config = parse(
            r#"
[backends.reviewer]
kind = "claude-code"
model = "sonnet"
args = ["--max-turns", "4"]
env = { CLAUDE_CONFIG_DIR = "/srv/claude" }

[backends.old]
kind = "pi-native"
program = "/opt/pi/bin/pi"
"#,
        )
        .unwrap();
        assert_eq!(config.kind_of("reviewer"), Some("claude-code"));
        assert_eq!(config.kind_of("old"), Some("agent-native"));
        assert_eq!(config.kind_of("codex"), Some("codex"), "built in");
        assert_eq!(config.kind_of("nope"), None);
        assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
        assert!(config.warnings[0].contains("`pi-native` is deprecated"));
        let registry = config.registry().unwrap();
        assert_eq!(
            registry.names(),
            [
                "agent-native",
                "claude-code",
                "codex",
                "copilot",
                "gemini",
                "old",
                "opencode",
                "reviewer"
            ]
        );
        assert_eq!(config.kind_of("copilot"), Some("copilot"), "built in");
        let (canonical, warning) = registry.canonical("pi-native").unwrap();
        assert_eq!(canonical, "agent-native");
        assert!(warning.is_some_and(|w| w.contains("deprecated")));

        let empty = Config::default().registry().unwrap();
        assert_eq!(
            empty.names(),
            [
                "agent-native",
                "claude-code",
                "codex",
                "copilot",
                "gemini",
                "opencode"
            ]
        );
    }

    #[test]
    fn an_acp_backend_names_its_agent() {
        let m = message("[backends.zed]\nkind = \"acp\"\n");
        assert!(
            m.contains("backends.zed.program: an acp backend must name its agent"),
            "{m}"
        );
        let config = parse("[backends.zed]\nkind = \"acp\"\nprogram = \"codex-acp\"\n").unwrap();
        assert_eq!(config.kind_of("zed"), Some("acp"));
        assert!(config.registry().unwrap().descriptor("zed").is_some());
    }

    #[test]
    fn a_configured_backend_replaces_the_built_in_of_its_name() {
        let config =
            parse("[backends.codex]\nkind = \"command\"\nargv = [\"my-codex\"]\n").unwrap();
        assert_eq!(config.kind_of("codex"), Some("command"));
        let registry = config.registry().unwrap();
        assert_eq!(
            registry
                .descriptor("codex")
                .map(|d| d.adapter_version.starts_with("command/")),
            Some(true)
        );
    }

    #[test]
    fn bad_agent_tables_name_the_key() {
        let m = message("[backends.x]\nkind = \"codex\"\nprogram = \"\"\n");
        assert!(m.contains("backends.x.program: must name a program"), "{m}");
        let m = message("[backends.x]\nkind = \"codex\"\nargv = [\"codex\"]\n");
        assert!(m.contains("backends.x: unknown field `argv`"), "{m}");
        // An alias may point at a built-in backend.
        let registry = parse("[aliases]\nc = \"codex\"\n")
            .unwrap()
            .registry()
            .unwrap();
        assert_eq!(registry.canonical("c").unwrap().0, "codex");
    }

    #[test]
    fn an_explicit_missing_file_is_an_error() {
        let err = Config::load(Path::new("/nonexistent/agent-exec.toml")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/agent-exec.toml"));
        assert!(err.to_string().contains("cannot read"));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn any_text_parses_or_errors_without_panic(text in "\\PC{0,200}") {
                let _ = parse(&text);
            }

            #[test]
            fn backend_tables_with_arbitrary_values_never_panic(
                kind in "[a-z]{0,8}|command|openai",
                key in "[a-z_]{1,12}",
                value in "\\PC{0,20}",
            ) {
                let text = format!(
                    "[backends.x]\nkind = {kind:?}\nargv = [{value:?}]\nbase_url = {value:?}\nmodel = {value:?}\n{key} = {value:?}\n"
                );
                let _ = parse(&text);
            }
        }
    }
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_its_words() {
        assert_eq!(
            parse_duration(" 5x").unwrap_err().to_string(),
            "invalid duration \" 5x\": use e.g. 90s, 5m, 1h30m or 500ms"
        );
        assert_eq!(
            parse_duration(" 0s ").unwrap_err().to_string(),
            "invalid duration \"0s\": must be more than zero"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        for bad in [
            "",
            "s",
            "5x",
            "1.5s",
            "-1s",
            "0s",
            "0",
            "0ms",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
