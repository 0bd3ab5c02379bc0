//! Property test: on random trees of folders, files and symbolic links (relative and
//! absolute, to inside and outside, dangling, loops, chains), the canonical target
//! [`containment::resolve`] computes equals the one the kernel reaches.
//!
//! The oracle never uses our walk. It makes the path exist with ordinary system calls
//! — `mkdir` of each missing directory, in the order `mkdir -p` would, creating the
//! target of a dangling link where the kernel would follow it — and then asks
//! `std::fs::canonicalize` (realpath). Where the kernel fails (`ELOOP`, `ENOTDIR`),
//! our walk must fail with the matching error. The oracle refuses to create anything
//! outside the test's own temp folder; such cases are discarded, not judged.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use containment::{Error, Root, resolve};
use proptest::prelude::*;

const NAMES: &[&str] = &["a", "b", "r", "rx", "o"];

#[derive(Debug, Clone)]
enum Part {
    Name(usize),
    Up,
}

#[derive(Debug, Clone)]
enum Kind {
    Dir,
    File,
    /// A link to `parts`, absolute from the temp folder's top or relative to the link.
    Link {
        absolute: bool,
        parts: Vec<Part>,
    },
}

#[derive(Debug, Clone)]
struct Entry {
    parent: usize,
    name: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
struct Probe {
    /// Absolute (from the top) or relative to `base`.
    absolute: bool,
    base: usize,
    parts: Vec<Part>,
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        4 => (0..NAMES.len()).prop_map(Part::Name),
        1 => Just(Part::Up),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Dir),
        1 => Just(Kind::File),
        3 => (any::<bool>(), prop::collection::vec(part(), 0..5))
            .prop_map(|(absolute, parts)| Kind::Link { absolute, parts }),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    (0usize..16, 0..NAMES.len(), kind()).prop_map(|(parent, name, kind)| Entry {
        parent,
        name,
        kind,
    })
}

fn probe() -> impl Strategy<Value = Probe> {
    (
        any::<bool>(),
        0usize..16,
        prop::collection::vec(part(), 1..7),
    )
        .prop_map(|(absolute, base, parts)| Probe {
            absolute,
            base,
            parts,
        })
}

fn join_parts(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|part| match part {
            Part::Name(index) => NAMES[*index],
            Part::Up => "..",
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A fresh tree: `<top>/r` (the root), `<top>/rx` (prefix collision), `<top>/o`, plus
/// `entries`. Returns the temp folder, the canonical top and the directories made
/// (relative to top) that can hold entries or serve as a base.
fn build(entries: &[Entry]) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap();
    let mut dirs = vec!["r".to_string(), "rx".to_string(), "o".to_string()];
    for base in &dirs {
        fs::create_dir(top.join(base)).unwrap();
    }
    for entry in entries {
        let parent = dirs[entry.parent % dirs.len()].clone();
        let relative = format!("{parent}/{}", NAMES[entry.name]);
        let path = top.join(&relative);
        if fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        match &entry.kind {
            Kind::Dir => {
                fs::create_dir(&path).unwrap();
                dirs.push(relative);
            }
            Kind::File => fs::write(&path, "file").unwrap(),
            Kind::Link { absolute, parts } => {
                let rest = join_parts(parts);
                let target = if *absolute {
                    format!("{}/{rest}", top.display())
                } else if rest.is_empty() {
                    ".".to_string()
                } else {
                    rest
                };
                symlink(target, &path).unwrap();
            }
        }
    }
    (dir, top, dirs)
}

#[derive(Debug)]
enum Oracle {
    Target(PathBuf),
    Loop,
    NotADirectory,
    /// Making the path exist would write outside the temp folder: not judged.
    Escapes,
    #[allow(dead_code)] // read through Debug in the failure message
    Other(io::Error),
}

fn parent_of(path: &str) -> String {
    match path.rfind('/') {
        Some(0) => "/".to_string(),
        Some(index) => path[..index].to_string(),
        None => ".".to_string(),
    }
}

fn classify(error: io::Error) -> Oracle {
    match error.raw_os_error() {
        Some(code) if code == nix::libc::ELOOP => Oracle::Loop,
        Some(code) if code == nix::libc::ENOTDIR => Oracle::NotADirectory,
        _ => Oracle::Other(error),
    }
}

/// Make `path` exist using only kernel path resolution, as `mkdir -p` and `O_CREAT`
/// through a dangling link would. `Err` carries the kernel's verdict on failure.
fn materialize(path: &str, top: &Path, depth: usize) -> Result<(), Oracle> {
    if depth > 64 {
        return Err(Oracle::Loop);
    }
    match fs::metadata(path) {
        Ok(_) => return Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(classify(error)),
    }
    let parent = parent_of(path);
    if fs::metadata(&parent).is_err() {
        // Make the parent first; then look at `path` again, since what it names can
        // change once the parent exists (`a/../link` reaches `link` only then).
        materialize(&parent, top, depth + 1)?;
        return materialize(path, top, depth + 1);
    }
    if let Ok(meta) = fs::symlink_metadata(path)
        && meta.file_type().is_symlink()
    {
        // A dangling link: the kernel follows it when creating, so create its target.
        let target = fs::read_link(path).map_err(classify)?;
        let target = target.to_str().unwrap().to_string();
        let target = if target.starts_with('/') {
            target
        } else {
            format!("{parent}/{target}")
        };
        return materialize(&target, top, depth + 1);
    }
    let real_parent = fs::canonicalize(&parent).map_err(classify)?;
    if !real_parent.starts_with(top) {
        return Err(Oracle::Escapes);
    }
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(classify(error)),
    }
}

/// Every path under `top` (links not followed), before the oracle creates anything.
fn snapshot(top: &Path) -> std::collections::HashSet<PathBuf> {
    let mut seen = std::collections::HashSet::from([top.to_path_buf()]);
    let mut pending = vec![top.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            }
            seen.insert(entry.path());
        }
    }
    seen
}

fn kernel_target(full: &str, top: &Path) -> Oracle {
    if let Err(verdict) = materialize(full, top, 0) {
        return verdict;
    }
    match fs::canonicalize(full) {
        Ok(path) => Oracle::Target(path),
        Err(error) => classify(error),
    }
}

fn check(entries: &[Entry], probe: &Probe) -> Result<(), TestCaseError> {
    let (_dir, top, dirs) = build(entries);
    let base = top.join(&dirs[probe.base % dirs.len()]);
    let rest = join_parts(&probe.parts);
    let raw = if probe.absolute {
        format!("{}/{rest}", top.display())
    } else {
        rest
    };
    let ours = resolve(&raw, &base);
    let full = if probe.absolute {
        raw.clone()
    } else {
        format!("{}/{raw}", base.display())
    };
    let before = snapshot(&top);
    let root = Root::new(top.join("r")).unwrap();
    let verdict = root.contains(&raw, &base);
    let oracle = kernel_target(&full, &top);
    match (ours, oracle) {
        (_, Oracle::Escapes) => {}
        (Ok(resolved), Oracle::Target(expected)) => {
            prop_assert_eq!(
                resolved.path(),
                expected.as_path(),
                "raw {} base {:?}",
                raw,
                base
            );
            // Outside the temp folder the oracle creates nothing, so it existed before.
            let existed = !expected.starts_with(&top) || before.contains(&expected);
            prop_assert_eq!(resolved.exists(), existed);
            let inside = expected.starts_with(root.path());
            prop_assert_eq!(verdict.unwrap().is_inside(), inside);
            // The read helper agrees: an inside file is read, an outside one refused.
            if fs::metadata(&expected).is_ok_and(|meta| meta.is_file()) {
                match root.read(&raw, &base) {
                    Ok(bytes) => prop_assert!(inside && bytes == b"file"),
                    Err(error) => prop_assert!(
                        !inside && matches!(error, Error::OutsideRoot { .. }),
                        "{error}"
                    ),
                }
            }
        }
        (Err(Error::SymlinkLoop { .. }), Oracle::Loop) => {}
        (Err(Error::NotADirectory { .. }), Oracle::NotADirectory) => {}
        (ours, oracle) => {
            prop_assert!(
                false,
                "raw {raw} base {base:?}: ours {ours:?}, kernel {oracle:?}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn resolve_agrees_with_the_kernel(
        entries in prop::collection::vec(entry(), 0..14),
        probes in prop::collection::vec(probe(), 1..5),
    ) {
        for probe in &probes {
            check(&entries, probe)?;
        }
    }
}
