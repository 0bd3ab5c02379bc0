//! Reading deliverables (`targets`) back from the workspace, through the
//! `containment` crate: only a target whose canonical location is inside the root is
//! read, with `O_NOFOLLOW` on the canonical path and a re-check of what was opened.
//! Only a regular file of at most [`MAX_DELIVERABLE_BYTES`] is read, and nothing
//! blocks: a FIFO, a device node or an oversized (even sparse) file is
//! `agent.missing_deliverable` with a reason that says which.
//! A target that is, or passes through, a symbolic link leading out of the root is
//! refused with `agent.path_outside_workspace`, and none of its bytes are returned.
//!
//! "Passes through" is checked on every prefix of the target as written, not only on
//! where it ends: `dirlink/../ws/out.txt` with `dirlink -> /outside` ends inside the
//! root (the kernel takes `..` from the link's target), but its walk leaves the root,
//! so it is refused. Once a prefix has entered the root, every later prefix must
//! resolve inside it (an absolute target may reach the root through links outside
//! it). Decision: done here on `containment::resolve` per prefix (a few `lstat`s per
//! component), not by a new containment API; a `Root::read_strict` that reports the
//! first step leaving the root during its one walk would do it in one pass.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use agent_exec_contract::{Error, ErrorCode, SideEffects};

/// The largest deliverable read back, per target (16 MiB): a bigger file is reported,
/// not read.
pub const MAX_DELIVERABLE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads every target under `root`. The first refusal wins: an outside target
/// (path_outside_workspace) before a missing one (missing_deliverable), since
/// reporting the escape matters more. `side_effects` is what the caller already
/// knows about the attempt.
pub fn read_targets(
    root: &Path,
    targets: &[String],
    side_effects: SideEffects,
) -> Result<BTreeMap<String, Vec<u8>>, Error> {
    let root = containment::Root::new(root).map_err(|e| {
        Error::new(
            ErrorCode::PathOutsideWorkspace,
            format!("workspace root is unusable for deliverables: {e}"),
            side_effects,
        )
    })?;
    let outside = |target: &str, how: &str, place: &Path| {
        Error::new(
            ErrorCode::PathOutsideWorkspace,
            format!(
                "target `{target}` {how} {} outside the workspace root {}; it was not read",
                place.display(),
                root.path().display()
            ),
            side_effects,
        )
    };
    let mut files = BTreeMap::new();
    let mut missing: Option<Error> = None;
    for target in targets {
        if let Some(left_to) = walk_leaves_root(&root, target) {
            return Err(outside(target, "passes through", &left_to));
        }
        match read_regular(&root, target) {
            Ok(Ok(bytes)) => {
                files.insert(target.clone(), bytes);
            }
            Ok(Err(why)) => {
                missing.get_or_insert_with(|| {
                    Error::new(
                        ErrorCode::MissingDeliverable,
                        format!("target `{target}` {why}; it was not read"),
                        side_effects,
                    )
                });
            }
            Err(containment::Error::OutsideRoot {
                target: resolved, ..
            }) => return Err(outside(target, "resolves to", &resolved)),
            Err(containment::Error::Open { source, .. })
                if source.kind() == ErrorKind::NotFound =>
            {
                missing.get_or_insert_with(|| {
                    Error::new(
                        ErrorCode::MissingDeliverable,
                        format!("target `{target}` was not produced in the workspace"),
                        side_effects,
                    )
                });
            }
            Err(e) => {
                missing.get_or_insert_with(|| {
                    Error::new(
                        ErrorCode::MissingDeliverable,
                        format!("target `{target}` could not be read: {e}"),
                        side_effects,
                    )
                });
            }
        }
    }
    match missing {
        Some(err) => Err(err),
        None => Ok(files),
    }
}

/// Reads `target` if it is a regular file of at most [`MAX_DELIVERABLE_BYTES`]:
/// opened with `O_NOFOLLOW | O_NONBLOCK` through containment (a FIFO is never waited
/// on) and checked with `fstat` before a byte is read (a sparse 8 GB file costs
/// nothing). `Ok(Err(why))` for a file that is there but not deliverable.
fn read_regular(
    root: &containment::Root,
    target: &str,
) -> Result<Result<Vec<u8>, NotDeliverable>, containment::Error> {
    use std::io::Read as _;
    let (file, meta) = match root.open_regular(target, root.path()) {
        Ok(opened) => opened,
        Err(containment::Error::NotARegularFile { .. }) => {
            let kind = std::fs::symlink_metadata(root.path().join(target))
                .map(|m| file_kind(&m.file_type()))
                .unwrap_or("not a regular file");
            return Ok(Err(NotDeliverable::NotRegular(kind)));
        }
        Err(e) => return Err(e),
    };
    if meta.len() > MAX_DELIVERABLE_BYTES {
        return Ok(Err(NotDeliverable::TooLarge(meta.len())));
    }
    let mut bytes = Vec::new();
    let read = file.take(MAX_DELIVERABLE_BYTES + 1).read_to_end(&mut bytes);
    if let Err(source) = read {
        return Err(containment::Error::Open {
            path: root.path().join(target),
            source,
        });
    }
    if bytes.len() as u64 > MAX_DELIVERABLE_BYTES {
        return Ok(Err(NotDeliverable::Grew));
    }
    Ok(Ok(bytes))
}

/// A target that is there but is no deliverable; completes "target `T` …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NotDeliverable {
    /// What it is instead ([`file_kind`]).
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    /// Its size.
    #[error("is {0} bytes, over the {max}-byte cap for a deliverable", max = MAX_DELIVERABLE_BYTES)]
    TooLarge(u64),
    #[error(
        "grew past the {max}-byte cap for a deliverable while it was read",
        max = MAX_DELIVERABLE_BYTES
    )]
    Grew,
}

/// What a file that is not a regular one is, in words.
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Where the walk of `target` (relative to the root) first leaves the root after
/// having been inside it, if it does. A prefix that cannot be resolved is left to the
/// read, which walks the same path and fails the same way (a refusal either way).
fn walk_leaves_root(root: &containment::Root, target: &str) -> Option<PathBuf> {
    let path = Path::new(target);
    // A relative target starts at the root: inside from the first step.
    let mut entered = path.is_relative();
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component);
        let Ok(resolved) = containment::resolve(&prefix, root.path()) else {
            return None;
        };
        let inside = containment::is_within(resolved.path(), root.path());
        if inside {
            entered = true;
        } else if entered {
            return Some(resolved.into_path());
        }
    }
    None
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
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("out.txt"), "inside").unwrap();
        std::fs::write(outside.join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("dirlink")).unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("sublink")).unwrap();
        Setup {
            _dir: dir,
            root,
            outside,
        }
    }

    fn read(s: &Setup, target: &str) -> Result<BTreeMap<String, Vec<u8>>, Error> {
        read_targets(&s.root, &[target.to_owned()], SideEffects::None)
    }

    #[test]
    fn a_walk_through_a_symlink_out_of_the_root_is_refused_even_when_it_ends_inside() {
        let s = setup();
        // `dirlink/..` is the parent of `outside`, so this ends at ws/out.txt.
        let err = read(&s, "dirlink/../ws/out.txt").unwrap_err();
        assert_eq!(err.code, ErrorCode::PathOutsideWorkspace, "{err:?}");
        assert!(
            err.reason.contains(&s.outside.display().to_string()),
            "{}",
            err.reason
        );
        let err = read(&s, "dirlink/secret.txt").unwrap_err();
        assert_eq!(err.code, ErrorCode::PathOutsideWorkspace);
    }

    #[test]
    fn a_fifo_a_device_and_a_huge_sparse_file_are_refused_without_reading() {
        let s = setup();
        nix::unistd::mkfifo(&s.root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read(&s, "fifo").unwrap_err();
        assert_eq!(err.code, ErrorCode::MissingDeliverable);
        assert!(
            err.reason.contains("is a FIFO, not a regular file"),
            "{}",
            err.reason
        );
        std::fs::File::create(s.root.join("sparse"))
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        let err = read(&s, "sparse").unwrap_err();
        assert!(
            err.reason
                .contains("8589934592 bytes, over the 16777216-byte cap"),
            "{}",
            err.reason
        );
        // A device node needs root to make; where we are not, the FIFO case stands.
        let made = std::process::Command::new("mknod")
            .arg(s.root.join("zero"))
            .args(["c", "1", "5"])
            .status()
            .is_ok_and(|st| st.success());
        if made {
            let err = read(&s, "zero").unwrap_err();
            assert!(
                err.reason.contains("is a character device"),
                "{}",
                err.reason
            );
        }
    }

    #[test]
    fn walks_that_stay_inside_are_read() {
        let s = setup();
        for target in [
            "out.txt",
            "sub/../out.txt",
            "sublink/../out.txt",
            "./out.txt",
        ] {
            let files = read(&s, target).unwrap_or_else(|e| panic!("{target}: {e:?}"));
            assert_eq!(files[target], b"inside", "{target}");
        }
        let absolute = s.root.join("out.txt").display().to_string();
        assert_eq!(read(&s, &absolute).unwrap()[&absolute], b"inside");
        let err = read(&s, "missing.txt").unwrap_err();
        assert_eq!(err.code, ErrorCode::MissingDeliverable);
    }
}
