//! A scripted model server (`model-script`) as a process, for whole-process benchmarks
//! of real agent programs (`scripts/bench-agent-exec-agents.sh`).
//!
//! Serves every protocol model-script speaks (OpenAI Responses, Chat Completions,
//! Anthropic Messages) on an ephemeral loopback port. Every model request gets one
//! complete text turn, [`REPLY`], with usage — so any number of runs, wrapped or
//! direct, see the same model. With `MODEL_SCRIPT_SERVE_TOOL` set to
//! `{"name": …, "arguments": {…}}`, every run is one tool call and then [`REPLY`]: the
//! turns alternate, so each run must make exactly two model requests (runs one after
//! another, never at once). Prints `base_url=…` and `origin=…` on stdout, then runs
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
    let text = Turn::text(REPLY).with_usage(50, 5);
    let turns = match std::env::var("MODEL_SCRIPT_SERVE_TOOL") {
        Ok(tool) => {
            let tool: serde_json::Value =
                serde_json::from_str(&tool).expect("MODEL_SCRIPT_SERVE_TOOL is JSON");
            let call = Turn::tool_call(
                "call_bench",
                tool["name"]
                    .as_str()
                    .expect("MODEL_SCRIPT_SERVE_TOOL has a name"),
                tool["arguments"].clone(),
            )
            .with_usage(50, 5);
            [call, text].into_iter().cycle().take(TURNS).collect()
        }
        Err(_) => vec![text; TURNS],
    };
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
