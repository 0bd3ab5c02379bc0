//! Where an agent program keeps its conversations so a later process can resume them:
//! one folder per execution, under agent-exec's state directory.
//!
//! A backend whose program stores its sessions in files it is told about (pi's
//! `--session-dir`) runs it with [`SessionStore::folder`] for the execution: the folder
//! outlives the runner (a SIGKILLed `agent-exec` leaves it behind, with the journaled
//! handle pointing into it), so `agent-exec resume` in another process finds it.
//!
//! # Invariants
//! * Ids are data, not paths: the folder's name is the SHA-256 of the execution id (hex,
//!   first 32 digits), never the id itself, so no id can name `..`, `/` or a link.
//! * The folder is created `0700` (sessions hold prompts and tool output) and never
//!   followed through a symbolic link: an existing entry that is not a real directory
//!   is refused, not used.
//! * A handle is mapped back to a file only by listing the folder
//!   ([`SessionStore::find`]): the file's name comes from the directory, it must be a
//!   regular file (not a link), and nothing outside the folder is ever named.
//!
//! # When it is removed
//! After an attempt that `succeeded` (a succeeded execution is never resumed), by the
//! backend ([`SessionStore::remove`]). Every other outcome keeps it: that is what a
//! resume continues. Folders of executions nobody resumes stay until removed by hand
//! (`sessions/` in the state directory; each holds the program's own session files).
//! Decision not taken: a sweep by age — an `unknown` execution may be resumed days
//! later, and only the caller knows when it gave up.

use std::path::{Path, PathBuf};

/// Hex digits of the execution id's SHA-256 used as the folder name (128 bits).
const NAME_DIGITS: usize = 32;

/// The sessions of one backend kind: `<state>/agent-exec/sessions/<kind>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    root: PathBuf,
}

impl SessionStore {
    /// The store under `root` (created on first use).
    pub fn at(root: impl Into<PathBuf>) -> SessionStore {
        SessionStore { root: root.into() }
    }

    /// `$XDG_STATE_HOME/agent-exec/sessions/<kind>` (else `~/.local/state/…`, the
    /// default journal's neighbour); `None` when there is no state directory.
    pub fn default_for(kind: &str) -> Option<SessionStore> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(dirs::state_dir)
            .or_else(dirs::data_local_dir)?;
        Some(SessionStore::at(
            base.join("agent-exec").join("sessions").join(kind),
        ))
    }

    /// The store's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder name for `execution_id` (see the module doc).
    pub fn folder_name(execution_id: &str) -> String {
        use sha2::{Digest as _, Sha256};
        let digest = Sha256::digest(execution_id.as_bytes());
        let mut name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        name.truncate(NAME_DIGITS);
        name
    }

    /// Where `execution_id`'s sessions live, without creating anything.
    pub fn path_of(&self, execution_id: &str) -> PathBuf {
        self.root.join(Self::folder_name(execution_id))
    }

    /// The folder of `execution_id`, created (`0700`, parents too) when missing. An
    /// existing entry that is not a real directory (a link, a file) is refused.
    pub fn folder(&self, execution_id: &str) -> Result<PathBuf, SessionStoreError> {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(|source| SessionStoreError::Create {
                path: self.root.clone(),
                source,
            })?;
        let folder = self.path_of(execution_id);
        match std::fs::DirBuilder::new().mode(0o700).create(&folder) {
            Ok(()) => Ok(folder),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                real_directory(&folder)?;
                Ok(folder)
            }
            Err(source) => Err(SessionStoreError::Create {
                path: folder,
                source,
            }),
        }
    }

    /// The one regular file in `execution_id`'s folder whose name `matches`, listed
    /// from the folder itself (never a path built from outside input). `Err` says why
    /// not: no folder, no such file, more than one, or not a regular file.
    pub fn find(
        &self,
        execution_id: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Result<PathBuf, SessionStoreError> {
        let folder = self.path_of(execution_id);
        real_directory(&folder)?;
        let listing = |source| SessionStoreError::List {
            folder: folder.clone(),
            source,
        };
        let entries = std::fs::read_dir(&folder).map_err(listing)?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(listing)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !matches(name) {
                continue;
            }
            // `DirEntry::file_type` does not follow links.
            let kind = entry
                .file_type()
                .map_err(|source| SessionStoreError::InspectEntry {
                    name: name.to_owned(),
                    source,
                })?;
            if !kind.is_file() {
                return Err(SessionStoreError::NotAFile {
                    name: name.to_owned(),
                    folder,
                });
            }
            found.push(entry.path());
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(SessionStoreError::NoMatch { folder }),
            count => Err(SessionStoreError::Ambiguous { count, folder }),
        }
    }

    /// Removes `execution_id`'s folder and everything in it (links inside are removed,
    /// not followed). A missing folder is not an error.
    pub fn remove(&self, execution_id: &str) -> Result<(), SessionStoreError> {
        let folder = self.path_of(execution_id);
        match std::fs::symlink_metadata(&folder) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(SessionStoreError::Inspect { folder, source }),
            Ok(meta) if !meta.is_dir() => Err(SessionStoreError::NotRemoved { folder }),
            Ok(_) => std::fs::remove_dir_all(&folder)
                .map_err(|source| SessionStoreError::Remove { folder, source }),
        }
    }
}

/// Why a session folder or file cannot be used; each says which path.
#[derive(Debug, thiserror::Error)]
pub enum SessionStoreError {
    #[error("cannot create {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no session folder {}: {source}", folder.display())]
    Missing {
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a real directory (a link or a file); refusing to use it", folder.display())]
    NotADirectory { folder: PathBuf },
    #[error("cannot list {}: {source}", folder.display())]
    List {
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot inspect {name}: {source}")]
    InspectEntry {
        name: String,
        source: std::io::Error,
    },
    #[error("{name} in {} is not a regular file; refusing to use it", folder.display())]
    NotAFile { name: String, folder: PathBuf },
    #[error("no matching session file in {}", folder.display())]
    NoMatch { folder: PathBuf },
    #[error("{count} matching session files in {}; refusing to guess", folder.display())]
    Ambiguous { count: usize, folder: PathBuf },
    #[error("cannot inspect {}: {source}", folder.display())]
    Inspect {
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a real directory; not removed", folder.display())]
    NotRemoved { folder: PathBuf },
    #[error("cannot remove {}: {source}", folder.display())]
    Remove {
        folder: PathBuf,
        source: std::io::Error,
    },
}

/// `Ok` when `path` is a directory itself (not a link to one).
fn real_directory(path: &Path) -> Result<(), SessionStoreError> {
    let meta = std::fs::symlink_metadata(path).map_err(|source| SessionStoreError::Missing {
        folder: path.to_owned(),
        source,
    })?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(SessionStoreError::NotADirectory {
            folder: path.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_refusal_names_the_path_in_the_same_words() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::at(dir.path());
        std::fs::write(store.path_of("e"), "x").unwrap();
        assert_eq!(
            store.folder("e").unwrap_err().to_string(),
            format!(
                "{} is not a real directory (a link or a file); refusing to use it",
                store.path_of("e").display()
            )
        );
        assert_eq!(
            store.remove("e").unwrap_err().to_string(),
            format!(
                "{} is not a real directory; not removed",
                store.path_of("e").display()
            )
        );
    }

    #[test]
    fn the_folder_is_a_hash_of_the_id_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::at(dir.path().join("sessions/agent-native"));
        let folder = store.folder("../../etc").unwrap();
        assert_eq!(folder.parent(), Some(store.root()));
        let name = folder.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), NAME_DIGITS);
        assert!(name.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(store.folder("../../etc").unwrap(), folder);
        assert_ne!(store.folder("another").unwrap(), folder);
    }

    #[test]
    fn a_link_in_place_of_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let store = SessionStore::at(dir.path());
        std::os::unix::fs::symlink(outside.path(), store.path_of("e")).unwrap();
        assert!(
            store
                .folder("e")
                .unwrap_err()
                .to_string()
                .contains("not a real directory")
        );
        assert!(store.find("e", |_| true).is_err());
        assert!(store.remove("e").is_err());
        assert!(outside.path().exists());
    }

    #[test]
    fn find_lists_the_folder_and_refuses_links_and_ambiguity() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::at(dir.path());
        let folder = store.folder("e").unwrap();
        assert!(
            store
                .find("e", |_| true)
                .unwrap_err()
                .to_string()
                .contains("no matching")
        );
        std::fs::write(folder.join("a_1.jsonl"), "{}").unwrap();
        assert_eq!(
            store.find("e", |n| n.ends_with("_1.jsonl")).unwrap(),
            folder.join("a_1.jsonl")
        );
        std::fs::write(folder.join("b_1.jsonl"), "{}").unwrap();
        assert!(
            store
                .find("e", |n| n.ends_with("_1.jsonl"))
                .unwrap_err()
                .to_string()
                .contains("2 matching")
        );
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "x").unwrap();
        std::os::unix::fs::symlink(&secret, folder.join("c_2.jsonl")).unwrap();
        assert!(
            store
                .find("e", |n| n.ends_with("_2.jsonl"))
                .unwrap_err()
                .to_string()
                .contains("not a regular file")
        );
        assert!(store.find("never-created", |_| true).is_err());
    }

    #[test]
    fn remove_takes_the_folder_but_not_what_a_link_inside_points_to() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let store = SessionStore::at(dir.path().join("s"));
        let folder = store.folder("e").unwrap();
        std::os::unix::fs::symlink(outside.path(), folder.join("link")).unwrap();
        store.remove("e").unwrap();
        assert!(!folder.exists());
        assert!(outside.path().join("keep").exists());
        store.remove("e").unwrap();
    }
}
