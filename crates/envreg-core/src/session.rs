//! Session defaults (data model §8, contract §1.4, §2.6, §2.7).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::error::EnvError;
use crate::registry::SessionEntry;

// `SessionId` is an id like a record's (it becomes a file name), so it lives in `id`
// with the other id rules; its public path here stays.
pub use crate::id::SessionId;

/// `env_get_context` / `env_set_context` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextOutput {
    pub session_id: String,
    /// `null` when the session has no default.
    pub default_environment_id: Option<String>,
    /// Whether the choice is on disk (`false` only after a failed write).
    pub persisted: bool,
    /// `SESSION_CONTEXT_UNPERSISTED` when the write failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Diagnostic>,
}

/// The folder of session files under the registry root.
pub const SESSIONS_DIR: &str = "sessions";

/// The on-disk shape of `sessions/<sessionId>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionFile {
    session_id: String,
    default_environment_id: Option<String>,
}

/// Largest session file we read; anything bigger is not ours.
const MAX_SESSION_FILE_BYTES: u64 = 4096;

/// The id prefix of a session made up for one stdio connection (`envreg serve` without
/// `--session`): `stdio-<uuid v7>`. Nobody returns to such a session after the
/// connection ends, so its file expires (see [`CONNECTION_SESSION_MAX_AGE`]).
pub const CONNECTION_SESSION_PREFIX: &str = "stdio-";

/// A connection's session file not written for this long is removed (7 days).
pub const CONNECTION_SESSION_MAX_AGE: std::time::Duration =
    std::time::Duration::from_secs(7 * 24 * 60 * 60);

/// At most this many connection session files are kept; the least recently written
/// go first.
pub const CONNECTION_SESSION_MAX_COUNT: usize = 100;

/// How many entries of `sessions/` a sweep looks at (outside input: bounded).
const SWEEP_SCAN_LIMIT: usize = 10_000;

/// Removes expired connection session files from `dir` (`sessions/`, canonical, inside
/// the registry): older than [`CONNECTION_SESSION_MAX_AGE`], or beyond the newest
/// [`CONNECTION_SESSION_MAX_COUNT`]. Named sessions (`cli`, `--session ID`) are people's
/// and are never removed. Best effort: a file that cannot be examined is left.
fn sweep_connection_sessions(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    let mut kept: Vec<(std::time::SystemTime, std::path::PathBuf)> = Vec::new();
    for entry in entries.flatten().take(SWEEP_SCAN_LIMIT) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(CONNECTION_SESSION_PREFIX) && name.ends_with(".json")) {
            continue;
        }
        // Not followed: a link is judged (and removed) as itself.
        let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if now.duration_since(modified).unwrap_or_default() > CONNECTION_SESSION_MAX_AGE {
            let _ = std::fs::remove_file(entry.path());
        } else {
            kept.push((modified, entry.path()));
        }
    }
    if kept.len() > CONNECTION_SESSION_MAX_COUNT {
        kept.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
        for (_, path) in kept.drain(CONNECTION_SESSION_MAX_COUNT..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl crate::Registry {
    /// The session's default environment (contract §2.6). Read-only: consults the
    /// process-local cache, then `sessions/<id>.json`; never writes.
    pub fn get_context(&self, session: &SessionId) -> ContextOutput {
        let entry = self.session_entry(session);
        ContextOutput {
            session_id: session.to_string(),
            default_environment_id: entry.default_environment_id,
            persisted: entry.persisted,
            warnings: Vec::new(),
        }
    }

    pub(crate) fn session_entry(&self, session: &SessionId) -> SessionEntry {
        let mut cache = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = cache.get(session) {
            return entry.clone();
        }
        let entry = SessionEntry {
            default_environment_id: self.read_session_file(session),
            persisted: true,
        };
        cache.insert(session.clone(), entry.clone());
        entry
    }

    /// A missing, unreadable or malformed file means "no default": the session file is
    /// a convenience, and guessing an environment from a broken one would not be safe.
    fn read_session_file(&self, session: &SessionId) -> Option<String> {
        // Opened only inside the registry, like every registry file: a session file that
        // links out is "no default", not a read of someone's file.
        let rel = format!("{SESSIONS_DIR}/{}.json", session.as_str());
        let bytes =
            crate::files::read_capped(self.inside(), &rel, MAX_SESSION_FILE_BYTES, &mut None)
                .ok()?;
        let file: SessionFile = serde_json::from_slice(&bytes).ok()?;
        if file.session_id != session.as_str() {
            return None;
        }
        file.default_environment_id
            .filter(|id| crate::id::is_valid_id(id))
    }

    /// Set or clear the session default (contract §2.7). An unknown environment is
    /// `ENV_NOT_FOUND`. A failed write is not an error: the choice is kept in this
    /// process and reported as `persisted: false` with a `SESSION_CONTEXT_UNPERSISTED`
    /// warning.
    pub fn set_context(
        &self,
        session: &SessionId,
        env: Option<&str>,
    ) -> Result<ContextOutput, EnvError> {
        if let Some(env) = env {
            crate::id::check_id("environmentId", env)?;
            if self.snapshot().environment(env).is_none() {
                return Err(EnvError::not_found(crate::RecordKind::Environment, env));
            }
        }
        let file = SessionFile {
            session_id: session.to_string(),
            default_environment_id: env.map(str::to_owned),
        };
        let mut warnings = Vec::new();
        let persisted = match self.write_session_file(session, &file) {
            Ok(()) => true,
            Err(reason) => {
                warnings.push(Diagnostic::warning(
                    crate::diagnostic::codes::SESSION_CONTEXT_UNPERSISTED,
                    format!(
                        "session default could not be written to {SESSIONS_DIR}/{}.json ({reason}); it holds for this process only",
                        session.as_str()
                    ),
                ));
                false
            }
        };
        let entry = SessionEntry {
            default_environment_id: file.default_environment_id.clone(),
            persisted,
        };
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(session.clone(), entry);
        Ok(ContextOutput {
            session_id: session.to_string(),
            default_environment_id: file.default_environment_id,
            persisted,
            warnings,
        })
    }

    fn write_session_file(&self, session: &SessionId, file: &SessionFile) -> Result<(), String> {
        // The folder is written at its canonical target, only inside the registry; the
        // file itself is a fresh temp file renamed into place, so a link at its name is
        // replaced, never written through.
        let dir = crate::files::folder(self.inside(), SESSIONS_DIR).map_err(|why| why.reason())?;
        std::fs::create_dir_all(&dir).map_err(|e| e.kind().to_string())?;
        let body = serde_json::to_vec_pretty(file)
            .map_err(|_| std::io::ErrorKind::InvalidData.to_string())?;
        crate::write::write_atomically(&dir, &format!("{}.json", session.as_str()), &body)
            .map_err(|e| e.kind().to_string())?;
        // Each connection that sets a default leaves a file; writing one is when the
        // old ones are cleared (reads never write).
        sweep_connection_sessions(&dir);
        Ok(())
    }

    /// The environment a session-scoped call works on (contract §1.4): the explicit
    /// argument, else the session default, else `defaults.environmentId`, else
    /// `INVALID_ARGUMENT` naming both ways to supply one.
    pub fn default_environment(
        &self,
        session: Option<&SessionId>,
        explicit: Option<&str>,
    ) -> Result<String, EnvError> {
        if let Some(env) = explicit {
            crate::id::check_id("environmentId", env)?;
            return Ok(env.to_owned());
        }
        if let Some(session) = session
            && let Some(env) = self.session_entry(session).default_environment_id
        {
            return Ok(env);
        }
        if let Some(env) = self.config().defaults.environment_id.clone() {
            crate::id::check_id("defaults.environmentId", &env)?;
            return Ok(env);
        }
        Err(EnvError::invalid_argument(
            "no environment given: pass environmentId, or set a session default with env_set_context (or defaults.environmentId in envreg.yaml)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19, finding 8: `sessions/stdio-*.json` piled up, one per connection.
    #[test]
    fn connection_session_files_expire_by_age_and_count() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("environments")).unwrap();
        std::fs::write(
            root.join("environments/staging.yaml"),
            "id: staging\nschemaVersion: 1\nname: Staging\ntier: staging\nplatform: vm\n",
        )
        .unwrap();
        let sessions = root.join(SESSIONS_DIR);
        std::fs::create_dir_all(&sessions).unwrap();
        let day = std::time::Duration::from_secs(24 * 60 * 60);
        let now = std::time::SystemTime::now();
        let write = |name: &str, age: std::time::Duration| {
            let path = sessions.join(name);
            std::fs::write(&path, "{}").unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(now - age).unwrap();
        };
        write("stdio-old.json", 8 * day);
        write("cli.json", 30 * day);
        write("ops-team.json", 30 * day);
        for n in 0..CONNECTION_SESSION_MAX_COUNT + 20 {
            write(
                &format!("stdio-{n:03}.json"),
                day + std::time::Duration::from_secs(n as u64),
            );
        }
        let registry = crate::Registry::open(root).unwrap();
        let me = SessionId::new("stdio-new").unwrap();
        registry.set_context(&me, Some("staging")).unwrap();
        let names: Vec<String> = std::fs::read_dir(&sessions)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let connections = names.iter().filter(|n| n.starts_with("stdio-")).count();
        assert_eq!(connections, CONNECTION_SESSION_MAX_COUNT, "{names:?}");
        assert!(
            names.contains(&"stdio-new.json".to_owned()),
            "the file just written stays"
        );
        assert!(
            !names.contains(&"stdio-old.json".to_owned()),
            "older than the age limit"
        );
        // The oldest of the 120 recent ones went; the newest stayed.
        assert!(!names.contains(&"stdio-119.json".to_owned()));
        assert!(names.contains(&"stdio-000.json".to_owned()));
        assert!(
            names.contains(&"cli.json".to_owned()) && names.contains(&"ops-team.json".to_owned())
        );
    }
}
