//! `facet serve` against a real MCP client nobody here wrote: the official Python
//! SDK (PyPI `mcp`, installed by scripts/setup.d/20-mcp-peers.sh). Every result's
//! `structuredContent` is validated against the tool's `outputSchema`.
use crate::support;

use std::path::Path;
use std::process::Command;

use support::{Tree, session_event};

#[test]
fn python_mcp_client_against_facet_serve() {
    let tree = Tree::new();
    // A recorded session for `--session known`.
    let start = tree.hook(&[], &session_event("known", &tree.room(), "SessionStart"));
    assert_eq!(start.code, 0, "{}", start.stderr);
    std::fs::create_dir_all(tree.path("scratch/real")).unwrap();
    tree.symlink(tree.path("scratch/real"), "scratch/link");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/serve_client.py");
    let output = Command::new(test_support::peers::python_mcp())
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
