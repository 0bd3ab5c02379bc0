//! The walk: one path component at a time, the way the kernel's own lookup goes.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// How many symbolic links one resolution follows before it gives up, as Linux's
/// `MAXSYMLINKS` (40). A longer chain is refused exactly where the kernel would fail
/// with `ELOOP`, so a loop and an over-long chain are the same error.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// A path resolved to its canonical target.
///
/// `path` is absolute and free of `.`, `..` and symbolic links in the part that
/// exists; the part that does not exist yet (`exists() == false`) is the missing tail,
/// normalized lexically as the directories `mkdir -p` would create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    path: PathBuf,
    exists: bool,
}

impl Resolved {
    /// The canonical target.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the whole target exists now (false: it ends in a missing tail).
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// The canonical target, by value.
    pub fn into_path(self) -> PathBuf {
        self.path
    }
}

/// One step still to walk.
enum Step {
    Parent,
    Name(OsString),
}

/// Push `path`'s steps onto `pending` so that the first step is popped first.
fn push_steps(pending: &mut Vec<Step>, path: &Path) {
    let steps: Vec<Step> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(Step::Name(name.to_os_string())),
            Component::ParentDir => Some(Step::Parent),
            // `RootDir` is handled by the caller (it resets the walk to `/`); `CurDir`
            // changes nothing; `Prefix` does not occur on Unix.
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(steps.into_iter().rev());
}

fn has_nul(path: &Path) -> bool {
    path.as_os_str().as_bytes().contains(&0)
}

/// Resolve `raw` (as the model wrote it) to its canonical target.
///
/// A relative `raw` is taken relative to `base`, which must be absolute: the process's
/// own working directory is never consulted. The walk goes component by component:
///
/// - a name that exists and is a symbolic link is replaced by the link's target
///   (relative targets against the link's directory, absolute ones from `/`), counting
///   hops up to [`MAX_SYMLINK_HOPS`];
/// - `..` goes to the parent of what has been resolved *so far*, i.e. after any
///   symbolic link, as the kernel does (`link/..` is the parent of the link's target);
/// - the first name that does not exist starts the missing tail: from there names are
///   appended lexically, and a `..` that climbs back out of the missing tail resumes
///   the real walk (so `new/../link` still follows `link`).
///
/// Fails closed: empty strings, NUL bytes, loops, components that cannot be examined
/// and paths that continue below a non-directory are errors, never a target.
pub fn resolve(raw: impl AsRef<Path>, base: impl AsRef<Path>) -> Result<Resolved> {
    let raw = raw.as_ref();
    let base = base.as_ref();
    if raw.as_os_str().is_empty() {
        return Err(Error::Empty);
    }
    if has_nul(raw) || has_nul(base) {
        return Err(Error::NulByte);
    }
    let mut pending = Vec::new();
    push_steps(&mut pending, raw);
    if !raw.is_absolute() {
        if !base.is_absolute() {
            return Err(Error::RelativeBase {
                base: base.to_path_buf(),
            });
        }
        push_steps(&mut pending, base);
    }
    walk(pending)
}

fn walk(mut pending: Vec<Step>) -> Result<Resolved> {
    let mut current = PathBuf::from("/");
    // How many trailing components of `current` do not exist. Zero: `current` is an
    // existing, canonical directory (or, at the very end, any existing file).
    let mut missing_depth = 0usize;
    let mut hops = 0usize;

    while let Some(step) = pending.pop() {
        let name = match step {
            Step::Parent => {
                // `current` holds no symbolic link, so its lexical parent is its real
                // parent; at `/` this stays at `/`, as the kernel does.
                current.pop();
                missing_depth = missing_depth.saturating_sub(1);
                continue;
            }
            Step::Name(name) => name,
        };
        if missing_depth > 0 {
            // Below a missing directory nothing exists yet: the tail is lexical.
            current.push(&name);
            missing_depth += 1;
            continue;
        }
        let candidate = current.join(&name);
        match fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(Error::SymlinkLoop {
                        path: candidate,
                        limit: MAX_SYMLINK_HOPS,
                    });
                }
                let target = fs::read_link(&candidate).map_err(|source| Error::Unreadable {
                    path: candidate.clone(),
                    source,
                })?;
                if target.as_os_str().is_empty() {
                    return Err(Error::EmptySymlink { path: candidate });
                }
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                // `current` stays the link's directory: a relative target starts there.
                push_steps(&mut pending, &target);
            }
            Ok(meta) => {
                if !meta.is_dir() && !pending.is_empty() {
                    return Err(Error::NotADirectory { path: candidate });
                }
                current = candidate;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                current = candidate;
                missing_depth = 1;
            }
            Err(source) => {
                return Err(Error::Unreadable {
                    path: candidate,
                    source,
                });
            }
        }
    }
    Ok(Resolved {
        path: current,
        exists: missing_depth == 0,
    })
}
