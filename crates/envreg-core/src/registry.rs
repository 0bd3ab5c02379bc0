//! [`Registry`]: the handle every caller holds, and how it stays fresh.
//!
//! The registry owns a table of every record file it has read (its outcome and
//! fingerprint) and the current [`Snapshot`] built from that table. Every public read
//! first calls [`Registry::snapshot`], which drains the change watcher (`watch.rs`)
//! and, only if something changed, re-reads the named files and rebuilds the snapshot.
//! When nothing changed a read costs a mutex, one non-blocking `read(2)` and an `Arc`
//! clone.
//!
//! The other operations live next to their outputs: reads in [`crate::read`], writes in
//! [`crate::write`], session defaults in [`crate::session`]; resolution in
//! [`crate::resolve`] and [`crate::operation`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::{CONFIG_FILE, Config};
use crate::diagnostic::{Diagnostic, codes};
use crate::error::EnvError;
use crate::files::Fingerprint;
use crate::kind::RecordKind;
use crate::load::FileOutcome;
use crate::snapshot::{RecordMap, Snapshot};
use crate::watch::{Changes, Watcher};

/// An open registry. `Send + Sync`; share it behind an `Arc`.
#[derive(Debug)]
pub struct Registry {
    root: PathBuf,
    /// The same folder, canonical: every file is opened only inside it (`files.rs`).
    inside: containment::Root,
    state: Mutex<State>,
    pub(crate) sessions: Mutex<HashMap<crate::id::SessionId, SessionEntry>>,
}

/// What this process knows about one session's default (the cache `session` keeps in the
/// handle; defined here so the handle does not depend on the module that extends it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionEntry {
    pub default_environment_id: Option<String>,
    /// Whether the file on disk says the same.
    pub persisted: bool,
}

#[derive(Debug)]
struct State {
    /// Per kind: file name → what loading it produced.
    files: [BTreeMap<String, FileOutcome>; 5],
    config: Arc<Config>,
    /// What loading `envreg.yaml` found (an invalid file, unknown keys).
    config_diagnostics: Vec<Diagnostic>,
    /// Kind folders that exist but cannot be listed.
    folder_diagnostics: Vec<Diagnostic>,
    watcher: Option<Watcher>,
    snapshot: Arc<Snapshot>,
    generation: u64,
}

impl Registry {
    /// Open the registry folder `root` and load it. Loading never fails on bad records
    /// (they become diagnostics); only a root that is not a folder is an error.
    ///
    /// A relative `root` is made absolute against the current directory, now: every path
    /// derived from [`Registry::root`] (skill folders, the project folder) must not move
    /// if the directory changes later. Binaries do this themselves at start; this keeps a
    /// library caller that passes `./registry` just as correct.
    pub fn open(root: impl Into<PathBuf>) -> Result<Registry, EnvError> {
        let root = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        Registry::open_with(root, true)
    }

    /// `watch: false` forces the rescan fallback (what non-Linux systems get); tests
    /// use it to hold that path to the same behaviour.
    pub(crate) fn open_with(root: PathBuf, watch: bool) -> Result<Registry, EnvError> {
        match std::fs::metadata(&root) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(EnvError::invalid_argument(format!(
                    "registry {} is not a folder",
                    root.display()
                )));
            }
            Err(e) => {
                return Err(EnvError::invalid_argument(format!(
                    "registry folder {} cannot be opened: {}; create one with `envreg init DIR`",
                    root.display(),
                    e.kind()
                )));
            }
        }
        let inside = crate::files::open_root(&root).map_err(|e| {
            EnvError::invalid_argument(format!(
                "registry folder {} cannot be opened: {e}",
                root.display()
            ))
        })?;
        // Watch first, then scan: an edit during the scan shows up as an event.
        let watcher = if watch { Watcher::new(&inside) } else { None };
        let mut state = State {
            files: Default::default(),
            config: Arc::new(Config::default()),
            config_diagnostics: Vec::new(),
            folder_diagnostics: Vec::new(),
            watcher,
            snapshot: Arc::new(Snapshot::empty()),
            generation: 0,
        };
        state.apply(&inside, Changes::everything());
        if state.generation == 0 {
            // An empty folder changes nothing, but the snapshot must carry its config.
            state.rebuild();
        }
        Ok(Registry {
            root,
            inside,
            state: Mutex::new(state),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// The registry folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The registry folder, canonical: what every open and write is confined to.
    pub(crate) fn inside(&self) -> &containment::Root {
        &self.inside
    }

    /// `envreg.yaml` with defaults applied (refreshed like every read).
    pub fn config(&self) -> Arc<Config> {
        self.snapshot().config.clone()
    }

    /// The current snapshot, after picking up any file changed on disk.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let mut state = self.lock_state();
        let changes = match &mut state.watcher {
            Some(w) => w.drain(&self.inside),
            None => Changes::everything(),
        };
        if !changes.is_empty() {
            state.apply(&self.inside, changes);
        }
        state.snapshot.clone()
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the table inconsistent (each
        // update replaces whole entries), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Re-read the given files now (after our own write), then return the snapshot.
    pub(crate) fn reload_files(&self, files: &[(RecordKind, String)]) -> Arc<Snapshot> {
        let mut state = self.lock_state();
        let mut changes = match &mut state.watcher {
            Some(w) => w.drain(&self.inside),
            None => Changes::everything(),
        };
        changes.files.extend(files.iter().cloned());
        state.apply(&self.inside, changes);
        state.snapshot.clone()
    }

    /// The file name currently holding `kind`/`id` (`x.yaml` or `x.yml`), if any, with
    /// whether it loaded. Lets writes and deletes find broken files too.
    pub(crate) fn files_for_id(&self, kind: RecordKind, id: &str) -> Vec<String> {
        let state = self.lock_state();
        state.files[kind.index()]
            .iter()
            .filter(|(_, outcome)| outcome.stem == id)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

impl State {
    /// Bring the file table up to date with `changes` and rebuild the snapshot.
    fn apply(&mut self, root: &containment::Root, changes: Changes) {
        let mut rescan = changes.rescan;
        let mut changed = false;
        if changes.config {
            let old = (self.config.clone(), self.config_diagnostics.clone());
            self.reload_config(root);
            changed |= *old.0 != *self.config || old.1 != self.config_diagnostics;
            // The size limit decides which files load at all.
            rescan |= self.config.limits.max_record_bytes != old.0.limits.max_record_bytes;
        }
        let max_bytes = self.config.limits.max_record_bytes;
        if rescan {
            changed |= self.rescan(root, max_bytes);
        }
        for (kind, name) in changes.files {
            changed = true;
            let table = &mut self.files[kind.index()];
            match std::fs::symlink_metadata(root.path().join(kind.dir_name()).join(&name)) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    table.remove(&name);
                }
                _ => {
                    table.insert(
                        name.clone(),
                        crate::load::load_record_file(root, kind, &name, max_bytes),
                    );
                }
            }
        }
        // Without a change the current snapshot stays: same `Arc`, caches kept.
        if changed {
            self.rebuild();
        }
    }

    fn reload_config(&mut self, root: &containment::Root) {
        self.config_diagnostics.clear();
        let config = match crate::files::read_capped(root, CONFIG_FILE, 1 << 20, &mut None) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => {
                    let (config, diagnostics) = Config::parse_checked(&text);
                    self.config_diagnostics = diagnostics;
                    config
                }
                Err(_) => {
                    self.config_diagnostics.push(
                        Diagnostic::error(
                            codes::CONFIG_INVALID,
                            "envreg.yaml is not valid UTF-8; defaults used",
                        )
                        .in_file(CONFIG_FILE),
                    );
                    Config::default()
                }
            },
            Err(crate::files::Unread::Missing) => Config::default(),
            Err(why) => {
                let mut d = why.diagnostic();
                d.code = codes::CONFIG_INVALID.to_owned();
                d.message = format!("{}; defaults used", d.message);
                self.config_diagnostics.push(d.in_file(CONFIG_FILE));
                Config::default()
            }
        };
        self.config = Arc::new(config);
    }

    /// Stat every record file; re-read the new and changed ones, drop the vanished.
    /// Returns whether anything differs from before.
    fn rescan(&mut self, root: &containment::Root, max_bytes: u64) -> bool {
        let old_folder_diagnostics = std::mem::take(&mut self.folder_diagnostics);
        let mut changed = false;
        for kind in RecordKind::ALL {
            let names = match crate::load::list_record_files(root, kind) {
                Ok(names) => names,
                Err(d) => {
                    self.folder_diagnostics.push(d);
                    Vec::new()
                }
            };
            let table = &mut self.files[kind.index()];
            let before = table.len();
            table.retain(|name, _| names.binary_search(name).is_ok());
            changed |= table.len() != before;
            let dir = root.path().join(kind.dir_name());
            for name in names {
                let unchanged = table.get(&name).is_some_and(|old| {
                    old.fingerprint.is_some()
                        && std::fs::metadata(dir.join(&name))
                            .ok()
                            .map(|m| Fingerprint::of(&m))
                            == old.fingerprint
                });
                if !unchanged {
                    let outcome = crate::load::load_record_file(root, kind, &name, max_bytes);
                    table.insert(name, outcome);
                    changed = true;
                }
            }
        }
        changed || old_folder_diagnostics != self.folder_diagnostics
    }

    /// Build a new snapshot from the file table: one record per id; two files claiming
    /// one id load neither (fail closed) and report `DUPLICATE_ID` on both.
    fn rebuild(&mut self) {
        let mut records: [RecordMap; 5] = Default::default();
        let mut diagnostics: Vec<Diagnostic> = Vec::new();
        diagnostics.extend(self.config_diagnostics.iter().cloned());
        diagnostics.extend(self.folder_diagnostics.iter().cloned());
        for kind in RecordKind::ALL {
            let table = &self.files[kind.index()];
            let mut by_stem: BTreeMap<&str, Vec<(&String, &FileOutcome)>> = BTreeMap::new();
            for (name, outcome) in table {
                by_stem
                    .entry(outcome.stem.as_str())
                    .or_default()
                    .push((name, outcome));
            }
            for (stem, files) in by_stem {
                if files.len() > 1 {
                    let names: Vec<String> = files
                        .iter()
                        .map(|(n, _)| format!("{}/{n}", kind.dir_name()))
                        .collect();
                    for name in &names {
                        diagnostics.push(
                            Diagnostic::error(
                                codes::DUPLICATE_ID,
                                format!("{kind} id {stem} is defined by more than one file: {}; neither is loaded", names.join(" and ")),
                            )
                            .in_file(name.clone())
                            .at_path("id"),
                        );
                    }
                    continue;
                }
                for (_, outcome) in files {
                    diagnostics.extend(outcome.diagnostics.iter().cloned());
                    if let Some(rec) = &outcome.record {
                        records[kind.index()].insert(stem.to_owned(), rec.clone());
                    }
                }
            }
        }
        self.generation += 1;
        self.snapshot = Arc::new(Snapshot::build(
            records,
            diagnostics,
            self.config.clone(),
            self.generation,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Both freshness strategies refuse a record file that links out of the registry
    /// when it appears after the registry was opened (issue 14 §1: the refresh path
    /// keeps the loader's rule). Loaded the outside file on the old code.
    #[test]
    fn watcher_and_rescan_fallback_refuse_links_out_alike() {
        for watch in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("registry");
            write(
                &root,
                "services/a.yaml",
                "id: a\nschemaVersion: 1\nname: A\n",
            );
            let outside = dir.path().join("secret.yaml");
            std::fs::write(&outside, "id: b\nschemaVersion: 1\nname: SECRET\n").unwrap();
            let r = Registry::open_with(root.clone(), watch).unwrap();
            assert!(r.snapshot().service("a").is_some());
            std::os::unix::fs::symlink(&outside, root.join("services/b.yaml")).unwrap();
            let s = r.snapshot();
            assert!(s.service("b").is_none(), "watch={watch}");
            let d = s
                .diagnostics()
                .iter()
                .find(|d| d.file.as_deref() == Some("services/b.yaml"))
                .unwrap_or_else(|| panic!("no diagnostic, watch={watch}"));
            assert_eq!(d.code, codes::FILE_UNREADABLE, "watch={watch}");
            assert!(!d.message.contains("SECRET"), "watch={watch}");
        }
    }

    /// Both freshness strategies see the same edits and re-parse only what changed.
    #[test]
    fn watcher_and_rescan_fallback_agree() {
        for watch in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            write(
                root,
                "services/a.yaml",
                "id: a\nschemaVersion: 1\nname: A\n",
            );
            write(
                root,
                "services/b.yaml",
                "id: b\nschemaVersion: 1\nname: B\n",
            );
            let r = Registry::open_with(root.to_path_buf(), watch).unwrap();
            assert_eq!(
                r.lock_state().watcher.is_some(),
                watch && cfg!(target_os = "linux")
            );
            let before = r.snapshot();
            write(
                root,
                "services/a.yaml",
                "id: a\nschemaVersion: 1\nname: A2\n",
            );
            write(root, "services/c.yml", "id: c\nschemaVersion: 1\nname: C\n");
            let after = r.snapshot();
            assert_eq!(after.service("a").unwrap().name, "A2", "watch={watch}");
            assert!(after.service("c").is_some(), "watch={watch}");
            let b = RecordKind::Service;
            assert!(
                Arc::ptr_eq(before.get(b, "b").unwrap(), after.get(b, "b").unwrap()),
                "watch={watch}"
            );
            std::fs::remove_file(root.join("services/b.yaml")).unwrap();
            assert!(r.snapshot().service("b").is_none(), "watch={watch}");
            // No change: the very same snapshot.
            let s1 = r.snapshot();
            assert!(Arc::ptr_eq(&s1, &r.snapshot()), "watch={watch}");
        }
    }
}
