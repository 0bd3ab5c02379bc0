//! Cancel → whole tree reaped, for a tree that honours SIGTERM (a leader `sh`, a
//! `sleep`, and a nested `sh` with its own `sleep`: four processes).
//!
//! Not a criterion bench: the figure asked for is a p99, which criterion does not
//! report. Prints p50/p90/p99/max of `ProcessTree::terminate` (SIGTERM to group and
//! every member found in /proc, wait until all are gone, verified by a final scan),
//! and, measured in the same run, the baseline a naive cancel would take (killpg
//! SIGTERM + wait for the leader only, which confirms nothing about grandchildren).
//!
//! Run: `scripts/bench-agent-exec-cancel.sh` (or `cargo bench -p agent-exec-runtime
//! --bench cancel_tree`; `BENCH_N` cycles, default 300).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use agent_exec_runtime::process::{ProcessTree, become_subreaper};

const TREE: &str = "sleep 1000 & sh -c 'sleep 1000 & wait' & wait";

fn spawn() -> ProcessTree {
    let mut command = agent_exec_runtime::spawn::LeaderCommand::new("sh");
    command
        .arg("-c")
        .arg(TREE)
        .stdin(agent_exec_runtime::spawn::Stdio::null());
    ProcessTree::spawn(command).unwrap()
}

async fn formed(tree: &mut ProcessTree) {
    while tree.live_members().len() < 4 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn percentiles(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<44} n={:<4} p50={:>7.3} ms  p90={:>7.3} ms  p99={:>7.3} ms  max={:>7.3} ms",
        samples.len(),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(at(0.99)),
        ms(samples[samples.len() - 1])
    );
    at(0.99)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    become_subreaper().unwrap();
    let n: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut ours = Vec::with_capacity(n);
    let mut naive = Vec::with_capacity(n);
    let mut scans = Vec::with_capacity(n);
    for _ in 0..n {
        // Ours: the whole tree, confirmed gone.
        let mut tree = spawn();
        formed(&mut tree).await;
        let start = Instant::now();
        tree.live_members();
        scans.push(start.elapsed());
        let start = Instant::now();
        let done = tree.terminate(Duration::from_secs(2)).await;
        ours.push(start.elapsed());
        assert!(done.all_gone() && !done.killed, "{done:?}");

        // Baseline: signal the group, wait for the leader only.
        let mut tree = spawn();
        formed(&mut tree).await;
        let pgid = nix::unistd::Pid::from_raw(tree.leader_pid());
        let start = Instant::now();
        nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM).unwrap();
        tree.wait_leader().await.unwrap();
        naive.push(start.elapsed());
        tree.terminate(Duration::from_secs(2)).await; // cleanup, untimed
    }
    percentiles("one full /proc scan (part of terminate)", scans);
    let p99 = percentiles("terminate(): whole tree confirmed reaped", ours);
    let base = percentiles("baseline: killpg(TERM) + wait leader only", naive);
    println!(
        "p99 ratio ours/baseline = {:.2}; target p99 <= 50 ms: {}",
        p99.as_secs_f64() / base.as_secs_f64().max(1e-9),
        if p99 <= Duration::from_millis(50) {
            "met"
        } else {
            "NOT met"
        }
    );
}
