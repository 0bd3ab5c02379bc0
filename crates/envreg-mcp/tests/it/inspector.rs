//! The MCP Inspector CLI (npm `@modelcontextprotocol/inspector-cli`, bin
//! `mcp-inspector-cli`) against `envreg-mcp` over stdio: `tools/list` and one
//! `tools/call`.
//!
//! Workaround for the peer: its `build/index.js` looks for `../package.json` relative to
//! the *current directory* but imports it relative to itself, so it only runs when the
//! current directory is its own `build/` folder. Hence `current_dir` below.

use crate::support;

use std::process::Command;

fn inspector(args: &[&str]) -> serde_json::Value {
    let build = support::inspector_build_dir();
    let output = Command::new("node")
        .arg(build.join("cli.js"))
        .arg("--cli")
        .arg(support::server_bin())
        .arg("--registry")
        .arg(support::example_registry())
        .args(args)
        .current_dir(&build)
        .env_remove("ENVREG_SESSION_ID")
        .output()
        .expect("run node (the Inspector CLI needs Node.js)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "inspector failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("inspector printed no JSON ({e}): {stdout}"))
}

#[test]
fn inspector_cli_lists_tools_and_calls_one_over_stdio() {
    let listed = inspector(&["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, envreg_core::tools::TOOL_NAMES);
    let delete = &listed["tools"][8];
    assert_eq!(delete["annotations"]["destructiveHint"], true);

    let called = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "env_find",
        "--tool-arg",
        "query=checkout",
    ]);
    assert_eq!(called["isError"], false, "{called}");
    let hits = called["structuredContent"]["hits"]
        .as_array()
        .expect("hits");
    assert!(hits.iter().any(|h| h["id"] == "checkout-api"), "{called}");
    let render = called["content"][0]["text"].as_str().expect("render");
    assert!(render.ends_with("for \"checkout\"."), "{render}");
}

/// An expected failure through the TypeScript SDK client, which checks any
/// `structuredContent` against the tool's `outputSchema`, errors included: the result
/// must reach it as the tool's own error (code first), not as a schema mismatch.
#[test]
fn inspector_cli_sees_an_expected_failure_as_the_tools_error() {
    let called = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "env_get",
        "--tool-arg",
        "kind=environment",
        "--tool-arg",
        "id=nowhere",
    ]);
    assert_eq!(called["isError"], true, "{called}");
    assert!(called.get("structuredContent").is_none(), "{called}");
    let first = called["content"][0]["text"].as_str().expect("code line");
    assert!(first.starts_with("ENV_NOT_FOUND: "), "{first}");
    let object: serde_json::Value =
        serde_json::from_str(called["content"][1]["text"].as_str().expect("JSON text"))
            .expect("the JSON text block parses");
    assert_eq!(object["code"], "ENV_NOT_FOUND");
}
