//! The MCP server handler: lists the ten tools and forwards each call to the tool
//! layer (`envreg_core::tools`), shaping the answer with `mcp-shape`.
//!
//! One handler value serves one MCP session (rmcp builds one per stdio connection and
//! one per HTTP session), so the session id it falls back on is per connection; over
//! HTTP the `Mcp-Session-Id` header of the request is the session.

use std::sync::Arc;

use envreg_core::tools::{self, CallContext, MAX_ARGUMENT_BYTES, ToolSpec};
use envreg_core::{EnvError, ErrorCode, Registry, SessionId};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::approval::{APPROVAL_TIMEOUT, McpApprover};

/// The name of the benchmark-only echo tool (listed only with `--bench-echo`).
pub const ECHO_TOOL: &str = "echo";

/// The most bytes the benchmark echo answers with (`bytes` is capped here).
const ECHO_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Shared by every session of one server process.
pub struct Shared {
    pub registry: Registry,
    /// The tool list, built once (schemas are derived at start-up, not per request).
    pub tools: Vec<Tool>,
    pub bench_echo: bool,
}

impl Shared {
    pub fn new(registry: Registry, bench_echo: bool) -> Shared {
        let mut tools: Vec<Tool> = tools::tool_specs().into_iter().map(to_mcp_tool).collect();
        if bench_echo {
            tools.push(echo_tool());
        }
        Shared {
            registry,
            tools,
            bench_echo,
        }
    }
}

fn as_object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// A [`ToolSpec`] as MCP lists it.
pub fn to_mcp_tool(spec: ToolSpec) -> Tool {
    let annotations = ToolAnnotations::new()
        .read_only(spec.read_only)
        .destructive(spec.destructive)
        .idempotent(spec.idempotent)
        // Nothing reaches outside the registry folder (contract §4: no network, no shell).
        .open_world(false);
    Tool::new(spec.name, spec.description, as_object(spec.input_schema))
        .with_raw_output_schema(Arc::new(as_object(spec.output_schema)))
        .with_annotations(annotations)
}

fn echo_tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "text": { "type": "string" },
            "bytes": { "type": "integer", "minimum": 0 }
        },
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"],
    });
    Tool::new(
        ECHO_TOOL,
        "Use only for benchmarks: returns its text argument (the SDK's floor).",
        as_object(input),
    )
    .with_raw_output_schema(Arc::new(as_object(output)))
    .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true))
}

/// Where this session's id comes from when the request carries none.
#[derive(Debug, Clone)]
pub enum SessionSource {
    /// A fixed id: `--session` / `ENVREG_SESSION_ID`, or one made for this connection.
    Fixed(SessionId),
    /// None at all: session tools answer `SESSION_CONTEXT_UNAVAILABLE`.
    Unavailable,
}

/// One MCP session's handler.
#[derive(Clone)]
pub struct EnvregServer {
    shared: Arc<Shared>,
    session: SessionSource,
}

impl EnvregServer {
    pub fn new(shared: Arc<Shared>, session: SessionSource) -> EnvregServer {
        EnvregServer { shared, session }
    }

    /// The caller's session: the HTTP `Mcp-Session-Id` when the request came over HTTP,
    /// else this connection's id.
    fn session_of(&self, context: &RequestContext<RoleServer>) -> Option<SessionId> {
        let header = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .and_then(|text| SessionId::new(text).ok());
        match (header, &self.session) {
            (Some(id), _) => Some(id),
            (None, SessionSource::Fixed(id)) => Some(id.clone()),
            (None, SessionSource::Unavailable) => None,
        }
    }

    async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.as_ref();
        let args = Value::Object(request.arguments.unwrap_or_default());
        if name == ECHO_TOOL && self.shared.bench_echo {
            // `bytes: N` answers N bytes the request did not carry: the benchmark's
            // size-matched floor (as many bytes out as `env_resolve` sends).
            let text = match args.get("bytes").and_then(Value::as_u64) {
                Some(n) => "x".repeat(usize::try_from(n.min(ECHO_MAX_BYTES)).unwrap_or(0)),
                None => args
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            };
            return Ok(mcp_shape::success(json!({ "text": text }), "echo."));
        }
        if !tools::TOOL_NAMES.contains(&name) {
            // An unroutable request is a protocol error (MCP: unknown tool → -32602).
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {name}; this server has {}",
                    tools::TOOL_NAMES.join(", ")
                ),
                Some(json!({ "tool": name })),
            ));
        }
        let session = self.session_of(&context);
        let approver = McpApprover {
            peer: context.peer.clone(),
            registry: &self.shared.registry,
            timeout: APPROVAL_TIMEOUT,
        };
        let call_context = CallContext {
            session,
            approver: &approver,
        };
        let started = std::time::Instant::now();
        // A client that goes away (or cancels) mid-call stops the call here: a pending
        // approval is abandoned and nothing is committed, because commit only runs after
        // an approval that this select would have dropped. The error below is for the
        // log only: rmcp drops the answer to a request the client cancelled, so the
        // client sees its own abort, untranslated (contract §1.2).
        let outcome = tokio::select! {
            outcome = tools::call_tool(&self.shared.registry, name, args, &call_context) => outcome,
            () = context.ct.cancelled() => {
                tracing::info!(tool = name, "call cancelled by the client");
                Err(EnvError::new(ErrorCode::InternalError, "the call was cancelled by the client"))
            }
        };
        let elapsed_us = started.elapsed().as_micros();
        Ok(match outcome {
            Ok(output) => {
                tracing::debug!(tool = name, elapsed_us, "ok");
                mcp_shape::success(output.value, &output.render)
            }
            Err(error) => {
                tracing::info!(
                    tool = name,
                    code = error.code.as_str(),
                    elapsed_us,
                    "expected failure"
                );
                shape_error(&error)
            }
        })
    }
}

/// An expected failure as an MCP tool result.
pub fn shape_error(error: &EnvError) -> CallToolResult {
    mcp_shape::failure(error.code.as_str(), &error.message, error.details.as_ref())
}

impl ServerHandler for EnvregServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::new("envreg", env!("CARGO_PKG_VERSION"));
        info.title = Some("Environment registry".to_owned());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(format!(
                "envreg answers where things run: environments, services, deployments, rule profiles and operation bindings. \
                 Use env_find to discover ids, env_resolve for concrete paths and variables (never reconstruct them), \
                 env_resolve_operation before acting. Arguments are limited to {MAX_ARGUMENT_BYTES} bytes."
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_tool(request, context)
            .await
            .map(CallToolResponse::from)
    }
}
