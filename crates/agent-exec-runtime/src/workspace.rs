//! Workspace side-effect tracking: a snapshot of every entry under the root (type,
//! size, mtime, inode — never contents) before and after an attempt; the difference
//! is the set of files the attempt changed.
//!
//! Decisions: metadata, not hashes — a write that keeps size and mtime to the
//! nanosecond and the inode is not seen (a deliberate cost trade-off: hashing a large
//! workspace twice per attempt is too slow). Symbolic links are recorded, never
//! followed. A walk that cannot finish (too many entries, unreadable directory) makes
//! the comparison *inconclusive*, which callers must read as "side effects possible".

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// Upper bound on entries walked; beyond it the snapshot is inconclusive.
pub const MAX_ENTRIES: usize = 200_000;

/// A workspace with at most this many entries is small enough to walk on an async
/// runtime's own thread ([`Snapshot::take_small`]): well under a millisecond.
pub const INLINE_ENTRIES: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    kind: u32,
    size: u64,
    mtime_ns: i128,
    inode: u64,
}

/// The state of a workspace at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    entries: BTreeMap<PathBuf, Entry>,
    /// Why the walk is not complete, if it is not.
    incomplete: Option<String>,
}

/// What changed between two snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Paths (relative to the root) created, removed or modified.
    pub paths: Vec<PathBuf>,
    /// Set when a snapshot was incomplete: changes may exist that are not listed.
    pub inconclusive: Option<String>,
}

impl Changes {
    /// Whether nothing is known to have changed *and* the comparison was complete.
    pub fn none(&self) -> bool {
        self.paths.is_empty() && self.inconclusive.is_none()
    }
}

impl Snapshot {
    /// Walks `root` (blocking I/O; call from `spawn_blocking` for big trees).
    pub fn take(root: &Path) -> Snapshot {
        let (mut snapshot, complete) = Self::walk(root, MAX_ENTRIES);
        if !complete {
            snapshot.incomplete = Some(format!("more than {MAX_ENTRIES} entries under the root"));
        }
        snapshot
    }

    /// Walks `root` like [`Snapshot::take`], giving up (`None`) as soon as it holds more
    /// than `limit` entries — for callers that walk small trees inline and hand big ones
    /// to a thread.
    pub fn take_small(root: &Path, limit: usize) -> Option<Snapshot> {
        let (snapshot, complete) = Self::walk(root, limit);
        complete.then_some(snapshot)
    }

    /// The walk; the flag is false when it stopped at `limit` entries.
    fn walk(root: &Path, limit: usize) -> (Snapshot, bool) {
        let mut snapshot = Snapshot::default();
        let mut stack = vec![PathBuf::new()];
        while let Some(relative) = stack.pop() {
            let dir = root.join(&relative);
            let reader = match fs::read_dir(&dir) {
                Ok(reader) => reader,
                Err(e) => {
                    snapshot.incomplete = Some(format!("cannot list {}: {e}", dir.display()));
                    continue;
                }
            };
            for item in reader {
                let Ok(item) = item else {
                    snapshot.incomplete = Some(format!("cannot list {}", dir.display()));
                    continue;
                };
                let Ok(meta) = item.metadata() else {
                    // Vanished between listing and lstat: a change in progress.
                    continue;
                };
                if snapshot.entries.len() >= limit {
                    return (snapshot, false);
                }
                let path = relative.join(item.file_name());
                let entry = Entry {
                    kind: meta.mode() & 0o170000,
                    size: meta.len(),
                    mtime_ns: i128::from(meta.mtime()) * 1_000_000_000
                        + i128::from(meta.mtime_nsec()),
                    inode: meta.ino(),
                };
                // `DirEntry::metadata` does not follow symlinks: links are leaves.
                if meta.is_dir() {
                    stack.push(path.clone());
                }
                snapshot.entries.insert(path, entry);
            }
        }
        (snapshot, true)
    }

    /// Entries recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What differs from `before` to `self`. Directory mtimes are ignored (they
    /// change whenever a child does, which is already listed).
    pub fn changes_since(&self, before: &Snapshot) -> Changes {
        let mut paths = Vec::new();
        for (path, now) in &self.entries {
            match before.entries.get(path) {
                None => paths.push(path.clone()),
                Some(then) if now.kind == 0o040000 && then.kind == 0o040000 => {}
                Some(then) if then != now => paths.push(path.clone()),
                Some(_) => {}
            }
        }
        for path in before.entries.keys() {
            if !self.entries.contains_key(path) {
                paths.push(path.clone());
            }
        }
        paths.sort();
        Changes {
            paths,
            inconclusive: before
                .incomplete
                .clone()
                .or_else(|| self.incomplete.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_created_modified_removed_and_symlinked_entries() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("sub/keep"), "k").unwrap();
        fs::write(root.join("edit"), "1").unwrap();
        fs::write(root.join("gone"), "g").unwrap();
        let before = Snapshot::take(root);
        assert_eq!(before.len(), 4);
        assert!(before.changes_since(&before).none());

        fs::write(root.join("edit"), "22").unwrap();
        fs::remove_file(root.join("gone")).unwrap();
        fs::write(root.join("sub/new"), "n").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        let after = Snapshot::take(root);
        let changes = after.changes_since(&before);
        let names: Vec<String> = changes
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(names, ["edit", "gone", "link", "sub/new"]);
        assert!(!changes.none());
    }

    #[test]
    fn a_small_walk_gives_up_past_its_limit_and_agrees_with_the_full_one() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        assert_eq!(Snapshot::take_small(dir.path(), 4), None);
        let small = Snapshot::take_small(dir.path(), 5).unwrap();
        assert_eq!(small, Snapshot::take(dir.path()));
        assert_eq!(small.len(), 5);
        // A missing root is the same inconclusive snapshot either way.
        let missing = Path::new("/nonexistent/agent-exec/root");
        assert_eq!(
            Snapshot::take_small(missing, 5),
            Some(Snapshot::take(missing))
        );
    }

    #[test]
    fn missing_root_is_inconclusive_not_clean() {
        let before = Snapshot::take(Path::new("/nonexistent/agent-exec/root"));
        let changes = before.changes_since(&before);
        assert!(changes.paths.is_empty());
        assert!(!changes.none());
    }
}
