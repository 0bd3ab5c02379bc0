//! `facet serve` against a real MCP client nobody here wrote: the official Python
//! SDK (PyPI `mcp`, installed by scripts/setup.d/20-mcp-peers.sh). Every result's
//! `structuredContent` is validated against the tool's `outputSchema`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Tree, session_event};

fn peers_dir() -> PathBuf {
    std::env::var_os("PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/peers")
                .canonicalize()
                .unwrap_or_else(|_| {
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers")
                })
        })
}

fn python() -> PathBuf {
    let python = peers_dir().join("venv/bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import mcp, jsonschema"])
            .status()
            .is_ok_and(|status| status.success());
    assert!(
        ok,
        "missing peer: the Python MCP SDK client (PyPI `mcp` + `jsonschema`) in {}; run scripts/test.sh (or scripts/setup.d/20-mcp-peers.sh with PEERS_DIR set)",
        python.display()
    );
    python
}

#[test]
fn python_mcp_client_against_facet_serve() {
    let tree = Tree::new();
    // A recorded session for `--session known`.
    let start = tree.hook(&[], &session_event("known", &tree.room(), "SessionStart"));
    assert_eq!(start.code, 0, "{}", start.stderr);
    std::fs::create_dir_all(tree.path("scratch/real")).unwrap();
    tree.symlink(tree.path("scratch/real"), "scratch/link");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/serve_client.py");
    let output = Command::new(python())
        .arg(&script)
        .env("FACET_BIN", support::facet_bin())
        .env("FACET_STATE_DIR", tree.state())
        .env("FACET_SCRATCH", tree.path("scratch"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client failed:\n{stdout}\n{stderr}"
    );
    let closing = stdout.lines().last().unwrap_or_default();
    let passed: usize = closing.split(' ').next().unwrap().parse().unwrap();
    assert!(closing.ends_with(" 0 failed") && passed >= 18, "{stdout}");
}
