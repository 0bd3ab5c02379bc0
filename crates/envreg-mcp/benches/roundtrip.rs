//! Round-trip latency (p50, p99) and throughput of `env_resolve` over MCP, next to the
//! trivial `echo` tool on the same server in the same run (the SDK's floor), over stdio
//! and over streamable HTTP, on the 10,000-record synthetic registry.
//!
//! Run: `scripts/bench-envreg-mcp.sh` (= `cargo bench -p envreg-mcp --bench roundtrip`).
//! Target (issue 14 §3): `env_resolve` throughput at least half of an echo that
//! answers as many bytes as `env_resolve` does (`echo` with `bytes`, calibrated at
//! the start), sequential and parallel, over both transports; the ratio to the 5-byte
//! echo (the old target, which measured the answer's size more than the server) is
//! printed beside it.
//! `ECHO_BYTES=N scripts/bench-envreg-mcp.sh` runs the same with an echo that carries
//! N bytes each way (a control: what the bytes alone cost through the SDK).
//!
//! Not criterion: criterion reports means and medians, the issue asks for p99 and for
//! whole-process throughput, so this is a small self-timed driver (`harness = false`).
//! The client is hand-written JSON-RPC (newline-delimited over pipes; HTTP/1.1 with
//! keep-alive over a TCP socket) so that the client's own cost stays small next to the
//! server's; the real-client conformance tests live in tests/. For the same reason a
//! timed response is decoded as a [`Reply`] (its id and `isError`; every other field
//! is scanned, so the JSON must be well-formed, but no tree is built): parsing a 28 KB
//! `env_resolve` answer into a `serde_json::Value` costs the client ~115 µs, more than
//! the server spends serializing it. One untimed response per measurement is parsed in
//! full and checked (`structuredContent` equals the JSON text block).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

const WARMUP: usize = 300;
const SAMPLES: usize = 3000;
const PARALLEL_FOR: Duration = Duration::from_secs(3);
const PARALLEL_CLIENTS: usize = 4;
const PIPELINE_WINDOW: usize = 8;
/// Sequential calls of one tool before switching to the other.
const BLOCK: usize = 50;
/// Parallel runs switch tool every SLOT.
const SLOT: Duration = Duration::from_millis(250);

/// The server under test: this build's `envreg-mcp`, or `ENVREG_MCP_BIN` to measure
/// another build (an A/B comparison with the same client in the same conditions).
fn server_bin() -> String {
    std::env::var("ENVREG_MCP_BIN")
        .ok()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_envreg-mcp").to_owned())
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

/// What the timed client reads of a response (see the module doc).
#[derive(Deserialize)]
struct Reply {
    id: Option<u64>,
    result: Option<ReplyResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReplyResult {
    is_error: Option<bool>,
    content: Option<IgnoredAny>,
    structured_content: Option<IgnoredAny>,
}

fn reply(raw: &str) -> Reply {
    serde_json::from_str(raw).unwrap_or_else(|e| panic!("not a JSON-RPC response ({e}): {raw}"))
}

fn check(response: &Reply) {
    let result = response.result.as_ref().expect("a result, not an error");
    assert_eq!(
        result.is_error,
        Some(false),
        "tool failed (id {:?})",
        response.id
    );
    assert!(result.content.is_some() && result.structured_content.is_some());
}

/// The untimed full check of one response: a tool result whose JSON text block parses
/// to exactly its `structuredContent`.
fn check_in_full(raw: &str) {
    let response: Value = serde_json::from_str(raw).unwrap();
    let result = &response["result"];
    assert_eq!(result["isError"], false, "tool failed: {response}");
    let text = result["content"][1]["text"]
        .as_str()
        .expect("JSON text block");
    let from_text: Value = serde_json::from_str(text).unwrap();
    assert_eq!(from_text, result["structuredContent"]);
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

    fn receive(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line
    }

    fn round_trip_raw(&mut self, tool: &str, args: &Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&call(id, tool, args));
        let raw = self.receive();
        assert_eq!(reply(&raw).id, Some(id));
        raw
    }

    fn round_trip(&mut self, tool: &str, args: &Value) -> Reply {
        reply(&self.round_trip_raw(tool, args))
    }

    /// Calls done (and the time taken) with `PIPELINE_WINDOW` requests in flight on
    /// the one connection for `for_`.
    fn pipelined(&mut self, tool: &str, args: &Value, for_: Duration) -> (usize, Duration) {
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
            check(&reply(&self.receive()));
            in_flight -= 1;
            done += 1;
        }
        (done, started.elapsed())
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

    /// POST one message; the JSON-RPC messages of the answer, undecoded.
    fn post(&mut self, body: &Value) -> (Vec<(String, String)>, Vec<String>) {
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
                .map(|d| d.trim().to_owned())
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![text]
        };
        (headers, messages)
    }

    fn round_trip_raw(&mut self, tool: &str, args: &Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let (_, messages) = self.post(&call(id, tool, args));
        messages
            .into_iter()
            .find(|m| reply(m).id == Some(id))
            .expect("response")
    }

    fn round_trip(&mut self, tool: &str, args: &Value) -> Reply {
        reply(&self.round_trip_raw(tool, args))
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
    /// Server CPU time (all threads, user + system) per sequential call.
    server_cpu_us: Option<f64>,
}

/// CPU time the server process has used so far, all threads (Linux: the first field of
/// each thread's `schedstat`, in ns). Unlike wall time this hardly moves when other
/// processes compete for the two cores, so it shows the server's own cost per call.
fn server_cpu(pid: u32) -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// Sequential round trips of both tools, interleaved in blocks of [`BLOCK`] calls on
/// one connection, so that both see the same machine (this one is shared: a figure
/// taken a minute after the other would compare two different loads).
/// `round_trip(i)` calls tool `i`. Returns (p50 µs, p99 µs, calls/s, server CPU µs per
/// call) per tool.
fn latencies<const N: usize>(
    server: u32,
    mut round_trip: impl FnMut(usize) -> Reply,
) -> [(f64, f64, f64, Option<f64>); N] {
    for _ in 0..WARMUP {
        for tool in 0..N {
            check(&round_trip(tool));
        }
    }
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::new());
    let mut busy = [Duration::ZERO; N];
    let mut cpu = [Some(Duration::ZERO); N];
    for block in 0..N * SAMPLES / BLOCK {
        let tool = block % N;
        let cpu_before = server_cpu(server);
        let started = Instant::now();
        for _ in 0..BLOCK {
            let t = Instant::now();
            let response = round_trip(tool);
            samples[tool].push(t.elapsed());
            check(&response);
        }
        busy[tool] += started.elapsed();
        cpu[tool] = match (cpu[tool], cpu_before, server_cpu(server)) {
            (Some(sum), Some(before), Some(after)) => Some(sum + after.saturating_sub(before)),
            _ => None,
        };
    }
    std::array::from_fn(|tool| {
        let samples = &mut samples[tool];
        samples.sort();
        let at = |q: f64| {
            samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6
        };
        (
            at(0.50),
            at(0.99),
            samples.len() as f64 / busy[tool].as_secs_f64(),
            cpu[tool].map(|cpu| cpu.as_secs_f64() * 1e6 / samples.len() as f64),
        )
    })
}

fn figures<const N: usize>(
    seq: [(f64, f64, f64, Option<f64>); N],
    parallel_per_s: [f64; N],
) -> [Figures; N] {
    std::array::from_fn(|tool| Figures {
        p50_us: seq[tool].0,
        p99_us: seq[tool].1,
        sequential_per_s: seq[tool].2,
        parallel_per_s: parallel_per_s[tool],
        server_cpu_us: seq[tool].3,
    })
}

/// The tools over one stdio server; throughput alternates [`SLOT`]-long windows.
fn measure_stdio<const N: usize>(
    registry: &std::path::Path,
    tools: [(&str, &Value); N],
) -> [Figures; N] {
    let mut client = StdioClient::start(registry);
    for (tool, args) in tools {
        check_in_full(&client.round_trip_raw(tool, args));
    }
    let pid = client.child.id();
    let seq = latencies(pid, |i| client.round_trip(tools[i].0, tools[i].1));
    let mut done = [0usize; N];
    let mut spent = [Duration::ZERO; N];
    while spent[N - 1] < PARALLEL_FOR {
        for (i, (tool, args)) in tools.into_iter().enumerate() {
            let (n, elapsed) = client.pipelined(tool, args, SLOT);
            done[i] += n;
            spent[i] += elapsed;
        }
    }
    figures(
        seq,
        std::array::from_fn(|i| done[i] as f64 / spent[i].as_secs_f64()),
    )
}

/// The tools over one HTTP server: sequential on one session, then
/// [`PARALLEL_CLIENTS`] sessions that all switch tool every [`SLOT`] together.
fn measure_http<const N: usize>(server: &HttpServer, tools: [(&str, &Value); N]) -> [Figures; N] {
    let mut client = HttpClient::connect(&server.authority);
    for (tool, args) in tools {
        check_in_full(&client.round_trip_raw(tool, args));
    }
    let seq = latencies(server.child.id(), |i| {
        client.round_trip(tools[i].0, tools[i].1)
    });
    let owned: Vec<(String, Value)> = tools
        .iter()
        .map(|(tool, args)| ((*tool).to_owned(), (*args).clone()))
        .collect();
    let clients: Vec<HttpClient> = (0..PARALLEL_CLIENTS)
        .map(|_| HttpClient::connect(&server.authority))
        .collect();
    let started = Instant::now();
    let threads: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let owned = owned.clone();
            std::thread::spawn(move || {
                let mut done = [0usize; N];
                loop {
                    let elapsed = started.elapsed();
                    if elapsed >= N as u32 * PARALLEL_FOR {
                        break done;
                    }
                    let i = (elapsed.as_millis() / SLOT.as_millis()) as usize % N;
                    check(&client.round_trip(&owned[i].0, &owned[i].1));
                    done[i] += 1;
                }
            })
        })
        .collect();
    let mut done = [0usize; N];
    for thread in threads {
        let counts = thread.join().unwrap();
        for (sum, n) in done.iter_mut().zip(counts) {
            *sum += n;
        }
    }
    // Each tool had 1/N of the N × PARALLEL_FOR window.
    figures(seq, done.map(|n| n as f64 / PARALLEL_FOR.as_secs_f64()))
}

fn print_row(transport: &str, tool: &str, f: &Figures) {
    println!(
        "{transport:<6} {tool:<12} {:>9.1} {:>9.1} {:>12.0} {:>12.0} {:>14}",
        f.p50_us,
        f.p99_us,
        f.sequential_per_s,
        f.parallel_per_s,
        f.server_cpu_us
            .map_or_else(|| "n/a".to_owned(), |us| format!("{us:.1}"))
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
    // `ECHO_BYTES=N` makes the echo carry N bytes each way: a control that shows how
    // much of a call's cost is the bytes themselves going through the SDK, whatever
    // the tool does (the floor is the default, a 5-byte echo).
    let echo_args = match std::env::var("ECHO_BYTES")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(n) => json!({"text": "x".repeat(n)}),
        None => json!({"text": "hello"}),
    };
    // The target's floor (issue 14 §3): an echo that answers as many bytes as
    // `env_resolve` does, without being sent them. Calibrated on this registry: the
    // echo's response grows by 2 bytes per `bytes` (the text sits in
    // `structuredContent` and in the JSON text block).
    let sized_args = {
        let mut client = StdioClient::start(dir.path());
        let target = client.round_trip_raw("env_resolve", &resolve_args).len();
        let base = client.round_trip_raw("echo", &json!({"bytes": 0})).len();
        let args = json!({"bytes": target.saturating_sub(base) / 2});
        let got = client.round_trip_raw("echo", &args).len();
        assert!(
            got.abs_diff(target) <= 2,
            "size-matched echo answers {got} bytes, env_resolve {target}"
        );
        println!("env_resolve answers {target} bytes; the size-matched echo {got}");
        args
    };
    if !full {
        let mut client = StdioClient::start(dir.path());
        check(&client.round_trip("env_resolve", &resolve_args));
        check_in_full(&client.round_trip_raw("env_resolve", &resolve_args));
        check(&client.round_trip("echo", &echo_args));
        check_in_full(&client.round_trip_raw("echo", &echo_args));
        check_in_full(&client.round_trip_raw("echo", &sized_args));
        println!("roundtrip bench smoke run ok (use `cargo bench` for figures)");
        return;
    }

    println!(
        "registry: {} records (synthetic); per tool {SAMPLES} sequential round trips after {WARMUP} warm-up, interleaved with the other tools in blocks of {BLOCK}; parallel = {PIPELINE_WINDOW} in flight (stdio) / {PARALLEL_CLIENTS} sessions (http) for {}s per tool, alternating every {} ms",
        spec.total(),
        PARALLEL_FOR.as_secs(),
        SLOT.as_millis()
    );
    println!(
        "{:<6} {:<12} {:>9} {:>9} {:>12} {:>12} {:>14}",
        "", "tool", "p50 µs", "p99 µs", "seq calls/s", "par calls/s", "srv cpu µs/call"
    );
    let tools = [
        ("echo", &echo_args),
        ("echo", &sized_args),
        ("env_resolve", &resolve_args),
    ];
    let [stdio_echo, stdio_sized, stdio_resolve] = measure_stdio(dir.path(), tools);
    print_row("stdio", "echo", &stdio_echo);
    print_row("stdio", "echo (sized)", &stdio_sized);
    print_row("stdio", "env_resolve", &stdio_resolve);
    let server = HttpServer::start(dir.path());
    let [http_echo, http_sized, http_resolve] = measure_http(&server, tools);
    print_row("http", "echo", &http_echo);
    print_row("http", "echo (sized)", &http_sized);
    print_row("http", "env_resolve", &http_resolve);
    let ratios = |floor_stdio: &Figures, floor_http: &Figures| {
        format!(
            "stdio {:.2} (seq) {:.2} (par); http {:.2} (seq) {:.2} (par)",
            stdio_resolve.sequential_per_s / floor_stdio.sequential_per_s,
            stdio_resolve.parallel_per_s / floor_stdio.parallel_per_s,
            http_resolve.sequential_per_s / floor_http.sequential_per_s,
            http_resolve.parallel_per_s / floor_http.parallel_per_s,
        )
    };
    println!(
        "env_resolve / size-matched echo throughput (the target, >= 0.50): {}",
        ratios(&stdio_sized, &http_sized)
    );
    println!(
        "env_resolve / {}-byte echo throughput (the old figure): {}",
        echo_args["text"].as_str().map_or(0, str::len),
        ratios(&stdio_echo, &http_echo)
    );
    let cpu_ratio =
        |echo: &Figures, resolve: &Figures| match (echo.server_cpu_us, resolve.server_cpu_us) {
            (Some(e), Some(r)) => format!("{:.2}", e / r),
            _ => "n/a".to_owned(),
        };
    println!(
        "server CPU per call, size-matched echo / env_resolve (the throughput ratio a CPU-bound server can reach): stdio {}; http {}",
        cpu_ratio(&stdio_sized, &stdio_resolve),
        cpu_ratio(&http_sized, &http_resolve),
    );
}
