//! Finding the real peers (installed by scripts/setup.d/20-mcp-peers.sh) and running the
//! Python client scripts under tests/py against the `envreg-mcp` binary.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The venv's Python with `mcp` and `jsonschema`, or a panic naming the missing peer.
pub fn python() -> PathBuf {
    test_support::peers::python_mcp()
}

/// The Inspector CLI's build folder (see inspector.rs for why the folder matters).
pub fn inspector_build_dir() -> PathBuf {
    let cli = test_support::peers::npm_package_file(
        "@modelcontextprotocol/inspector-cli",
        "build/cli.js",
    );
    cli.parent()
        .expect("build/cli.js has a folder")
        .to_path_buf()
}

pub fn server_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_envreg-mcp"))
}

pub fn example_registry() -> PathBuf {
    test_support::repo_path("examples/registry")
}

/// Run `tests/py/<script> args…` and return its output, printing it for the log.
pub fn run_python(script: &str, args: &[&str]) -> Output {
    let py_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py");
    let output = Command::new(python())
        .arg(py_dir.join(script))
        .args(args)
        .current_dir(&py_dir)
        .env("ENVREG_MCP_BIN", server_bin())
        .env("ENVREG_REGISTRY_TEMPLATE", example_registry())
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("ENVREG_SESSION_ID")
        .output()
        .expect("run python");
    println!("{}", String::from_utf8_lossy(&output.stdout));
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Assert a Python script reported no failure, with its closing `N passed, 0 failed`.
pub fn assert_all_passed(output: &Output) -> usize {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let closing = stdout
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or_else(|| panic!("no closing line; the script crashed:\n{stdout}"));
    let mut words = closing.split_whitespace();
    let passed: usize = words.next().unwrap().parse().unwrap();
    assert!(
        output.status.success() && closing.ends_with(" 0 failed") && passed > 0,
        "python client tests failed: {closing}\n{stdout}"
    );
    passed
}
