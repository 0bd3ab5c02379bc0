//! One session's facet: its directory, whether it is scoped, the focus, the grants, the
//! mode — and the changes the `facet` tool and the user's panel make to them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::seed::{ContextInput, Mode, facet_context_text, js_trim, panel_line};

/// The persisted state of one session.
///
/// Invariants: `directory`, `focus` and every `extras` entry are canonical (resolved
/// by [`containment::resolve`]); `directory` is recorded at first sight and never
/// changes; `extras` holds no duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The host's session id (data, never a path).
    pub id: String,
    /// The session's directory at first sight, canonical. Never moved.
    pub directory: PathBuf,
    /// False when the session started at the project's top level: then it sees the
    /// whole project and has no facet (unless the user focuses it from the panel).
    pub scoped: bool,
    /// A narrower folder the user focused the session on from the panel.
    #[serde(default)]
    pub focus: Option<PathBuf>,
    /// Paths granted outside the facet, canonical, in grant order.
    #[serde(default)]
    pub extras: Vec<PathBuf>,
    /// How a call outside the facet is handled.
    pub mode: Mode,
    /// The context text last handed to the model, so a hook can tell when the binding
    /// changed and say it again.
    #[serde(default)]
    pub context_sent: Option<String>,
    /// Whether the rule text was handed to the model. A session unscoped or `off` at
    /// its start is told nothing then; when it is later focused or switched on, the
    /// first binding it is told must carry the rule with it.
    #[serde(default)]
    pub rule_sent: bool,
    /// The standing grants that count for this session now (canonical): the
    /// project's, from facet's configuration or a trusted `.facet.toml`. Never stored:
    /// filled in each time the session is loaded, so a change to either file counts
    /// from the next event (see [`crate::standing`]).
    #[serde(skip)]
    pub standing: Vec<PathBuf>,
}

impl Session {
    /// A fresh session seen for the first time in `directory` (already canonical).
    pub fn new(id: &str, directory: PathBuf, scoped: bool, mode: Mode) -> Session {
        Session {
            id: id.to_string(),
            directory,
            scoped,
            focus: None,
            extras: Vec::new(),
            mode,
            context_sent: None,
            rule_sent: false,
            standing: Vec::new(),
        }
    }

    /// The facet root: the focus if the user set one, else the session's directory if
    /// the session is scoped, else none.
    pub fn facet_root(&self) -> Option<&Path> {
        match (&self.focus, self.scoped) {
            (Some(focus), _) => Some(focus),
            (None, true) => Some(&self.directory),
            (None, false) => None,
        }
    }

    /// Whether the canonical `target` lies in the facet or in a grant. An unscoped
    /// session contains everything.
    pub fn allows(&self, target: &Path) -> bool {
        let Some(root) = self.facet_root() else {
            return true;
        };
        containment::is_within(target, root)
            || self
                .extras
                .iter()
                .chain(&self.standing)
                .any(|extra| containment::is_within(target, extra))
    }

    /// The seed's context text for this session (see [`facet_context_text`]).
    pub fn context_text(&self, can_ask: bool) -> String {
        let cwd = self.directory.to_string_lossy();
        let root = self.facet_root().map(|root| root.to_string_lossy());
        // Standing grants are stated with the session's own: to the model both are
        // simply granted.
        let mut extras: Vec<String> = Vec::new();
        for path in self.extras.iter().chain(&self.standing) {
            let shown = path.to_string_lossy().into_owned();
            if !extras.contains(&shown) {
                extras.push(shown);
            }
        }
        let text = facet_context_text(&ContextInput {
            cwd: &cwd,
            root: root.as_deref(),
            extras: &extras,
            mode: self.mode,
            can_ask,
        });
        // Where the seed sends the model to "the facet's context panel" (no channel,
        // or mode `deny`), name the command that is that panel, for this session.
        let panel_is_the_way = !can_ask || self.mode == Mode::Deny;
        if text.is_empty() || !panel_is_the_way || self.id.is_empty() {
            return text;
        }
        format!("{text}\n{}", panel_line(&self.id))
    }

    /// Grant `raw_paths` (relative to `cwd`): each is stored canonical, unless the facet
    /// or an earlier grant already covers it. Nothing is stored if any path fails to
    /// resolve: a grant is all or nothing, so the user's answer means one thing.
    pub fn grant(&mut self, raw_paths: &[String], cwd: &Path) -> Result<Change, GrantError> {
        let targets = resolve_all(raw_paths, cwd)?;
        let mut added = Vec::new();
        for target in targets {
            if self.allows(&target) {
                continue;
            }
            self.extras.push(target.clone());
            added.push(target);
        }
        Ok(Change::Granted(added))
    }

    /// Revoke `raw_paths` (relative to `cwd`): every grant equal to or below one of them
    /// is removed.
    pub fn revoke(&mut self, raw_paths: &[String], cwd: &Path) -> Result<Change, GrantError> {
        let targets = resolve_all(raw_paths, cwd)?;
        let mut removed = Vec::new();
        self.extras.retain(|extra| {
            let hit = targets
                .iter()
                .any(|target| containment::is_within(extra, target));
            if hit {
                removed.push(extra.clone());
            }
            !hit
        });
        Ok(Change::Revoked(removed))
    }

    /// The agent's `reset`: every grant dropped. The focus stays: the user set it from
    /// the panel, and dropping it would show the agent more than it saw before (a
    /// focused top-level session would lose its facet altogether), which the widening
    /// rule forbids to anything but an approved `add`.
    pub fn reset_grants(&mut self) -> Change {
        self.extras.clear();
        Change::Reset
    }

    /// The user's reset from the panel: back to the session's own folder, no grants and
    /// no focus.
    pub fn reset(&mut self) -> Change {
        self.extras.clear();
        self.focus = None;
        Change::Reset
    }

    /// Focus the session on `raw` (relative to `cwd`), which must be an existing
    /// directory inside the session's own folder (a focus narrows; a grant is how a
    /// facet widens). Only the user's panel does this; the agent has no path to it.
    pub fn set_focus(&mut self, raw: &str, cwd: &Path) -> Result<Change, GrantError> {
        let root = containment::Root::new(cwd.join(raw)).map_err(|source| GrantError::Path {
            path: raw.to_string(),
            source,
        })?;
        if !containment::is_within(root.path(), &self.directory) {
            return Err(GrantError::NotNarrower {
                path: raw.to_string(),
                directory: self.directory.clone(),
            });
        }
        self.focus = Some(root.path().to_path_buf());
        Ok(Change::Focused(root.path().to_path_buf()))
    }

    /// Apply a `facet` tool action (after the user approved it, for `add`).
    pub fn apply(&mut self, action: &FacetAction, cwd: &Path) -> Result<Change, GrantError> {
        match action {
            FacetAction::Status => Ok(Change::Nothing),
            FacetAction::Add(paths) => self.grant(paths, cwd),
            FacetAction::Remove(paths) => self.revoke(paths, cwd),
            FacetAction::Reset => Ok(self.reset_grants()),
        }
    }
}

fn resolve_all(raw_paths: &[String], cwd: &Path) -> Result<Vec<PathBuf>, GrantError> {
    raw_paths
        .iter()
        .map(|raw| {
            let expanded = crate::home::expand_home(raw)
                .ok_or_else(|| GrantError::Home { path: raw.clone() })?;
            containment::resolve(expanded.as_ref(), cwd)
                .map(containment::Resolved::into_path)
                .map_err(|source| GrantError::Path {
                    path: raw.clone(),
                    source,
                })
        })
        .collect()
}

/// What a change did, for the hook's and the panel's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Nothing changed (`status`).
    Nothing,
    /// These canonical paths were added (already covered ones are not listed).
    Granted(Vec<PathBuf>),
    /// These grants were removed.
    Revoked(Vec<PathBuf>),
    /// Grants cleared (and, from the panel, the focus).
    Reset,
    /// The facet now is this folder.
    Focused(PathBuf),
    /// The mode was set.
    Mode(Mode),
}

/// A grant or focus that could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// The path could not be resolved (loop, NUL byte, unreadable component, …).
    #[error("cannot resolve {path}: {source}")]
    Path {
        /// The path as written.
        path: String,
        /// Why.
        #[source]
        source: containment::Error,
    },
    /// A focus outside the session's own folder (a focus may only narrow).
    #[error("cannot focus on {path}: a focus must be a folder inside the session's folder {}", directory.display())]
    NotNarrower {
        /// The path as written.
        path: String,
        /// The session's folder.
        directory: PathBuf,
    },
    /// The path starts with `~` but names another user's home, or the home is unknown.
    #[error("cannot place {path}: only `~` and `~/…` (this user's home) are understood")]
    Home {
        /// The path as written.
        path: String,
    },
}

/// A call of the `facet` tool: `status`, `add`, `remove`, `reset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FacetAction {
    /// Read the binding.
    Status,
    /// Widen: grant these raw paths.
    Add(Vec<String>),
    /// Narrow: revoke these raw paths.
    Remove(Vec<String>),
    /// Drop every grant (the user's focus stays).
    Reset,
}

/// Why a `facet` call's arguments were not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// `action` is missing or not a string.
    #[error("`action` is required: one of status, add, remove, reset")]
    MissingAction,
    /// `action` is a string but not a known action.
    #[error("unknown action {0:?}: expected one of status, add, remove, reset")]
    UnknownAction(String),
    /// `add`/`remove` without any path.
    #[error("`{0}` needs `paths`: a list of folders or files")]
    NoPaths(&'static str),
}

impl FacetAction {
    /// Read the `facet` tool's arguments: `{action, paths?}`. `paths` is a list of
    /// strings (a single string is accepted too); non-strings and blank strings are
    /// skipped, as the seed skips them.
    pub fn parse(args: &Value) -> Result<FacetAction, ActionError> {
        let action = args
            .get("action")
            .and_then(Value::as_str)
            .ok_or(ActionError::MissingAction)?;
        match action {
            "status" => Ok(FacetAction::Status),
            "reset" => Ok(FacetAction::Reset),
            "add" => non_empty(requested_paths(args), "add").map(FacetAction::Add),
            "remove" => non_empty(requested_paths(args), "remove").map(FacetAction::Remove),
            other => Err(ActionError::UnknownAction(other.to_string())),
        }
    }
}

fn non_empty(paths: Vec<String>, action: &'static str) -> Result<Vec<String>, ActionError> {
    if paths.is_empty() {
        Err(ActionError::NoPaths(action))
    } else {
        Ok(paths)
    }
}

/// The raw paths a `facet` call names in `paths` (list or single string), trimmed,
/// non-empty, in order.
pub fn requested_paths(args: &Value) -> Vec<String> {
    let values: Vec<&Value> = match args.get("paths") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(single @ Value::String(_)) => vec![single],
        _ => Vec::new(),
    };
    values
        .into_iter()
        .filter_map(Value::as_str)
        .map(js_trim)
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect()
}
