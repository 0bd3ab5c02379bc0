//! Path containment decided on canonical targets.
//!
//! One question, asked by the facet scope guard for every path a model writes and by
//! agent-exec for every file it hands over from a workspace: **is this path, as the
//! model wrote it, inside this root?**
//!
//! ```
//! use containment::{Root, Verdict};
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::create_dir(dir.path().join("proj")).unwrap();
//! # std::fs::create_dir(dir.path().join("proj2")).unwrap();
//! let root = Root::new(dir.path().join("proj"))?;
//! let session_dir = root.path();
//! // Relative paths are taken against the session's directory, never the process cwd.
//! assert!(root.contains("src/new_file.rs", session_dir)?.is_inside());
//! // Compared by components: proj2 is not inside proj.
//! assert!(!root.contains("../proj2/x", session_dir)?.is_inside());
//! # Ok::<(), containment::Error>(())
//! ```
//!
//! # Design
//!
//! [`resolve`] walks the path one component at a time, as the kernel's own lookup does:
//! `lstat` each name; a symbolic link is replaced by its target (relative targets from
//! the link's directory, at most [`MAX_SYMLINK_HOPS`] hops); `..` goes to the parent of
//! what is resolved so far — after symlinks, so `link/..` is the parent of the link's
//! *target*; the first missing name starts the missing tail, normalized lexically as the
//! directories `mkdir -p` would create (a `..` that climbs back out of the tail resumes
//! the real walk). The result is the canonical target; containment is then a component
//! comparison ([`is_within`]). The last component is followed too: a read or a write of
//! a symbolic link acts on its target, including a dangling one (`O_CREAT` creates the
//! target), so a dangling link to outside is outside.
//!
//! The walk is written here rather than taken from `soft-canonicalize`: it is ~100 lines
//! whose every branch is a decision this crate must own (distinct fail-closed errors
//! for loops, unreadable components and non-directories; no fallback to the process
//! cwd; `..` out of a missing tail resuming the real walk), it is property-tested
//! against the kernel itself (`tests/it/kernel_oracle.rs`), and it spares a
//! single-maintainer dependency with Windows and "anchored" modes we do not use.
//!
//! # Invariants
//!
//! - Every error is a refusal. No caller may treat [`Error`] as "inside".
//! - The process's current directory is never read: relative paths need a `base`.
//! - A [`Root`] is canonical, absolute and was an existing directory when made.
//! - [`Root::open`] / [`Root::read`] open the canonical target with `O_NOFOLLOW` and
//!   re-check what was actually opened.
//!
//! # Not done, deliberately
//!
//! - Hard links and bind mounts: a hard link inside the root to a file outside *is*
//!   inside by every path-based measure. So is the far side of a bind mount.
//! - The race between a verdict and a later open by someone else (time of check, time
//!   of use). [`Root::open`] narrows it for our own opens; a guard that only answers
//!   yes/no cannot close it. This crate is not an OS sandbox.
//! - `/proc/<pid>/…` magic links are followed as the *calling* process sees them.
//! - Windows paths: Unix only.

mod error;
mod resolve;
mod root;

pub use error::{Error, Result};
pub use resolve::{MAX_SYMLINK_HOPS, Resolved, resolve};
pub use root::{Root, Verdict, is_within};
