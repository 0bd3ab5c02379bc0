//! Issue 19, finding 6, on the `envreg` binary: `envreg serve` over stdio and `envreg
//! dsh-bridge` answer every bad line (not UTF-8, over the line limit, nested too deep,
//! a JSON array) with an error reply and go on serving. Raw bytes over the real
//! process's stdio. Before the fix `serve` ended on a non-UTF-8 line with no reply and
//! after an oversized line's reply; the bridge read a non-UTF-8 line lossily.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Peer {
    child: std::process::Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(sandbox: &common::Sandbox, args: &[&str]) -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_envreg"))
            .arg("--registry")
            .arg(sandbox.registry())
            .args(args)
            .env("HOME", sandbox.home())
            .env("TMPDIR", sandbox.home())
            .env_remove("ENVREG_SESSION_ID")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Peer {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn reply(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "the process ended"
        );
        serde_json::from_str(&line).unwrap()
    }

    fn finish(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

/// The bad lines, with a name for messages; `limit` is the process's line limit.
fn bad_lines(limit: usize) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "not UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"x\":\"\xff\"}".to_vec(),
        ),
        (
            "nested too deep",
            format!("{}{}", "[".repeat(20_000), "]".repeat(20_000)).into_bytes(),
        ),
        (
            "a batch",
            br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#.to_vec(),
        ),
        (
            "over the limit",
            format!("{{\"id\":5,\"x\":\"{}\"}}", "x".repeat(limit + 1)).into_bytes(),
        ),
    ]
}

#[test]
fn serve_over_stdio_answers_every_bad_line_and_goes_on() {
    let sandbox = common::Sandbox::with_example();
    let mut peer = Peer::start(&sandbox, &["serve"]);
    peer.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bad-lines-test", "version": "0"}}})
        .to_string()
        .as_bytes(),
    );
    assert!(peer.reply()["result"]["serverInfo"].is_object());
    peer.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    for (n, (what, line)) in bad_lines(envreg_mcp::stdio::MAX_LINE_BYTES)
        .into_iter()
        .enumerate()
    {
        peer.send(&line);
        let reply = peer.reply();
        assert!(
            matches!(reply["error"]["code"].as_i64(), Some(-32700 | -32600)),
            "{what}: {reply}"
        );
        assert_eq!(reply["jsonrpc"], "2.0", "{what}: {reply}");
        let id = 100 + n;
        peer.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "env_find", "arguments": {"query": "checkout"}}})
            .to_string()
            .as_bytes(),
        );
        let answer = peer.reply();
        assert_eq!(answer["id"], id, "after {what}: {answer}");
        assert_eq!(answer["result"]["isError"], false, "after {what}: {answer}");
    }
    peer.finish();
}

#[test]
fn dsh_bridge_answers_every_bad_line_and_goes_on() {
    let sandbox = common::Sandbox::with_example();
    let mut peer = Peer::start(&sandbox, &["dsh-bridge"]);
    for (n, (what, line)) in bad_lines(envreg::dsh_bridge::MAX_LINE_BYTES)
        .into_iter()
        .enumerate()
    {
        peer.send(&line);
        let reply = peer.reply();
        assert_eq!(reply["id"], Value::Null, "{what}: {reply}");
        assert_eq!(
            reply["error"]["code"], "INVALID_ARGUMENT",
            "{what}: {reply}"
        );
        if what == "not UTF-8" {
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.contains("not UTF-8"), "{message}");
        }
        let id = 100 + n;
        peer.send(
            json!({"id": id, "method": "call", "params": {"tool": "env_find",
                "arguments": {"query": "checkout"}}})
            .to_string()
            .as_bytes(),
        );
        let answer = peer.reply();
        assert_eq!(answer["id"], id, "after {what}: {answer}");
        assert!(
            answer["result"]["value"].is_object(),
            "after {what}: {answer}"
        );
    }
    peer.finish();
}
