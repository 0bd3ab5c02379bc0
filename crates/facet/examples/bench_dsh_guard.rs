//! The dsh-facet guard's cost per judged call, against a dsh step with the guard off.
//! Run by `scripts/bench-dsh-facet.sh` (outside the test gate); needs the dsh peer.
//!
//! Real dsh headless, its model scripted on loopback, runs N `read` calls of a file
//! inside the facet (each judged and allowed) with the dsh-facet row and without it,
//! interleaved for R rounds. A step is the gap between two of dsh's model requests:
//! it runs the tool call (with the guard: one `judge` round trip to `facet
//! dsh-bridge`) and assembles the next request (with the guard: one `context` round
//! trip). Boot time is left out. Medians of every step of every round.
//!
//!   bench_dsh_guard FACET_BINARY [N=40] [ROUNDS=3]

use std::time::{Duration, Instant};

use dsh_live::{Dsh, DshHome};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(facet) = args
        .next()
        .and_then(|path| std::fs::canonicalize(path).ok())
    else {
        eprintln!("usage: bench_dsh_guard FACET_BINARY [N] [ROUNDS] (an existing facet binary)");
        std::process::exit(2);
    };
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(40);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);

    let dsh = Dsh::find();
    let home = DshHome::new(&dsh);
    home.install_plugins(&["dsh-facet"]);
    let project = home.scratch("proj");
    for dir in [".git", "sub"] {
        std::fs::create_dir_all(project.join(dir)).expect("project folders");
    }
    std::fs::write(project.join("sub/in.txt"), "inside\n").expect("a file");
    let state = home.scratch("state");

    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut wall = [Duration::ZERO; 2];
    for round in 0..rounds {
        for guarded in [false, true] {
            let mut turns: Vec<Turn> = (0..n)
                .map(|k| Turn::tool_call(format!("c{k}"), "read", json!({"file_path": "in.txt"})))
                .collect();
            turns.push(Turn::text("done"));
            let server = ScriptedServer::start(Script::new(turns));
            let mut session = home
                .session(&server)
                .cwd(project.join("sub"))
                .env("FACET_STATE_DIR", &state);
            if guarded {
                session = session.row(
                    "facet",
                    "dsh-facet",
                    json!({"mode": "ask", "binary": facet}),
                );
            }
            let started = Instant::now();
            let run = session.run("read it");
            wall[usize::from(guarded)] += started.elapsed();
            run.assert_ok();
            let times: Vec<Instant> = server
                .requests()
                .into_iter()
                .filter(|r| r.path.ends_with("/chat/completions"))
                .filter(|r| !model_script::chat::is_side_request(&r.body))
                .map(|r| r.received)
                .collect();
            assert_eq!(times.len(), n + 1, "one request per scripted turn");
            let steps = times.windows(2).map(|pair| pair[1] - pair[0]);
            if guarded {
                on.extend(steps)
            } else {
                off.extend(steps)
            }
            eprintln!(
                "round {}: guard {}",
                round + 1,
                if guarded { "on" } else { "off" }
            );
        }
    }
    let (off_median, on_median) = (median(&mut off), median(&mut on));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "steps measured: {} per side ({n} judged reads x {rounds} rounds)",
        off.len()
    );
    println!(
        "dsh step, guard off (no dsh-facet row): median {:.2} ms",
        ms(off_median)
    );
    println!(
        "dsh step, guard on  (dsh-facet, mode ask): median {:.2} ms",
        ms(on_median)
    );
    println!(
        "guard cost per judged call: {:.2} ms ({:.2}x a step with the guard off)",
        ms(on_median) - ms(off_median),
        ms(on_median) / ms(off_median)
    );
    println!(
        "whole runs (boot included), mean: off {:.0} ms, on {:.0} ms",
        ms(wall[0]) / rounds as f64,
        ms(wall[1]) / rounds as f64
    );
    // The guard's own part of a step, without dsh's noise around it: the same two
    // round trips the plugin makes per judged call (`judge`, then `context` for the
    // next request), over the bridge's pipes, in this run.
    let mut pairs = bridge_round_trips(&facet, &project.join("sub"), &state, 500);
    let pair = median(&mut pairs);
    println!(
        "bridge round trips judge+context over pipes: median {:.3} ms ({} pairs; {:.1}% of a step with the guard off)",
        ms(pair),
        pairs.len(),
        100.0 * ms(pair) / ms(off_median)
    );
}

fn bridge_round_trips(
    facet: &std::path::Path,
    cwd: &std::path::Path,
    state: &std::path::Path,
    n: usize,
) -> Vec<Duration> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = std::process::Command::new(facet)
        .arg("dsh-bridge")
        .env("FACET_STATE_DIR", state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("facet dsh-bridge starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut ask = |request: serde_json::Value| {
        writeln!(stdin, "{request}").expect("a request is written");
        line.clear();
        stdout.read_line(&mut line).expect("an answer is read");
        assert!(line.contains("result"), "{line}");
    };
    ask(json!({"id": 0, "method": "configure", "params": {"config": {"mode": "ask"}}}));
    let caller =
        json!({"session": "bench", "cwd": cwd, "approval": {"service": true, "policy": "ask"}});
    let mut judge = caller.clone();
    judge["tool"] = json!("read");
    judge["callId"] = json!("c");
    judge["arguments"] = json!({"file_path": "in.txt"});
    let mut times = Vec::with_capacity(n);
    for id in 1..=n as u64 {
        let started = Instant::now();
        ask(json!({"id": 2 * id, "method": "judge", "params": judge}));
        ask(json!({"id": 2 * id + 1, "method": "context", "params": caller}));
        times.push(started.elapsed());
    }
    drop(stdin); // EOF: the bridge exits
    let _ = child.wait();
    times
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}
