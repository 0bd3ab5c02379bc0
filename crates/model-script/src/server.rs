//! The loopback HTTP server: routes, the turn counter, the request log.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::{EXHAUSTED_TEXT, Script, Turn};

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path, e.g. `/v1/responses`.
    pub path: String,
    /// The `authorization` header, else Gemini's `x-goog-api-key`, if any (to check
    /// what a client sent; tests only).
    pub authorization: Option<String>,
    /// The JSON body (`null` when it was not JSON).
    pub body: serde_json::Value,
    /// When it arrived: the gaps between a client's requests time its own steps
    /// (benchmarks only; tests assert no timing).
    pub received: std::time::Instant,
}

#[derive(Default)]
struct Shared {
    script: Mutex<Vec<Turn>>,
    served: Mutex<usize>,
    exhausted: Mutex<usize>,
    requests: Mutex<Vec<Recorded>>,
}

/// A scripted model server on an ephemeral loopback port. It serves:
///
/// * `POST /v1/responses` — [`crate::responses`];
/// * `POST /v1/chat/completions` — [`crate::chat`] (dsh's title requests answered without a turn);
/// * `POST /v1/messages` — [`crate::anthropic`] (side requests answered without a turn);
/// * `POST /v1beta/models/MODEL:streamGenerateContent` — [`crate::gemini`] (its
///   `:generateContent` and `:countTokens` side requests answered without a turn);
/// * `GET /v1/models` — a one-model list (`scripted`).
///
/// Stops when the process exits (its thread is detached).
pub struct ScriptedServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// `http://127.0.0.1:PORT` (Anthropic clients append `/v1/messages` themselves,
    /// Gemini's `GOOGLE_GEMINI_BASE_URL` is this and it appends `/v1beta/models/…`).
    pub origin: String,
    shared: Arc<Shared>,
}

impl ScriptedServer {
    /// Starts serving `script` on its own thread and runtime.
    pub fn start(script: Script) -> ScriptedServer {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.turns),
            ..Shared::default()
        });
        let state = shared.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("model-script: cannot build its runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("model-script: cannot bind a loopback port");
                // The receiver waits in `start`; if it is gone there is nobody to serve.
                let Ok(addr) = listener.local_addr() else {
                    return;
                };
                if tx.send(addr).is_err() {
                    return;
                }
                let app = axum::Router::new()
                    .route("/v1/responses", post(responses))
                    .route("/v1/chat/completions", post(chat))
                    .route("/v1/messages", post(messages))
                    .route("/v1/messages/count_tokens", post(count_tokens))
                    .route("/v1/models", get(models))
                    .route("/v1beta/models/{action}", post(gemini))
                    .fallback(fallback)
                    .with_state(state);
                if let Err(e) = axum::serve(listener, app).await {
                    eprintln!("model-script: server stopped: {e}");
                }
            });
        });
        let addr = rx
            .recv()
            .expect("model-script: the server thread died before listening");
        ScriptedServer {
            base_url: format!("http://{addr}/v1"),
            origin: format!("http://{addr}"),
            shared,
        }
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// How many scripted turns have been served.
    pub fn turns_served(&self) -> usize {
        *lock(&self.shared.served)
    }

    /// How many requests came after the script ran out.
    pub fn requests_past_script(&self) -> usize {
        *lock(&self.shared.exhausted)
    }
}

/// Locks `mutex`, going on after a panic elsewhere (the data is plain records and
/// counters, still meaningful).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    fn record(&self, path: &str, headers: &HeaderMap, body: &[u8]) {
        let authorization = headers
            .get("authorization")
            .or_else(|| headers.get("x-goog-api-key"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        lock(&self.requests).push(Recorded {
            path: path.to_owned(),
            authorization,
            body,
            received: std::time::Instant::now(),
        });
    }

    /// The next turn and its number (1-based).
    fn next_turn(&self) -> (Turn, usize) {
        let mut served = lock(&self.served);
        let mut script = lock(&self.script);
        if script.is_empty() {
            *lock(&self.exhausted) += 1;
            return (Turn::text(EXHAUSTED_TEXT), *served + 1000);
        }
        *served += 1;
        (script.remove(0), *served)
    }
}

async fn responses(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.record("/v1/responses", &headers, &body);
    let (turn, n) = shared.next_turn();
    crate::responses::render(&turn, n)
}

async fn chat(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.record("/v1/chat/completions", &headers, &body);
    let request: serde_json::Value =
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    if crate::chat::is_side_request(&request) {
        return crate::chat::side_reply();
    }
    let (turn, n) = shared.next_turn();
    crate::chat::render(&turn, n)
}

async fn messages(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.record("/v1/messages", &headers, &body);
    let request: serde_json::Value =
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    if crate::anthropic::is_side_request(&request) {
        return crate::anthropic::side_reply(&request);
    }
    let (turn, n) = shared.next_turn();
    crate::anthropic::render(&turn, n)
}

async fn gemini(
    State(shared): State<Arc<Shared>>,
    axum::extract::Path(action): axum::extract::Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.record(uri.path(), &headers, &body);
    match crate::gemini::action(&action) {
        crate::gemini::Action::Stream { model } => {
            let (turn, _) = shared.next_turn();
            crate::gemini::render(&turn, &model)
        }
        crate::gemini::Action::Side { action } => crate::gemini::side_reply(&action),
    }
}

async fn count_tokens() -> impl IntoResponse {
    axum::Json(serde_json::json!({"input_tokens": 10}))
}

async fn models() -> impl IntoResponse {
    axum::Json(serde_json::json!({
        "object": "list",
        "data": [{"id": "scripted", "object": "model", "owned_by": "model-script"}],
        "models": []
    }))
}

async fn fallback(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.record(uri.path(), &headers, &body);
    (
        axum::http::StatusCode::NOT_FOUND,
        "model-script: no such route",
    )
        .into_response()
}
