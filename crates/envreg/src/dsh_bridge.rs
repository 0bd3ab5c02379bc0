//! `envreg dsh-bridge --registry DIR`: the ten `env_*` tools for the DeepSeek Harness
//! plugin `dsh-envreg` (integrations/dsh-envreg), as JSON lines over stdio.
//!
//! # Why a long-lived process behind a thin plugin
//! The plugin spawns this once, when dsh applies it, and forwards every tool call here.
//! Not a process per call (each would reopen and rescan the registry: ~100× the cost
//! of a call, see ARCHITECTURE.md), and not the logic in JavaScript (two copies of the
//! contract would drift). Everything the model or the user reads is produced here:
//! descriptions, parameter and output schemas already in dsh's value-schema DSL
//! (`dsh-schema`), the text of every result and error, the approval sentences.
//!
//! # Protocol 1 (one JSON object per line, both ways)
//! ```text
//! → {"id":1,"method":"hello","protocol":1}
//! ← {"id":1,"result":{"name":"envreg","version":"0.1.0","protocol":1,"registry":"/abs",
//!      "tools":[{"name","description","parameters","output","readOnly","destructive","idempotent"}]}}
//! → {"id":2,"method":"call","params":{"tool":"env_resolve","arguments":{…},
//!      "session":"<dsh session id>"|null}}
//! ← {"id":2,"result":{"value":{…},"text":"<render line>\n<value as compact JSON>"}}
//! ← {"id":2,"error":{"code":"ENV_NOT_FOUND","message":"…","details":{…}?,"text":"ENV_NOT_FOUND: …"}}
//! mid-call, when a write needs the user (contract §1.3):
//! ← {"id":2,"approval":{"tool":"env_save","reason":"…","displayReason":"…"}}
//! → {"id":2,"method":"approval_answer","params":{"decision":"allowed-once"|"rejected"|"cancelled"|"unavailable"}}
//! ```
//! - `parameters` is a dsh parameter map (`required: true` on properties), `output` a
//!   dsh value schema; both are registered by the plugin as they are.
//! - `text` is what the model reads: dsh shows the model a tool's rendered content,
//!   not its value, so the one text block holds the render line and then the value.
//! - Only `allowed-once` grants; any other or unknown decision, or the plugin going
//!   away, is `POLICY_DENIED` (fail closed).
//! - A `session` that is absent, null or not a valid id is no session: session tools
//!   answer `SESSION_CONTEXT_UNAVAILABLE`, never a guess.
//! - A registry that cannot be opened is answered, with its error, to every request
//!   (`hello` included), so the plugin fails at apply time with a sentence naming the
//!   folder, rather than the process dying silently.
//!
//! # Invariants
//! - Never panics on any input line; a line that is not a request gets an error reply
//!   (`id: null` when no id could be read). Lines over [`MAX_LINE_BYTES`] are refused
//!   without being kept.
//! - stdin EOF ends the process: the plugin (and dsh) is gone. Calls in flight finish
//!   (a pending approval is then unavailable: denied, nothing written) and their
//!   replies are flushed before the exit.
//! - stdout carries only protocol lines; logs go to stderr.
//!
//! # Deliberately not done
//! - No cancellation message: a cancelled dsh call answers any pending approval with
//!   `cancelled` (dsh's own signal does that) and the plugin drops the late reply.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use envreg_core::tools::{self, CallContext, MAX_ARGUMENT_BYTES};
use envreg_core::{
    ApprovalDecision, ApprovalRequest, Approver, EnvError, ErrorCode, Registry, SessionId,
};
use envreg_mcp::stdio::{LineRead, LineReader};
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{mpsc, oneshot};

/// The protocol this binary speaks.
pub const PROTOCOL: u64 = 1;

/// A request line may hold a whole record plus framing; anything longer is refused.
pub const MAX_LINE_BYTES: usize = MAX_ARGUMENT_BYTES + 64 * 1024;

/// One parsed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: u64,
    pub method: Method,
}

/// What a request asks.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    Hello {
        protocol: u64,
    },
    Call {
        tool: String,
        arguments: Value,
        session: Option<String>,
    },
    ApprovalAnswer {
        decision: ApprovalDecision,
    },
}

/// A line that is not a request: the id when one could be read, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub id: Option<u64>,
    pub error: EnvError,
}

fn bad(id: Option<u64>, message: impl Into<String>) -> BadLine {
    BadLine {
        id,
        error: EnvError::invalid_argument(message),
    }
}

/// Parses one request line. Total: every input gives a request or a [`BadLine`].
pub fn parse_line(line: &str) -> Result<Request, BadLine> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| bad(None, format!("dsh-bridge: a request line is not JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(bad(
            None,
            "dsh-bridge: a request line must be a JSON object",
        ));
    };
    let id = object.get("id").and_then(Value::as_u64).ok_or_else(|| {
        bad(
            None,
            "dsh-bridge: a request needs a non-negative integer `id`",
        )
    })?;
    let params = match object.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(_) => return Err(bad(Some(id), "dsh-bridge: `params` must be an object")),
    };
    let method = match object.get("method").and_then(Value::as_str) {
        Some("hello") => Method::Hello {
            protocol: object
                .get("protocol")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(Some(id), "dsh-bridge: hello needs an integer `protocol`"))?,
        },
        Some("call") => Method::Call {
            tool: params
                .get("tool")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(Some(id), "dsh-bridge: call needs a string `params.tool`"))?
                .to_owned(),
            arguments: params.get("arguments").cloned().unwrap_or(Value::Null),
            session: params
                .get("session")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        Some("approval_answer") => Method::ApprovalAnswer {
            decision: decision_of(params.get("decision").and_then(Value::as_str)),
        },
        Some(other) => {
            return Err(bad(
                Some(id),
                format!("dsh-bridge: unknown method {other:?} (hello, call, approval_answer)"),
            ));
        }
        None => {
            return Err(bad(
                Some(id),
                "dsh-bridge: a request needs a string `method`",
            ));
        }
    };
    Ok(Request { id, method })
}

/// dsh's approval outcome words; anything else fails closed.
pub fn decision_of(word: Option<&str>) -> ApprovalDecision {
    match word {
        Some("allowed-once") => ApprovalDecision::AllowedOnce,
        Some("rejected") => ApprovalDecision::Rejected,
        Some("cancelled") => ApprovalDecision::Cancelled,
        _ => ApprovalDecision::Unavailable,
    }
}

/// The ten tools as the plugin registers them (schemas in dsh's DSL).
pub fn tool_list() -> Vec<Value> {
    tools::tool_specs()
        .into_iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": dsh_schema::parameters(&spec.input_schema),
                "output": dsh_schema::value(&spec.output_schema),
                "readOnly": spec.read_only,
                "destructive": spec.destructive,
                "idempotent": spec.idempotent,
            })
        })
        .collect()
}

/// The `hello` answer.
pub fn hello(registry: &Path) -> Value {
    json!({
        "name": "envreg",
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": PROTOCOL,
        "registry": registry,
        "tools": tool_list(),
    })
}

/// The model-facing text of a success: the render line, then the value.
pub fn success_text(render: &str, value: &Value) -> String {
    format!("{render}\n{}", mcp_shape::compact_json(value))
}

/// An error as the protocol sends it (`text` is what the model reads).
pub fn error_object(error: &EnvError) -> Value {
    let code = error.code.as_str();
    let mut object = Map::new();
    object.insert("code".into(), json!(code));
    object.insert("message".into(), json!(error.message));
    if let Some(details) = &error.details {
        object.insert("details".into(), details.clone());
    }
    object.insert("text".into(), json!(format!("{code}: {}", error.message)));
    Value::Object(object)
}

/// Approval questions waiting for the plugin's answer, by call id. `closed` once stdin
/// has ended: no answer can come, so every question, pending or later, is unavailable.
#[derive(Default)]
struct Questions {
    waiting: HashMap<u64, oneshot::Sender<ApprovalDecision>>,
    closed: bool,
}

type Pending = Arc<Mutex<Questions>>;

/// The core's no-session message names the MCP server's flags; in dsh the session is the
/// calling agent's, so say that instead (the code stays).
pub fn in_dsh_terms(error: EnvError, tool: &str) -> EnvError {
    if error.code == ErrorCode::SessionContextUnavailable {
        return EnvError {
            message: format!(
                "{tool} needs the calling agent's session, and dsh made this call without an agent; call it from an agent's turn"
            ),
            ..error
        };
    }
    error
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Asks the plugin (which asks `ctx.approval`) mid-call.
struct BridgeApprover {
    id: u64,
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
}

impl Approver for BridgeApprover {
    fn request<'a>(
        &'a self,
        req: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            {
                let mut questions = lock(&self.pending);
                if questions.closed {
                    return ApprovalDecision::Unavailable;
                }
                questions.waiting.insert(self.id, tx);
            }
            let line = json!({"id": self.id, "approval": {
                "tool": req.tool, "reason": req.reason, "displayReason": req.display_reason}});
            if self.out.send(line.to_string()).is_err() {
                lock(&self.pending).waiting.remove(&self.id);
                return ApprovalDecision::Unavailable;
            }
            // The plugin gone (sender dropped) is no answer: fail closed.
            rx.await.unwrap_or(ApprovalDecision::Unavailable)
        })
    }
}

/// Serves the protocol on stdin/stdout until stdin closes. `registry` is the folder
/// given with `--registry`, or the error finding it.
pub fn run(registry: Result<PathBuf, EnvError>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(registry))
}

async fn serve(registry: Result<PathBuf, EnvError>) -> anyhow::Result<()> {
    let opened: Result<(PathBuf, Arc<Registry>), EnvError> = registry.and_then(|root| {
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        Registry::open(&root).map(|r| (root, Arc::new(r)))
    });
    // For the host's `envreg hook` (dsh's Claude Code hooks bridge): which registry this
    // bridge writes to, removed when it ends.
    let _served = opened.as_ref().ok().and_then(|(root, _)| {
        envreg_core::served::record(root)
            .inspect_err(|why| eprintln!("envreg dsh-bridge: the registry served was not recorded for the host's hook: {why}"))
            .ok()
    });
    let (out, mut lines_out) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = lines_out.recv().await {
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let pending: Pending = Arc::default();
    let mut calls = tokio::task::JoinSet::new();
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut lines = LineReader::new(MAX_LINE_BYTES);
    loop {
        match lines.next(&mut stdin).await? {
            LineRead::Eof => break,
            LineRead::TooLong => {
                let error = EnvError::invalid_argument(format!(
                    "dsh-bridge: a request line is over {MAX_LINE_BYTES} bytes"
                ));
                let _ = out.send(json!({"id": null, "error": error_object(&error)}).to_string());
                continue;
            }
            LineRead::Line => {}
        }
        let text = match std::str::from_utf8(&lines.line) {
            Ok(text) => text,
            Err(e) => {
                let error = EnvError::invalid_argument(format!(
                    "dsh-bridge: a request line is not UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ));
                let _ = out.send(json!({"id": null, "error": error_object(&error)}).to_string());
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let request = match parse_line(text.trim()) {
            Ok(request) => request,
            Err(bad) => {
                let _ =
                    out.send(json!({"id": bad.id, "error": error_object(&bad.error)}).to_string());
                continue;
            }
        };
        let id = request.id;
        let (root, registry) = match &opened {
            Ok((root, registry)) => (root.clone(), registry.clone()),
            Err(error) => {
                if let Method::ApprovalAnswer { .. } = request.method {
                    continue;
                }
                let _ = out.send(json!({"id": id, "error": error_object(error)}).to_string());
                continue;
            }
        };
        match request.method {
            Method::Hello { protocol } => {
                let line = if protocol == PROTOCOL {
                    json!({"id": id, "result": hello(&root)})
                } else {
                    let error = EnvError::invalid_argument(format!(
                        "dsh-bridge: the plugin speaks protocol {protocol}, envreg {} speaks {PROTOCOL}; install matching versions",
                        env!("CARGO_PKG_VERSION")
                    ));
                    json!({"id": id, "error": error_object(&error)})
                };
                let _ = out.send(line.to_string());
            }
            Method::ApprovalAnswer { decision } => {
                if let Some(tx) = lock(&pending).waiting.remove(&id) {
                    let _ = tx.send(decision);
                }
            }
            Method::Call {
                tool,
                arguments,
                session,
            } => {
                let out = out.clone();
                let pending = pending.clone();
                calls.spawn(async move {
                    let approver = BridgeApprover {
                        id,
                        out: out.clone(),
                        pending,
                    };
                    let ctx = CallContext {
                        session: session.and_then(|s| SessionId::new(s).ok()),
                        approver: &approver,
                    };
                    let line = match tools::call_tool(&registry, &tool, arguments, &ctx).await {
                        Ok(output) => json!({"id": id, "result": {
                            "text": success_text(&output.render, &output.value),
                            "value": output.value,
                        }}),
                        Err(error) => {
                            json!({"id": id, "error": error_object(&in_dsh_terms(error, &tool))})
                        }
                    };
                    let _ = out.send(line.to_string());
                });
            }
        }
    }
    // The plugin is gone: questions are unanswerable (denied, nothing is written);
    // calls in flight finish and their replies are flushed for whoever still reads.
    {
        let mut questions = lock(&pending);
        questions.closed = true;
        questions.waiting.clear();
    }
    while calls.join_next().await.is_some() {}
    drop(out);
    let _ = writer.await;
    Ok(())
}

#[cfg(test)]
mod tests;
