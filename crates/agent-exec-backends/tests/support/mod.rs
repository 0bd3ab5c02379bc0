//! A scripted OpenAI-compatible chat-completions server on loopback (axum, real HTTP and
//! SSE). Only the model's words are scripted; the model name picks the script:
//!
//! | model | behaviour |
//! |---|---|
//! | `echo` | streams `echo: <last user message>` in pieces, a finish reason, usage, `[DONE]` |
//! | `silent` | a finish reason, usage and `[DONE]`, no text |
//! | `reject` | HTTP 400 with an OpenAI error body |
//! | `flaky` | per execution id: first HTTP 429 (`Retry-After: 0`), then like `echo` |
//! | `down` | HTTP 503, always |
//! | `cut` | two text chunks, then the connection is aborted |
//! | `hang` | one text chunk, then nothing, forever |
//! | `garbage` | one text chunk, then a chunk that is not JSON |
//! | `leaky` | HTTP 401 whose message echoes the `Authorization` header (a careless server) |
//! | `early-cut` | the connection is aborted before any token (first request per id), then `echo` |
//! | `echo-key` | streams `key: <Authorization header>`, the header split across three chunks (a careless server) |
//! | `verbatim` | streams the last user message as it is (a scripted JSON answer), like `echo` otherwise |
//! | `no-json` | like `echo`, and its probe ignores `response_format` (a server without structured output) |
//! | `strict-roles` | like `echo`, but HTTP 400 for two messages of one role in a row, probes included (a chat template that insists on alternation) |
//!
//! Probe requests (an execution id `verify-…`; older builds sent none) succeed for every model but `reject`/`down`;
//! a probe with a `json_schema` `response_format` is answered `{"ok":true}` (but by
//! `no-json`).
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt as _;

#[derive(Debug, Clone)]
pub struct Recorded {
    pub model: String,
    pub execution_id: Option<String>,
    pub authorization: Option<String>,
    pub body: serde_json::Value,
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    seen: Mutex<HashMap<String, u32>>,
}

pub struct ScriptedServer {
    pub base_url: String,
    shared: Arc<Shared>,
}

impl ScriptedServer {
    /// Starts a server on an ephemeral loopback port, on its own thread and runtime (so
    /// it outlives any one test runtime).
    pub fn start() -> ScriptedServer {
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = axum::Router::new()
                    .route("/v1/chat/completions", post(completions))
                    .route("/v1/models", get(models))
                    .with_state(state);
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        ScriptedServer {
            base_url: format!("http://{addr}/v1"),
            shared,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Execution ids of the completion requests, in arrival order (probes excluded).
    pub fn invocations(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_probe())
            .filter_map(|r| r.execution_id)
            .collect()
    }

    /// The capability probes received, in arrival order.
    pub fn probes(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_probe)
            .collect()
    }
}

impl Recorded {
    /// Whether a capability probe sent it: its execution id is a probe's own.
    pub fn is_probe(&self) -> bool {
        self.execution_id
            .as_deref()
            .is_none_or(|id| id.starts_with("verify-"))
    }
}

async fn models() -> impl IntoResponse {
    axum::Json(serde_json::json!({"object": "list", "data": [{"id": "echo", "object": "model"}]}))
}

fn sse(data: &serde_json::Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

fn content(text: &str) -> Bytes {
    sse(&serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]
    }))
}

fn finish() -> Bytes {
    sse(&serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    }))
}

fn usage(prompt: u64, completion: u64) -> Bytes {
    sse(&serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion}
    }))
}

fn stream_response(
    chunks: impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(chunks))
        .unwrap()
}

fn error(status: StatusCode, message: &str) -> Response {
    let mut response = (
        status,
        axum::Json(serde_json::json!({"error": {"message": message, "type": "scripted"}})),
    )
        .into_response();
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert("retry-after", "0".parse().unwrap());
    }
    response
}

fn echo(prompt: &str) -> Response {
    say(&format!("echo: {prompt}"), prompt)
}

/// Streams `text` in two pieces, a finish reason, usage (from `prompt`'s words) and `[DONE]`.
fn say(text: &str, prompt: &str) -> Response {
    let text = text.to_owned();
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let words = prompt.split_whitespace().count() as u64;
    let chunks = vec![
        Ok(Bytes::from_static(b": keep-alive\n\n")),
        Ok(content(&text[..mid])),
        Ok(content(&text[mid..])),
        Ok(finish()),
        Ok(usage(words + 5, 2)),
        Ok(Bytes::from_static(b"data: [DONE]\n\n")),
    ];
    stream_response(futures::stream::iter(chunks))
}

fn abort() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted disconnect")
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<serde_json::Value>,
) -> Response {
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let execution_id = headers
        .get("x-agent-exec-execution-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    shared.requests.lock().unwrap().push(Recorded {
        model: model.clone(),
        execution_id: execution_id.clone(),
        authorization,
        body: body.clone(),
    });
    let prompt = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    if model == "strict-roles" {
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
            .unwrap_or_default();
        if roles.windows(2).any(|w| w[0] == w[1]) {
            // The words of Hugging Face chat templates that demand alternation.
            return error(
                StatusCode::BAD_REQUEST,
                "Conversation roles must alternate user/assistant/user/assistant/...",
            );
        }
    }
    let Some(id) = execution_id.filter(|id| !id.starts_with("verify-")) else {
        // A probe.
        return match model.as_str() {
            "reject" => error(StatusCode::BAD_REQUEST, "model refuses"),
            "down" => error(StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            "no-json" => echo(&prompt),
            _ if body["response_format"]["type"] == "json_schema" => say(r#"{"ok":true}"#, &prompt),
            _ => echo(&prompt),
        };
    };
    let nth = {
        let mut seen = shared.seen.lock().unwrap();
        let n = seen.entry(id).or_default();
        *n += 1;
        *n
    };
    match model.as_str() {
        "echo" | "no-json" | "strict-roles" => echo(&prompt),
        "verbatim" => say(&prompt, &prompt),
        "silent" => stream_response(futures::stream::iter(vec![
            Ok(finish()),
            Ok(usage(3, 0)),
            Ok(Bytes::from_static(b"data: [DONE]\n\n")),
        ])),
        "reject" => error(StatusCode::BAD_REQUEST, "model refuses"),
        "down" => error(StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        "leaky" => {
            let seen = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            error(StatusCode::UNAUTHORIZED, &format!("invalid key: {seen}"))
        }
        "flaky" if nth == 1 => error(StatusCode::TOO_MANY_REQUESTS, "slow down"),
        "flaky" => echo(&prompt),
        "early-cut" if nth == 1 => stream_response(futures::stream::iter(vec![
            Ok(Bytes::from_static(b": keep-alive\n\n")),
            Err(abort()),
        ])),
        "early-cut" => echo(&prompt),
        "echo-key" => {
            let seen = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            let (a, rest) = seen.split_at(seen.len().min(10));
            let (b, c) = rest.split_at(rest.len() / 2);
            stream_response(futures::stream::iter(vec![
                Ok(content("key: ")),
                Ok(content(a)),
                Ok(content(b)),
                Ok(content(c)),
                Ok(content(" ok")),
                Ok(finish()),
                Ok(usage(3, 4)),
                Ok(Bytes::from_static(b"data: [DONE]\n\n")),
            ]))
        }
        "cut" => stream_response(
            futures::stream::iter(vec![Ok(content("half ")), Ok(content("a reply"))]).chain(
                futures::stream::once(async {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    Err(abort())
                }),
            ),
        ),
        "hang" => stream_response(
            futures::stream::iter(vec![Ok(content("thinking"))]).chain(futures::stream::pending()),
        ),
        "garbage" => stream_response(futures::stream::iter(vec![
            Ok(content("fine so far")),
            Ok(Bytes::from_static(b"data: {not json\n\n")),
        ])),
        _ => error(StatusCode::NOT_FOUND, "no such model"),
    }
}
