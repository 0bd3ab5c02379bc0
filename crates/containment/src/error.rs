//! The one error type of the crate. Every variant is a refusal: no caller may read an
//! error as "inside".

use std::io;
use std::path::PathBuf;

/// Why a path could not be placed, or a file could not be opened, inside a root.
///
/// Messages name the path at fault and never the content of any file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path is the empty string. An empty path names nothing, so it cannot be judged.
    #[error("the path is empty")]
    Empty,

    /// The path (or the base directory) contains a NUL byte, which no system call accepts;
    /// a string that would be cut at the NUL by one layer and not by another is refused.
    #[error("the path contains a NUL byte")]
    NulByte,

    /// Relative paths are resolved against an explicit base, never the process's own
    /// working directory, so the base itself must be absolute.
    #[error("the base directory {base} is not absolute")]
    RelativeBase {
        /// The base that was given.
        base: PathBuf,
    },

    /// More than [`crate::MAX_SYMLINK_HOPS`] symbolic links were followed: a loop, or a
    /// chain longer than the kernel itself would follow.
    #[error("too many levels of symbolic links at {path} (a loop, or a chain longer than {limit})")]
    SymlinkLoop {
        /// The link at which the limit was reached.
        path: PathBuf,
        /// The limit.
        limit: usize,
    },

    /// A symbolic link whose target is the empty string (the kernel refuses to follow it).
    #[error("the symbolic link {path} has an empty target")]
    EmptySymlink {
        /// The link.
        path: PathBuf,
    },

    /// A component could not be examined (permission denied, name too long, I/O error).
    /// What lies behind it is unknown, so the path is not placed anywhere.
    #[error("cannot examine {path}: {source}")]
    Unreadable {
        /// The component that could not be examined.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },

    /// A component that is not a directory is followed by more components.
    #[error("{path} is not a directory, but the path continues below it")]
    NotADirectory {
        /// The non-directory component.
        path: PathBuf,
    },

    /// [`crate::Root::new`] was given a path that does not resolve to an existing directory.
    #[error("the root {path} is not an existing directory")]
    RootNotADirectory {
        /// The root as given.
        path: PathBuf,
    },

    /// An open or read helper was asked for a target outside its root.
    #[error("{target} is outside the root {root}")]
    OutsideRoot {
        /// The canonical target.
        target: PathBuf,
        /// The canonical root.
        root: PathBuf,
    },

    /// [`crate::Root::open_regular`] found something other than a regular file (a
    /// folder, a FIFO, a device, a socket) at the inside target.
    #[error("{path} is not a regular file")]
    NotARegularFile {
        /// The canonical target.
        path: PathBuf,
    },

    /// Opening or reading the (inside) target failed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The canonical target.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
