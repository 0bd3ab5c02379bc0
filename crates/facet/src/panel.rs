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

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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
        /// Grant a path that does not exist yet (a file about to be written);
        /// without it such a path is refused as a likely typo.
        #[arg(long)]
        allow_missing: bool,
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
    /// The host's session id (default: the one session active in the last hour; with
    /// more than one, a change asks which on a terminal and is refused elsewhere).
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
    /// Why this session was the one shown or changed.
    chosen_because: String,
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
            let picked = pick(&store, target.session.as_deref(), Strictness::MostRecent)?;
            print_session(out, target.json, None, &picked)
        }
        PanelCommand::Grant {
            paths,
            allow_missing,
            target,
        } => change(&store, &target, out, |session| {
            let directory = session.directory.clone();
            if !allow_missing {
                check_grants_exist(&paths, &directory)?;
            }
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

/// How long ago a session counts as recently active: the panel's default session is
/// the one seen in this window, and two seen in it make the default ambiguous.
pub const RECENTLY_ACTIVE: Duration = Duration::from_secs(60 * 60);

/// What to do when more than one session could be meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    /// Show the most recently seen one, saying so (`status` changes nothing).
    MostRecent,
    /// Ask on a terminal, else refuse naming them (a change to the wrong session is
    /// a grant nobody meant).
    OneOnly,
}

/// A session and why it was the one meant.
#[derive(Debug, Clone)]
struct Picked {
    session: Session,
    why: String,
}

/// The session `id`, or the one the person means: the only session seen in the last
/// hour, or the only one recorded. With more than one candidate, `strictness` says
/// whether the most recent is shown or the person must say which.
fn pick(store: &StateStore, id: Option<&str>, strictness: Strictness) -> Result<Picked> {
    if let Some(id) = id {
        let id = SessionId::new(id)?;
        let session = store.load(&id)?.ok_or_else(|| {
            anyhow!(
                "no facet state for session {id}; it is recorded at the session's first hook \
                 event (hint: `facet sessions` lists the recorded ones)"
            )
        })?;
        return Ok(Picked {
            session,
            why: "named with --session".to_owned(),
        });
    }
    let listing = store.list()?;
    let now = SystemTime::now();
    let mut seen: Vec<(SystemTime, Session)> = listing
        .sessions
        .into_iter()
        .map(|session| {
            let at = state::last_changed(store, &session).unwrap_or(SystemTime::UNIX_EPOCH);
            (at, session)
        })
        .collect();
    seen.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let recent = seen
        .iter()
        .filter(|(at, _)| now.duration_since(*at).unwrap_or_default() <= RECENTLY_ACTIVE)
        .count();
    let only = |why: &str, session: Session| {
        Ok(Picked {
            session,
            why: why.to_owned(),
        })
    };
    match (recent, seen.len()) {
        (_, 0) => Err(anyhow!(
            "no session recorded in {}; a session is recorded at its first hook event",
            store.dir().display()
        )),
        (1, _) => only("the only session active in the last hour", seen.remove(0).1),
        (0, 1) => only("the only recorded session", seen.remove(0).1),
        _ if strictness == Strictness::MostRecent => {
            let (at, session) = seen.remove(0);
            Ok(Picked {
                session,
                why: format!(
                    "the most recently active of {} sessions (seen {}); name another with --session",
                    seen.len() + 1,
                    ago(now, at)
                ),
            })
        }
        _ => {
            let candidates: Vec<(SystemTime, Session)> = if recent > 1 {
                seen.into_iter().take(recent).collect()
            } else {
                seen
            };
            choose_on_terminal(candidates, now)
        }
    }
}

/// More than one session could be meant: ask on a terminal, refuse elsewhere.
fn choose_on_terminal(candidates: Vec<(SystemTime, Session)>, now: SystemTime) -> Result<Picked> {
    const LISTED: usize = 10;
    let lines: Vec<String> = candidates
        .iter()
        .take(LISTED)
        .enumerate()
        .map(|(index, (at, session))| {
            format!(
                "  {}. {}  {}  seen {}",
                index + 1,
                session.id,
                session.directory.display(),
                ago(now, *at)
            )
        })
        .collect();
    let more = candidates.len().saturating_sub(LISTED);
    let more = if more > 0 {
        format!("\n  … and {more} more (`facet sessions` lists them)")
    } else {
        String::new()
    };
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !interactive {
        bail!(
            "{} sessions could be meant, so none was changed; name one with --session ID:\n{}{more}",
            candidates.len(),
            lines.join("\n")
        );
    }
    eprintln!(
        "{} sessions could be meant:\n{}{more}",
        candidates.len(),
        lines.join("\n")
    );
    eprint!("Which one (number or session id; empty to cancel)? ");
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .take(4096)
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    let answer = answer.trim();
    let chosen = answer
        .parse::<usize>()
        .ok()
        .and_then(|number| number.checked_sub(1))
        .filter(|index| *index < LISTED)
        .and_then(|index| candidates.get(index))
        .or_else(|| candidates.iter().find(|(_, session)| session.id == answer));
    match chosen {
        Some((_, session)) => Ok(Picked {
            session: session.clone(),
            why: "chosen on the terminal".to_owned(),
        }),
        None => bail!("no session chosen ({answer:?}); nothing was changed"),
    }
}

/// `3 min ago`, roughly, for a person choosing between sessions.
fn ago(now: SystemTime, at: SystemTime) -> String {
    let seconds = now.duration_since(at).unwrap_or_default().as_secs();
    match seconds {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

/// Refuse a grant of a path that does not exist: likely a typo, and a grant of it
/// would quietly cover nothing. Names the nearest existing sibling for a near miss.
fn check_grants_exist(paths: &[String], directory: &Path) -> Result<()> {
    for raw in paths {
        let Some(expanded) = facet_core::judge::expand_home(raw) else {
            continue; // the grant itself reports it
        };
        let Ok(resolved) = containment::resolve(expanded.as_ref(), directory) else {
            continue; // the grant itself reports it
        };
        if resolved.exists() {
            continue;
        }
        let suggestion = match nearest_existing(resolved.path()) {
            Some((fixed, canonical)) => {
                let written = respell(raw, resolved.path(), &fixed);
                format!(" Did you mean {written} ({})?", canonical.display())
            }
            None => String::new(),
        };
        bail!(
            "{raw} does not exist (taken against the session's folder {}, it is {}), so nothing \
             was granted.{suggestion} To grant a path that does not exist yet, add \
             --allow-missing.",
            directory.display(),
            resolved.path().display()
        );
    }
    Ok(())
}

/// The existing path nearest to the missing `path` (canonical, with a missing tail):
/// each missing component replaced by the most similar name in its folder, if one is
/// close enough to be a typo of it. Returns the repaired path as spelled and canonical.
fn nearest_existing(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut existing = path.to_path_buf();
    let mut missing = Vec::new();
    while !existing.exists() {
        missing.push(existing.file_name()?.to_os_string());
        existing = existing.parent()?.to_path_buf();
    }
    let mut fixed = existing;
    for wanted in missing.iter().rev() {
        let wanted = wanted.to_string_lossy();
        let best = std::fs::read_dir(&fixed)
            .ok()?
            .take(10_000)
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .map(|name| (edit_distance(&wanted, &name), name))
            .filter(|(distance, _)| *distance <= (wanted.chars().count() / 3).max(1))
            .min()?;
        fixed.push(best.1);
    }
    let canonical = std::fs::canonicalize(&fixed).ok()?;
    Some((fixed, canonical))
}

/// `raw` with its last components replaced the way `fixed` replaced `missing`'s, so
/// the suggestion reads in the person's own spelling (`../../libs/comon` →
/// `../../libs/common`); the absolute `fixed` when that cannot be done.
fn respell(raw: &str, missing: &Path, fixed: &Path) -> String {
    let wrong: Vec<_> = missing.components().collect();
    let right: Vec<_> = fixed.components().collect();
    if wrong.len() != right.len() {
        return fixed.display().to_string();
    }
    let differing = wrong.iter().zip(&right).filter(|(a, b)| a != b).count();
    let raw_path = Path::new(raw.trim_end_matches('/'));
    let raw_parts: Vec<_> = raw_path.components().collect();
    if differing > raw_parts.len() {
        return fixed.display().to_string();
    }
    let keep = raw_parts.len() - differing;
    let mut out: PathBuf = raw_parts[..keep].iter().collect();
    for part in &right[right.len() - differing..] {
        out.push(part);
    }
    out.display().to_string()
}

/// Levenshtein distance over chars, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(row[j + 1])
            };
            previous = current;
        }
    }
    row[b.len()]
}

fn change(
    store: &StateStore,
    target: &Target,
    out: &mut impl Write,
    apply: impl FnOnce(&mut Session) -> Result<Change>,
) -> Result<()> {
    let picked = pick(store, target.session.as_deref(), Strictness::OneOnly)?;
    let id = SessionId::new(&picked.session.id)?;
    let (change, session) = store
        .update(&id, |session| {
            let change = apply(session);
            (change, session.clone())
        })
        .with_context(|| format!("cannot change session {id}"))?;
    // A failed change left the session as it was (nothing is written when the
    // closure changed nothing, and the core changes all or nothing).
    let change = change?;
    let picked = Picked {
        session,
        why: picked.why,
    };
    print_session(out, target.json, Some(&change), &picked)
}

fn print_session(
    out: &mut impl Write,
    json: bool,
    change: Option<&Change>,
    picked: &Picked,
) -> Result<()> {
    let session = &picked.session;
    let binding = BindingView::of(session);
    if json {
        let answer = SessionAnswer {
            change: change.map(ChangeView::from),
            chosen_because: picked.why.clone(),
            binding,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(());
    }
    if let Some(change) = change {
        writeln!(
            out,
            "{} (session {}: {}.)",
            describe(change),
            session.id,
            picked.why
        )?;
    } else {
        writeln!(out, "(session {}: {}.)", session.id, picked.why)?;
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
