//! Session state on disk: one JSON file per session id in a state folder, written
//! atomically, updated under a per-session file lock.
//!
//! Layout: `<dir>/<stem>.json` (the [`Session`]) and `<dir>/<stem>.lock` (an empty file
//! whose `flock` serializes read-modify-write), where `<stem>` is the session id encoded
//! so that it is always one plain file name ([`SessionId`]).
//!
//! Readers take no lock: every write is a rename of a complete, fsynced file, so a
//! reader sees the old state or the new one, never half of one. Writers take the lock
//! for the whole read-modify-write, so two hook processes granting at once both land.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::project::is_project_top;
use crate::session::Session;
use crate::standing::{Standing, standing_for};
use std::time::{Duration, SystemTime};

/// The longest session id stored under a readable file name, in bytes. Encoded (at
/// most three bytes per id byte: 240), plus `.json` and the atomic writer's temporary
/// `.<name>.XXXXXX` form (253), it stays under the 255-byte file name limit. A longer
/// id is stored under a digest of it (see [`SessionId::file_stem`]).
pub const MAX_READABLE_SESSION_ID_BYTES: usize = 80;

/// The longest session id accepted, in bytes. Hosts' ids are UUIDs or similar; the
/// bound only keeps a runaway id out of every state file.
pub const MAX_SESSION_ID_BYTES: usize = 1024;

/// A host's session id, validated. Ids are data, not paths: the file name is an
/// injective encoding of the id's bytes (`[A-Za-z0-9-]` kept, every other byte `_XX`),
/// or for an id too long for that, `_h` and the SHA-256 of the id in hex — a form the
/// encoding never produces (its `_` is always followed by two hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    /// Accept `raw` as a session id: non-empty, at most [`MAX_SESSION_ID_BYTES`] bytes.
    pub fn new(raw: &str) -> Result<SessionId, StoreError> {
        if raw.is_empty() {
            return Err(StoreError::InvalidSessionId {
                reason: "it is empty".to_string(),
            });
        }
        if raw.len() > MAX_SESSION_ID_BYTES {
            return Err(StoreError::InvalidSessionId {
                reason: format!(
                    "it is {} bytes long; at most {MAX_SESSION_ID_BYTES} are accepted",
                    raw.len()
                ),
            });
        }
        Ok(SessionId(raw.to_string()))
    }

    /// The id as the host sent it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The file stem: injective (up to SHA-256 collisions for ids longer than
    /// [`MAX_READABLE_SESSION_ID_BYTES`]), never empty, never `.`/`..`, never
    /// containing `/`, always short enough for a file name.
    pub fn file_stem(&self) -> String {
        if self.0.len() > MAX_READABLE_SESSION_ID_BYTES {
            let digest = Sha256::digest(self.0.as_bytes());
            let mut stem = String::with_capacity(2 + 2 * digest.len());
            stem.push_str("_h");
            for byte in digest.iter() {
                stem.push_str(&format!("{byte:02x}"));
            }
            return stem;
        }
        let mut stem = String::with_capacity(self.0.len());
        for byte in self.0.bytes() {
            if byte.is_ascii_alphanumeric() || byte == b'-' {
                stem.push(char::from(byte));
            } else {
                stem.push_str(&format!("_{byte:02x}"));
            }
        }
        stem
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why the state folder could not do what was asked. Nothing on disk is overwritten
/// when a file cannot be read: a corrupt file is reported, not replaced.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The session id cannot be used.
    #[error("invalid session id: {reason}")]
    InvalidSessionId {
        /// Why.
        reason: String,
    },
    /// No state recorded for this session.
    #[error("no facet state for session {id}; it is recorded at the session's first hook event")]
    UnknownSession {
        /// The id.
        id: String,
    },
    /// A file system operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A state file exists but does not hold a session (left in place).
    #[error("the state file {path} is unreadable ({reason}); it was left untouched")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The state cannot be written as JSON (a path that is not UTF-8).
    #[error("cannot write the state of session {id}: {reason}")]
    Encode {
        /// The session id.
        id: String,
        /// Why.
        reason: String,
    },
    /// The session's directory cannot be recorded (missing, not a directory, …).
    #[error("cannot record the session directory {path}: {source}")]
    Directory {
        /// The directory as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: containment::Error,
    },
}

fn io_error<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Every session in the folder, and the files that could not be read.
#[derive(Debug, Default)]
pub struct Listing {
    /// Sessions, sorted by id.
    pub sessions: Vec<Session>,
    /// State files that could not be read (left untouched).
    pub problems: Vec<StoreError>,
}

/// The state folder.
#[derive(Debug, Clone)]
pub struct StateStore {
    dir: PathBuf,
    /// The configuration whose standing grants [`StateStore::load`] and
    /// [`StateStore::update`] fill in (see [`StateStore::with_config`]).
    config: Option<Config>,
}

/// The folder, inside the state folder, holding the pinned hashes of trusted project
/// files: state, so out of every judged tool's reach.
const TRUST_DIR: &str = "trust";

/// The largest trust record read, in bytes.
const MAX_TRUST_RECORD_BYTES: u64 = 16 * 1024;

/// One trusted project file: its path and the SHA-256 of the content trusted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustRecord {
    file: PathBuf,
    sha256: String,
}

impl StateStore {
    /// The default folder: `$XDG_STATE_HOME/facet`, else `~/.local/state/facet`.
    /// (`FACET_STATE_DIR` is the binary's business: it overrides this.)
    pub fn default_dir() -> Option<PathBuf> {
        dirs::state_dir()
            .or_else(|| dirs::home_dir().map(|home| home.join(".local/state")))
            .map(|state| state.join("facet"))
    }

    /// Open (creating, mode 0700) the state folder `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Result<StateStore, StoreError> {
        let dir = dir.into();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io_error("cannot create the state folder", &dir))?;
        Ok(StateStore { dir, config: None })
    }

    /// The same store, filling in each loaded session's standing grants from `config`
    /// (the panel's reads; the hook's and the bridge's loads pass their configuration
    /// to [`StateStore::load_or_init`] and [`StateStore::update_or_init`]).
    pub fn with_config(mut self, config: Config) -> StateStore {
        self.config = Some(config);
        self
    }

    /// The standing grants of a session folder under `config` (see
    /// [`crate::standing::standing_for`]), with the trust pinned in this folder.
    pub fn standing_for(&self, directory: &Path, config: &Config) -> Standing {
        standing_for(directory, config, |file| self.trusted_hash(file))
    }

    fn fill_standing(&self, session: &mut Session, config: Option<&Config>) {
        if let Some(config) = config.or(self.config.as_ref()) {
            session.standing = self.standing_for(&session.directory, config).paths();
        }
    }

    fn trust_path(&self, file: &Path) -> PathBuf {
        let digest = Sha256::digest(file.as_os_str().as_encoded_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(TRUST_DIR).join(format!("{name}.json"))
    }

    /// The SHA-256 the person trusted `file` (a project file's canonical path) with,
    /// if they did. Anything unreadable is "not trusted": fail closed.
    pub fn trusted_hash(&self, file: &Path) -> Option<String> {
        let mut bytes = Vec::new();
        File::open(self.trust_path(file))
            .ok()?
            .take(MAX_TRUST_RECORD_BYTES)
            .read_to_end(&mut bytes)
            .ok()?;
        let record: TrustRecord = serde_json::from_slice(&bytes).ok()?;
        (record.file == file).then_some(record.sha256)
    }

    /// Pin `file`'s content as trusted by its SHA-256 (written atomically; replaces an
    /// earlier pin of the same file).
    pub fn trust(&self, file: &Path, sha256: &str) -> Result<(), StoreError> {
        let path = self.trust_path(file);
        let dir = self.dir.join(TRUST_DIR);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io_error("cannot create the trust folder", &dir))?;
        let record = TrustRecord {
            file: file.to_path_buf(),
            sha256: sha256.to_string(),
        };
        let mut json = serde_json::to_vec_pretty(&record).map_err(|error| StoreError::Encode {
            id: file.display().to_string(),
            reason: error.to_string(),
        })?;
        json.push(b'\n');
        let mut out = atomic_write_file::AtomicWriteFile::open(&path)
            .map_err(io_error("cannot write", &path))?;
        out.write_all(&json)
            .map_err(io_error("cannot write", &path))?;
        out.commit().map_err(io_error("cannot write", &path))
    }

    /// A new session is the moment to forget old ones, so the folder does not grow
    /// for ever even if nobody runs `facet sessions`. Best effort: a failure here must
    /// not stop the new session.
    fn prune_on_first_sight(&self, config: &Config) {
        if config.prune_after_days > 0 {
            let age = Duration::from_secs(config.prune_after_days.saturating_mul(86_400));
            let _ = self.prune(age);
        }
    }

    /// Forget every session not seen for `max_age` (its state and lock files are
    /// removed, under its lock, after checking again). Returns the forgotten ids.
    /// Unreadable files are left alone, as [`StateStore::list`] leaves them.
    pub fn prune(&self, max_age: Duration) -> Result<Vec<String>, StoreError> {
        let now = SystemTime::now();
        let stale = |path: &Path| {
            fs::metadata(path)
                .and_then(|meta| meta.modified())
                .is_ok_and(|at| now.duration_since(at).unwrap_or_default() > max_age)
        };
        let mut pruned = Vec::new();
        for session in self.list()?.sessions {
            let Ok(id) = SessionId::new(&session.id) else {
                continue;
            };
            let path = self.state_path(&id);
            if !stale(&path) {
                continue;
            }
            let _lock = self.lock(&id)?;
            if !stale(&path) {
                continue; // seen again meanwhile
            }
            match fs::remove_file(&path) {
                Ok(()) => {}
                // Another process forgot it first.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => return Err(io_error("cannot remove", &path)(error)),
            }
            let lock = self.dir.join(format!("{}.lock", id.file_stem()));
            let _ = fs::remove_file(&lock);
            pruned.push(session.id);
        }
        pruned.sort();
        Ok(pruned)
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn state_path(&self, id: &SessionId) -> PathBuf {
        self.dir.join(format!("{}.json", id.file_stem()))
    }

    fn lock(&self, id: &SessionId) -> Result<File, StoreError> {
        let path = self.dir.join(format!("{}.lock", id.file_stem()));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_error("cannot open the lock file", &path))?;
        file.lock()
            .map_err(io_error("cannot lock the lock file", &path))?;
        Ok(file)
    }

    /// When the state of `id` was last written (the state file's modification time),
    /// or `None` if it was never recorded. The panel uses it to find the most recent
    /// session.
    pub fn last_changed(
        &self,
        id: &SessionId,
    ) -> Result<Option<std::time::SystemTime>, StoreError> {
        let path = self.state_path(id);
        match fs::metadata(&path).and_then(|meta| meta.modified()) {
            Ok(time) => Ok(Some(time)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io_error("cannot examine", &path)(error)),
        }
    }

    /// Record that `id` was seen now: its state file's modification time is the last
    /// time a host event or call named the session, which is what the panel's "recently
    /// active" and the pruning of old sessions go by. Best effort: a file that cannot be
    /// touched only makes the session look older (the state itself is not changed).
    pub fn mark_seen(&self, id: &SessionId) {
        if let Ok(file) = File::open(self.state_path(id)) {
            let _ = file.set_modified(std::time::SystemTime::now());
        }
    }

    /// The recorded state of `id`, if any.
    pub fn load(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        let path = self.state_path(id);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error("cannot read", &path)(error)),
        };
        let session: Session =
            serde_json::from_slice(&bytes).map_err(|error| StoreError::Corrupt {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        if session.id != id.as_str() {
            return Err(StoreError::Corrupt {
                path,
                reason: "it records a different session id".to_string(),
            });
        }
        let mut session = session;
        self.fill_standing(&mut session, None);
        Ok(Some(session))
    }

    fn save(&self, session: &Session, id: &SessionId) -> Result<(), StoreError> {
        let path = self.state_path(id);
        let mut json = serde_json::to_vec_pretty(session).map_err(|error| StoreError::Encode {
            id: id.as_str().to_string(),
            reason: error.to_string(),
        })?;
        json.push(b'\n');
        let mut file = atomic_write_file::AtomicWriteFile::open(&path)
            .map_err(io_error("cannot write", &path))?;
        file.write_all(&json)
            .map_err(io_error("cannot write", &path))?;
        file.commit().map_err(io_error("cannot write", &path))
    }

    /// The state of `id`, recording it first if this is the session's first sight:
    /// the directory `cwd` is canonicalized and kept for good, and the session is
    /// scoped unless `cwd` is the project's top level.
    pub fn load_or_init(
        &self,
        id: &SessionId,
        cwd: &Path,
        config: &Config,
    ) -> Result<Session, StoreError> {
        if let Some(mut session) = self.load(id)? {
            self.mark_seen(id);
            self.fill_standing(&mut session, Some(config));
            return Ok(session);
        }
        let _lock = self.lock(id)?;
        // Another process may have recorded it between the read and the lock.
        let mut session = match self.load(id)? {
            Some(session) => session,
            None => {
                let session = first_sight(id, cwd, config)?;
                self.save(&session, id)?;
                self.prune_on_first_sight(config);
                session
            }
        };
        self.fill_standing(&mut session, Some(config));
        Ok(session)
    }

    /// Read-modify-write the state of `id` under its lock. `change` sees the current
    /// state; it is written back (atomically) only if it changed. Errors with
    /// [`StoreError::UnknownSession`] if the session was never recorded.
    pub fn update<T>(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut Session) -> T,
    ) -> Result<T, StoreError> {
        let _lock = self.lock(id)?;
        let mut session = self.load(id)?.ok_or_else(|| StoreError::UnknownSession {
            id: id.as_str().to_string(),
        })?;
        let before = session.clone();
        let out = change(&mut session);
        if session != before {
            // The id and the directory are never moved, whatever `change` did.
            session.id = before.id;
            session.directory = before.directory;
            self.save(&session, id)?;
        }
        Ok(out)
    }

    /// As [`StateStore::update`], recording the session first if it is new (one lock
    /// for both, so a first event that also changes state is one step).
    pub fn update_or_init<T>(
        &self,
        id: &SessionId,
        cwd: &Path,
        config: &Config,
        change: impl FnOnce(&mut Session) -> T,
    ) -> Result<T, StoreError> {
        let _lock = self.lock(id)?;
        let mut session = match self.load(id)? {
            Some(session) => session,
            None => {
                self.prune_on_first_sight(config);
                first_sight(id, cwd, config)?
            }
        };
        self.fill_standing(&mut session, Some(config));
        let before = session.clone();
        let out = change(&mut session);
        session.id = before.id.clone();
        session.directory = before.directory.clone();
        if session != before || !self.state_path(id).exists() {
            self.save(&session, id)?;
        } else {
            self.mark_seen(id);
        }
        Ok(out)
    }

    /// Every recorded session, sorted by id; unreadable files are reported, not skipped
    /// silently and not touched.
    pub fn list(&self) -> Result<Listing, StoreError> {
        let entries =
            fs::read_dir(&self.dir).map_err(io_error("cannot list the state folder", &self.dir))?;
        let mut listing = Listing::default();
        for entry in entries {
            let entry = entry.map_err(io_error("cannot list the state folder", &self.dir))?;
            let path = entry.path();
            if path.extension().and_then(|ext| ext.to_str()) != Some("json") {
                continue;
            }
            let parsed = fs::read(&path)
                .map_err(io_error("cannot read", &path))
                .and_then(|bytes| {
                    serde_json::from_slice::<Session>(&bytes).map_err(|error| StoreError::Corrupt {
                        path: path.clone(),
                        reason: error.to_string(),
                    })
                });
            match parsed {
                Ok(session) => listing.sessions.push(session),
                Err(problem) => listing.problems.push(problem),
            }
        }
        listing.sessions.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(listing)
    }
}

fn first_sight(id: &SessionId, cwd: &Path, config: &Config) -> Result<Session, StoreError> {
    let root = containment::Root::new(cwd).map_err(|source| StoreError::Directory {
        path: cwd.to_path_buf(),
        source,
    })?;
    let directory = root.path().to_path_buf();
    let scoped = !is_project_top(&directory, &config.project_markers);
    Ok(Session::new(
        id.as_str(),
        directory,
        scoped,
        config.default_mode,
    ))
}
