//! An OpenAI-compatible chat server on loopback that answers every execution with the
//! same text, read from a file — for whole-process benchmarks of the `openai` backend
//! with a large answer (`scripts/bench-agent-exec-structured.sh`).
//!
//! Why not `model_script_serve`: that one hands every request the next scripted turn,
//! and the `openai` backend's `verify` sends three probes before each run (plain,
//! structured output, resume) that must be answered as probes — the structured one with
//! `{"ok":true}`, or `--output-schema` is refused. Here a request without the
//! `x-agent-exec-execution-id` header is a probe: `{"ok":true}` when it asks for a
//! `json_schema` `response_format`, `ok` otherwise; a request with it gets the file's
//! text. The streaming frames are model-script's Chat Completions rendering.
//!
//! Prints `base_url=…` on stdout, then runs until stdin closes, and prints how many
//! executions and probes it answered on stderr.
//!
//! Run: `cargo run --release -p agent-exec-backends --example openai_answer_serve -- ANSWER_FILE`.
#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use model_script::Turn;

struct Served {
    answer: String,
    executions: AtomicUsize,
    probes: AtomicUsize,
}

async fn completions(
    State(served): State<Arc<Served>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<serde_json::Value>,
) -> Response {
    let execution = headers
        .get(agent_exec_backends::openai::EXECUTION_ID_HEADER)
        .is_some_and(|v| !v.is_empty());
    if execution {
        let n = served.executions.fetch_add(1, Ordering::Relaxed);
        return model_script::chat::render(&Turn::text(&served.answer).with_usage(40, 30_000), n);
    }
    let n = served.probes.fetch_add(1, Ordering::Relaxed);
    let text = if body["response_format"]["type"] == "json_schema" {
        r#"{"ok":true}"#
    } else {
        "ok"
    };
    model_script::chat::render(&Turn::text(text).with_usage(10, 1), n)
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: openai_answer_serve ANSWER_FILE");
    let served = Arc::new(Served {
        answer: std::fs::read_to_string(&path).unwrap(),
        executions: AtomicUsize::new(0),
        probes: AtomicUsize::new(0),
    });
    let state = served.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move {
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(state);
        axum::serve(listener, app).await.unwrap();
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "base_url=http://{addr}/v1").unwrap();
    out.flush().unwrap();
    drop(out);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    eprintln!(
        "openai_answer_serve: answered {} executions and {} probes",
        served.executions.load(Ordering::Relaxed),
        served.probes.load(Ordering::Relaxed)
    );
}
