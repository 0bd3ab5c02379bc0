//! A scripted model server (`model-script`) as a process, for whole-process benchmarks
//! of real agent programs (`scripts/bench-agent-exec-agents.sh`).
//!
//! Serves every protocol model-script speaks (OpenAI Responses, Chat Completions,
//! Anthropic Messages) on an ephemeral loopback port. Every model request gets one
//! complete text turn, [`REPLY`], with usage — so any number of runs, wrapped or
//! direct, see the same model. Prints `base_url=…` and `origin=…` on stdout, then runs
//! until stdin closes, and prints how many requests it answered on stderr.
//!
//! Run: `cargo run --release -p agent-exec-backends --example model_script_serve`.
#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};

use model_script::{Script, ScriptedServer, Turn};

/// What the model says, every time.
const REPLY: &str = "bench: done";

/// Turns in the script: far more than any benchmark makes requests.
const TURNS: usize = 100_000;

fn main() {
    let turns = vec![Turn::text(REPLY).with_usage(50, 5); TURNS];
    let server = ScriptedServer::start(Script::new(turns));
    let mut out = std::io::stdout().lock();
    writeln!(out, "base_url={}", server.base_url).unwrap();
    writeln!(out, "origin={}", server.origin).unwrap();
    out.flush().unwrap();
    drop(out);
    // Until the benchmark closes our stdin.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    eprintln!(
        "model_script_serve: answered {} model requests ({} past the script)",
        server.turns_served(),
        server.requests_past_script()
    );
}
