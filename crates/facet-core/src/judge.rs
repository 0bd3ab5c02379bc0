//! The decision: for one tool call in one session, no opinion, ask, or deny — with the
//! seed's sentence.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::Config;
use crate::seed::{
    Mode, implicit_search_reason, implicit_search_reason_no_channel, is_widening_call,
    outside_reason, outside_reason_no_channel, panel_grant_command, widen_reason,
    widen_refused_no_channel,
};
use crate::session::{Session, requested_paths};
use crate::standing::{PROJECT_FILE, is_project_file};
use crate::tools::{Location, ToolTable, locations};

/// What the guard says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call stays inside the facet (or names nothing, or the guard is off): the
    /// host's own permissions stay in charge.
    NoOpinion,
    /// Put the call to the user; the reason is the approval prompt.
    Ask(String),
    /// Refuse the call; the reason is the model's error text.
    Deny(String),
}

impl Decision {
    /// The reason sentence, if there is one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decision::NoOpinion => None,
            Decision::Ask(reason) | Decision::Deny(reason) => Some(reason),
        }
    }
}

/// The guard: tool table and facet tool names, built once from a [`Config`].
#[derive(Debug, Clone)]
pub struct Policy {
    tools: ToolTable,
    facet_tool_names: Vec<String>,
    /// Folders (or files) holding facet's own state and configuration: no judged
    /// call may touch them, whatever the facet and its grants (see [`Policy::judge`]).
    guarded: Vec<PathBuf>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy::new(&Config::default())
    }
}

impl Policy {
    /// The built-in tables plus the configured tools.
    pub fn new(config: &Config) -> Policy {
        Policy {
            tools: ToolTable::builtin().with_tools(&config.tools),
            facet_tool_names: config.facet_tool_names.clone(),
            guarded: Vec::new(),
        }
    }

    /// The same policy, refusing any judged call whose canonical target lies in one of
    /// `locations` (facet's state folder, its configuration): with them the agent
    /// could rewrite its own session's facet. They are resolved when a call is judged,
    /// so a folder created later is still guarded by its canonical path.
    pub fn with_guarded(mut self, locations: Vec<PathBuf>) -> Policy {
        self.guarded = locations;
        self
    }

    /// The tool table in use.
    pub fn tools(&self) -> &ToolTable {
        &self.tools
    }

    /// Whether the host calls the facet tool by `tool_name`.
    pub fn is_facet_tool(&self, tool_name: &str) -> bool {
        self.facet_tool_names.iter().any(|name| name == tool_name)
    }

    /// Judge one call. `cwd` is the directory the host runs the tool in (the hook
    /// envelope's `cwd`), against which relative paths resolve — never this process's
    /// own. `can_ask` is false when no approval request can reach the user (Claude
    /// Code's `bypassPermissions`): then every "ask" becomes "deny".
    ///
    /// In order: mode `off` → no opinion; a location inside a guarded folder (facet's
    /// own state or configuration, see [`Policy::with_guarded`]) → deny, in a scoped
    /// session or not and whatever the grants; an unscoped session → no opinion
    /// (widening included: there is no facet to widen); `facet action=add` → ask (deny without a channel),
    /// whatever the mode, since `deny` still lets the user grant; a tool not in the
    /// table → no opinion; otherwise each location the call names (path arguments,
    /// escaping glob prefixes, or the session directory for a bare search) must lie in
    /// the facet or a grant, else the first one outside is asked about (mode `ask`
    /// with a channel) or refused.
    ///
    /// Never panics on any `args`: unknown shapes are skipped, as the seed skips them,
    /// and a path that cannot be resolved (loop, NUL, unreadable) is judged outside.
    pub fn judge(
        &self,
        tool_name: &str,
        args: &Value,
        cwd: &Path,
        session: &Session,
        can_ask: bool,
    ) -> Decision {
        if session.mode == Mode::Off {
            return Decision::NoOpinion;
        }
        let located = self.tools.get(tool_name).map(|spec| locations(spec, args));
        if let Some(reason) = located
            .as_deref()
            .and_then(|located| self.guarded_reason(located, cwd))
        {
            return Decision::Deny(reason);
        }
        if let Some(reason) = located.as_deref().and_then(|l| project_file_reason(l, cwd)) {
            return Decision::Deny(reason);
        }
        if session.facet_root().is_none() {
            return Decision::NoOpinion;
        }
        if is_widening_call(tool_name, args, &self.facet_tool_names) {
            let requested = requested_paths(args);
            return if can_ask {
                Decision::Ask(widen_reason(&requested))
            } else {
                Decision::Deny(widen_refused_no_channel(
                    grant_command(session, &requested, cwd).as_deref(),
                ))
            };
        }
        let Some(located) = located else {
            return Decision::NoOpinion;
        };
        self.judge_locations(&located, cwd, session, can_ask)
    }

    /// Judge paths the caller extracted itself (Codex `apply_patch` file headers), as
    /// if a file tool named them.
    pub fn judge_paths(
        &self,
        raw_paths: &[String],
        cwd: &Path,
        session: &Session,
        can_ask: bool,
    ) -> Decision {
        if session.mode == Mode::Off {
            return Decision::NoOpinion;
        }
        let located: Vec<Location> = raw_paths.iter().cloned().map(Location::Named).collect();
        if let Some(reason) = self.guarded_reason(&located, cwd) {
            return Decision::Deny(reason);
        }
        if let Some(reason) = project_file_reason(&located, cwd) {
            return Decision::Deny(reason);
        }
        if session.facet_root().is_none() {
            return Decision::NoOpinion;
        }
        self.judge_locations(&located, cwd, session, can_ask)
    }

    /// The refusal for the first location inside a guarded folder, if any. A guarded
    /// folder that cannot be resolved guards nothing (there is nothing there to
    /// protect); a location that cannot be resolved is left to the facet check, which
    /// judges it outside.
    fn guarded_reason(&self, located: &[Location], cwd: &Path) -> Option<String> {
        if self.guarded.is_empty() {
            return None;
        }
        let guarded: Vec<PathBuf> = self
            .guarded
            .iter()
            .filter_map(|dir| containment::resolve(dir, "/").ok())
            .map(containment::Resolved::into_path)
            .collect();
        for location in located {
            let raw = match location {
                Location::Named(raw) => raw.as_str(),
                Location::SessionDefault => ".",
            };
            let Some(expanded) = expand_home(raw) else {
                continue;
            };
            let Ok(target) = containment::resolve(expanded.as_ref(), cwd) else {
                continue;
            };
            if let Some(dir) = guarded
                .iter()
                .find(|dir| containment::is_within(target.path(), dir))
            {
                return Some(guarded_sentence(raw, dir));
            }
        }
        None
    }

    fn judge_locations(
        &self,
        located: &[Location],
        cwd: &Path,
        session: &Session,
        can_ask: bool,
    ) -> Decision {
        let Some(root) = session.facet_root() else {
            return Decision::NoOpinion;
        };
        let root = root.to_string_lossy();
        let cwd_text = cwd.to_string_lossy();
        let asking = session.mode == Mode::Ask && can_ask;
        let reason_mode = if asking { Mode::Ask } else { Mode::Deny };
        for location in located {
            let (inside, reason) = match location {
                Location::Named(raw) if !can_ask => (
                    allowed(session, raw, cwd),
                    outside_reason_no_channel(
                        &cwd_text,
                        raw,
                        &root,
                        grant_command(session, std::slice::from_ref(raw), cwd).as_deref(),
                    ),
                ),
                Location::Named(raw) => (
                    allowed(session, raw, cwd),
                    outside_reason(&cwd_text, raw, &root, reason_mode),
                ),
                Location::SessionDefault if !can_ask => (
                    allowed(session, ".", cwd),
                    implicit_search_reason_no_channel(&cwd_text, &root, &session.id),
                ),
                Location::SessionDefault => (
                    allowed(session, ".", cwd),
                    implicit_search_reason(&cwd_text, &root),
                ),
            };
            if !inside {
                return if asking {
                    Decision::Ask(reason)
                } else {
                    Decision::Deny(reason)
                };
            }
        }
        Decision::NoOpinion
    }
}

/// The refusal for the first location that is a project's `.facet.toml` (as written
/// or as its canonical target), if any. The file is facet's configuration kept in the
/// project: its standing grants are the person's decision, so no judged tool call may
/// touch it, in a scoped session or not, whatever the grants — the person edits it
/// and trusts it with `facet trust`.
fn project_file_reason(located: &[Location], cwd: &Path) -> Option<String> {
    located.iter().find_map(|location| {
        let Location::Named(raw) = location else {
            return None;
        };
        let expanded = expand_home(raw)?;
        let named = is_project_file(Path::new(expanded.as_ref()));
        let target = containment::resolve(expanded.as_ref(), cwd)
            .ok()
            .is_some_and(|resolved| is_project_file(resolved.path()));
        (named || target).then(|| {
            format!(
                "{raw} is a project's facet file ({PROJECT_FILE}), which no tool call may touch: its standing grants are the user's decision — the user edits it and approves it with `facet trust`."
            )
        })
    })
}

/// Why a call touching facet's own state or configuration is refused. Not one of the
/// seed's sentences (the seed keeps its state where no file tool reaches); it names the
/// path as written, the guarded folder, and the channel that may change the facet.
fn guarded_sentence(raw: &str, dir: &Path) -> String {
    format!(
        "{raw} lies in facet's own state or configuration ({}), which no tool call may touch: only the user changes this session's facet, from the facet panel (`facet status`, `facet grant`, `facet mode`).",
        dir.display()
    )
}

/// The panel command that grants `raws` (relative to `cwd`) to `session`, where only
/// the person can widen: each path as its canonical target (the panel takes relative
/// paths against the session's folder, not `cwd`), `--allow-missing` when one does not
/// exist yet. `None` for a session that is recorded nowhere (no id): nothing can widen
/// it, so no command is offered.
fn grant_command(session: &Session, raws: &[String], cwd: &Path) -> Option<String> {
    if session.id.is_empty() || raws.is_empty() {
        return None;
    }
    let mut missing = false;
    let paths: Vec<String> = raws
        .iter()
        .map(|raw| {
            let expanded = expand_home(raw).unwrap_or(Cow::Borrowed(raw.as_str()));
            match containment::resolve(expanded.as_ref(), cwd) {
                Ok(resolved) => {
                    missing |= !resolved.exists();
                    resolved.path().to_string_lossy().into_owned()
                }
                Err(_) => {
                    missing = true;
                    cwd.join(expanded.as_ref()).to_string_lossy().into_owned()
                }
            }
        })
        .collect();
    Some(panel_grant_command(&paths, &session.id, missing))
}

/// Whether `raw` (relative to `cwd`) resolves inside the session's facet or grants.
/// Every failure to resolve is "not allowed": fail closed.
fn allowed(session: &Session, raw: &str, cwd: &Path) -> bool {
    let Some(expanded) = expand_home(raw) else {
        return false;
    };
    match containment::resolve(expanded.as_ref(), cwd) {
        Ok(resolved) => session.allows(resolved.path()),
        Err(_) => false,
    }
}

/// `~` and `~/…` as the user's home, because file tools expand them. `None` when the
/// path starts with `~` but the home is unknown, or names another user's home
/// (`~name/…`): such a path cannot be placed, so it is refused rather than guessed.
pub fn expand_home(raw: &str) -> Option<Cow<'_, str>> {
    let Some(rest) = raw.strip_prefix('~') else {
        return Some(Cow::Borrowed(raw));
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let home = dirs::home_dir()?;
    Some(Cow::Owned(format!("{}{rest}", home.to_string_lossy())))
}
