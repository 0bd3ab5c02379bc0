//! Overhead of the `command` backend over spawning the same program directly, same
//! run, interleaved: `sh -c cat` with a prompt on stdin, text read from stdout.
//!
//! Three columns: direct (tokio `Command`, stdin write, stdout read, wait); the
//! backend's `execute` (own process group, marker, tree sweep at exit, events);
//! and the full `Runtime::run` (adds workspace snapshots and settling).
//!
//! Run: `scripts/bench-agent-exec-cancel.sh`, or
//! `cargo run --release -p agent-exec-backends --example command_overhead`
//! (`BENCH_N` iterations, default 200).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_exec_backends::command::{CommandBackend, CommandConfig};
use agent_exec_contract::*;
use agent_exec_runtime::{RunOptions, Runtime};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const PROMPT: &str = "hello from the benchmark";

async fn direct(dir: &std::path::Path) -> String {
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", "cat"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(PROMPT.as_bytes()).await.unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    child.wait().await.unwrap();
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    agent_exec_runtime::become_subreaper().unwrap();
    let n: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let ws = tempfile::tempdir().unwrap();
    let backend = CommandBackend::new(CommandConfig::new(
        "bench",
        vec!["sh".into(), "-c".into(), "cat".into()],
    ));
    let mut registry = Registry::new();
    registry.register(Arc::new(backend.clone())).unwrap();
    let resolved = registry
        .resolve("bench", &[Capability::Text])
        .await
        .unwrap();
    let runtime = Runtime::new();
    let request = ContractRequest {
        execution_id: "bench".into(),
        prompt: PROMPT.into(),
        workspace: WorkspaceHandle {
            root: ws.path().display().to_string(),
            writable: vec![],
        },
        ..Default::default()
    };
    let (mut d, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        assert_eq!(direct(ws.path()).await, PROMPT);
        d.push(t.elapsed());

        let t = Instant::now();
        let result = backend
            .execute(&request, ExecutionContext::new(EventSink::discard()))
            .await;
        b.push(t.elapsed());
        assert_eq!(result.text, PROMPT, "{result:?}");

        let t = Instant::now();
        let result = runtime
            .run(request.clone(), &resolved, RunOptions::default())
            .await;
        r.push(t.elapsed());
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    }
    let ms = |x: Duration| x.as_secs_f64() * 1e3;
    let (md, mb, mr) = (median(d), median(b), median(r));
    println!("n={n}  median direct spawn          {:>7.3} ms", ms(md));
    println!(
        "n={n}  median CommandBackend::execute {:>7.3} ms  (+{:.3} ms, x{:.2})",
        ms(mb),
        ms(mb) - ms(md),
        ms(mb) / ms(md)
    );
    println!(
        "n={n}  median Runtime::run (command)  {:>7.3} ms  (+{:.3} ms, x{:.2})",
        ms(mr),
        ms(mr) - ms(md),
        ms(mr) / ms(md)
    );
    let added = mr.saturating_sub(md);
    println!(
        "target: <= 10 ms added at the median: {}",
        if added <= Duration::from_millis(10) {
            "met"
        } else {
            "NOT met"
        }
    );
}
