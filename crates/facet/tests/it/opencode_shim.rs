//! The OpenCode plugin shim (`integrations/opencode/plugin/facet.js`) under Node, called
//! as OpenCode calls it (`tests/opencode/drive-shim.mjs`), with the real `facet`
//! binary behind it: a refusal is thrown with facet's sentence, a call facet has no
//! opinion on goes through, and a missing or failing `facet` refuses the call with the
//! shim's one own sentence (fail closed). The live test in OpenCode itself is
//! `opencode_live.rs`.
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::Tree;

/// Node 22 from the pinned npm peers (`AGENT_EXEC_NODE22`), else `node` on PATH.
fn node() -> PathBuf {
    std::env::var_os("AGENT_EXEC_NODE22").map_or_else(|| PathBuf::from("node"), PathBuf::from)
}

fn shim() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/opencode/plugin/facet.js")
}

/// What the shim did with `args` for `tool` in a session in `tree.room()`, with
/// `FACET_BIN` set to `facet`.
fn call(tree: &Tree, facet: &Path, tool: &str, args: Value) -> Option<String> {
    drive(tree, facet, tool, args, false)["threw"]
        .as_str()
        .map(str::to_owned)
}

/// Runs the driver; `system`: the system-prompt hook instead of the tool hook.
fn drive(tree: &Tree, facet: &Path, tool: &str, args: Value, system: bool) -> Value {
    let event = json!({
        "system": system,
        "directory": tree.room(),
        "worktree": tree.path("project"),
        "input": {"tool": tool, "sessionID": "ses_shim", "callID": "call_1"},
        "output": {"args": args},
    });
    let out = Command::new(node())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/opencode/drive-shim.mjs"))
        .arg(shim())
        .arg(event.to_string())
        .env("FACET_BIN", facet)
        .env("FACET_STATE_DIR", tree.state())
        .env("XDG_CONFIG_HOME", tree.path("xdg"))
        .env_remove("FACET_CONFIG")
        .output()
        .expect("node runs (the pinned Node 22: scripts/setup.d/40-agent-clis.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_shim_adds_the_rule_and_the_binding_to_the_system_prompt() {
    let tree = Tree::new();
    let answer = drive(&tree, &support::facet_bin(), "", json!({}), true);
    let system = answer["system"].as_array().unwrap();
    assert_eq!(system.len(), 2, "{answer}");
    assert_eq!(system[0], "the host prompt");
    let added = system[1].as_str().unwrap();
    assert!(
        added.starts_with(&facet_core::seed::facet_rule_text()),
        "{added}"
    );
    assert!(
        added.contains(&tree.room().display().to_string()),
        "{added}"
    );
    // A missing facet adds nothing (the tool calls are still refused).
    let answer = drive(&tree, Path::new("/nonexistent/facet"), "", json!({}), true);
    assert_eq!(answer["system"], json!(["the host prompt"]));
}

#[test]
fn the_shim_throws_facets_sentence_and_lets_the_rest_through() {
    let tree = Tree::new();
    let facet = support::facet_bin();
    let refused = call(
        &tree,
        &facet,
        "read",
        json!({"filePath": "../other/secret.txt"}),
    )
    .expect("refused");
    assert!(
        refused.starts_with(&format!(
            "../other/secret.txt is refused — this session's facet is {}",
            tree.room().display()
        )),
        "{refused}"
    );
    assert_eq!(
        call(&tree, &facet, "read", json!({"filePath": "inside.txt"})),
        None
    );
    assert_eq!(call(&tree, &facet, "bash", json!({"command": "ls"})), None);
}

#[test]
fn a_missing_or_failing_facet_refuses_the_call() {
    let tree = Tree::new();
    let missing = call(
        &tree,
        Path::new("/nonexistent/facet"),
        "read",
        json!({"filePath": "inside.txt"}),
    )
    .expect("refused");
    assert!(
        missing.starts_with("facet could not judge this call (")
            && missing.ends_with(
                "), so it is refused; check that `facet` is installed and runs (`facet --version`)"
            ),
        "{missing}"
    );
    // A program that is not facet: exits 1 with a message, or answers garbage.
    for (name, body) in [
        ("fails", "echo broken >&2; exit 1"),
        ("garbage", "echo not-json"),
    ] {
        let fake = tree.path(name);
        std::fs::write(&fake, format!("#!/bin/sh\ncat >/dev/null\n{body}\n")).unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let refused = call(&tree, &fake, "read", json!({"filePath": "inside.txt"}))
            .unwrap_or_else(|| panic!("{name}: let through"));
        assert!(
            refused.starts_with("facet could not judge this call ("),
            "{name}: {refused}"
        );
    }
}
