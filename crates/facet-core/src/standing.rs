//! Standing grants: paths a project grants to every session under it, decided by the
//! person once instead of granted again in every session (issue 21, finding 5).
//!
//! Two sources, both the person's alone:
//! - facet's configuration file: `[projects."/abs/root"] grants = ["libs/common"]`;
//! - the project's own `.facet.toml` at its top level (`grants = [...]`, committed with
//!   the code), which counts only once the person trusted that exact content with
//!   `facet trust` — pinned by its SHA-256, as direnv's `allow` pins an `.envrc`; a
//!   changed file is untrusted again until trusted again.
//!
//! Paths are relative to the root they belong to and resolved canonically when a
//! session is judged, so a change to either file counts from the next event, without
//! a restart. No judged tool call may touch a `.facet.toml` ([`is_project_file`]): the
//! hash pin already makes an agent's edit powerless, and refusing it keeps the file the
//! person's.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::config::{Config, check_standing_grants};
use crate::project::project_top;

/// The project file's name, at a project's top level.
pub const PROJECT_FILE: &str = ".facet.toml";

/// The largest project file read, in bytes: it holds a short list of paths.
pub const MAX_PROJECT_FILE_BYTES: u64 = 64 * 1024;

/// A `.facet.toml`: unknown keys are errors (it decides what a session may see).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectFile {
    /// Paths relative to the project's top level, granted to every session in it.
    pub grants: Vec<String>,
}

impl ProjectFile {
    /// Parse and check a project file's text; the error names the fault and its line.
    pub fn parse(text: &str) -> Result<ProjectFile, String> {
        let file: ProjectFile = toml::from_str(text).map_err(|error| {
            match error
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1)
            {
                Some(line) => format!("line {line}: {}", error.message()),
                None => error.message().to_string(),
            }
        })?;
        check_standing_grants(&file.grants, "`grants`")?;
        Ok(file)
    }
}

/// Whether `path` names a project file (by its last component): no judged tool call
/// may touch one.
pub fn is_project_file(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == PROJECT_FILE)
}

/// A project file read from disk: its bytes' SHA-256 (hex) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadProjectFile {
    /// SHA-256 of the exact bytes, lowercase hex.
    pub sha256: String,
    /// The text.
    pub text: String,
}

/// Read `file` (bounded; a symbolic link, a non-file or non-UTF-8 text is an error).
/// `Ok(None)` when there is no such file.
pub fn read_project_file(file: &Path) -> Result<Option<ReadProjectFile>, String> {
    let meta = match std::fs::symlink_metadata(file) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.to_string()),
    };
    if !meta.file_type().is_file() {
        return Err("it is not a regular file (a symbolic link is not followed)".to_string());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|handle| {
            handle
                .take(MAX_PROJECT_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|error| error.to_string())?;
    if bytes.len() as u64 > MAX_PROJECT_FILE_BYTES {
        return Err(format!("it is larger than {MAX_PROJECT_FILE_BYTES} bytes"));
    }
    let sha256 = hex(&Sha256::digest(&bytes));
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    Ok(Some(ReadProjectFile { sha256, text }))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Where one standing grant comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `[projects."<root>"]` in facet's configuration.
    Config {
        /// The root as written in the configuration.
        root: String,
    },
    /// A trusted project file.
    ProjectFile {
        /// The file.
        file: PathBuf,
    },
}

/// One standing grant, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingGrant {
    /// As written, relative to its root.
    pub written: String,
    /// The canonical target.
    pub path: PathBuf,
    /// Whether the target exists now.
    pub exists: bool,
    /// Where it comes from.
    pub source: Source,
}

/// What a session's project file says, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectFileState {
    /// Trusted: its grants count.
    Trusted,
    /// Present but not trusted (never, or changed since): its grants do not count.
    Untrusted,
    /// Present but unusable (unreadable, or trusted content that no longer parses).
    Invalid(String),
}

/// The standing grants of one session's folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// Every standing grant that counts, configuration first.
    pub grants: Vec<StandingGrant>,
    /// The project file found at the folder's project top, and its state.
    pub project_file: Option<(PathBuf, ProjectFileState)>,
}

impl Standing {
    /// The canonical paths that count.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.grants.iter().map(|grant| grant.path.clone()).collect()
    }
}

/// The standing grants for a session whose folder is `directory` (canonical), under
/// `config`; `trusted` tells the pinned hash of a project file, if it was trusted.
pub fn standing_for(
    directory: &Path,
    config: &Config,
    trusted: impl Fn(&Path) -> Option<String>,
) -> Standing {
    let mut standing = Standing::default();
    for (root, project) in &config.projects {
        let Ok(canonical) = containment::Root::new(root) else {
            continue; // a root that does not exist holds no session
        };
        if !containment::is_within(directory, canonical.path()) {
            continue;
        }
        let source = Source::Config { root: root.clone() };
        standing
            .grants
            .extend(resolve_grants(&project.grants, canonical.path(), &source));
    }
    let Some(top) = project_top(directory, &config.project_markers) else {
        return standing;
    };
    let file = top.join(PROJECT_FILE);
    let state = match read_project_file(&file) {
        Ok(None) => return standing,
        Err(problem) => ProjectFileState::Invalid(problem),
        Ok(Some(read)) if trusted(&file).as_deref() != Some(read.sha256.as_str()) => {
            ProjectFileState::Untrusted
        }
        Ok(Some(read)) => match ProjectFile::parse(&read.text) {
            Ok(parsed) => {
                let source = Source::ProjectFile { file: file.clone() };
                standing
                    .grants
                    .extend(resolve_grants(&parsed.grants, top, &source));
                ProjectFileState::Trusted
            }
            Err(problem) => ProjectFileState::Invalid(problem),
        },
    };
    standing.project_file = Some((file, state));
    standing
}

fn resolve_grants(grants: &[String], root: &Path, source: &Source) -> Vec<StandingGrant> {
    grants
        .iter()
        .filter_map(|written| {
            // Fail closed: a grant that cannot be resolved (a loop, NUL) grants nothing.
            let resolved = containment::resolve(written, root).ok()?;
            Some(StandingGrant {
                written: written.clone(),
                exists: resolved.exists(),
                path: resolved.into_path(),
                source: source.clone(),
            })
        })
        .collect()
}
