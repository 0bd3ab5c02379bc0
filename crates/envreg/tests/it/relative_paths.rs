//! Issue 19, finding 1: a registry named by a relative path (`--registry`,
//! `$ENVREG_REGISTRY`) is the folder below the directory the command started in, for
//! everything derived from it — skill folders included. Each test starts the real binary
//! from one directory with a relative path to a registry there, the way the README and
//! `envreg init`'s "Next:" lines tell a person to, and checks that the operation's skill
//! is found (before the fix: `SKILL_UNAVAILABLE`, the skills folder searched as
//! `examples/registry/skills`, relative to nothing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const ENVREG: &str = env!("CARGO_BIN_EXE_envreg");

/// `envreg ARGS…` started in `dir`, with a scratch `$HOME` (no user-level skills) and no
/// inherited registry or session variables.
fn envreg_in(dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(ENVREG);
    cmd.current_dir(dir)
        .env_remove("ENVREG_REGISTRY")
        .env_remove("ENVREG_SESSION_ID")
        .env_remove("DSH_HOME")
        .env("HOME", home)
        .env("TMPDIR", home)
        .env("NO_COLOR", "1");
    cmd
}

fn ok_stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `envreg init demo` in a scratch folder; returns (folder, home).
fn init_demo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    ok_stdout(envreg_in(tmp.path(), &home).args(["init", "demo"]));
    (tmp, home)
}

#[test]
fn the_readme_command_runs_from_the_repository_root() {
    let home = tempfile::tempdir().unwrap();
    let out = ok_stdout(envreg_in(&test_support::repo_root(), home.path()).args([
        "--registry",
        "examples/registry",
        "--json",
        "resolve-operation",
        "redeploy",
        "--env",
        "staging",
        "--service",
        "checkout-api",
    ]));
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["skill"]["name"], "redeploy-k8s-service", "{value:#}");
    assert_eq!(value["skill"]["available"], true, "{value:#}");
}

#[test]
fn the_commands_init_prints_under_next_run_as_printed() {
    let (tmp, home) = init_demo();
    let printed = ok_stdout(envreg_in(tmp.path(), &home).args(["init", "demo2"]));
    let next: Vec<&str> = printed
        .split("Next:\n")
        .nth(1)
        .expect("a Next: section")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(next.len() >= 3, "{printed}");
    for line in next {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "envreg", "{line}");
        let out = envreg_in(tmp.path(), &home)
            .args(&words[1..])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{line}` failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn envreg_registry_variable_relative_to_the_start_directory() {
    let (tmp, home) = init_demo();
    let out = ok_stdout(
        envreg_in(tmp.path(), &home)
            .env("ENVREG_REGISTRY", "demo")
            .args([
                "--json",
                "resolve-operation",
                "health-check",
                "--service",
                "hello-api",
            ]),
    );
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["skill"]["available"], true, "{value:#}");
}

/// One JSON-RPC exchange over a child's stdio: send `request`, read lines until the
/// reply with its id.
fn rpc(stdin: &mut impl std::io::Write, stdout: &mut impl BufRead, request: Value) -> Value {
    writeln!(stdin, "{request}").unwrap();
    stdin.flush().unwrap();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "server closed");
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply.get("id") == request.get("id") {
            return reply;
        }
    }
}

#[test]
fn serve_over_stdio_with_a_dot_slash_registry() {
    let (tmp, home) = init_demo();
    std::fs::rename(tmp.path().join("demo"), tmp.path().join("registry")).unwrap();
    let mut child = envreg_in(tmp.path(), &home)
        .args(["serve", "--registry", "./registry"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = rpc(
        &mut stdin,
        &mut stdout,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "relative-paths-test", "version": "0"}}}),
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let call = rpc(
        &mut stdin,
        &mut stdout,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "env_resolve_operation",
            "arguments": {"operation": "health-check", "serviceId": "hello-api"}}}),
    );
    assert_eq!(call["result"]["isError"], false, "{call:#}");
    assert_eq!(
        call["result"]["structuredContent"]["skill"]["available"], true,
        "{call:#}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn dsh_bridge_with_a_relative_registry() {
    let (tmp, home) = init_demo();
    let mut child = envreg_in(tmp.path(), &home)
        .args(["--registry", "demo", "dsh-bridge"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let hello = rpc(
        &mut stdin,
        &mut stdout,
        json!({"id": 1, "method": "hello", "protocol": 1}),
    );
    let reported = PathBuf::from(hello["result"]["registry"].as_str().unwrap());
    assert!(reported.is_absolute(), "{hello}");
    assert_eq!(
        reported,
        std::fs::canonicalize(tmp.path().join("demo")).unwrap()
    );
    let call = rpc(
        &mut stdin,
        &mut stdout,
        json!({"id": 2, "method": "call", "params": {"tool": "env_resolve_operation",
            "arguments": {"operation": "health-check", "serviceId": "hello-api"}}}),
    );
    assert_eq!(
        call["result"]["value"]["skill"]["available"], true,
        "{call:#}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn ui_with_a_relative_registry_shows_the_skill_installed() {
    let (tmp, home) = init_demo();
    let mut child = envreg_in(tmp.path(), &home)
        .args(["--registry", "demo", "ui", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().strip_prefix("envreg ui: ").unwrap_or_else(|| {
        let _ = child.kill();
        panic!("envreg ui printed {line:?}")
    });
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let page = http_get(&address, "/operations/local/hello-api");
    let _ = child.kill();
    let _ = child.wait();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(!page.contains("SKILL_UNAVAILABLE"), "{page}");
    assert!(page.contains("http-health-check"), "{page}");
}

/// A plain HTTP/1.1 GET over TCP; the whole answer (the server closes the connection).
fn http_get(address: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn hook_with_a_relative_registry_judges_that_registry() {
    let sandbox = common::Sandbox::with_example();
    // Started in the sandbox with `--registry registry`; the event's cwd is elsewhere.
    let event = json!({
        "session_id": "s", "transcript_path": "/dev/null", "cwd": "/",
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__envreg__env_save",
        "tool_input": {"kind": "environment", "record": {"id": "staging", "schemaVersion": 1,
            "name": "Staging", "tier": "staging", "platform": "kubernetes"}},
    });
    let mut child = envreg_in(sandbox.tmp.path(), &sandbox.home())
        .args(["--registry", "registry", "hook"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    // A staging save needs no approval in the example registry: no opinion, which the
    // hook gives only when it read that registry.
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "a staging save");
}
