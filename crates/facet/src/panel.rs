//! The user's panel: `facet status | grant | revoke | reset | mode | focus` and
//! `facet sessions`.
//!
//! This is the channel the agent has no write path to: it is a command a person
//! runs, not a tool the model can call, so it is where a session without an
//! approval channel gets widened. Every command takes `--session ID` (default:
//! the session whose state changed most recently) and `--json`.
//!
//! Relative paths given here are taken against the *session's* folder, not the
//! shell's: the person is talking about that session's project.

use std::io::Write;
use std::time::SystemTime;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use facet_core::{Change, Mode, Session, SessionId, StateStore};
use serde::Serialize;

use crate::state::{self, BindingView};

/// The panel's subcommands.
#[derive(Debug, Subcommand)]
pub enum PanelCommand {
    /// Show a session's facet, grants and mode.
    Status(Target),
    /// Grant paths outside the facet to a session (stored canonical).
    Grant {
        /// Files or folders; relative ones are taken against the session's folder.
        #[arg(required = true)]
        paths: Vec<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Withdraw grants (every grant at or below each path).
    Revoke {
        /// Files or folders; relative ones are taken against the session's folder.
        #[arg(required = true)]
        paths: Vec<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Drop every grant and the focus: back to the session's own folder.
    Reset(Target),
    /// Set how a call outside the facet is treated.
    Mode {
        /// ask: put it to the user; deny: refuse it; off: no opinion on anything.
        mode: ModeArg,
        #[command(flatten)]
        target: Target,
    },
    /// Focus a session on a folder (an existing directory).
    Focus {
        /// The folder; a relative one is taken against the session's folder.
        path: String,
        #[command(flatten)]
        target: Target,
    },
    /// List the recorded sessions, most recently changed first.
    Sessions {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Which session, and how to print.
#[derive(Debug, Args)]
pub struct Target {
    /// The host's session id (default: the most recently changed session).
    #[arg(long)]
    pub session: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A mode on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Put a call outside the facet to the user.
    Ask,
    /// Refuse a call outside the facet.
    Deny,
    /// No opinion on anything.
    Off,
}

impl From<ModeArg> for Mode {
    fn from(mode: ModeArg) -> Mode {
        match mode {
            ModeArg::Ask => Mode::Ask,
            ModeArg::Deny => Mode::Deny,
            ModeArg::Off => Mode::Off,
        }
    }
}

/// The JSON answer of a command that shows or changes one session.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionAnswer {
    /// What changed (absent for `status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    change: Option<ChangeView>,
    /// The session's binding after the command.
    binding: BindingView,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
enum ChangeView {
    Granted { paths: Vec<String> },
    Revoked { paths: Vec<String> },
    Reset,
    Focused { path: String },
    Mode { mode: String },
    Nothing,
}

impl From<&Change> for ChangeView {
    fn from(change: &Change) -> Self {
        let shown = |paths: &[std::path::PathBuf]| {
            paths
                .iter()
                .map(|path| path.display().to_string())
                .collect()
        };
        match change {
            Change::Granted(paths) => Self::Granted {
                paths: shown(paths),
            },
            Change::Revoked(paths) => Self::Revoked {
                paths: shown(paths),
            },
            Change::Reset => Self::Reset,
            Change::Focused(path) => Self::Focused {
                path: path.display().to_string(),
            },
            Change::Mode(mode) => Self::Mode {
                mode: mode.as_str().to_owned(),
            },
            Change::Nothing => Self::Nothing,
        }
    }
}

/// One row of `facet sessions --json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionRow {
    #[serde(flatten)]
    binding: BindingView,
    /// Seconds since the Unix epoch when the session's state last changed.
    last_changed_unix: Option<u64>,
}

/// Run one panel command, writing its answer to `out`.
pub fn run(command: PanelCommand, out: &mut impl Write) -> Result<()> {
    let store = state::open_store(None)?;
    match command {
        PanelCommand::Sessions { json } => sessions(&store, json, out),
        PanelCommand::Status(target) => {
            let session = pick(&store, target.session.as_deref())?;
            print_session(out, target.json, None, &session)
        }
        PanelCommand::Grant { paths, target } => change(&store, &target, out, |session| {
            let directory = session.directory.clone();
            session
                .grant(&paths, &directory)
                .map_err(|error| anyhow!("{error}"))
        }),
        PanelCommand::Revoke { paths, target } => change(&store, &target, out, |session| {
            let directory = session.directory.clone();
            session
                .revoke(&paths, &directory)
                .map_err(|error| anyhow!("{error}"))
        }),
        PanelCommand::Reset(target) => change(&store, &target, out, |session| Ok(session.reset())),
        PanelCommand::Mode { mode, target } => change(&store, &target, out, |session| {
            session.mode = mode.into();
            Ok(Change::Mode(session.mode))
        }),
        PanelCommand::Focus { path, target } => change(&store, &target, out, |session| {
            let directory = session.directory.clone();
            session
                .set_focus(&path, &directory)
                .map_err(|error| anyhow!("{error}"))
        }),
    }
}

/// The session `id`, or the most recently changed one.
fn pick(store: &StateStore, id: Option<&str>) -> Result<Session> {
    if let Some(id) = id {
        let id = SessionId::new(id)?;
        return store.load(&id)?.ok_or_else(|| {
            anyhow!(
                "no facet state for session {id}; it is recorded at the session's first hook \
                 event (hint: `facet sessions` lists the recorded ones)"
            )
        });
    }
    let listing = store.list()?;
    listing
        .sessions
        .into_iter()
        .max_by_key(|session| state::last_changed(store, session).unwrap_or(SystemTime::UNIX_EPOCH))
        .ok_or_else(|| {
            anyhow!(
                "no session recorded in {}; a session is recorded at its first hook event",
                store.dir().display()
            )
        })
}

fn change(
    store: &StateStore,
    target: &Target,
    out: &mut impl Write,
    apply: impl FnOnce(&mut Session) -> Result<Change>,
) -> Result<()> {
    let picked = pick(store, target.session.as_deref())?;
    let id = SessionId::new(&picked.id)?;
    let (change, session) = store
        .update(&id, |session| {
            let change = apply(session);
            (change, session.clone())
        })
        .with_context(|| format!("cannot change session {id}"))?;
    // A failed change left the session as it was (nothing is written when the
    // closure changed nothing, and the core changes all or nothing).
    let change = change?;
    print_session(out, target.json, Some(&change), &session)
}

fn print_session(
    out: &mut impl Write,
    json: bool,
    change: Option<&Change>,
    session: &Session,
) -> Result<()> {
    let binding = BindingView::of(session);
    if json {
        let answer = SessionAnswer {
            change: change.map(ChangeView::from),
            binding,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(());
    }
    if let Some(change) = change {
        writeln!(out, "{}", describe(change))?;
    }
    write!(out, "{}", render_binding(&binding))?;
    Ok(())
}

fn describe(change: &Change) -> String {
    let list = |paths: &[std::path::PathBuf]| {
        paths
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match change {
        Change::Granted(paths) if paths.is_empty() => {
            "Granted nothing new: the facet or an earlier grant already covers it.".to_owned()
        }
        Change::Granted(paths) => format!("Granted {}.", list(paths)),
        Change::Revoked(paths) if paths.is_empty() => {
            "No grant matched: nothing revoked.".to_owned()
        }
        Change::Revoked(paths) => format!("Revoked {}.", list(paths)),
        Change::Reset => "Reset: no grants, no focus.".to_owned(),
        Change::Focused(path) => format!("Focused on {}.", path.display()),
        Change::Mode(mode) => format!("Mode set to {mode}."),
        Change::Nothing => "Nothing changed.".to_owned(),
    }
}

/// The text form of a binding, one fact per line.
pub fn render_binding(binding: &BindingView) -> String {
    let facet = match (&binding.facet, binding.focused) {
        (Some(facet), true) => format!("{facet} (focused from the panel)"),
        (Some(facet), false) => facet.clone(),
        (None, _) => "none — the session started at the project's top level".to_owned(),
    };
    let granted = if binding.granted.is_empty() {
        "nothing".to_owned()
    } else {
        binding.granted.join("\n          ")
    };
    format!(
        "session   {}\nfolder    {}\nfacet     {facet}\ngranted   {granted}\nmode      {}\n",
        binding.session, binding.directory, binding.mode
    )
}

fn sessions(store: &StateStore, json: bool, out: &mut impl Write) -> Result<()> {
    let listing = store.list()?;
    let mut rows: Vec<(Option<SystemTime>, Session)> = listing
        .sessions
        .into_iter()
        .map(|session| (state::last_changed(store, &session), session))
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    for problem in &listing.problems {
        eprintln!("facet: {problem}");
    }
    if json {
        let rows: Vec<SessionRow> = rows
            .iter()
            .map(|(changed, session)| SessionRow {
                binding: BindingView::of(session),
                last_changed_unix: changed
                    .and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok())
                    .map(|since| since.as_secs()),
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    if rows.is_empty() {
        writeln!(
            out,
            "No sessions recorded in {} yet; a session is recorded at its first hook event.",
            store.dir().display()
        )?;
        return Ok(());
    }
    for (_, session) in &rows {
        let binding = BindingView::of(session);
        writeln!(
            out,
            "{}  {}  mode {}  {} granted",
            binding.session,
            binding.facet.as_deref().unwrap_or("(not scoped)"),
            binding.mode,
            binding.granted.len()
        )?;
    }
    if rows.is_empty() && !listing.problems.is_empty() {
        bail!("no readable session state");
    }
    Ok(())
}
