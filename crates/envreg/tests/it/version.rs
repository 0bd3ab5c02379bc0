//! `envreg --version` names the version and the commit the binary was built from.
#![allow(clippy::unwrap_used)]

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = assert_cmd::Command::cargo_bin("envreg")
        .unwrap()
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let line = String::from_utf8(output.stdout).unwrap();
    let shape =
        regex::Regex::new(r"^envreg \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n$").unwrap();
    let commit = shape
        .captures(&line)
        .unwrap_or_else(|| panic!("unexpected --version: {line:?}"))[1]
        .to_owned();
    // In a git checkout (CI, a developer's clone) it is HEAD; from a tarball, `unknown`.
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(head) => assert!(head.starts_with(&commit), "{commit} is not HEAD {head}"),
        None => assert_eq!(commit, "unknown"),
    }
}
