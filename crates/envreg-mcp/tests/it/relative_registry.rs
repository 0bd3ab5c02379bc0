//! Issue 19, finding 1, on the `envreg-mcp` binary: `--registry registry`, relative to
//! the directory it started in, finds the registry's skills too (before: the skills
//! folder was searched as the relative path, and the operation's skill was
//! `SKILL_UNAVAILABLE`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[test]
fn a_relative_registry_resolves_its_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(support::example_registry())
        .arg(tmp.path().join("registry"))
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = Command::new(support::server_bin())
        .args(["--registry", "registry"])
        .current_dir(tmp.path())
        .env("HOME", tmp.path())
        .env("TMPDIR", tmp.path())
        .env_remove("DSH_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "relative-registry-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "env_resolve_operation", "arguments": {"operation": "redeploy",
            "environmentId": "staging", "serviceId": "checkout-api"}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let answer = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended");
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == 2 {
            break reply;
        }
    };
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    assert_eq!(
        answer["result"]["structuredContent"]["skill"]["available"], true,
        "{answer:#}"
    );
}
