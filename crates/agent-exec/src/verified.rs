//! The verification cache on disk: one JSON file per backend under
//! `$XDG_STATE_HOME/agent-exec/verified/` (next to the default journal), so a
//! short-lived `agent-exec run` skips its backend's probe while the backend's
//! verification key is unchanged.
//!
//! Invariants: a file is written whole or not at all (temp file in the same
//! directory, then rename); anything unreadable, corrupt, too large, from another key,
//! older than [`TTL`] or dated in the future is a miss, never an error; a backend name
//! that is not a valid config name gets no file (names are data, not paths). An entry
//! holds what a probe verified, never its problems (the registry probes a failed
//! capability again whenever a run needs it); the key holds no credential (backends
//! hash their env and endpoint), so the file holds none either. A run that fails as
//! `agent.provider_unavailable` removes its backend's file ([`forget_if_changed`]).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_exec_contract::{CacheMode, Capability, Registry, Verification, VerificationCache};
use serde::{Deserialize, Serialize};

/// How long a stored verification stands in for a probe.
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Files above this are not ours (an entry is a few hundred bytes): a miss.
const MAX_FILE: u64 = 64 * 1024;

/// One backend's file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    key: String,
    /// Seconds since the Unix epoch when the probe ran.
    verified_at: u64,
    adapter_version: String,
    verified: Vec<String>,
}

/// The cache directory and the clock.
#[derive(Debug, Clone)]
pub struct FileCache {
    dir: PathBuf,
}

impl FileCache {
    /// A cache in `dir` (created on the first store).
    pub fn new(dir: PathBuf) -> Self {
        FileCache { dir }
    }

    /// The default place: `verified/` in the state directory of the default journal.
    pub fn default_location() -> Option<FileCache> {
        let journal = agent_exec_journal::JournalLocation::default_path()?;
        Some(FileCache::new(journal.parent()?.join("verified")))
    }

    fn file(&self, backend: &str) -> Option<PathBuf> {
        agent_exec_backends::config::valid_name(backend)
            .then(|| self.dir.join(format!("{backend}.json")))
    }

    fn read(path: &Path) -> Option<Entry> {
        let mut text = String::new();
        std::fs::File::open(path)
            .ok()?
            .take(MAX_FILE + 1)
            .read_to_string(&mut text)
            .ok()?;
        if text.len() as u64 > MAX_FILE {
            return None;
        }
        serde_json::from_str(&text).ok()
    }

    fn write(&self, path: &Path, entry: &Entry) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let json = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let temp = self.dir.join(format!(
            ".{}.{}.{nanos}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
            std::process::id()
        ));
        let result = (|| {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(&json)?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl VerificationCache for FileCache {
    fn get(&self, backend: &str, key: &str) -> Option<Verification> {
        let entry = Self::read(&self.file(backend)?)?;
        let now = now_secs();
        // A date in the future (clock moved back, a copied file) is not trusted.
        if entry.key != key || entry.verified_at > now || now - entry.verified_at >= TTL.as_secs() {
            return None;
        }
        let mut verified = Vec::new();
        for name in &entry.verified {
            match Capability::from_wire(name) {
                // Written by a newer version: not ours to interpret.
                Capability::Other(_) => return None,
                capability => verified.push(capability),
            }
        }
        Some(Verification {
            verified,
            adapter_version: entry.adapter_version,
            problems: Vec::new(),
        })
    }

    fn put(&self, backend: &str, key: &str, verification: &Verification) {
        let Some(path) = self.file(backend) else {
            return;
        };
        let entry = Entry {
            key: key.to_owned(),
            verified_at: now_secs(),
            adapter_version: verification.adapter_version.clone(),
            verified: verification
                .verified
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect(),
        };
        if let Err(e) = self.write(&path, &entry) {
            // A cache that cannot be written costs a probe next time, nothing more.
            tracing::debug!(%e, path = %path.display(), "cannot store the verification");
        }
    }

    fn remove(&self, backend: &str) {
        if let Some(path) = self.file(backend)
            && let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!(%e, path = %path.display(), "cannot remove the verification");
        }
    }
}

/// After a run: a failure that says the backend is not what was verified — it could
/// not be reached or started (`agent.provider_unavailable`: the program is gone, the
/// endpoint moved, the model is no longer served) — drops its verification, so the
/// next run probes instead of trusting a stale entry for up to [`TTL`].
pub async fn forget_if_changed(
    registry: &Registry,
    backend: &str,
    result: &agent_exec_contract::ContractResult,
) {
    if result
        .err
        .as_ref()
        .is_some_and(|e| e.code == agent_exec_contract::ErrorCode::ProviderUnavailable)
    {
        registry.forget(backend).await;
    }
}

/// Gives `registry` the default file cache, used as `mode` says (`run` uses it;
/// `backends --verify` refreshes it). Without a state directory there is no cache and
/// every process probes.
pub fn attach(registry: &mut Registry, mode: CacheMode) {
    if let Some(cache) = FileCache::default_location() {
        registry.set_verification_cache(Arc::new(cache), mode);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> Verification {
        Verification {
            verified: vec![Capability::Text, Capability::Stream],
            adapter_version: "codex/0.1.0 (codex-cli 1.2.3)".into(),
            problems: Vec::new(),
        }
    }

    #[test]
    fn round_trip_under_the_same_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(dir.path().join("verified"));
        assert_eq!(cache.get("codex", "k1"), None);
        cache.put("codex", "k1", &clean());
        assert_eq!(cache.get("codex", "k1"), Some(clean()));
        assert_eq!(cache.get("codex", "k2"), None);
        assert_eq!(cache.get("claude-code", "k1"), None);
        // Only the entry itself is left: no temp files.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("verified"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("codex.json")]);
    }

    #[test]
    fn corrupt_truncated_or_foreign_files_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(dir.path().to_path_buf());
        cache.put("codex", "k1", &clean());
        let path = dir.path().join("codex.json");
        let good = std::fs::read(&path).unwrap();
        for bad in [
            b"".to_vec(),
            b"not json".to_vec(),
            good[..good.len() / 2].to_vec(),
            br#"{"key":"k1","verified_at":1,"adapter_version":"x","verified":[]}"#.to_vec(),
            format!(
                r#"{{"key":"k1","verified_at":{},"adapter_version":"x","verified":["teleport"]}}"#,
                now_secs()
            )
            .into_bytes(),
            vec![b' '; (MAX_FILE + 10) as usize],
        ] {
            std::fs::write(&path, &bad).unwrap();
            assert_eq!(
                cache.get("codex", "k1"),
                None,
                "{:?}",
                String::from_utf8_lossy(&bad)
            );
        }
        // A directory where the file should be: a miss on read, a dropped write.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(cache.get("codex", "k1"), None);
        cache.put("codex", "k1", &clean());
        assert_eq!(cache.get("codex", "k1"), None);
    }

    #[test]
    fn entries_expire_and_future_dates_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(dir.path().to_path_buf());
        let at = |secs: u64| {
            let entry = Entry {
                key: "k1".into(),
                verified_at: secs,
                adapter_version: "x".into(),
                verified: vec!["text".into()],
            };
            std::fs::write(
                dir.path().join("codex.json"),
                serde_json::to_vec(&entry).unwrap(),
            )
            .unwrap();
        };
        at(now_secs() - 60);
        assert!(cache.get("codex", "k1").is_some());
        at(now_secs() - TTL.as_secs() - 1);
        assert_eq!(cache.get("codex", "k1"), None);
        at(now_secs() + 3600);
        assert_eq!(cache.get("codex", "k1"), None);
    }

    #[test]
    fn problems_and_path_like_names_are_never_stored() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(dir.path().join("verified"));
        cache.put("../escape", "k1", &clean());
        cache.put("a/b", "k1", &clean());
        assert!(!dir.path().join("verified").exists());
        assert!(!dir.path().join("escape.json").exists());
        // Problems (free text) never reach the file: only the verified names do.
        let mut partial = clean();
        partial.problems.push("resume: too old at /home/me".into());
        cache.put("codex", "k1", &partial);
        let text = std::fs::read_to_string(dir.path().join("verified/codex.json")).unwrap();
        assert!(!text.contains("too old"), "{text}");
        assert_eq!(cache.get("codex", "k1"), Some(clean()));
        cache.remove("codex");
        cache.remove("codex");
        assert_eq!(cache.get("codex", "k1"), None);
    }
}
