//! Which registry a command works on: `--registry DIR`, else `$ENVREG_REGISTRY` (clap
//! folds both into one value, flag first), else the nearest folder holding
//! `envreg.yaml`, walking up from the current directory the way cargo finds
//! `Cargo.toml`.
//!
//! The answer is always absolute: a relative folder a person gives is joined to the
//! directory the process started in, here, once. Everything derived from the root
//! (skill folders, `sessions/`, backups, what `hello` reports) is then absolute too, and
//! no later read depends on the current directory (issue 19: a relative `--registry`
//! found its records but not its skills).
//!
//! Decision: the walk looks only for `envreg.yaml`, not for `environments/` folders. The
//! config file is optional inside a registry named explicitly, but it is the marker
//! that makes a folder discoverable; a stray `services/` folder in some project must
//! not be mistaken for a registry.

use std::path::{Path, PathBuf};

use envreg_core::{EnvError, ErrorCode};

pub const CONFIG_FILE: &str = "envreg.yaml";

/// The registry folder for this invocation, or an error that says how to make one.
pub fn registry_root(explicit: Option<&Path>, cwd: &Path) -> Result<PathBuf, EnvError> {
    if let Some(dir) = explicit {
        let dir = &absolute(cwd, dir);
        if !dir.is_dir() {
            return Err(EnvError {
                code: ErrorCode::InvalidArgument,
                message: format!(
                    "registry folder {} does not exist (from --registry or ENVREG_REGISTRY); \
                     create one with `envreg init {}`",
                    dir.display(),
                    dir.display()
                ),
                details: None,
            });
        }
        return Ok(dir.to_path_buf());
    }
    find_upwards(cwd).ok_or_else(|| EnvError {
        code: ErrorCode::InvalidArgument,
        message: format!(
            "no registry found: neither {} nor any parent folder holds {CONFIG_FILE}; \
             pass --registry DIR, set ENVREG_REGISTRY, or create one with `envreg init DIR`",
            cwd.display()
        ),
        details: None,
    })
}

/// `path` as an absolute path: joined to `start` (the directory the process started in)
/// when relative, with `.` components dropped. `..` is kept: it may cross a link.
pub fn absolute(start: &Path, path: &Path) -> PathBuf {
    let joined = start.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        if part != std::path::Component::CurDir {
            out.push(part);
        }
    }
    out
}

/// The nearest ancestor of `start` (itself included) holding `envreg.yaml`.
pub fn find_upwards(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(CONFIG_FILE).is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_ancestor_with_config() {
        let tmp = tempfile::tempdir().unwrap();
        let outer = tmp.path().join("outer");
        let inner = outer.join("reg");
        let deep = inner.join("services/sub");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(outer.join(CONFIG_FILE), "{}\n").unwrap();
        std::fs::write(inner.join(CONFIG_FILE), "{}\n").unwrap();
        assert_eq!(find_upwards(&deep).as_deref(), Some(inner.as_path()));
        assert_eq!(registry_root(None, &deep).unwrap(), inner);
    }

    #[test]
    fn explicit_folder_wins_over_discovery() {
        let tmp = tempfile::tempdir().unwrap();
        let found = tmp.path().join("found");
        let explicit = tmp.path().join("explicit");
        std::fs::create_dir_all(&found).unwrap();
        std::fs::create_dir_all(&explicit).unwrap();
        std::fs::write(found.join(CONFIG_FILE), "{}\n").unwrap();
        assert_eq!(registry_root(Some(&explicit), &found).unwrap(), explicit);
    }

    #[test]
    fn nothing_found_says_how_to_make_one() {
        let tmp = tempfile::tempdir().unwrap();
        let err = registry_root(None, tmp.path()).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("envreg init DIR"), "{}", err.message);
        assert!(err.message.contains("ENVREG_REGISTRY"), "{}", err.message);
    }

    #[test]
    fn a_relative_folder_is_made_absolute_against_the_start_directory() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("examples/registry")).unwrap();
        for given in [
            "examples/registry",
            "./examples/registry",
            "examples/./registry/",
        ] {
            let root = registry_root(Some(Path::new(given)), tmp.path()).unwrap();
            assert_eq!(root, tmp.path().join("examples/registry"), "{given}");
        }
        let abs = tmp.path().join("examples/registry");
        assert_eq!(
            registry_root(Some(&abs), Path::new("/elsewhere")).unwrap(),
            abs
        );
    }

    #[test]
    fn missing_explicit_folder_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = registry_root(Some(&tmp.path().join("nope")), tmp.path()).unwrap_err();
        assert!(err.message.contains("does not exist"), "{}", err.message);
    }
}
