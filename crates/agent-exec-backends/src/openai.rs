//! The `openai` backend: any OpenAI-compatible streaming chat-completions API (OpenAI,
//! DeepSeek, vLLM, llama.cpp server, ...).
//!
//! * `POST {base_url}/chat/completions` with `stream: true` and
//!   `stream_options.include_usage` (so the last chunk carries usage); the instructions
//!   become a `system` message, the request's context its history, the prompt the last
//!   `user` message; `budget.max_completion_tokens` becomes `max_tokens`.
//! * The API key is read, at each execution, from the environment variable the config
//!   names (`api_key_env`); it goes only into the `Authorization` header. It never appears
//!   in a result, an event, a log line or an error: reqwest errors are stripped of their
//!   URL and every message passes through [`OpenAiBackend::redact`].
//! * The stream is decoded by [`crate::sse`]; each delta is an event, in order.
//!
//! Outcomes: a complete stream (`[DONE]`, or a finish reason then a clean close) is
//! `succeeded` (`content_filter` is `failed`, `agent.provider_rejected`); HTTP 4xx is
//! `failed` (`agent.provider_rejected`); a stream that breaks or turns to garbage after
//! the first token is `unknown` (`agent.unknown_outcome`, side effects `possible`) —
//! never `succeeded`; a cancel drops the request, which closes the connection, and is
//! `canceled` (side effects `none`: the API acts on nothing but our request).
//!
//! Resume (`resume`): the API is stateless and this backend runs no tools, so the
//! whole "session" is the message list we send, and every part of it but the
//! continuation is in the journaled request. Each attempt reports the fixed handle
//! [`SESSION_HANDLE`] before it sends; a resumed attempt sends `[system, context…,
//! user: original prompt, user: continuation prompt]` (the continuation left out when
//! empty). Decisions: no server-side state (a response id would tie resume to a server
//! that may have forgotten it); no `assistant` turn for the interrupted attempt — its
//! partial answer never became a result, isn't journaled, and writing one would put
//! words in the model's mouth; a handle that is not ours is refused before anything is
//! sent. The probe proves it with a request of exactly that two-user-message shape
//! (a server whose chat template insists on strict user/assistant alternation refuses
//! it, and then does not verify `resume`).
//!
//! Probes cost: each is a real completion. [`Backend::probe`] always sends the base
//! probe (one token: the server is there, knows the model, streams, reports usage)
//! and the `structured-output` and `resume` probes only when asked for them (a run
//! that requires them, or `agent-exec backends --verify`). Every probe request
//! carries the probe's own execution id (`verify-…`) and its tokens are reported.
//! [`Backend::verification_key`] is this adapter's version and a hash of the
//! endpoint, model and settings, so a cached verification stands in for the probes
//! until one of them changes.
//!
//! Retries (invariant 3, the adapter's layer): connection errors, 408, 429 and 5xx, and a
//! stream that fails before its first token, are retried at most `max_retries` times
//! with exponential backoff (or the server's `Retry-After`, capped), always under the
//! caller's cancellation and deadline. Nothing is retried after the first token: the
//! caller has already seen events from that attempt.

use std::collections::BTreeMap;
use std::time::Duration;

use agent_exec_contract::{
    Backend, BackendDescriptor, Capability, ContractRequest, ContractResult, Error, ErrorCode,
    Event, EventKind, ExecutionContext, Outcome, Probe, ProbeRequest, ResumeFrom, SideEffects,
    Usage, Verification,
};
use agent_exec_runtime::cause_code;
use serde::Deserialize;

use crate::output::bounded;
use crate::redact::StreamRedactor;
use crate::sse::{self, StreamError};

/// The kind name in config (`kind = "openai"`).
pub const KIND: &str = "openai";

/// Header carrying the execution id, for the server's logs and idempotency.
pub const EXECUTION_ID_HEADER: &str = "x-agent-exec-execution-id";

/// The session handle every attempt reports: "the conversation is the journaled
/// request". Versioned so that a later message layout can tell old handles apart.
pub const SESSION_HANDLE: &str = "openai-conversation-v1";

/// The most a single response may stream before it is cut (a runaway server).
const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// How much of an error response body is read (the message is cut to 300 bytes anyway).
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// An `openai` backend's configuration (a `[backends.NAME]` table with `kind = "openai"`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Backend name (the config key); not part of the table.
    #[serde(skip)]
    pub name: String,
    /// API root including its version segment, e.g. `https://api.deepseek.com/v1` or
    /// `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Model id sent with every request.
    pub model: String,
    /// Name of the environment variable holding the API key; absent for servers that
    /// need none (a local llama.cpp).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Transport retries before the first token.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// First backoff step in milliseconds (doubled each retry, capped at 8 s).
    #[serde(default = "default_retry_base_ms")]
    pub retry_base_ms: u64,
    /// Connection timeout in milliseconds.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Ask for usage in the stream (`stream_options.include_usage`); turn off only for
    /// servers that reject the field.
    #[serde(default = "default_true")]
    pub include_usage: bool,
    #[serde(default)]
    pub temperature: Option<f64>,
    /// `max_tokens` when the request's budget sets none.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

fn default_max_retries() -> u32 {
    2
}
fn default_retry_base_ms() -> u64 {
    500
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_true() -> bool {
    true
}

impl OpenAiConfig {
    /// A config with defaults for everything but name, base URL and model.
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        OpenAiConfig {
            name: name.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            max_retries: default_max_retries(),
            retry_base_ms: default_retry_base_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            include_usage: true,
            temperature: None,
            max_tokens: None,
        }
    }
}

/// The backend. Holds its configuration and an HTTP connection pool (stateless across
/// executions, as the contract allows).
#[derive(Debug, Clone)]
pub struct OpenAiBackend {
    config: OpenAiConfig,
    client: Result<reqwest::Client, ClientUnbuilt>,
}

/// The HTTP client could not be built (no TLS backend, …): every call fails with it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
struct ClientUnbuilt(std::sync::Arc<reqwest::Error>);

/// The configured key variable holds no key. Names the variable, never a value.
#[derive(Debug, thiserror::Error)]
#[error(
    "backend `{backend}`: the API key variable ${var} is not set or empty; hint: export {var}=…"
)]
struct MissingApiKey {
    backend: String,
    var: String,
}

/// Why a capability probe (structured output, resume) proved nothing; said in the
/// verification's problems, redacted.
#[derive(Debug, thiserror::Error)]
enum ProbeFailed {
    #[error("the probe timed out after 60 s")]
    TimedOut,
    /// The exchange failed before an answer (the transport's or server's reason).
    #[error("{0}")]
    Transient(String),
    #[error("the server did not complete a request with response_format: {0}")]
    NoStructuredAnswer(String),
    /// The probe's own schema did not compile (the runtime's reason).
    #[error("{0}")]
    Schema(String),
    #[error(
        "the server accepted response_format but did not honour it ({why}; it answered {answer:?})"
    )]
    NotHonoured { why: String, answer: String },
    #[error(
        "the server did not complete a conversation of two user messages (what a resumed attempt sends): {0}"
    )]
    NoResumedAnswer(String),
}

/// Why an attempt at the HTTP exchange did not produce a usable stream.
enum Exchange {
    /// Worth another try (before the first token), after at least this long.
    Transient {
        reason: String,
        wait: Option<Duration>,
    },
    /// Final.
    Done(ContractResult),
}

impl OpenAiBackend {
    pub fn new(config: OpenAiConfig) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
            .build()
            .map_err(|e| ClientUnbuilt(std::sync::Arc::new(e.without_url())));
        OpenAiBackend { config, client }
    }

    fn declared() -> Vec<Capability> {
        vec![
            Capability::Text,
            Capability::Stream,
            Capability::Usage,
            Capability::Cancel,
            Capability::Resume,
            Capability::StructuredOutput,
        ]
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}/{path}", self.config.base_url.trim_end_matches('/'))
    }

    /// The key, or why there is none. The message names the variable, never a value.
    fn api_key(&self) -> Result<Option<String>, MissingApiKey> {
        let Some(var) = &self.config.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_owned())),
            _ => Err(MissingApiKey {
                backend: self.config.name.clone(),
                var: var.clone(),
            }),
        }
    }

    /// The values no output may show: the API key, and every credential-named variable
    /// of this process (the rule the agent backends use).
    fn secret_values(&self) -> Vec<String> {
        let mut values = crate::redact::credential_values(&BTreeMap::new());
        if let Ok(Some(key)) = self.api_key() {
            values.push(key);
        }
        values
    }

    /// Removes the API key (should a server echo it), every other credential this
    /// process holds, and URL credentials from `text` — the same values the stream
    /// redactor hides from the model's text.
    pub fn redact(&self, text: &str) -> String {
        StreamRedactor::of_values(self.secret_values()).redact_whole(text)
    }

    /// The request body. With `resume`, `request.prompt` is the continuation and the
    /// original prompt comes from the journal (see the module docs for the layout).
    fn body(&self, request: &ContractRequest, resume: Option<&ResumeFrom>) -> serde_json::Value {
        let mut messages = Vec::new();
        if !request.instructions.is_empty() {
            messages.push(serde_json::json!({"role": "system", "content": request.instructions}));
        }
        for m in &request.context {
            messages.push(serde_json::json!({"role": m.role, "content": m.content}));
        }
        match resume {
            Some(from) => {
                messages.push(serde_json::json!({"role": "user", "content": from.original_prompt}));
                if !request.prompt.is_empty() {
                    messages.push(serde_json::json!({"role": "user", "content": request.prompt}));
                }
            }
            None => messages.push(serde_json::json!({"role": "user", "content": request.prompt})),
        }
        let mut body = serde_json::json!({
            "model": self.config.model,
            "messages": messages,
            "stream": true,
        });
        if self.config.include_usage {
            body["stream_options"] = serde_json::json!({"include_usage": true});
        }
        let max_tokens = match request.budget.max_completion_tokens {
            0 => self.config.max_tokens,
            n => Some(self.config.max_tokens.map_or(n, |m| m.min(n))),
        };
        if let Some(n) = max_tokens {
            body["max_tokens"] = serde_json::json!(n);
        }
        if let Some(t) = self.config.temperature {
            body["temperature"] = serde_json::json!(t);
        }
        if let Some(schema) = &request.output_schema {
            // OpenAI's structured outputs. Decision: no `"strict": true` — strict mode
            // refuses schemas that leave `additionalProperties` open or fields optional,
            // which are valid JSON Schema; the runtime validates the answer either way.
            body["response_format"] = serde_json::json!({
                "type": "json_schema",
                "json_schema": {"name": "agent_exec_output", "schema": schema},
            });
        }
        body
    }

    /// The structured-output probe: a completion with a `json_schema` `response_format`
    /// asking for `{"ok": true}` (about ten tokens). Verified only when the server
    /// accepted it *and* the answer is JSON of that schema — a server that ignores
    /// `response_format` answers in prose and verifies nothing.
    async fn probe_structured(
        &self,
        client: &reqwest::Client,
        key: Option<&str>,
        execution_id: &str,
    ) -> (Result<(), ProbeFailed>, Usage) {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": false
        });
        let probe = ContractRequest {
            execution_id: execution_id.to_owned(),
            prompt: r#"Reply with the JSON object {"ok": true} and nothing else."#.into(),
            budget: agent_exec_contract::ContractBudget {
                max_completion_tokens: 20,
                ..Default::default()
            },
            output_schema: Some(schema.clone()),
            ..Default::default()
        };
        let ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
        let mut log = Vec::new();
        let exchange = tokio::time::timeout(
            Duration::from_secs(60),
            self.exchange(client, key, &probe, &ctx, &mut log),
        )
        .await;
        let result = match exchange {
            Err(_) => return (Err(ProbeFailed::TimedOut), Usage::default()),
            Ok(Exchange::Transient { reason, .. }) => {
                return (Err(ProbeFailed::Transient(reason)), Usage::default());
            }
            Ok(Exchange::Done(result)) => result,
        };
        let usage = result.usage;
        if result.outcome != Outcome::Succeeded {
            return (
                Err(ProbeFailed::NoStructuredAnswer(
                    result.err.map(|e| e.reason).unwrap_or_default(),
                )),
                usage,
            );
        }
        let verdict = agent_exec_runtime::structured::check_schema(&schema)
            .map_err(|why| ProbeFailed::Schema(why.to_string()))
            .and_then(|checker| {
                checker
                    .check_text(&result.text)
                    .map_err(|why| ProbeFailed::NotHonoured {
                        why: why.to_string(),
                        answer: bounded(&result.text, 80),
                    })
            });
        (verdict, usage)
    }

    /// The resume probe: a one-token completion of the exact layout a resumed attempt
    /// sends (the original prompt, then the continuation, two `user` messages). For a
    /// stateless API that is the whole of resume — nothing is kept on the server — so a
    /// server that completes it completes a resumed request.
    async fn probe_resume(
        &self,
        client: &reqwest::Client,
        key: Option<&str>,
        execution_id: &str,
    ) -> (Result<(), ProbeFailed>, Usage) {
        let probe = ContractRequest {
            execution_id: execution_id.to_owned(),
            prompt: "Once more: reply with the word ok.".into(),
            budget: agent_exec_contract::ContractBudget {
                max_completion_tokens: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
        ctx.resume = Some(ResumeFrom {
            session: SESSION_HANDLE.into(),
            attempt: 1,
            original_prompt: "Reply with the word ok.".into(),
        });
        let mut log = Vec::new();
        let exchange = tokio::time::timeout(
            Duration::from_secs(60),
            self.exchange(client, key, &probe, &ctx, &mut log),
        )
        .await;
        match exchange {
            Err(_) => (Err(ProbeFailed::TimedOut), Usage::default()),
            Ok(Exchange::Transient { reason, .. }) => {
                (Err(ProbeFailed::Transient(reason)), Usage::default())
            }
            Ok(Exchange::Done(result)) if result.outcome == Outcome::Succeeded => {
                (Ok(()), result.usage)
            }
            Ok(Exchange::Done(result)) => (
                Err(ProbeFailed::NoResumedAnswer(
                    result.err.map(|e| e.reason).unwrap_or_default(),
                )),
                result.usage,
            ),
        }
    }

    fn backoff(&self, retry: u32) -> Duration {
        let step = self
            .config
            .retry_base_ms
            .saturating_mul(1u64 << retry.min(16).saturating_sub(1));
        Duration::from_millis(step.min(8_000))
    }

    /// One HTTP exchange: send, check the status, decode the stream.
    async fn exchange(
        &self,
        client: &reqwest::Client,
        key: Option<&str>,
        request: &ContractRequest,
        ctx: &ExecutionContext,
        log: &mut Vec<String>,
    ) -> Exchange {
        let mut http = client
            .post(self.endpoint("chat/completions"))
            .header(EXECUTION_ID_HEADER, &request.execution_id)
            .json(&self.body(request, ctx.resume.as_ref()));
        if let Some(key) = key {
            http = http.bearer_auth(key);
        }
        let response = match http.send().await {
            Ok(response) => response,
            Err(e) if e.is_builder() => {
                return Exchange::Done(failed(
                    ErrorCode::ProviderUnavailable,
                    self.redact(&format!(
                        "backend `{}`: bad request to {}: {}",
                        self.config.name,
                        self.config.base_url,
                        e.without_url()
                    )),
                    false,
                ));
            }
            Err(e) => {
                return Exchange::Transient {
                    reason: self.redact(&format!(
                        "request failed: {}",
                        error_chain(&e.without_url())
                    )),
                    wait: None,
                };
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
            let text = read_capped(response, ERROR_BODY_LIMIT).await;
            let message = server_message(&text);
            let reason = self.redact(&format!(
                "HTTP {} from {}: {}",
                status.as_u16(),
                self.config.base_url,
                message
            ));
            let transient =
                status.as_u16() == 408 || status.as_u16() == 429 || status.is_server_error();
            if transient {
                return Exchange::Transient {
                    reason,
                    wait: retry_after,
                };
            }
            let hint = if matches!(status.as_u16(), 401 | 403) {
                match &self.config.api_key_env {
                    Some(var) => format!("; hint: check the key in ${var}"),
                    None => "; hint: set api_key_env for this backend".to_owned(),
                }
            } else {
                String::new()
            };
            return Exchange::Done(failed(
                ErrorCode::ProviderRejected,
                format!("{reason}{hint}"),
                false,
            ));
        }

        log.push(format!(
            "HTTP {} from {}",
            status.as_u16(),
            self.config.base_url
        ));
        let events = ctx.events.clone();
        // A server that echoes the key (or any credential this process holds) must not
        // get it into a `text_delta` event or the result: deltas pass through a stream
        // redactor, which holds back a tail that could be the start of a credential
        // until the next delta shows it is not (or the stream ends).
        let mut redactor = StreamRedactor::of_values(self.secret_values());
        let (chat, error) =
            sse::decode(response.bytes_stream(), MAX_STREAM_BYTES, |_, mut event| {
                if event.kind == EventKind::TextDelta {
                    event.text = redactor.push(&event.text);
                    if event.text.is_empty() {
                        return;
                    }
                } else {
                    let held = redactor.finish();
                    if !held.is_empty() {
                        events.emit(Event::text_delta(held));
                    }
                    event.text = redactor.redact_whole(&event.text);
                }
                events.emit(event)
            })
            .await;
        let held = redactor.finish();
        if !held.is_empty() {
            ctx.events.emit(Event::text_delta(held));
        }
        let usage = chat.usage.unwrap_or_default();
        if let Some(StreamError::Server(message)) = &error {
            let reason = self.redact(&format!(
                "the server ended the stream with an error: {message}"
            ));
            if !chat.started {
                return Exchange::Transient { reason, wait: None };
            }
            let mut result = failed(ErrorCode::ProviderUnavailable, reason, false);
            result.usage = usage;
            return Exchange::Done(result);
        }
        if chat.is_complete(error.is_none()) {
            if let Some(reason) = &chat.finish_reason {
                log.push(format!("finish_reason={reason}"));
            }
            if chat.finish_reason.as_deref() == Some("content_filter") {
                let mut result = failed(
                    ErrorCode::ProviderRejected,
                    "the provider's content filter stopped the completion".to_owned(),
                    false,
                );
                result.usage = usage;
                return Exchange::Done(result);
            }
            let mut result = ContractResult::succeeded(redactor.redact_whole(&chat.text));
            result.usage = usage;
            return Exchange::Done(result);
        }
        let why = match &error {
            Some(e) => self.redact(&e.to_string()),
            None => "the connection closed before the completion finished".to_owned(),
        };
        if !chat.started {
            return Exchange::Transient {
                reason: why,
                wait: None,
            };
        }
        let mut result = ContractResult::with_error(
            Outcome::Unknown,
            Error::new(
                ErrorCode::UnknownOutcome,
                format!(
                    "the stream broke after {} bytes of text: {why}",
                    chat.text.len()
                ),
                SideEffects::Possible,
            ),
        );
        result.text = String::new();
        result.usage = usage;
        Exchange::Done(result)
    }
}

fn failed(code: ErrorCode, reason: String, retryable: bool) -> ContractResult {
    let mut error = Error::new(code, reason, SideEffects::None);
    error.retryable = retryable;
    ContractResult::failed(error)
}

/// At most `limit` bytes of a response body, lossily decoded; a body that fails midway
/// keeps what arrived. Never reads an unbounded body into memory.
async fn read_capped(response: reqwest::Response, limit: usize) -> String {
    use futures::StreamExt as _;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The `error.message` of an OpenAI error body, else the body itself, shortened.
fn server_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(|e| e.get("message").or(Some(e)))
        .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned());
    bounded(&message, 300)
}

/// An error with its sources, which carry the useful part ("connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[async_trait::async_trait]
impl Backend for OpenAiBackend {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: self.config.name.clone(),
            capabilities: Self::declared(),
            adapter_version: format!(
                "openai/{} model {}",
                env!("CARGO_PKG_VERSION"),
                self.config.model
            ),
        }
    }

    /// Every probe (see [`OpenAiBackend::probe`]).
    async fn verify(&self) -> Verification {
        let request = ProbeRequest {
            execution_id: agent_exec_contract::probe_execution_id(),
            required: None,
        };
        self.probe(&request).await.verification
    }

    /// A real one-token streamed completion, always: proves the server is there, knows
    /// the model, streams, and (when asked) reports usage. Then, each only when
    /// `request` asks for it, the `structured-output` and `resume` probes, at the same
    /// time. Every request carries the probe's execution id; the usage is their sum.
    async fn probe(&self, request: &ProbeRequest) -> Probe {
        let failed = |problem: String| Probe {
            verification: Verification::failed(problem),
            usage: Usage::default(),
        };
        let client = match &self.client {
            Ok(c) => c,
            Err(e) => return failed(e.to_string()),
        };
        let key = match self.api_key() {
            Ok(key) => key,
            Err(e) => return failed(e.to_string()),
        };
        let wants = |capability: Capability| {
            request
                .required
                .as_ref()
                .is_none_or(|required| required.contains(&capability))
        };
        let id = request.execution_id.as_str();
        let probe = ContractRequest {
            execution_id: id.to_owned(),
            prompt: "Reply with the word ok.".into(),
            budget: agent_exec_contract::ContractBudget {
                max_completion_tokens: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        let ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
        let mut log = Vec::new();
        let key = key.as_deref();
        // The probes asked for go out at once, so the others do not add their latency.
        let (probe_result, structured, resume) = tokio::join!(
            tokio::time::timeout(
                Duration::from_secs(60),
                self.exchange(client, key, &probe, &ctx, &mut log),
            ),
            async {
                if wants(Capability::StructuredOutput) {
                    Some(self.probe_structured(client, key, id).await)
                } else {
                    None
                }
            },
            async {
                if wants(Capability::Resume) {
                    Some(self.probe_resume(client, key, id).await)
                } else {
                    None
                }
            },
        );
        let mut usage = [&structured, &resume]
            .into_iter()
            .flatten()
            .fold(Usage::default(), |sum, (_, spent)| sum.plus(*spent));
        let result = match probe_result {
            Err(_) => {
                return Probe {
                    usage,
                    ..failed(format!(
                        "{}: the probe timed out after 60 s",
                        self.config.base_url
                    ))
                };
            }
            Ok(Exchange::Transient { reason, .. }) => {
                return Probe {
                    usage,
                    ..failed(format!("{}: {reason}", self.config.base_url))
                };
            }
            Ok(Exchange::Done(result)) => result,
        };
        usage = usage.plus(result.usage);
        if result.outcome != Outcome::Succeeded {
            let reason = result.err.map(|e| e.reason).unwrap_or_default();
            return Probe {
                usage,
                ..failed(format!("probe completion did not succeed: {reason}"))
            };
        }
        let mut verified = vec![Capability::Text, Capability::Stream, Capability::Cancel];
        let mut problems = Vec::new();
        if result.usage != Usage::default() {
            verified.push(Capability::Usage);
        } else {
            problems.push(format!(
                "usage: the server sent no usage for the probe{}",
                if self.config.include_usage {
                    ""
                } else {
                    " (include_usage is off)"
                }
            ));
        }
        for (capability, outcome) in [
            (Capability::StructuredOutput, structured),
            (Capability::Resume, resume),
        ] {
            match outcome {
                None => {}
                Some((Ok(()), _)) => verified.push(capability),
                Some((Err(why), _)) => {
                    problems.push(format!("{capability}: {}", self.redact(&why.to_string())))
                }
            }
        }
        Probe {
            verification: Verification {
                verified,
                adapter_version: format!(
                    "openai/{} model {}",
                    env!("CARGO_PKG_VERSION"),
                    self.config.model
                ),
                problems,
            },
            usage,
        }
    }

    /// This adapter's version and a SHA-256 of everything the probes' answers depend
    /// on: the endpoint (hashed: a URL may carry credentials), the model, the key's
    /// variable name (never its value) and the request settings. A new key under the
    /// same variable keeps the entry; a run that then fails as unavailable drops it.
    fn verification_key(&self) -> Option<String> {
        use sha2::{Digest as _, Sha256};
        let c = &self.config;
        let mut hasher = Sha256::new();
        for field in [
            c.base_url.trim_end_matches('/').to_owned(),
            c.model.clone(),
            c.api_key_env.clone().unwrap_or_default(),
            c.include_usage.to_string(),
            format!("{:?}", c.temperature),
            format!("{:?}", c.max_tokens),
        ] {
            hasher.update((field.len() as u64).to_le_bytes());
            hasher.update(field.as_bytes());
        }
        let digest: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(format!(
            "{KIND}/{} config=sha256:{digest}",
            env!("CARGO_PKG_VERSION")
        ))
    }

    async fn execute(&self, request: &ContractRequest, ctx: ExecutionContext) -> ContractResult {
        let client = match &self.client {
            Ok(c) => c.clone(),
            Err(e) => return failed(ErrorCode::ProviderUnavailable, e.to_string(), false),
        };
        let key = match self.api_key() {
            Ok(key) => key,
            Err(e) => return failed(ErrorCode::ProviderUnavailable, e.to_string(), false),
        };
        if let Some(from) = &ctx.resume
            && from.session != SESSION_HANDLE
        {
            // Not a conversation this backend started (another kind's id under a reused
            // backend name, or a layout this version does not know): nothing is sent.
            // `agent.internal`, as the agent backends refuse a handle they cannot use:
            // the journal and the configuration disagree; no retry or fallback fixes it.
            return failed(
                ErrorCode::Internal,
                format!(
                    "backend `{}` cannot resume session {:?} (attempt {}): it continues only its own {SESSION_HANDLE:?}",
                    self.config.name,
                    bounded(&from.session, 80),
                    from.attempt
                ),
                false,
            );
        }
        let mut log = Vec::new();
        // Before the request goes out: a runner killed while it streams leaves the
        // handle behind. A resumed attempt reports it again (it may be resumed in turn).
        if let Err(why) = ctx.session.report(SESSION_HANDLE) {
            log.push(format!("session handle not reported: {why}"));
        }
        if let Some(from) = &ctx.resume {
            log.push(format!(
                "resumed from attempt {}: the original prompt resent{}",
                from.attempt,
                if request.prompt.is_empty() {
                    ""
                } else {
                    ", then the continuation"
                }
            ));
        }
        let mut retry = 0u32;
        let outcome = loop {
            let exchange = self.exchange(&client, key.as_deref(), request, &ctx, &mut log);
            let step = tokio::select! {
                step = exchange => step,
                _ = ctx.cancellation.cancelled() => break None,
            };
            match step {
                Exchange::Done(result) => break Some(result),
                Exchange::Transient { reason, wait } => {
                    log.push(reason.clone());
                    if retry >= self.config.max_retries {
                        break Some(failed(
                            ErrorCode::ProviderUnavailable,
                            format!(
                                "backend `{}`: gave up after {} attempt(s): {reason}",
                                self.config.name,
                                retry + 1
                            ),
                            true,
                        ));
                    }
                    retry += 1;
                    let wait = wait.unwrap_or_else(|| self.backoff(retry));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = ctx.cancellation.cancelled() => break None,
                    }
                }
            }
        };
        if outcome.is_none() {
            // The exchange future (and with it the request and its connection) is
            // dropped; yield once so the connection task sees the close before we report.
            // This also means a caller racing our return against its own cancel signal
            // observes the cancel first.
            tokio::task::yield_now().await;
        }
        let mut result = outcome.unwrap_or_else(|| {
            // Dropping the exchange future dropped the request: the connection is closed,
            // nothing of ours runs any more.
            ContractResult::with_error(
                Outcome::Canceled,
                Error::new(
                    cause_code(ctx.cancellation.cause()),
                    "the request was aborted and its connection closed",
                    SideEffects::None,
                ),
            )
        });
        if retry > 0 {
            log.push(format!(
                "{retry} transport retr{} before the first token",
                if retry == 1 { "y" } else { "ies" }
            ));
        }
        result.logs = log.join("\n");
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_words() {
        let missing = MissingApiKey {
            backend: "o".into(),
            var: "OPENAI_API_KEY".into(),
        };
        assert_eq!(
            missing.to_string(),
            "backend `o`: the API key variable $OPENAI_API_KEY is not set or empty; hint: \
             export OPENAI_API_KEY=…"
        );
        assert_eq!(
            ProbeFailed::TimedOut.to_string(),
            "the probe timed out after 60 s"
        );
        let not_honoured = ProbeFailed::NotHonoured {
            why: "the final text is not JSON".into(),
            answer: "ok".into(),
        };
        assert_eq!(
            not_honoured.to_string(),
            "the server accepted response_format but did not honour it (the final text is \
             not JSON; it answered \"ok\")"
        );
        assert_eq!(
            ProbeFailed::NoResumedAnswer("HTTP 400".into()).to_string(),
            "the server did not complete a conversation of two user messages (what a resumed \
             attempt sends): HTTP 400"
        );
    }

    #[test]
    fn credentials_in_urls_are_cut() {
        let backend = OpenAiBackend::new(OpenAiConfig::new("o", "http://h/v1", "m"));
        assert_eq!(
            backend.redact("HTTP 500 from https://u:secret@api.example/v1: boom"),
            "HTTP 500 from https://u:[redacted]@api.example/v1: boom"
        );
        assert_eq!(backend.redact("no url here"), "no url here");
    }

    #[test]
    fn server_messages_come_from_the_error_object() {
        assert_eq!(
            server_message(r#"{"error":{"message":"Rate limit","type":"x"}}"#),
            "Rate limit"
        );
        assert_eq!(server_message("plain text\n"), "plain text");
    }

    #[test]
    fn the_body_carries_instructions_history_prompt_and_budget() {
        let backend = OpenAiBackend::new(OpenAiConfig::new("o", "http://h/v1/", "m"));
        let request = ContractRequest {
            prompt: "p".into(),
            instructions: "be brief".into(),
            context: vec![agent_exec_contract::Message {
                role: "assistant".into(),
                content: "earlier".into(),
            }],
            budget: agent_exec_contract::ContractBudget {
                max_completion_tokens: 9,
                ..Default::default()
            },
            ..Default::default()
        };
        let body = backend.body(&request, None);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["content"], "earlier");
        assert_eq!(body["messages"][2]["content"], "p");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 9);
        assert_eq!(
            backend.endpoint("chat/completions"),
            "http://h/v1/chat/completions"
        );
    }

    #[test]
    fn a_resumed_body_resends_the_original_prompt_then_the_continuation() {
        let backend = OpenAiBackend::new(OpenAiConfig::new("o", "http://h/v1", "m"));
        let from = ResumeFrom {
            session: SESSION_HANDLE.into(),
            attempt: 1,
            original_prompt: "the task".into(),
        };
        let mut request = ContractRequest {
            prompt: "go on".into(),
            instructions: "be brief".into(),
            ..Default::default()
        };
        let roles_and_texts = |body: serde_json::Value| -> Vec<(String, String)> {
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap().to_owned(),
                        m["content"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        };
        let pair = |r: &str, t: &str| (r.to_owned(), t.to_owned());
        assert_eq!(
            roles_and_texts(backend.body(&request, Some(&from))),
            [
                pair("system", "be brief"),
                pair("user", "the task"),
                pair("user", "go on")
            ]
        );
        request.prompt.clear();
        assert_eq!(
            roles_and_texts(backend.body(&request, Some(&from))),
            [pair("system", "be brief"), pair("user", "the task")],
            "no continuation: the original conversation is asked again"
        );
        assert_eq!(
            agent_exec_contract::check_session_handle(SESSION_HANDLE),
            Ok(())
        );
    }
}
