//! An unreadable prefix fails closed. Root ignores permissions, so when the tests run
//! as root this test re-runs itself as `nobody` through `setpriv` (util-linux).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use containment::{Error, Root, resolve};

const CHILD: &str = "CONTAINMENT_PERMISSION_CHILD";

fn check_as_unprivileged_user() {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(top.join("root/locked/inner")).unwrap();
    fs::set_permissions(top.join("root/locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let root = Root::new(top.join("root")).unwrap();
    // Behind a directory we may not search, nothing can be known: refused, not
    // "missing and therefore inside".
    let verdict = root.contains("locked/inner/../../../elsewhere", root.path());
    assert!(
        matches!(verdict, Err(Error::Unreadable { .. })),
        "{verdict:?}"
    );
    assert!(matches!(
        resolve("locked/anything", root.path()),
        Err(Error::Unreadable { .. })
    ));
    // The directory itself is still placed (its own lstat needs only the parent).
    assert!(root.contains("locked", root.path()).unwrap().is_inside());
    fs::set_permissions(top.join("root/locked"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether this process ignores permission bits (root, or CAP_DAC_OVERRIDE).
fn permissions_are_ignored() -> bool {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("locked")).unwrap();
    fs::write(dir.path().join("locked/probe"), "").unwrap();
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let ignored = fs::symlink_metadata(dir.path().join("locked/probe")).is_ok();
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    ignored
}

#[test]
fn unreadable_prefix_fails_closed() {
    if std::env::var_os(CHILD).is_some() || !permissions_are_ignored() {
        check_as_unprivileged_user();
        return;
    }
    // Run a copy from a world-readable temp folder: the build folder may sit under a
    // home that `nobody` cannot enter.
    let exe_dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    fs::set_permissions(exe_dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let exe = exe_dir.path().join("permission-test");
    fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    // By its full name: in a grouped test binary it sits in a module.
    let name = test_support::test_name(module_path!(), "unreadable_prefix_fails_closed");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--exact", &name, "--test-threads=1"])
        .env(CHILD, "1")
        .env("TMPDIR", "/tmp")
        .output()
        .expect("running as root, this test needs `setpriv` (util-linux) to drop to nobody");
    let shown = String::from_utf8_lossy(&out.stdout);
    // "1 passed": a name that matched no test would pass too.
    assert!(
        out.status.success() && shown.contains("1 passed"),
        "the unprivileged run failed: {shown}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
