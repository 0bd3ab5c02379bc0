//! Change detection: which files changed since the last call, without stat-ing every
//! file on every call.
//!
//! On Linux an inotify instance watches the registry root (for `envreg.yaml` and the
//! kind folders appearing or vanishing) and each kind folder (for record files). A read
//! drains the queue with non-blocking `read(2)` calls — about a microsecond when nothing
//! changed — and re-parses only the files named in events. The watch is set up *before*
//! the initial scan, so an edit made during the scan is seen by the next call.
//!
//! Anything the event stream cannot describe precisely (queue overflow, a kind folder
//! created, moved or deleted) asks for a rescan, which stats every file and re-parses
//! those whose size, mtime, ctime or inode changed. Where inotify is unavailable (other
//! systems, or the per-user watch limit reached) every call rescans that way: correct,
//! just slower.
//!
//! A kind folder is watched at its canonical target, and only when that is inside the
//! registry (`files.rs`): `services -> /etc` gets no watch, so nothing outside is
//! followed even for its events; replacing the link is an event on the root, which
//! re-decides the watch and rescans.

use crate::kind::RecordKind;

/// What the next refresh has to look at.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Record files named by events: (kind, file name).
    pub files: Vec<(RecordKind, String)>,
    /// `envreg.yaml` changed.
    pub config: bool,
    /// The event stream lost precision: stat everything.
    pub rescan: bool,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && !self.config && !self.rescan
    }

    pub fn everything() -> Changes {
        Changes {
            files: Vec::new(),
            config: true,
            rescan: true,
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;

    use nix::errno::Errno;
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

    use super::Changes;
    use crate::config::CONFIG_FILE;
    use crate::kind::RecordKind;

    #[derive(Debug)]
    pub(crate) struct Watcher {
        inotify: Inotify,
        root_wd: WatchDescriptor,
        kind_wds: HashMap<WatchDescriptor, RecordKind>,
    }

    fn dir_mask() -> AddWatchFlags {
        AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR
    }

    impl Watcher {
        /// `None` when inotify cannot be used (the caller falls back to rescans).
        pub(crate) fn new(root: &containment::Root) -> Option<Watcher> {
            let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
            let root_wd = inotify.add_watch(root.path(), dir_mask()).ok()?;
            let mut watcher = Watcher {
                inotify,
                root_wd,
                kind_wds: HashMap::new(),
            };
            for kind in RecordKind::ALL {
                watcher.watch_kind(root, kind);
            }
            Some(watcher)
        }

        fn watch_kind(&mut self, root: &containment::Root, kind: RecordKind) {
            self.kind_wds.retain(|_, k| *k != kind);
            let Ok(dir) = crate::files::folder(root, kind.dir_name()) else {
                return;
            };
            if let Ok(wd) = self.inotify.add_watch(&dir, dir_mask()) {
                self.kind_wds.insert(wd, kind);
            }
        }

        /// Everything that happened since the last drain.
        pub(crate) fn drain(&mut self, root: &containment::Root) -> Changes {
            let mut changes = Changes::default();
            loop {
                let events = match self.inotify.read_events() {
                    Ok(events) => events,
                    Err(Errno::EAGAIN) => break,
                    Err(Errno::EINTR) => continue,
                    Err(_) => {
                        changes.rescan = true;
                        break;
                    }
                };
                if events.is_empty() {
                    break;
                }
                for event in events {
                    if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                        changes.rescan = true;
                        continue;
                    }
                    let name = event.name.as_ref().and_then(|n| n.to_str());
                    if event.wd == self.root_wd {
                        match name {
                            Some(CONFIG_FILE) => changes.config = true,
                            Some(n) => {
                                if let Some(kind) = RecordKind::from_dir_name(n) {
                                    // A kind folder appeared, vanished or was replaced.
                                    self.watch_kind(root, kind);
                                    changes.rescan = true;
                                }
                            }
                            // The root itself moved or was deleted.
                            None => changes.rescan = true,
                        }
                    } else if let Some(&kind) = self.kind_wds.get(&event.wd) {
                        match name {
                            Some(n) if !crate::load::is_ignored_file_name(n) => {
                                changes.files.push((kind, n.to_owned()));
                            }
                            Some(_) => {}
                            None => {
                                // IN_DELETE_SELF / IN_MOVE_SELF / IN_IGNORED on the folder.
                                changes.rescan = true;
                            }
                        }
                    }
                }
            }
            changes.files.sort();
            changes.files.dedup();
            changes
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Changes;

    /// No event source: every call rescans.
    #[derive(Debug)]
    pub(crate) struct Watcher;

    impl Watcher {
        pub(crate) fn new(_root: &containment::Root) -> Option<Watcher> {
            None
        }

        pub(crate) fn drain(&mut self, _root: &containment::Root) -> Changes {
            Changes::everything()
        }
    }
}

pub(crate) use imp::Watcher;
