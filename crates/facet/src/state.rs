//! The seam to `facet-core`'s session store: where the state folder is, and the
//! read-only view of a session that the panel and the MCP server show.
//!
//! The folder is `FACET_STATE_DIR` when set, else `facet-core`'s default
//! (`$XDG_STATE_HOME/facet`, `~/.local/state/facet`). Locking, atomic writes and
//! the file layout are the store's; this module adds nothing to them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use facet_core::{Session, SessionId, StateStore, StoreError};
use schemars::JsonSchema;
use serde::Serialize;

use crate::envelope::Envelope;
use crate::hook_config::HookConfig;

/// Why the state could not be used.
#[derive(Debug)]
pub enum StateError {
    /// Neither `FACET_STATE_DIR` nor a home folder is known.
    NoStateDir,
    /// `FACET_STATE_DIR` is a relative path.
    RelativeStateDir(PathBuf),
    /// The store refused (unreadable file, bad id, I/O, …).
    Store(StoreError),
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoStateDir => write!(
                f,
                "no state folder: set FACET_STATE_DIR (or HOME, for ~/.local/state/facet)"
            ),
            Self::RelativeStateDir(dir) => write!(
                f,
                "FACET_STATE_DIR must be an absolute path, not {}: a relative one would put \
                 the state in whatever folder the hook runs in",
                dir.display()
            ),
            Self::Store(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for StateError {}

impl From<StoreError> for StateError {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

/// The state folder: `explicit` (tests, a server given one) or `FACET_STATE_DIR`,
/// else the default. The one place this is decided, for the hook, the panel and
/// the server alike.
///
/// An empty value is unset (a shell's `FACET_STATE_DIR=` must not mean "here"); a
/// relative one is refused, because it would be read against the hook's working
/// directory — the agent's project, inside the facet it guards.
pub fn state_dir(explicit: Option<&Path>) -> Result<PathBuf, StateError> {
    let chosen = match explicit {
        Some(dir) => Some(dir.as_os_str().to_owned()),
        None => std::env::var_os("FACET_STATE_DIR"),
    };
    match chosen {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_relative() {
                Err(StateError::RelativeStateDir(dir))
            } else {
                Ok(dir)
            }
        }
        _ => StateStore::default_dir().ok_or(StateError::NoStateDir),
    }
}

/// Where facet keeps its own state and configuration: no file tool may touch them,
/// or the agent could rewrite its own facet (a session in `$HOME` contains both).
/// One list for the hook and the dsh bridge.
pub fn guarded_locations(explicit: Option<&Path>) -> Vec<PathBuf> {
    let mut guarded: Vec<PathBuf> = state_dir(explicit).into_iter().collect();
    guarded.extend(facet_core::Config::guarded_location());
    guarded
}

/// The opened store.
pub fn open_store(explicit: Option<&Path>) -> Result<StateStore, StateError> {
    Ok(StateStore::open(state_dir(explicit)?)?)
}

/// The session an event belongs to, recorded at first sight.
pub fn observe(config: &HookConfig, envelope: &Envelope) -> Result<Session, StateError> {
    let store = open_store(config.state_dir.as_deref())?;
    let id = SessionId::new(&envelope.session_id)?;
    Ok(store.load_or_init(&id, Path::new(&envelope.cwd), &config.core)?)
}

/// A session for an event that names none (empty `session_id`): recorded nowhere,
/// seen for the first time now — its folder is the event's `cwd`. ADAPTER: this
/// repeats `facet-core`'s private first-sight rule (canonical root, unscoped at the
/// project top); a public `Session::first_sight` there would make it one place.
pub fn ephemeral(config: &HookConfig, envelope: &Envelope) -> Result<Session, StateError> {
    let root = containment::Root::new(&envelope.cwd).map_err(|source| {
        StateError::Store(StoreError::Directory {
            path: PathBuf::from(&envelope.cwd),
            source,
        })
    })?;
    let directory = root.path().to_path_buf();
    let scoped = !facet_core::project::is_project_top(&directory, &config.core.project_markers);
    let mut session = Session::new("", directory, scoped, config.core.default_mode);
    // Standing grants hold with or without an id; without a state folder there is no
    // trust record, so only the configuration's count.
    session.standing = match open_store(config.state_dir.as_deref()) {
        Ok(store) => store.standing_for(&session.directory, &config.core).paths(),
        Err(_) => {
            facet_core::standing::standing_for(&session.directory, &config.core, |_| None).paths()
        }
    };
    Ok(session)
}

/// Read-modify-write the event's session under its lock (recording it first if new).
pub fn update<T>(
    config: &HookConfig,
    envelope: &Envelope,
    change: impl FnOnce(&mut Session) -> T,
) -> Result<T, StateError> {
    let store = open_store(config.state_dir.as_deref())?;
    let id = SessionId::new(&envelope.session_id)?;
    Ok(store.update_or_init(&id, Path::new(&envelope.cwd), &config.core, change)?)
}

/// What a person (or the model, through `status`) is shown of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingView {
    /// The host's session id.
    pub session: String,
    /// The session's folder, recorded at first sight (canonical).
    pub directory: String,
    /// The facet root, or `null` when the session is not scoped (it started at the
    /// project's top level and was not focused).
    pub facet: Option<String>,
    /// Whether the user focused the session on a narrower folder.
    pub focused: bool,
    /// Paths granted outside the facet (canonical).
    pub granted: Vec<String>,
    /// The project's standing grants that count for this session (canonical): from
    /// `[projects]` in facet's configuration or a trusted `.facet.toml`.
    pub standing: Vec<String>,
    /// `ask`, `deny` or `off`.
    pub mode: String,
}

impl BindingView {
    /// The view of `session`.
    pub fn of(session: &Session) -> Self {
        Self {
            session: session.id.clone(),
            directory: session.directory.display().to_string(),
            facet: session.facet_root().map(|root| root.display().to_string()),
            focused: session.focus.is_some(),
            granted: session
                .extras
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
            standing: session
                .standing
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
            mode: session.mode.as_str().to_owned(),
        }
    }
}

/// The binding of `session` in the folder `dir`, or `None` if it was never recorded.
pub fn binding_of(dir: &Path, session: &str) -> Result<Option<BindingView>, StateError> {
    let mut store = StateStore::open(dir)?;
    if let Ok(config) = facet_core::Config::load_chosen() {
        store = store.with_config(config);
    }
    let id = SessionId::new(session)?;
    Ok(store.load(&id)?.as_ref().map(BindingView::of))
}

/// When a session's state last changed (for "the most recent session").
pub fn last_changed(store: &StateStore, session: &Session) -> Option<SystemTime> {
    let id = SessionId::new(&session.id).ok()?;
    store.last_changed(&id).ok().flatten()
}
