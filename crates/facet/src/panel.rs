//! The user's panel: `facet status | grant | revoke | reset | mode | focus`,
//! `facet trust` and `facet sessions`.
//!
//! This is the channel the agent has no write path to: it is a command a person
//! runs, not a tool the model can call, so it is where a session without an
//! approval channel gets widened (the sentences facet writes there name the exact
//! `facet grant … --session ID`). Every session command takes `--session ID` and
//! `--json`; without `--session` the one session active in the last hour is meant,
//! and when more than one could be, a change asks on a terminal or is refused, never
//! guessed. Every answer says which session and why.
//!
//! `facet grant` refuses a path that does not exist (a typo would grant nothing)
//! unless `--allow-missing`, naming the nearest existing sibling of a near miss.
//! `facet trust` pins a project's `.facet.toml` by hash (its standing grants, see
//! `facet_core::standing`); `facet sessions` forgets sessions not seen for
//! `prune_after_days` first and says so.
//!
//! Relative paths given here are taken against the *session's* folder, not the
//! shell's: the person is talking about that session's project.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use facet_core::seed::shell_word;
use facet_core::standing::{
    PROJECT_FILE, ProjectFile, ProjectFileState, Source, Standing, StandingGrant, read_project_file,
};
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
    /// Trust a project's `.facet.toml` as it is now: its `grants` count for every
    /// session in the project until the file changes (pinned by SHA-256).
    Trust {
        /// The project file, or a folder of the project (default: the current folder);
        /// the file that counts is the one at the project's top level.
        path: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the recorded sessions, most recently active first (sessions not seen for
    /// `prune_after_days`, default 30, are forgotten first).
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
    /// The project's standing grants that count for the session, with their source.
    standing_grants: Vec<StandingView>,
    /// The project's `.facet.toml`, if it has one, and whether it counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    project_file: Option<ProjectFileView>,
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
    // The configuration decides standing grants and pruning; one that cannot be used
    // still lets the person fix a session (the hook refuses every call meanwhile).
    let config = match facet_core::Config::load_chosen() {
        Ok(config) => Some(config),
        Err(error) => {
            eprintln!("facet: {error}; standing grants are not shown");
            None
        }
    };
    let mut store = state::open_store(None)?;
    if let Some(config) = &config {
        store = store.with_config(config.clone());
    }
    let config = config.unwrap_or_default();
    match command {
        PanelCommand::Sessions { json } => sessions(&store, &config, json, out),
        PanelCommand::Trust { path, json } => trust(&store, &config, path, json, out),
        PanelCommand::Status(target) => {
            let picked = pick(&store, target.session.as_deref(), Strictness::MostRecent)?;
            print_session(out, target.json, None, &picked, &store, &config)
        }
        PanelCommand::Grant {
            paths,
            allow_missing,
            target,
        } => change(&store, &config, &target, out, |session| {
            let directory = session.directory.clone();
            if !allow_missing {
                check_grants_exist(&paths, &directory)?;
            }
            session
                .grant(&paths, &directory)
                .map_err(|error| anyhow!("{error}"))
        }),
        PanelCommand::Revoke { paths, target } => {
            change(&store, &config, &target, out, |session| {
                let directory = session.directory.clone();
                session
                    .revoke(&paths, &directory)
                    .map_err(|error| anyhow!("{error}"))
            })
        }
        PanelCommand::Reset(target) => {
            change(&store, &config, &target, out, |session| Ok(session.reset()))
        }
        PanelCommand::Mode { mode, target } => change(&store, &config, &target, out, |session| {
            session.mode = mode.into();
            Ok(Change::Mode(session.mode))
        }),
        PanelCommand::Focus { path, target } => change(&store, &config, &target, out, |session| {
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
    // Everything from the first repaired component on is replaced.
    let Some(first) = wrong.iter().zip(&right).position(|(a, b)| a != b) else {
        return fixed.display().to_string();
    };
    let differing = wrong.len() - first;
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
    config: &facet_core::Config,
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
    print_session(out, target.json, Some(&change), &picked, store, config)
}

fn print_session(
    out: &mut impl Write,
    json: bool,
    change: Option<&Change>,
    picked: &Picked,
    store: &StateStore,
    config: &facet_core::Config,
) -> Result<()> {
    let session = &picked.session;
    let binding = BindingView::of(session);
    let standing = store.standing_for(&session.directory, config);
    if json {
        let answer = SessionAnswer {
            change: change.map(ChangeView::from),
            chosen_because: picked.why.clone(),
            binding,
            standing_grants: standing.grants.iter().map(StandingView::of).collect(),
            project_file: standing.project_file.as_ref().map(ProjectFileView::of),
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
    write!(out, "{}", render_standing(&standing))?;
    Ok(())
}

/// The standing grants and the project file, one fact per line (nothing when there
/// are none).
fn render_standing(standing: &Standing) -> String {
    let mut text = String::new();
    for (index, grant) in standing.grants.iter().enumerate() {
        let label = if index == 0 { "standing" } else { "" };
        let from = match &grant.source {
            Source::Config { root } => format!("[projects.{root:?}] in facet's configuration"),
            Source::ProjectFile { file } => format!("{}, trusted", file.display()),
        };
        let missing = if grant.exists {
            ""
        } else {
            " — does not exist"
        };
        text.push_str(&format!(
            "{label:<9} {} (from {from}){missing}\n",
            grant.path.display()
        ));
    }
    if let Some((file, state)) = &standing.project_file {
        let said = match state {
            ProjectFileState::Trusted => "trusted".to_owned(),
            ProjectFileState::Untrusted => format!(
                "not trusted: its grants do not count until you review it and run \
                 `facet trust {}`",
                shell_word(&file.display().to_string())
            ),
            ProjectFileState::Invalid(problem) => {
                format!("unusable ({problem}): its grants do not count")
            }
        };
        text.push_str(&format!("project   {} — {said}\n", file.display()));
    }
    text
}

/// One standing grant in `--json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StandingView {
    /// As written, relative to its root.
    written: String,
    /// The canonical target.
    path: String,
    /// Whether it exists now.
    exists: bool,
    /// `config` or `projectFile`.
    source: &'static str,
    /// The configuration's root, or the project file.
    from: String,
}

impl StandingView {
    fn of(grant: &StandingGrant) -> Self {
        let (source, from) = match &grant.source {
            Source::Config { root } => ("config", root.clone()),
            Source::ProjectFile { file } => ("projectFile", file.display().to_string()),
        };
        Self {
            written: grant.written.clone(),
            path: grant.path.display().to_string(),
            exists: grant.exists,
            source,
            from,
        }
    }
}

/// The project file in `--json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectFileView {
    path: String,
    /// `trusted`, `untrusted` or `invalid`.
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

impl ProjectFileView {
    fn of((file, state): &(PathBuf, ProjectFileState)) -> Self {
        let (state, problem) = match state {
            ProjectFileState::Trusted => ("trusted", None),
            ProjectFileState::Untrusted => ("untrusted", None),
            ProjectFileState::Invalid(problem) => ("invalid", Some(problem.clone())),
        };
        Self {
            path: file.display().to_string(),
            state,
            problem,
        }
    }
}

/// `facet trust [PATH]`: pin the project file's current content as trusted.
fn trust(
    store: &StateStore,
    config: &facet_core::Config,
    path: Option<PathBuf>,
    json: bool,
    out: &mut impl Write,
) -> Result<()> {
    let given = match path {
        Some(path) => path,
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let is_dir = std::fs::symlink_metadata(&given).is_ok_and(|meta| meta.is_dir());
    let folder = if is_dir {
        given.clone()
    } else if given.file_name().is_some_and(|name| name == PROJECT_FILE) {
        match given.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        }
    } else {
        bail!(
            "{} is neither a folder nor a {PROJECT_FILE}; name the project's {PROJECT_FILE} \
             or a folder of the project",
            given.display()
        );
    };
    let folder = std::fs::canonicalize(&folder)
        .with_context(|| format!("cannot find the folder {}", folder.display()))?;
    let top = facet_core::project::project_top(&folder, &config.project_markers)
        .unwrap_or(&folder)
        .to_path_buf();
    if !is_dir && top != folder {
        bail!(
            "{} is not at the project's top level ({}); only the top level's {PROJECT_FILE} counts",
            given.display(),
            top.display()
        );
    }
    let file = top.join(PROJECT_FILE);
    let read = read_project_file(&file)
        .map_err(|problem| {
            anyhow!(
                "cannot read {}: {problem}; nothing was trusted",
                file.display()
            )
        })?
        .ok_or_else(|| {
            anyhow!(
                "there is no {} (the project's top level is {}); a project's standing grants \
                 go there as `grants = [\"libs/common\"]`",
                file.display(),
                top.display()
            )
        })?;
    let parsed = ProjectFile::parse(&read.text).map_err(|problem| {
        anyhow!(
            "{}: {problem}; nothing was trusted — fix the file and run `facet trust` again",
            file.display()
        )
    })?;
    store.trust(&file, &read.sha256)?;
    let standing = store.standing_for(&top, config);
    let grants: Vec<&StandingGrant> = standing
        .grants
        .iter()
        .filter(
            |grant| matches!(&grant.source, Source::ProjectFile { file: from } if *from == file),
        )
        .collect();
    if json {
        let answer = serde_json::json!({
            "file": file.display().to_string(),
            "sha256": read.sha256,
            "grants": grants.iter().map(|grant| StandingView::of(grant)).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "Trusted {} as it is now (sha256 {}): its grants count for every session under {} \
         from their next event; a change to the file needs `facet trust` again.",
        file.display(),
        &read.sha256[..12],
        top.display()
    )?;
    if parsed.grants.is_empty() {
        writeln!(out, "It grants nothing.")?;
    }
    for grant in grants {
        let missing = if grant.exists {
            ""
        } else {
            " — does not exist"
        };
        writeln!(
            out,
            "  {} → {}{missing}",
            grant.written,
            grant.path.display()
        )?;
    }
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

fn sessions(
    store: &StateStore,
    config: &facet_core::Config,
    json: bool,
    out: &mut impl Write,
) -> Result<()> {
    let days = config.prune_after_days;
    let pruned = if days > 0 {
        store.prune(Duration::from_secs(days.saturating_mul(86_400)))?
    } else {
        Vec::new()
    };
    let policy = if days > 0 {
        format!(
            "Sessions not seen for {days} days are forgotten (`prune_after_days` in facet's \
             configuration)."
        )
    } else {
        "Sessions are kept for ever (`prune_after_days = 0` in facet's configuration).".to_owned()
    };
    let pruned_line = (!pruned.is_empty()).then(|| {
        format!(
            "Forgot {} session{} not seen for {days} days: {}.",
            pruned.len(),
            if pruned.len() == 1 { "" } else { "s" },
            pruned.join(", ")
        )
    });
    if json {
        // The JSON stays the list of rows; what was pruned goes to stderr.
        if let Some(line) = &pruned_line {
            eprintln!("facet: {line}");
        }
    } else {
        if let Some(line) = &pruned_line {
            writeln!(out, "{line}")?;
        }
    }
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
        writeln!(out, "{policy}")?;
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
    writeln!(out, "{policy}")?;
    if rows.is_empty() && !listing.problems.is_empty() {
        bail!("no readable session state");
    }
    Ok(())
}
