//! Round-trip latency (p50, p99) and throughput of `env_resolve` over MCP, next to the
//! trivial `echo` tool on the same server in the same run (the SDK's floor), over stdio
//! and over streamable HTTP, on the 10,000-record synthetic registry.
//!
//! Run: `scripts/bench-envreg-mcp.sh` (= `cargo bench -p envreg-mcp --bench roundtrip`).
//! Target: `env_resolve` throughput at least half of `echo`'s.
//!
//! Not criterion: criterion reports means and medians, the issue asks for p99 and for
//! whole-process throughput, so this is a small self-timed driver (`harness = false`).
//! The client is hand-written JSON-RPC (newline-delimited over pipes; HTTP/1.1 with
//! keep-alive over a TCP socket) so that the client's own cost stays small next to the
//! server's; the real-client conformance tests live in tests/.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WARMUP: usize = 300;
const SAMPLES: usize = 3000;
const PARALLEL_FOR: Duration = Duration::from_secs(3);
const PARALLEL_CLIENTS: usize = 4;
const PIPELINE_WINDOW: usize = 8;

fn server_bin() -> &'static str {
    env!("CARGO_BIN_EXE_envreg-mcp")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "envreg-bench", "version": "0"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call(id: u64, tool: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

fn check(response: &Value) {
    let result = &response["result"];
    assert_eq!(result["isError"], false, "tool failed: {response}");
}

// ---------------------------------------------------------------------------
// stdio client
// ---------------------------------------------------------------------------

struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    fn start(registry: &std::path::Path) -> StdioClient {
        let mut child = Command::new(server_bin())
            .args(["--registry"])
            .arg(registry)
            .args([
                "--bench-echo",
                "--session",
                "bench-stdio",
                "--log-level",
                "error",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = StdioClient {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        client.send(&initialize());
        client.receive();
        client.send(&initialized());
        client
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn round_trip(&mut self, tool: &str, args: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&call(id, tool, args));
        let response = self.receive();
        assert_eq!(response["id"], id);
        response
    }

    /// Throughput with `PIPELINE_WINDOW` requests in flight on the one connection.
    fn pipelined(&mut self, tool: &str, args: &Value, for_: Duration) -> f64 {
        let started = Instant::now();
        let mut done = 0usize;
        let mut in_flight = 0usize;
        while started.elapsed() < for_ || in_flight > 0 {
            while in_flight < PIPELINE_WINDOW && started.elapsed() < for_ {
                let id = self.next_id;
                self.next_id += 1;
                self.send(&call(id, tool, args));
                in_flight += 1;
            }
            check(&self.receive());
            in_flight -= 1;
            done += 1;
        }
        done as f64 / started.elapsed().as_secs_f64()
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// HTTP client (HTTP/1.1, keep-alive, SSE or JSON bodies, chunked or sized)
// ---------------------------------------------------------------------------

struct HttpClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    authority: String,
    session: Option<String>,
    next_id: u64,
}

impl HttpClient {
    fn connect(authority: &str) -> HttpClient {
        let stream = TcpStream::connect(authority).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut client = HttpClient {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
            authority: authority.to_owned(),
            session: None,
            next_id: 1,
        };
        let (headers, _) = client.post(&initialize());
        client.session = headers
            .iter()
            .find(|(k, _)| k == "mcp-session-id")
            .map(|(_, v)| v.clone());
        assert!(client.session.is_some(), "no Mcp-Session-Id");
        client.post(&initialized());
        client
    }

    fn post(&mut self, body: &Value) -> (Vec<(String, String)>, Vec<Value>) {
        let body = serde_json::to_vec(body).unwrap();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n",
            self.authority,
            body.len()
        );
        if let Some(session) = &self.session {
            request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        request.push_str("\r\n");
        self.writer.write_all(request.as_bytes()).unwrap();
        self.writer.write_all(&body).unwrap();
        self.writer.flush().unwrap();

        let mut status = String::new();
        self.reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 2"), "HTTP status {status}");
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let mut body = Vec::new();
        if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = header("content-length") {
            body.resize(length.parse().unwrap(), 0);
            self.reader.read_exact(&mut body).unwrap();
        }
        let text = String::from_utf8(body).unwrap();
        let messages = if header("content-type").is_some_and(|v| v.starts_with("text/event-stream"))
        {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter(|d| !d.trim().is_empty())
                .map(|d| serde_json::from_str(d.trim()).unwrap())
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&text).unwrap()]
        };
        (headers, messages)
    }

    fn round_trip(&mut self, tool: &str, args: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let (_, messages) = self.post(&call(id, tool, args));
        messages
            .into_iter()
            .find(|m| m["id"] == id)
            .expect("response")
    }
}

struct HttpServer {
    child: Child,
    authority: String,
}

impl HttpServer {
    fn start(registry: &std::path::Path) -> HttpServer {
        let mut child = Command::new(server_bin())
            .args(["--registry"])
            .arg(registry)
            .args([
                "--bench-echo",
                "--http",
                "127.0.0.1:0",
                "--log-level",
                "error",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let url = line.split("http://").nth(1).expect("listening line").trim();
        let authority = url.trim_end_matches("/mcp").to_owned();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, authority }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------

struct Figures {
    p50_us: f64,
    p99_us: f64,
    sequential_per_s: f64,
    parallel_per_s: f64,
}

fn latencies(mut round_trip: impl FnMut() -> Value) -> (f64, f64, f64) {
    for _ in 0..WARMUP {
        check(&round_trip());
    }
    let mut samples = Vec::with_capacity(SAMPLES);
    let started = Instant::now();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let response = round_trip();
        samples.push(t.elapsed());
        check(&response);
    }
    let total = started.elapsed();
    samples.sort();
    let at =
        |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.50), at(0.99), SAMPLES as f64 / total.as_secs_f64())
}

fn measure_stdio(registry: &std::path::Path, tool: &str, args: &Value) -> Figures {
    let mut client = StdioClient::start(registry);
    let (p50_us, p99_us, sequential_per_s) = latencies(|| client.round_trip(tool, args));
    let parallel_per_s = client.pipelined(tool, args, PARALLEL_FOR);
    Figures {
        p50_us,
        p99_us,
        sequential_per_s,
        parallel_per_s,
    }
}

fn measure_http(server: &HttpServer, tool: &str, args: &Value) -> Figures {
    let mut client = HttpClient::connect(&server.authority);
    let (p50_us, p99_us, sequential_per_s) = latencies(|| client.round_trip(tool, args));
    let threads: Vec<_> = (0..PARALLEL_CLIENTS)
        .map(|_| {
            let authority = server.authority.clone();
            let tool = tool.to_owned();
            let args = args.clone();
            std::thread::spawn(move || {
                let mut client = HttpClient::connect(&authority);
                let started = Instant::now();
                let mut done = 0usize;
                while started.elapsed() < PARALLEL_FOR {
                    check(&client.round_trip(&tool, &args));
                    done += 1;
                }
                done as f64 / started.elapsed().as_secs_f64()
            })
        })
        .collect();
    let parallel_per_s = threads.into_iter().map(|t| t.join().unwrap()).sum();
    Figures {
        p50_us,
        p99_us,
        sequential_per_s,
        parallel_per_s,
    }
}

fn print_row(transport: &str, tool: &str, f: &Figures) {
    println!(
        "{transport:<6} {tool:<12} {:>9.1} {:>9.1} {:>12.0} {:>12.0}",
        f.p50_us, f.p99_us, f.sequential_per_s, f.parallel_per_s
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run a
    // smoke-sized version then so the bench stays compiled and working.
    let full = std::env::args().any(|a| a == "--bench");
    let dir = tempfile::tempdir().unwrap();
    let spec = if full {
        envreg_core::synth::SynthSpec::default()
    } else {
        envreg_core::synth::SynthSpec::scaled_down(100)
    };
    envreg_core::synth::generate(dir.path(), &spec).unwrap();
    let sample = envreg_core::synth::sample(&spec);
    let resolve_args = json!({
        "environmentId": sample.environment,
        "serviceId": sample.service,
        "deploymentId": sample.deployment,
    });
    let echo_args = json!({"text": "hello"});
    if !full {
        let mut client = StdioClient::start(dir.path());
        check(&client.round_trip("env_resolve", &resolve_args));
        check(&client.round_trip("echo", &echo_args));
        println!("roundtrip bench smoke run ok (use `cargo bench` for figures)");
        return;
    }

    println!(
        "registry: {} records (synthetic); {SAMPLES} sequential round trips after {WARMUP} warm-up; parallel = {PIPELINE_WINDOW} in flight (stdio) / {PARALLEL_CLIENTS} sessions (http) for {}s",
        spec.total(),
        PARALLEL_FOR.as_secs()
    );
    println!(
        "{:<6} {:<12} {:>9} {:>9} {:>12} {:>12}",
        "", "tool", "p50 µs", "p99 µs", "seq calls/s", "par calls/s"
    );
    let stdio_echo = measure_stdio(dir.path(), "echo", &echo_args);
    print_row("stdio", "echo", &stdio_echo);
    let stdio_resolve = measure_stdio(dir.path(), "env_resolve", &resolve_args);
    print_row("stdio", "env_resolve", &stdio_resolve);
    let server = HttpServer::start(dir.path());
    let http_echo = measure_http(&server, "echo", &echo_args);
    print_row("http", "echo", &http_echo);
    let http_resolve = measure_http(&server, "env_resolve", &resolve_args);
    print_row("http", "env_resolve", &http_resolve);
    println!(
        "env_resolve / echo throughput: stdio {:.2} (seq) {:.2} (par); http {:.2} (seq) {:.2} (par); target >= 0.50",
        stdio_resolve.sequential_per_s / stdio_echo.sequential_per_s,
        stdio_resolve.parallel_per_s / stdio_echo.parallel_per_s,
        http_resolve.sequential_per_s / http_echo.sequential_per_s,
        http_resolve.parallel_per_s / http_echo.parallel_per_s,
    );
}
