//! The decision: for one tool call in one session, no opinion, ask, or deny — with the
//! seed's sentence.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::Config;
pub use crate::home::expand_home;
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
        Policy::with_table(ToolTable::builtin(), config)
    }

    /// `table` (a host's own, e.g. [`ToolTable::copilot`], [`ToolTable::gemini_cli`] or
    /// [`ToolTable::opencode`], whose names collide with the built-in tables) plus the
    /// configured tools.
    pub fn with_table(table: ToolTable, config: &Config) -> Policy {
        Policy {
            tools: table.with_tools(&config.tools),
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
    /// own state or configuration, see [`Policy::with_guarded`]), or a search root
    /// holding one ([`crate::ToolSpec::searches_below`]) → deny, in a scoped
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
        let spec = self.tools.get(tool_name);
        let located = spec.map(|spec| {
            let named = locations(spec, args);
            if spec.lexical_join {
                with_lexical_twins(named, cwd)
            } else {
                named
            }
        });
        let searches = spec.is_some_and(|spec| spec.searches_below);
        if let Some(reason) = located
            .as_deref()
            .and_then(|located| self.guarded_reason(located, cwd, searches))
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
                Decision::Ask(widen_reason(&named_paths(&requested, cwd, session)))
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
        let located: Vec<Location> = raw_paths.iter().cloned().map(Location::Named).collect();
        self.judge_extracted(&located, cwd, session, can_ask)
    }

    /// Judge paths the caller placed itself, as the host will: each as written and as
    /// the absolute path the host computes for it (a Codex patch path joined, lexically,
    /// to the folder Codex applies the patch in — see [`lexical_absolute`]). Judged by
    /// the absolute path; a sentence names the written one, with its target when they
    /// differ.
    pub fn judge_placed(
        &self,
        placed: &[(String, PathBuf)],
        cwd: &Path,
        session: &Session,
        can_ask: bool,
    ) -> Decision {
        let located: Vec<Location> = placed
            .iter()
            .map(|(written, absolute)| Location::Placed {
                written: written.clone(),
                absolute: absolute.to_string_lossy().into_owned(),
            })
            .collect();
        self.judge_extracted(&located, cwd, session, can_ask)
    }

    /// A call that writes files facet cannot place (a Codex `apply_patch` in a form
    /// Codex does not apply itself, so the shell runs it wherever it happens to be):
    /// judged as a path outside the facet, so asked (mode `ask` with a channel) or
    /// refused — never let through — with `why` as the reason. No opinion where
    /// nothing is judged (mode `off`, an unscoped session).
    pub fn judge_unplaceable(&self, why: &str, session: &Session, can_ask: bool) -> Decision {
        if session.mode == Mode::Off || session.facet_root().is_none() {
            return Decision::NoOpinion;
        }
        if session.mode == Mode::Ask && can_ask {
            Decision::Ask(why.to_string())
        } else {
            Decision::Deny(why.to_string())
        }
    }

    fn judge_extracted(
        &self,
        located: &[Location],
        cwd: &Path,
        session: &Session,
        can_ask: bool,
    ) -> Decision {
        if session.mode == Mode::Off {
            return Decision::NoOpinion;
        }
        if let Some(reason) = self.guarded_reason(located, cwd, false) {
            return Decision::Deny(reason);
        }
        if let Some(reason) = project_file_reason(located, cwd) {
            return Decision::Deny(reason);
        }
        if session.facet_root().is_none() {
            return Decision::NoOpinion;
        }
        self.judge_locations(located, cwd, session, can_ask)
    }

    /// The refusal for the first location inside a guarded folder, if any — or, for a
    /// tool that `searches` below its root, the first root that holds an existing
    /// guarded folder (a bare `Grep` in `$HOME` reads `~/.local/state/facet`). A guarded
    /// folder that cannot be resolved guards nothing (there is nothing there to
    /// protect); a location that cannot be resolved is left to the facet check, which
    /// judges it outside.
    fn guarded_reason(&self, located: &[Location], cwd: &Path, searches: bool) -> Option<String> {
        if self.guarded.is_empty() {
            return None;
        }
        let guarded: Vec<containment::Resolved> = self
            .guarded
            .iter()
            .filter_map(|dir| containment::resolve(dir, "/").ok())
            .collect();
        for location in located {
            let (written, judged) = match location {
                Location::Named(raw) => (raw.as_str(), raw.as_str()),
                Location::SessionDefault => (".", "."),
                Location::Placed { written, absolute } => (written.as_str(), absolute.as_str()),
            };
            let Some(expanded) = expand_home(judged) else {
                continue;
            };
            let Ok(target) = containment::resolve(expanded.as_ref(), cwd) else {
                continue;
            };
            if let Some(dir) = guarded
                .iter()
                .find(|dir| containment::is_within(target.path(), dir.path()))
            {
                return Some(guarded_sentence(written, dir.path()));
            }
            let held = guarded
                .iter()
                .find(|dir| dir.exists() && containment::is_within(dir.path(), target.path()));
            if let (true, Some(dir)) = (searches, held) {
                return Some(guarded_search_sentence(target.path(), dir.path()));
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
                Location::Named(raw) => {
                    let target = target_of(raw, cwd);
                    let shown = named_path(raw, target.as_deref(), session);
                    (
                        target.is_some_and(|target| session.allows(&target)),
                        outside_sentence(&cwd_text, &shown, &root, reason_mode, can_ask, || {
                            grant_command(session, std::slice::from_ref(raw), cwd)
                        }),
                    )
                }
                Location::Placed { written, absolute } => {
                    let target = target_of(absolute, cwd);
                    let shown = named_path(written, target.as_deref(), session);
                    (
                        target.is_some_and(|target| session.allows(&target)),
                        outside_sentence(&cwd_text, &shown, &root, reason_mode, can_ask, || {
                            grant_command(session, std::slice::from_ref(absolute), cwd)
                        }),
                    )
                }
                Location::SessionDefault if !can_ask => (
                    target_of(".", cwd).is_some_and(|target| session.allows(&target)),
                    implicit_search_reason_no_channel(&cwd_text, &root, &session.id),
                ),
                Location::SessionDefault => (
                    target_of(".", cwd).is_some_and(|target| session.allows(&target)),
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

/// `located` and, after it, each named path that climbs (`..`) as the host opens it
/// when it joins lexically ([`crate::ToolSpec::lexical_join`]): taken against `cwd`
/// with `..` removing the name before it, links not followed. Judging both forms
/// refuses a path that either reading takes outside. A path without `..` reads the
/// same both ways and gets no twin; `~` paths are left to the named reading (the
/// host does not expand them, so its reading is a folder named `~` under `cwd`).
fn with_lexical_twins(mut located: Vec<Location>, cwd: &Path) -> Vec<Location> {
    let twins: Vec<Location> = located
        .iter()
        .filter_map(|location| match location {
            Location::Named(raw)
                if !raw.starts_with('~')
                    && Path::new(raw)
                        .components()
                        .any(|c| c == std::path::Component::ParentDir) =>
            {
                Some(Location::Placed {
                    written: raw.clone(),
                    absolute: lexical_absolute(cwd, Path::new(raw))
                        .to_string_lossy()
                        .into_owned(),
                })
            }
            _ => None,
        })
        .collect();
    located.extend(twins);
    located
}

/// The sentence for a location outside the facet: the seed's where someone can be
/// asked (its `facet action=add` works there), else the one naming the panel
/// command that grants it (`grant`), since `facet action=add` is refused too.
fn outside_sentence(
    cwd_text: &str,
    shown: &str,
    root: &str,
    reason_mode: Mode,
    can_ask: bool,
    grant: impl FnOnce() -> Option<String>,
) -> String {
    if can_ask {
        outside_reason(cwd_text, shown, root, reason_mode)
    } else {
        outside_reason_no_channel(cwd_text, shown, root, grant().as_deref())
    }
}

/// The refusal for the first location that is a project's `.facet.toml` (as written
/// or as its canonical target), if any. The file is facet's configuration kept in the
/// project: its standing grants are the person's decision, so no judged tool call may
/// touch it, in a scoped session or not, whatever the grants — the person edits it
/// and trusts it with `facet trust`.
fn project_file_reason(located: &[Location], cwd: &Path) -> Option<String> {
    located.iter().find_map(|location| {
        let (raw, placed) = match location {
            Location::Named(raw) => (raw, raw),
            Location::Placed { written, absolute } => (written, absolute),
            Location::SessionDefault => return None,
        };
        let expanded = expand_home(placed)?;
        let named = is_project_file(Path::new(raw)) || is_project_file(Path::new(expanded.as_ref()));
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

/// Why a search whose root holds facet's own state or configuration is refused.
fn guarded_search_sentence(root: &Path, dir: &Path) -> String {
    format!(
        "This search would cover {}, which holds facet's own state or configuration ({}), which no tool call may touch: name a folder that does not hold it. Only the user changes this session's facet, from the facet panel (`facet status`, `facet grant`, `facet mode`).",
        root.display(),
        dir.display()
    )
}

/// The canonical target of `raw` (relative to `cwd`), or `None` when it cannot be
/// placed (another user's `~name`, a loop, a NUL byte, …): such a path is judged
/// outside — fail closed.
fn target_of(raw: &str, cwd: &Path) -> Option<PathBuf> {
    let expanded = expand_home(raw)?;
    containment::resolve(expanded.as_ref(), cwd)
        .ok()
        .map(containment::Resolved::into_path)
}

/// A path as a sentence names it: as written, and — when that is not where it leads —
/// with its canonical target: `common-link/lib.rs → /abs/shared/lib.rs`.
///
/// "Where it leads" is judged as the person reading the sentence would read the
/// written path: against the session's own folder, without following links. The
/// target is added when a symbolic link leads elsewhere, when the host's working
/// directory moved away from the session's folder (a relative path then names a file
/// the reader would not guess), or when a patch path is taken in another folder
/// (`cd … && apply_patch`). Presentation only: the decision is made on the target.
pub fn named_path(written: &str, target: Option<&Path>, session: &Session) -> String {
    let Some(target) = target else {
        return written.to_string();
    };
    let read_as = expand_home(written)
        .map(|expanded| lexical_absolute(&session.directory, Path::new(expanded.as_ref())));
    if read_as.as_deref() == Some(target) {
        written.to_string()
    } else {
        format!("{written} → {}", target.display())
    }
}

/// The paths of a widening call as the question names them (see [`named_path`]), so
/// the person approving `common-link` sees that it is `/abs/shared`.
fn named_paths(paths: &[String], cwd: &Path, session: &Session) -> Vec<String> {
    paths
        .iter()
        .map(|path| named_path(path, target_of(path, cwd).as_deref(), session))
        .collect()
}

/// `raw` taken against `base` and normalized lexically: `.` dropped, `..` removing
/// the name before it (at `/` it stays at `/`), no link followed. This is how Codex
/// joins a patch path to the folder it applies the patch in, and how a reader reads a
/// path against a folder.
pub fn lexical_absolute(base: &Path, raw: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    let joined = base.join(raw);
    for component in joined.components() {
        match component {
            std::path::Component::Normal(name) => out.push(name),
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::RootDir
            | std::path::Component::CurDir
            | std::path::Component::Prefix(_) => {}
        }
    }
    out
}
