//! # build-commit
//!
//! Called from the build scripts of the three binaries (`envreg`, `facet`,
//! `agent-exec`) so that `--version` says which commit a binary was built from:
//! [`emit`] sets `BUILD_GIT_COMMIT` for the crate being built, which each binary
//! folds into its clap version: `envreg 0.1.0 (commit 644296a1b2c3)`.
//!
//! ## Invariants
//! - Never fails a build: no git on the machine, a source tarball without `.git`, a
//!   detached or unborn HEAD — each gives `unknown`, with a build warning nowhere
//!   (a tarball build is a normal build, not a broken one).
//! - Cargo re-runs the build script when HEAD moves (the HEAD file, the branch ref it
//!   points at, `packed-refs`), so an incremental build after a commit does not keep
//!   printing the old one.
//!
//! ## Deliberately not done
//! - No "dirty" marker: telling a modified tree apart would make cargo re-run the
//!   script on every file change of the workspace. The commit is where the build
//!   *started from*.
//! - No build date: the same commit builds the same binary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What is printed when the commit cannot be read.
pub const UNKNOWN: &str = "unknown";

/// Length of the abbreviated commit (12 hex digits: unambiguous in any repository
/// this size, short enough to read out).
const SHORT: usize = 12;

/// Emits `cargo:rustc-env=BUILD_GIT_COMMIT=<commit or unknown>` and the
/// `rerun-if-changed` lines for the git files HEAD depends on, for the crate whose
/// build script calls it (its `CARGO_MANIFEST_DIR`).
pub fn emit() {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_default();
    let commit = commit_of(&manifest_dir);
    println!(
        "cargo:rustc-env=BUILD_GIT_COMMIT={}",
        commit.as_deref().unwrap_or(UNKNOWN)
    );
    for path in watched_files(&manifest_dir) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    // Without any rerun-if line cargo re-runs on every package change; with one, only
    // on these. A tarball build watches its own build script.
    println!("cargo:rerun-if-changed=build.rs");
}

/// The abbreviated HEAD commit of the checkout holding `dir`, if there is one.
pub fn commit_of(dir: &Path) -> Option<String> {
    let full = git(dir, &["rev-parse", "--verify", "--quiet", "HEAD"])?;
    let is_hex = full.len() >= SHORT && full.bytes().all(|b| b.is_ascii_hexdigit());
    is_hex.then(|| full[..SHORT].to_owned())
}

/// The files whose change means HEAD may name another commit.
fn watched_files(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(dir, &["symbolic-ref", "--quiet", "HEAD"]) {
        names.push(branch);
    }
    names
        .iter()
        .filter_map(|name| git(dir, &["rev-parse", "--git-path", name]))
        .map(|path| absolute(dir, Path::new(&path)))
        .filter(|path| path.exists())
        .collect()
}

fn absolute(dir: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

/// One git command's trimmed stdout, `None` on any failure (no git, no repository).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_checkout_means_no_commit_and_no_watched_files() {
        let nowhere = Path::new("/nonexistent/build-commit/not-a-checkout");
        assert_eq!(commit_of(nowhere), None);
        assert!(watched_files(nowhere).is_empty());
    }

    #[test]
    fn relative_git_paths_are_taken_against_the_crate() {
        let dir = Path::new("/src/crate");
        assert_eq!(absolute(dir, Path::new(".git/HEAD")), dir.join(".git/HEAD"));
        assert_eq!(
            absolute(dir, Path::new("/r/.git/HEAD")),
            Path::new("/r/.git/HEAD")
        );
    }
}
