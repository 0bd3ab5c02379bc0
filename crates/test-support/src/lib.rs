//! # test-support
//!
//! What the workspace's tests share and would otherwise each write again: where the
//! repository is, copies of its example folders, the real peers that
//! `scripts/setup.d/*.sh` installs ([`peers`]), and — behind the `procfs` feature —
//! questions about processes asked of `/proc` ([`procfs`]).
//!
//! A dev-dependency only (and a dependency of the other test-only crates); never of a
//! shipped crate. Everything here panics on failure: a test that cannot find its
//! fixture or its peer must fail, loudly, saying what to do.
//!
//! ## Invariants
//! * A missing peer is a failure naming the setup step that installs it, never a skip.
//! * One rule for "this process is gone": agent-exec-runtime's
//!   `procfs::ProcStat::is_gone` (a zombie whose other threads still run is alive), the
//!   rule production code terminates trees by.

use std::path::{Path, PathBuf};

pub mod peers;
#[cfg(feature = "procfs")]
pub mod procfs;

/// The repository's root folder (this crate sits at `crates/test-support`), canonical.
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("test-support sits at crates/test-support");
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}

/// `rel` under the repository root (`examples/registry`, `scripts/install.sh`, …).
pub fn repo_path(rel: &str) -> PathBuf {
    repo_root().join(rel)
}

/// The name libtest knows a test by, for re-running it alone (`--exact NAME`) in a
/// child process: `module_path` is the test's `module_path!()`, whose first segment
/// (the test binary's crate) libtest leaves out. A test that needs a changed
/// environment or another user re-runs itself this way rather than call the unsafe
/// `std::env::set_var` in a process whose other tests read the environment.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_owned(),
    }
}

/// Copies the folder `from` to `to` (created), recursively: files with their
/// contents, folders, and symbolic links as links — a copy never reads through a link
/// into somewhere else. Anything else (a socket, a FIFO) is left out.
pub fn copy_dir(from: &Path, to: &Path) {
    copy_dir_except(from, to, &[]);
}

/// The example folder `examples/<name>` copied to `to`, without the state a local run
/// of envreg leaves in it (`sessions/`, `.backups/`, which the example's `.gitignore`
/// lists): a test gets the example as committed.
pub fn copy_example(name: &str, to: &Path) {
    copy_dir_except(
        &repo_path(&format!("examples/{name}")),
        to,
        &["sessions", ".backups"],
    );
}

fn copy_dir_except(from: &Path, to: &Path, skip: &[&str]) {
    let fail = |what: &str, path: &Path, e: std::io::Error| -> ! {
        panic!(
            "copying {} to {}: {what} {}: {e}",
            from.display(),
            to.display(),
            path.display()
        )
    };
    std::fs::create_dir_all(to).unwrap_or_else(|e| fail("creating", to, e));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| fail("reading", from, e));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| fail("reading", from, e));
        let name = entry.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| fail("reading the type of", &source, e));
        if kind.is_dir() {
            // Only the top level skips: a nested `sessions/` is the fixture's own.
            copy_dir_except(&source, &target, &[]);
        } else if kind.is_symlink() {
            let link = std::fs::read_link(&source).unwrap_or_else(|e| fail("reading", &source, e));
            std::os::unix::fs::symlink(link, &target)
                .unwrap_or_else(|e| fail("linking", &target, e));
        } else if kind.is_file() {
            std::fs::copy(&source, &target).unwrap_or_else(|e| fail("copying", &source, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_holds_the_workspace_manifest() {
        assert!(repo_root().join("Cargo.toml").is_file());
        assert!(repo_path("scripts/setup.d").is_dir());
    }

    #[test]
    fn a_test_is_named_without_its_crate() {
        assert_eq!(test_name("it::store", "t"), "store::t");
        assert_eq!(test_name("it::a::b", "t"), "a::b::t");
        assert_eq!(test_name("permission", "t"), "t");
        // This very test, as libtest lists it.
        assert_eq!(
            test_name(module_path!(), "a_test_is_named_without_its_crate"),
            "tests::a_test_is_named_without_its_crate"
        );
    }

    #[test]
    fn a_copy_keeps_files_folders_and_links_and_leaves_run_state_out() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        std::fs::create_dir_all(from.join("sub/sessions")).unwrap();
        std::fs::write(from.join("sub/sessions/keep.yaml"), "nested").unwrap();
        std::fs::write(from.join("a.yaml"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", from.join("link")).unwrap();
        std::fs::create_dir_all(from.join("sessions")).unwrap();
        std::fs::write(from.join("sessions/s.yaml"), "run state").unwrap();
        copy_dir_except(&from, &to, &["sessions"]);
        assert_eq!(std::fs::read_to_string(to.join("a.yaml")).unwrap(), "a");
        assert_eq!(
            std::fs::read_to_string(to.join("sub/sessions/keep.yaml")).unwrap(),
            "nested"
        );
        assert_eq!(
            std::fs::read_link(to.join("link")).unwrap(),
            Path::new("/etc/hostname")
        );
        assert!(!to.join("sessions").exists());
    }

    #[test]
    fn the_example_registry_is_copied_without_its_run_state() {
        let tmp = tempfile::tempdir().unwrap();
        let to = tmp.path().join("registry");
        copy_example("registry", &to);
        assert!(to.join("envreg.yaml").is_file());
        assert!(!to.join("sessions").exists() && !to.join(".backups").exists());
    }
}
