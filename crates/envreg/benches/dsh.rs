//! What a dsh tool call to envreg costs, measured in one run (`scripts/bench-dsh.sh`):
//!
//! 1. The bridge alone: sequential `env_resolve` calls over one `envreg dsh-bridge`
//!    process's stdio, against the baseline of a process per call (`envreg --json
//!    resolve`), which is the design the bridge replaces.
//! 2. Inside real dsh headless (dsh 0.1.0-rc.8, scripted model): `env_resolve` through
//!    the native plugin `dsh-envreg` against the same call through `dsh-mcp-client` +
//!    `envreg serve`. Per-call cost = (a run with 1 + N calls − a run with 1 call) / N,
//!    so dsh's boot and the model turns cancel out; median of a few runs each.
//!
//! Whole-process figures on the example registry, bench profile. Needs the dsh peer
//! (scripts/setup.d/16-dsh.sh) like the live tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dsh_live::{Dsh, DshHome};
use model_script::{Part, Script, ScriptedServer, Turn};
use serde_json::{Value, json};

const BRIDGE_CALLS: usize = 2000;
const PROCESS_CALLS: usize = 50;
const DSH_CALLS: usize = 20;
const DSH_REPEATS: usize = 3;

fn envreg() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_envreg"))
}

fn registry() -> PathBuf {
    test_support::repo_path("examples/registry")
}

fn resolve_args() -> Value {
    json!({"serviceId": "checkout-api", "environmentId": "staging"})
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Sequential env_resolve calls over one bridge: per-call latencies.
fn bridge_calls() -> Vec<Duration> {
    let mut child = Command::new(envreg())
        .arg("--registry")
        .arg(registry())
        .arg("dsh-bridge")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, r#"{{"id":0,"method":"hello","protocol":1}}"#).unwrap();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line}");
    let mut times = Vec::with_capacity(BRIDGE_CALLS);
    for id in 1..=BRIDGE_CALLS {
        let request = json!({"id": id, "method": "call",
            "params": {"tool": "env_resolve", "arguments": resolve_args(), "session": "bench"}});
        let start = Instant::now();
        writeln!(stdin, "{request}").unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        times.push(start.elapsed());
        assert!(line.contains("\"result\""), "{line}");
    }
    drop(stdin);
    child.wait().unwrap();
    times
}

/// The same call as a process of its own each time.
fn process_calls() -> Vec<Duration> {
    (0..PROCESS_CALLS)
        .map(|_| {
            let start = Instant::now();
            let out = Command::new(envreg())
                .arg("--registry")
                .arg(registry())
                .args(["--json", "resolve", "checkout-api", "--env", "staging"])
                .output()
                .unwrap();
            let took = start.elapsed();
            assert!(out.status.success());
            took
        })
        .collect()
}

fn report(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "{name:<44} n={:<5} mean {:>9.1} µs  p50 {:>9.1} µs  p99 {:>9.1} µs",
        times.len(),
        micros(mean),
        micros(percentile(&times, 0.5)),
        micros(percentile(&times, 0.99))
    );
    mean
}

/// One dsh run whose model makes `calls` calls of `tool` in one turn, then answers.
fn dsh_run(home: &DshHome, project: &Path, route: Route, calls: usize) -> Duration {
    let tool = match route {
        Route::Native => "env_resolve",
        Route::Mcp => "mcp__envreg__env_resolve",
    };
    let parts = (0..calls)
        .map(|i| Part::ToolCall {
            call_id: format!("b{i}"),
            name: tool.to_owned(),
            arguments: resolve_args(),
        })
        .collect();
    let server = ScriptedServer::start(Script::new(vec![
        Turn {
            parts,
            ..Turn::default()
        },
        Turn::text("done"),
    ]));
    let session = home.session(&server).cwd(project);
    let session = match route {
        Route::Native => session.row(
            "envreg",
            "dsh-envreg",
            json!({"registry": registry(), "binary": envreg()}),
        ),
        Route::Mcp => session.row(
            "envreg-mcp",
            "@deepseek-ai/dsh-mcp-client",
            json!({"transport": "stdio", "serverName": "envreg", "command": envreg(),
                   "args": ["--registry", registry(), "serve"], "failOnStartupError": true}),
        ),
    };
    let start = Instant::now();
    let run = session.run("bench");
    let took = start.elapsed();
    run.assert_ok();
    let results = dsh_live::tool_results(dsh_live::turn_requests(&server).last().unwrap());
    assert_eq!(results.len(), calls);
    assert!(
        results
            .iter()
            .all(|(_, t)| t.contains("Resolved checkout-api"))
    );
    took
}

#[derive(Clone, Copy)]
enum Route {
    Native,
    Mcp,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes --bench; nothing else is accepted.
    println!("== envreg dsh-bridge vs a process per call (env_resolve, examples/registry)");
    let bridge = report("one envreg dsh-bridge, sequential calls", bridge_calls());
    let process = report(
        "a process per call (envreg --json resolve)",
        process_calls(),
    );
    println!(
        "   a process per call costs {:.0}× a bridge call",
        process.as_secs_f64() / bridge.as_secs_f64()
    );

    println!("== inside dsh headless: env_resolve per call, {DSH_CALLS} calls in one turn vs 1");
    let home = DshHome::new(&Dsh::find());
    home.install_plugins(&["dsh-envreg"]);
    let project = home.scratch("bench");
    let mut per_call = Vec::new();
    for (route, name) in [
        (Route::Native, "native plugin dsh-envreg"),
        (Route::Mcp, "dsh-mcp-client + envreg serve"),
    ] {
        let one: Vec<Duration> = (0..DSH_REPEATS)
            .map(|_| dsh_run(&home, &project, route, 1))
            .collect();
        let many: Vec<Duration> = (0..DSH_REPEATS)
            .map(|_| dsh_run(&home, &project, route, 1 + DSH_CALLS))
            .collect();
        let (one, many) = (median(one), median(many));
        let call = many.saturating_sub(one) / DSH_CALLS as u32;
        println!(
            "{name:<44} run with 1 call {:>7.0} ms, with {} {:>7.0} ms → {:>8.0} µs per call",
            one.as_secs_f64() * 1e3,
            1 + DSH_CALLS,
            many.as_secs_f64() * 1e3,
            micros(call)
        );
        per_call.push(call);
    }
    println!(
        "   native / mcp-client per-call cost: {:.2}",
        per_call[0].as_secs_f64() / per_call[1].as_secs_f64().max(1e-9)
    );
}
