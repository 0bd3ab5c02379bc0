//! `fs/read_text_file` and `fs/write_text_file`, served only inside the workspace root.
//!
//! Every path goes through [`containment::Root`]: it is resolved the way the kernel
//! would (symbolic links followed, `..` after them), judged on its canonical target,
//! and opened with `O_NOFOLLOW` and re-checked. A path whose target is outside the
//! root — directly, through `..`, or through a symbolic link — is answered with a
//! JSON-RPC error naming the path and the root; no byte of it is read or written.
//!
//! Writes are atomic: the content goes to a fresh temporary file next to the target
//! (created inside the root, `O_EXCL`), is synced, and renamed over the target; a
//! crash leaves the old file or the new one, never half of either. Missing parent
//! directories inside the root are created (an agent writing `src/new/mod.rs` expects
//! that). When the request's `workspace.writable` is set, the target must also lie in
//! one of those paths; and writes need the tool policy to allow edits
//! ([`super::policy::Policy::allows_writes`]).
//!
//! Not done: the workspace limit is path authorisation, not an OS sandbox (contract
//! invariant 7) — the agent's own tools (its shell) are not confined by this module.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use containment::{Root, Verdict};

/// The largest file served by `fs/read_text_file`.
pub const MAX_READ: usize = 16 * 1024 * 1024;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Why a file request was refused. Messages name the path, never file content.
#[derive(Debug, thiserror::Error)]
pub enum FsRefusal {
    #[error("`{path}` is outside the workspace root {root}")]
    Outside { path: String, root: String },
    #[error("`{path}` cannot be placed inside the workspace root: {reason}")]
    Unresolvable { path: String, reason: String },
    #[error("`{path}` is not in the workspace's writable paths")]
    NotWritable { path: String },
    #[error("the tool policy of this execution does not allow file edits")]
    WritesNotAllowed,
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}` is not UTF-8 text")]
    NotText { path: String },
    #[error("`{path}` is larger than {MAX_READ} bytes")]
    TooLarge { path: String },
    #[error("`{path}`: {reason}")]
    Io { path: String, reason: String },
}

impl FsRefusal {
    /// The JSON-RPC error sent back to the agent.
    pub fn to_rpc_error(&self) -> agent_client_protocol::Error {
        use agent_client_protocol::ErrorCode;
        let code = match self {
            FsRefusal::NotFound { .. } => ErrorCode::RESOURCE_NOT_FOUND,
            FsRefusal::Io { .. } => ErrorCode::INTERNAL_ERROR,
            _ => ErrorCode::INVALID_PARAMS,
        };
        agent_client_protocol::Error::new(code, self.to_string())
    }
}

/// The workspace as the agent's file system.
#[derive(Debug, Clone)]
pub struct WorkspaceFs {
    root: Root,
    /// Canonical writable paths; empty: the whole root.
    writable: Vec<PathBuf>,
    writes_allowed: bool,
}

impl WorkspaceFs {
    /// A file system over `root`. `writable` are paths relative to the root (the
    /// contract's `workspace.writable`); one that resolves outside the root is an
    /// error, not ignored.
    pub fn new(root: Root, writable: &[String], writes_allowed: bool) -> Result<Self, FsRefusal> {
        let mut canonical = Vec::new();
        for path in writable {
            match root.contains(path, root.path()) {
                Ok(Verdict::Inside(target)) => canonical.push(target),
                Ok(Verdict::Outside(_)) => {
                    return Err(FsRefusal::Outside {
                        path: path.clone(),
                        root: root.path().display().to_string(),
                    });
                }
                Err(e) => {
                    return Err(FsRefusal::Unresolvable {
                        path: path.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        Ok(WorkspaceFs {
            root,
            writable: canonical,
            writes_allowed,
        })
    }

    /// The root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `fs/read_text_file`: the file's text, from 1-based `line`, at most `limit` lines.
    pub fn read_text(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, FsRefusal> {
        let shown = path.display().to_string();
        self.inside(path)?;
        let mut file = match self
            .root
            .open(path, self.root.path(), OpenOptions::new().read(true))
        {
            Ok(file) => file,
            Err(containment::Error::Open { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(FsRefusal::NotFound { path: shown });
            }
            Err(e) => return Err(self.refusal(&shown, e)),
        };
        let mut bytes = Vec::new();
        use std::io::Read as _;
        (&mut file)
            .take(MAX_READ as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FsRefusal::Io {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        if bytes.len() > MAX_READ {
            return Err(FsRefusal::TooLarge { path: shown });
        }
        let text = String::from_utf8(bytes).map_err(|_| FsRefusal::NotText {
            path: shown.clone(),
        })?;
        if line.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
        let take = limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// `fs/write_text_file`: replaces (or creates) the file atomically.
    pub fn write_text(&self, path: &Path, content: &str) -> Result<(), FsRefusal> {
        let shown = path.display().to_string();
        if !self.writes_allowed {
            return Err(FsRefusal::WritesNotAllowed);
        }
        let target = self.inside(path)?;
        if !self.writable.is_empty()
            && !self
                .writable
                .iter()
                .any(|w| containment::is_within(&target, w))
        {
            return Err(FsRefusal::NotWritable { path: shown });
        }
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(FsRefusal::Io {
                path: shown,
                reason: "not a file path".into(),
            });
        };
        let io = |e: std::io::Error| FsRefusal::Io {
            path: shown.clone(),
            reason: e.to_string(),
        };
        // The parent is canonical and inside the root (the verdict covered the whole
        // path, missing tail included).
        std::fs::create_dir_all(parent).map_err(io)?;
        let temp = parent.join(format!(
            ".{}.agent-exec-{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut file = self
            .root
            .open(
                &temp,
                self.root.path(),
                OpenOptions::new().write(true).create_new(true),
            )
            .map_err(|e| self.refusal(&shown, e))?;
        let written = (|| {
            file.write_all(content.as_bytes())?;
            if let Ok(existing) = std::fs::metadata(&target) {
                let mode = existing.permissions().mode() & 0o7777;
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
            file.sync_all()?;
            std::fs::rename(&temp, &target)?;
            std::fs::File::open(parent)?.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(io(e));
        }
        Ok(())
    }

    /// The canonical target of `path`, refused unless inside the root.
    fn inside(&self, path: &Path) -> Result<PathBuf, FsRefusal> {
        let shown = path.display().to_string();
        match self.root.contains(path, self.root.path()) {
            Ok(Verdict::Inside(target)) => Ok(target),
            Ok(Verdict::Outside(_)) => Err(FsRefusal::Outside {
                path: shown,
                root: self.root.path().display().to_string(),
            }),
            Err(e) => Err(FsRefusal::Unresolvable {
                path: shown,
                reason: e.to_string(),
            }),
        }
    }

    fn refusal(&self, shown: &str, error: containment::Error) -> FsRefusal {
        match error {
            containment::Error::OutsideRoot { .. } => FsRefusal::Outside {
                path: shown.to_owned(),
                root: self.root.path().display().to_string(),
            },
            containment::Error::Open { source, .. } => FsRefusal::Io {
                path: shown.to_owned(),
                reason: source.to_string(),
            },
            other => FsRefusal::Unresolvable {
                path: shown.to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Setup {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn setup() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let outside = dir.path().join("secret");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("key.txt"), "TOP-SECRET").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
        std::fs::write(root.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        Setup {
            _dir: dir,
            root,
            outside,
        }
    }

    fn fs(setup: &Setup, writable: &[&str], writes: bool) -> WorkspaceFs {
        let writable: Vec<String> = writable.iter().map(|s| (*s).to_owned()).collect();
        WorkspaceFs::new(Root::new(&setup.root).unwrap(), &writable, writes).unwrap()
    }

    #[test]
    fn reads_inside_with_line_and_limit() {
        let s = setup();
        let f = fs(&s, &[], true);
        let path = s.root.join("notes.txt");
        assert_eq!(f.read_text(&path, None, None).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(f.read_text(&path, Some(2), Some(1)).unwrap(), "two\n");
    }

    #[test]
    fn a_symlink_escaping_the_root_is_refused_for_read_and_write() {
        let s = setup();
        let f = fs(&s, &[], true);
        let through_link = s.root.join("escape/key.txt");
        let read = f.read_text(&through_link, None, None);
        let err = read.unwrap_err();
        assert!(matches!(err, FsRefusal::Outside { .. }), "{err:?}");
        let rpc = err.to_rpc_error();
        assert!(!rpc.message.contains("TOP-SECRET"));
        assert!(
            rpc.message.contains("outside the workspace root"),
            "{}",
            rpc.message
        );

        let write = f.write_text(&s.root.join("escape/new.txt"), "x");
        assert!(matches!(write, Err(FsRefusal::Outside { .. })), "{write:?}");
        assert!(!s.outside.join("new.txt").exists());
        // `..` climbing out is refused the same way.
        let climb = f.read_text(&s.root.join("../secret/key.txt"), None, None);
        assert!(matches!(climb, Err(FsRefusal::Outside { .. })), "{climb:?}");
    }

    #[test]
    fn a_dangling_symlink_to_outside_is_not_created_through() {
        let s = setup();
        std::os::unix::fs::symlink(s.outside.join("planted.txt"), s.root.join("dangling")).unwrap();
        let f = fs(&s, &[], true);
        let write = f.write_text(&s.root.join("dangling"), "x");
        assert!(matches!(write, Err(FsRefusal::Outside { .. })), "{write:?}");
        assert!(!s.outside.join("planted.txt").exists());
    }

    #[test]
    fn writes_are_whole_and_create_parents() {
        let s = setup();
        let f = fs(&s, &[], true);
        let path = s.root.join("src/new/mod.rs");
        f.write_text(&path, "fn main() {}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn main() {}\n");
        f.write_text(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        // No temporary file is left behind.
        let leftovers: Vec<_> = std::fs::read_dir(s.root.join("src/new"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("agent-exec"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn writable_paths_and_policy_limit_writes() {
        let s = setup();
        let f = fs(&s, &["out"], true);
        assert!(f.write_text(&s.root.join("out/a.txt"), "a").is_ok());
        let denied = f.write_text(&s.root.join("notes.txt"), "b");
        assert!(
            matches!(denied, Err(FsRefusal::NotWritable { .. })),
            "{denied:?}"
        );
        assert_eq!(
            std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
        let no_edits = fs(&s, &[], false).write_text(&s.root.join("x.txt"), "x");
        assert!(matches!(no_edits, Err(FsRefusal::WritesNotAllowed)));
        assert!(!s.root.join("x.txt").exists());
    }

    #[test]
    fn a_writable_path_outside_the_root_is_an_error() {
        let s = setup();
        let made = WorkspaceFs::new(Root::new(&s.root).unwrap(), &["escape".into()], true);
        assert!(matches!(made, Err(FsRefusal::Outside { .. })));
    }

    #[test]
    fn missing_and_binary_files_are_clear_errors() {
        let s = setup();
        std::fs::write(s.root.join("bin"), [0xff, 0xfe, 0x00]).unwrap();
        let f = fs(&s, &[], true);
        assert!(matches!(
            f.read_text(&s.root.join("nope.txt"), None, None),
            Err(FsRefusal::NotFound { .. })
        ));
        assert!(matches!(
            f.read_text(&s.root.join("bin"), None, None),
            Err(FsRefusal::NotText { .. })
        ));
    }
}
