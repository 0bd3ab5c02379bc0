//! A canonical root, the verdict on a path, and opening files only inside it.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::resolve::{Resolved, resolve};

/// Whether the canonical `path` is `root` or lies below it.
///
/// Compared by path components, never by string prefix: `/w/proj2` is not within
/// `/w/proj`. Both arguments must already be canonical (from [`resolve`] or
/// [`Root::path`]); this function does no I/O and therefore cannot see symbolic links.
pub fn is_within(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// Where a path's canonical target lies relative to a [`Root`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The target is the root or below it.
    Inside(PathBuf),
    /// The target is somewhere else.
    Outside(PathBuf),
}

impl Verdict {
    /// True for [`Verdict::Inside`].
    pub fn is_inside(&self) -> bool {
        matches!(self, Verdict::Inside(_))
    }

    /// The canonical target, whichever side it is on.
    pub fn target(&self) -> &Path {
        match self {
            Verdict::Inside(path) | Verdict::Outside(path) => path,
        }
    }
}

/// A directory that paths are judged against, stored canonical.
///
/// Invariant: `path` is absolute, contains no symbolic link, `.` or `..`, and named an
/// existing directory when the `Root` was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    path: PathBuf,
}

impl Root {
    /// Canonicalize `path` (which must be absolute) and keep it as a root.
    ///
    /// A root given through a symbolic link (`/tmp` → `/private/tmp`) is stored as its
    /// target, so paths written either way compare equal. The root must exist and be a
    /// directory: a root that is itself a missing tail could later be created as a
    /// symbolic link to anywhere.
    pub fn new(path: impl AsRef<Path>) -> Result<Root> {
        let given = path.as_ref();
        if !given.is_absolute() {
            return Err(Error::RelativeBase {
                base: given.to_path_buf(),
            });
        }
        let resolved = resolve(given, "/")?;
        let is_dir = resolved.exists() && fs::metadata(resolved.path()).is_ok_and(|m| m.is_dir());
        if !is_dir {
            return Err(Error::RootNotADirectory {
                path: given.to_path_buf(),
            });
        }
        Ok(Root {
            path: resolved.into_path(),
        })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resolve `raw` against `base` (see [`resolve`]) and say which side of the root
    /// its canonical target is on. Errors are refusals, never "inside".
    pub fn contains(&self, raw: impl AsRef<Path>, base: impl AsRef<Path>) -> Result<Verdict> {
        let resolved = resolve(raw, base)?;
        Ok(self.verdict(resolved))
    }

    /// The verdict on an already resolved path.
    pub fn verdict(&self, resolved: Resolved) -> Verdict {
        let path = resolved.into_path();
        if is_within(&path, &self.path) {
            Verdict::Inside(path)
        } else {
            Verdict::Outside(path)
        }
    }

    /// Open `raw` (relative to `base`) with `options`, only if its canonical target is
    /// inside the root.
    ///
    /// A target that is, or passes through, a symbolic link leading out of the root is
    /// refused, because the verdict is taken on the link's target. The canonical path is
    /// then opened with `O_NOFOLLOW`, and what the kernel actually opened is checked
    /// again (through `/proc/self/fd`, or by device and inode where `/proc` is absent),
    /// so a component swapped for a symbolic link after the verdict is caught rather
    /// than read. A file created by `options` before that check fails is left in place:
    /// this narrows the race, it is not an OS sandbox.
    pub fn open(
        &self,
        raw: impl AsRef<Path>,
        base: impl AsRef<Path>,
        options: &OpenOptions,
    ) -> Result<File> {
        self.open_target(raw, base, options, nix::fcntl::OFlag::empty())
            .map(|(file, _)| file)
    }

    fn open_target(
        &self,
        raw: impl AsRef<Path>,
        base: impl AsRef<Path>,
        options: &OpenOptions,
        extra: nix::fcntl::OFlag,
    ) -> Result<(File, PathBuf)> {
        let target = match self.contains(raw, base)? {
            Verdict::Inside(target) => target,
            Verdict::Outside(target) => {
                return Err(Error::OutsideRoot {
                    target,
                    root: self.path.clone(),
                });
            }
        };
        let mut options = options.clone();
        options.custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | extra).bits());
        let file = options.open(&target).map_err(|source| Error::Open {
            path: target.clone(),
            source,
        })?;
        self.check_opened(&file, &target)?;
        Ok((file, target))
    }

    /// Read the whole file `raw` (relative to `base`), only if its canonical target is
    /// inside the root. See [`Root::open`].
    pub fn read(&self, raw: impl AsRef<Path>, base: impl AsRef<Path>) -> Result<Vec<u8>> {
        let (mut file, target) = self.open_target(
            raw,
            base,
            OpenOptions::new().read(true),
            nix::fcntl::OFlag::empty(),
        )?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|source| Error::Open {
            path: target,
            source,
        })?;
        Ok(bytes)
    }

    /// Open `raw` (relative to `base`) for reading, only if its canonical target is inside
    /// the root and is a regular file; returns the file and its metadata (`fstat` of what
    /// was opened).
    ///
    /// For loaders that open many files: the common case costs one `open`, one
    /// `readlink` of `/proc/self/fd` and one `fstat`. The path is first opened as given
    /// with `O_NOFOLLOW`, so the kernel walks it (intermediate links included, as
    /// [`resolve`] would: `tests/it/kernel_oracle.rs`), and the verdict is taken on what it
    /// opened. Anything else (the last component is a link, the open failed, no `/proc`)
    /// takes [`Root::open`]'s way: resolve, refuse outside, open the canonical target with
    /// `O_NOFOLLOW`, re-check. Both ways open with `O_NONBLOCK`, so a FIFO is refused
    /// rather than waited on.
    pub fn open_regular(
        &self,
        raw: impl AsRef<Path>,
        base: impl AsRef<Path>,
    ) -> Result<(File, fs::Metadata)> {
        let (raw, base) = (raw.as_ref(), base.as_ref());
        let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(flags.bits());
        let nonblocking = nix::fcntl::OFlag::O_NONBLOCK;
        let direct = if raw.is_absolute() {
            raw.to_path_buf()
        } else {
            base.join(raw)
        };
        let fast = (!raw.as_os_str().is_empty() && (base.is_absolute() || raw.is_absolute()))
            .then(|| options.open(&direct).ok())
            .flatten()
            .and_then(|file| {
                let fd_link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
                let opened = fs::read_link(fd_link).ok()?;
                Some((file, opened))
            });
        let (file, target) = match fast {
            Some((file, opened)) if is_within(&opened, &self.path) => (file, opened),
            Some((_, opened)) => {
                return Err(Error::OutsideRoot {
                    target: opened,
                    root: self.path.clone(),
                });
            }
            None => self.open_target(raw, base, OpenOptions::new().read(true), nonblocking)?,
        };
        let meta = file.metadata().map_err(|source| Error::Open {
            path: target.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(Error::NotARegularFile { path: target });
        }
        Ok((file, meta))
    }

    /// Confirm that the open file is the inside target, not something swapped in.
    fn check_opened(&self, file: &File, target: &Path) -> Result<()> {
        let fd_link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if let Ok(opened) = fs::read_link(&fd_link) {
            if is_within(&opened, &self.path) {
                return Ok(());
            }
            return Err(Error::OutsideRoot {
                target: opened,
                root: self.path.clone(),
            });
        }
        // No /proc: fall back to "the file we hold is the one the path names now".
        let held = file.metadata().map_err(|source| Error::Open {
            path: target.to_path_buf(),
            source,
        })?;
        let named = fs::symlink_metadata(target).map_err(|source| Error::Open {
            path: target.to_path_buf(),
            source,
        })?;
        if held.dev() == named.dev() && held.ino() == named.ino() {
            Ok(())
        } else {
            Err(Error::OutsideRoot {
                target: target.to_path_buf(),
                root: self.path.clone(),
            })
        }
    }
}
