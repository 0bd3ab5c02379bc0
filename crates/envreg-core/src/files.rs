//! Registry files are opened only inside the registry (issue 14 §1).
//!
//! A registry is usually a git repository many people push to, and git stores symbolic
//! links: one merged `services/x.yaml -> ~/secret.yaml` must not hand a file of whoever
//! runs envreg to the model. So every file the registry reads (records, `envreg.yaml`,
//! session files, the old file a backup copies) and every folder it writes into is judged
//! by its canonical target, with the [`containment`] crate: inside the registry root it is
//! used (a link that stays inside is fine, and so is a chain that leaves and comes back:
//! the rule is where the kernel ends up), outside it is refused with a sentence naming
//! the file and the link, never anything of the target's content.
//!
//! Decisions:
//! - One module owns the rule, so loading, refreshing (the watcher and the rescan both
//!   load through [`read_capped`]), sessions and writes cannot disagree.
//! - Files are read with [`containment::Root::open_regular`]: `O_NOFOLLOW` and
//!   `O_NONBLOCK`, the verdict taken on what the kernel opened, then `fstat`; a FIFO or
//!   a folder is refused without ever blocking. In the common case (no link as the last
//!   component) that is one `open`, one `readlink` and one `fstat` per file, which keeps
//!   the cold load of 10,000 records within its budget (`benches/registry.rs`).
//! - A refusal reuses `FILE_UNREADABLE` (loading) and `STORAGE_UNWRITABLE` (writing)
//!   rather than adding codes the data model does not have; the message says why.
//!
//! Not done: hard links (a hard link to an outside file *is* that file, by every
//! path-based measure) and races against someone swapping a component between the
//! verdict and our open beyond what `Root::open`'s re-check catches. This is a scope
//! rule, not an OS sandbox (see `docs/containment.md`).

use std::io::Read;
use std::path::{Path, PathBuf};

use containment::{Root, Verdict};

use crate::diagnostic::{Diagnostic, codes};
use crate::error::{EnvError, ErrorCode};

/// What identifies one version of a file cheaply: a rescan re-parses a file only when
/// this changes. ctime is included because it moves on every write even when a tool
/// restores mtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fingerprint {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Fingerprint {
        use std::os::unix::fs::MetadataExt;
        Fingerprint {
            len: meta.len(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// Why a registry file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unread {
    /// Nothing is there (a dangling link inside the registry counts as nothing).
    Missing,
    /// Bigger than the caller's cap; nothing was parsed.
    TooLarge { len: u64, max: u64 },
    /// Not a regular file, or the system refused: a short reason, no path.
    Unreadable(String),
    /// The canonical target is outside the registry: a sentence naming the link.
    Outside(String),
}

impl Unread {
    /// The loader's diagnostic for this file (`FILE_UNREADABLE` / `RECORD_TOO_LARGE`).
    pub(crate) fn diagnostic(&self) -> Diagnostic {
        match self {
            Unread::Missing => unreadable(&std::io::ErrorKind::NotFound.to_string()),
            Unread::TooLarge { len, max } => Diagnostic::error(
                codes::RECORD_TOO_LARGE,
                format!("file is {len} bytes, over limits.maxRecordBytes ({max}); not parsed"),
            ),
            Unread::Unreadable(why) => unreadable(why),
            Unread::Outside(why) => unreadable(why),
        }
    }

    /// The short reason, for messages that are not diagnostics.
    pub(crate) fn reason(&self) -> String {
        match self {
            Unread::Missing => std::io::ErrorKind::NotFound.to_string(),
            Unread::TooLarge { len, max } => format!("{len} bytes, over the limit of {max}"),
            Unread::Unreadable(why) | Unread::Outside(why) => why.clone(),
        }
    }
}

fn unreadable(why: &str) -> Diagnostic {
    Diagnostic::error(
        codes::FILE_UNREADABLE,
        format!("file cannot be read: {why}"),
    )
}

/// Read the registry file `rel` (registry-relative, `/`-separated, built from checked
/// names), only when its canonical target is inside `root`, is a regular file and is at
/// most `max_bytes` long. `fingerprint` receives the identity of what was examined.
pub(crate) fn read_capped(
    root: &Root,
    rel: &str,
    max_bytes: u64,
    fingerprint: &mut Option<Fingerprint>,
) -> Result<Vec<u8>, Unread> {
    let (file, meta) = match root.open_regular(rel, root.path()) {
        Ok(opened) => opened,
        Err(containment::Error::OutsideRoot { .. }) => {
            return Err(Unread::Outside(leaves(root, rel)));
        }
        Err(containment::Error::NotARegularFile { path }) => {
            let meta = std::fs::metadata(&path).ok();
            *fingerprint = meta.as_ref().map(Fingerprint::of);
            let what = if meta.is_some_and(|m| m.is_dir()) {
                "a directory"
            } else {
                "not a regular file"
            };
            return Err(Unread::Unreadable(what.to_owned()));
        }
        Err(containment::Error::Open { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Err(Unread::Missing);
        }
        Err(e) => return Err(Unread::Unreadable(containment_reason(&e))),
    };
    *fingerprint = Some(Fingerprint::of(&meta));
    if meta.len() > max_bytes {
        return Err(Unread::TooLarge {
            len: meta.len(),
            max: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Unread::Unreadable(e.kind().to_string()))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Unread::TooLarge {
            len: bytes.len() as u64,
            max: max_bytes,
        });
    }
    Ok(bytes)
}

/// The canonical path of the registry folder `rel` (which may not exist yet), for
/// listing or writing into; refused when it leads out of the registry.
pub(crate) fn folder(root: &Root, rel: &str) -> Result<PathBuf, Unread> {
    match root.contains(rel, root.path()) {
        Ok(Verdict::Inside(target)) => Ok(target),
        Ok(Verdict::Outside(_)) => Err(Unread::Outside(leaves(root, rel))),
        Err(e) => Err(Unread::Unreadable(containment_reason(&e))),
    }
}

/// [`folder`] for a writer: the refusal is `STORAGE_UNWRITABLE` naming the folder.
pub(crate) fn folder_to_write(root: &Root, rel: &str) -> Result<PathBuf, EnvError> {
    folder(root, rel).map_err(|why| refused_write(rel, &why))
}

/// A write refused before any I/O: `STORAGE_UNWRITABLE`, with the registry-relative
/// path and the reason (which names a link, never a target's content).
pub(crate) fn refused_write(rel: &str, why: &Unread) -> EnvError {
    EnvError::new(
        ErrorCode::StorageUnwritable,
        format!("cannot write {rel}: {}; nothing was written", why.reason()),
    )
    .with_details(serde_json::json!({ "path": rel }))
}

/// The sentence for a path whose canonical target is outside: the first symbolic link
/// on `rel` (where the path starts to leave) and the target that link names as written.
/// The link's own text is registry content (git stores it); the outside file is never
/// opened, so nothing of it can be quoted.
fn leaves(root: &Root, rel: &str) -> String {
    let mut prefix = PathBuf::new();
    for part in Path::new(rel).components() {
        prefix.push(part);
        let path = root.path().join(&prefix);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            let to = std::fs::read_link(&path)
                .map(|t| format!(" (to {})", t.display()))
                .unwrap_or_default();
            return format!(
                "the symbolic link {}{to} leads out of the registry; envreg opens only files inside it",
                prefix.display()
            );
        }
    }
    "a symbolic link on its path leads out of the registry; envreg opens only files inside it"
        .to_owned()
}

/// A short reason for a containment refusal, without the absolute paths its `Display`
/// carries (messages name registry-relative paths only).
fn containment_reason(e: &containment::Error) -> String {
    match e {
        containment::Error::SymlinkLoop { .. } => "too many levels of symbolic links".to_owned(),
        containment::Error::EmptySymlink { .. } => {
            "a symbolic link with an empty target".to_owned()
        }
        containment::Error::NotADirectory { .. } => {
            "a path component is not a directory".to_owned()
        }
        containment::Error::Unreadable { source, .. } | containment::Error::Open { source, .. } => {
            source.kind().to_string()
        }
        containment::Error::OutsideRoot { .. } => "outside the registry".to_owned(),
        _ => "cannot be placed inside the registry".to_owned(),
    }
}

/// The text of the registry file `rel` under `registry_root`, when it is inside the
/// registry (canonically), a regular UTF-8 file and at most `max_bytes` long; `None`
/// otherwise. For the CLI's source snippets, which must quote only registry files.
pub fn read_registry_text(registry_root: &Path, rel: &str, max_bytes: u64) -> Option<String> {
    let root = open_root(registry_root).ok()?;
    let bytes = read_capped(&root, rel, max_bytes, &mut None).ok()?;
    String::from_utf8(bytes).ok()
}

/// The registry folder as a canonical [`Root`]. A relative folder is taken against the
/// current directory, as every other use of the folder is.
pub(crate) fn open_root(registry_root: &Path) -> Result<Root, containment::Error> {
    let absolute =
        std::path::absolute(registry_root).map_err(|source| containment::Error::Unreadable {
            path: registry_root.to_path_buf(),
            source,
        })?;
    Root::new(absolute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::os::unix::fs::symlink;

    /// Where a record file may point: inside, outside, back in through a hop outside,
    /// at another record file (chains, loops), or at nothing.
    fn targets(registry: &Path, outside: &Path) -> Vec<PathBuf> {
        vec![
            PathBuf::from("../shared/a.yaml"),
            registry.join("shared/a.yaml"),
            PathBuf::from("../../outside/b.yaml"),
            outside.join("b.yaml"),
            outside.join("hop.yaml"),
            PathBuf::from("x0.yaml"),
            PathBuf::from("x1.yaml"),
            PathBuf::from("missing.yaml"),
            outside.join("missing.yaml"),
            PathBuf::from("../shared"),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A record file is read exactly when the kernel's own canonical path of it is a
        /// regular file inside the registry, and then its bytes are the target's.
        #[test]
        fn reads_exactly_what_the_kernel_reaches_inside(choice in proptest::collection::vec(proptest::option::of(0usize..10), 3)) {
            let tmp = tempfile::tempdir().unwrap();
            let registry = tmp.path().join("registry");
            let outside = tmp.path().join("outside");
            std::fs::create_dir_all(registry.join("services")).unwrap();
            std::fs::create_dir_all(registry.join("shared")).unwrap();
            std::fs::create_dir_all(&outside).unwrap();
            std::fs::write(registry.join("shared/a.yaml"), "CONTENT-inside").unwrap();
            std::fs::write(outside.join("b.yaml"), "CONTENT-outside").unwrap();
            symlink(registry.join("shared/a.yaml"), outside.join("hop.yaml")).unwrap();
            let pool = targets(&registry, &outside);
            for (i, c) in choice.iter().enumerate() {
                let path = registry.join(format!("services/x{i}.yaml"));
                match c {
                    None => std::fs::write(&path, format!("plain {i}")).unwrap(),
                    Some(t) => symlink(&pool[*t], &path).unwrap(),
                }
            }
            let root = open_root(&registry).unwrap();
            for i in 0..choice.len() {
                let rel = format!("services/x{i}.yaml");
                let got = read_capped(&root, &rel, 1 << 20, &mut None);
                let kernel = std::fs::canonicalize(registry.join(&rel))
                    .ok()
                    .filter(|p| p.starts_with(root.path()) && p.is_file());
                match (&got, &kernel) {
                    (Ok(bytes), Some(p)) => prop_assert_eq!(bytes, &std::fs::read(p).unwrap()),
                    (Err(_), None) => {}
                    _ => prop_assert!(false, "{rel}: read {got:?}, kernel {kernel:?}"),
                }
                // A refusal names paths and links, never what a file holds.
                if let Err(why) = got {
                    prop_assert!(!why.diagnostic().message.contains("CONTENT"));
                }
            }
        }
    }
}
