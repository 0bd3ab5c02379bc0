//! Issue 19, finding 6, on the `envreg-mcp` binary with raw bytes: over stdio every bad
//! line (not UTF-8, over 4 MiB, nested too deep, a batch array) gets a JSON-RPC error
//! reply and the server goes on serving; over HTTP on loopback, a request whose host is
//! not one plain loopback name (userinfo, two `Host` headers, an absolute-form target)
//! is refused. Before the fix, a non-UTF-8 line ended the server without a reply, an
//! oversized one ended it after the reply, and the three HTTP requests got 200.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-wire-test", "version": "0"}}})
    .to_string()
}

fn registry() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(support::example_registry())
        .arg(tmp.path().join("registry"))
        .status()
        .unwrap();
    assert!(status.success());
    tmp
}

#[test]
fn every_bad_stdio_line_is_answered_and_the_server_goes_on() {
    let tmp = registry();
    let mut child = Command::new(support::server_bin())
        .arg("--registry")
        .arg(tmp.path().join("registry"))
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut next = || {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    writeln!(stdin, "{}", initialize()).unwrap();
    assert!(next()["result"]["serverInfo"].is_object());
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"x\":\"{}\"}}",
        "x".repeat(support_limit() + 1)
    );
    let cases: Vec<(&str, Vec<u8>, i64)> = vec![
        (
            "not UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"x\":\"\xff\"}".to_vec(),
            -32700,
        ),
        ("nested too deep", deep.into_bytes(), -32700),
        (
            "a batch",
            br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#.to_vec(),
            -32600,
        ),
        ("over the limit", long.into_bytes(), -32600),
    ];
    for (n, (what, mut bytes, code)) in cases.into_iter().enumerate() {
        bytes.push(b'\n');
        stdin.write_all(&bytes).unwrap();
        let reply = next();
        assert_eq!(reply["error"]["code"], code, "{what}: {reply}");
        assert_eq!(reply["id"], Value::Null, "{what}: {reply}");
        // Still serving: a ping right after is answered with its id.
        let id = 100 + n;
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
        )
        .unwrap();
        let pong = next();
        assert_eq!(pong["id"], id, "after {what}: {pong}");
        assert!(pong["result"].is_object(), "after {what}: {pong}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

fn support_limit() -> usize {
    envreg_mcp::stdio::MAX_LINE_BYTES
}

struct Http {
    child: Child,
    address: String,
    /// Held open: a server whose stderr is closed dies on its next log line.
    _stderr: BufReader<std::process::ChildStderr>,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_http(tmp: &tempfile::TempDir) -> Http {
    let mut child = Command::new(support::server_bin())
        .arg("--registry")
        .arg(tmp.path().join("registry"))
        .args(["--http", "127.0.0.1:0"])
        .env_remove("ENVREG_HTTP_TOKEN")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .trim()
        .strip_prefix("envreg-mcp: listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Http {
        child,
        address,
        _stderr: stderr,
    }
}

/// One raw HTTP/1.1 exchange: `head` is the request line plus headers (no Content-*),
/// the body is an `initialize`. Returns the status code.
fn status_of(address: &str, head: &str) -> u16 {
    let body = initialize();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "{head}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

#[test]
fn http_refuses_what_is_not_one_plain_loopback_host() {
    let tmp = registry();
    let http = start_http(&tmp);
    let port = http.address.rsplit(':').next().unwrap();
    assert_eq!(
        status_of(
            &http.address,
            &format!("POST /mcp HTTP/1.1\r\nHost: localhost:{port}")
        ),
        200,
        "the plain request"
    );
    for (what, head) in [
        (
            "userinfo",
            "POST /mcp HTTP/1.1\r\nHost: evil.com:80@localhost".to_owned(),
        ),
        (
            "two Host headers",
            format!("POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nHost: evil.com"),
        ),
        (
            "absolute form",
            format!("POST http://evil.com/mcp HTTP/1.1\r\nHost: localhost:{port}"),
        ),
        (
            "absolute form naming localhost",
            format!("POST http://localhost:{port}/mcp HTTP/1.1\r\nHost: localhost:{port}"),
        ),
    ] {
        assert_eq!(status_of(&http.address, &head), 403, "{what}");
    }
}
