//! `facet serve`: the `facet` tool over MCP (stdio), through `rmcp`.
//!
//! ## What the server can and cannot do
//!
//! An MCP server never learns the host's session id (DeepSeek Harness sends none
//! over MCP, Claude Code none that is stable), so the server cannot know *whose*
//! facet a call is about. Every hook event carries `session_id`, so the change
//! is recorded by the hook on `PostToolUse` of the approved call — after the
//! user said yes to it on `PreToolUse` — and the hook's `additionalContext`
//! carries the new binding back to the model.
//!
//! The server therefore does what it honestly can: it validates the arguments
//! (an `INVALID_ARGUMENT` result names each bad field), canonicalizes absolute
//! paths so the model sees what a grant would actually cover, echoes the
//! intended change, and says plainly who records it. `status` reads a binding
//! only when the server was told a session id (`--session` / `FACET_SESSION_ID`);
//! otherwise it says the hook states the binding.
//!
//! Results are shaped by `mcp-shape`, like every MCP tool of the project.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use facet_core::FacetAction;

use crate::facet_tool::{self, Action, FacetArguments};
use crate::state::{self, BindingView};

/// One path of an `add` or `remove`, as written and as it resolves now.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedPath {
    /// The path as the model wrote it.
    pub written: String,
    /// Its canonical target, for an absolute path (symbolic links followed);
    /// `null` for a relative path, which the hook resolves against the session's
    /// own directory, or for a path that cannot be resolved.
    pub canonical: Option<String>,
    /// Why it could not be resolved, when it could not.
    pub problem: Option<String>,
}

/// The `facet` tool's structured result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FacetToolResult {
    /// The action asked for.
    pub action: Action,
    /// The paths of an `add` or `remove`.
    pub paths: Vec<RequestedPath>,
    /// Who records the change: always `"hook"` — the facet hook, on PostToolUse
    /// of this call, for the session that made it.
    pub recorded_by: String,
    /// The binding of the session this server was told about, if any.
    pub binding: Option<BindingView>,
    /// What happens next, in one or two sentences.
    pub note: String,
}

/// The MCP server.
#[derive(Debug, Clone)]
pub struct FacetServer {
    session: Option<String>,
    state_dir: Option<std::path::PathBuf>,
}

impl FacetServer {
    /// A server; `session` is a session id whose binding `status` may read.
    pub fn new(session: Option<String>, state_dir: Option<std::path::PathBuf>) -> Self {
        Self { session, state_dir }
    }

    /// The tool's definition.
    pub fn tool() -> Tool {
        let input = schema_object::<FacetArguments>();
        let output = schema_object::<FacetToolResult>();
        Tool::new(
            facet_tool::TOOL_NAME,
            format!(
                "{} The change is recorded by the facet hook when this call completes.",
                facet_tool::PURPOSE
            ),
            input,
        )
        .with_raw_output_schema(output)
        .with_annotations(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
    }

    /// Answer one call (the part of `call_tool` that is not protocol).
    pub fn call(&self, arguments: &Value) -> CallToolResult {
        let call = match facet_tool::parse_arguments(arguments) {
            Ok(call) => call,
            Err(issues) => return mcp_shape::invalid_argument(facet_tool::TOOL_NAME, &issues),
        };
        let binding = match self.binding() {
            Ok(binding) => binding,
            Err(problem) => {
                return mcp_shape::failure("STATE_UNREADABLE", &problem, None);
            }
        };
        let paths: Vec<RequestedPath> = facet_tool::paths_of(&call)
            .iter()
            .map(|path| requested(path))
            .collect();
        let note = note_for(&call, self.session.as_deref(), binding.is_some());
        let render = render_line(&call, &paths);
        let result = FacetToolResult {
            action: facet_tool::action_of(&call),
            paths,
            recorded_by: "hook".to_owned(),
            binding,
            note,
        };
        match serde_json::to_value(&result) {
            Ok(value) => mcp_shape::success(value, &render),
            Err(error) => mcp_shape::failure("INTERNAL", &error.to_string(), None),
        }
    }

    fn binding(&self) -> Result<Option<BindingView>, String> {
        let Some(session) = &self.session else {
            return Ok(None);
        };
        let dir = state::state_dir(self.state_dir.as_deref()).map_err(|error| error.to_string())?;
        state::binding_of(&dir, session).map_err(|error| error.to_string())
    }
}

fn schema_object<T: JsonSchema>() -> Arc<JsonObject> {
    let schema = schemars::schema_for!(T);
    match serde_json::to_value(schema) {
        Ok(Value::Object(object)) => Arc::new(object),
        _ => Arc::new(JsonObject::new()),
    }
}

fn requested(written: &str) -> RequestedPath {
    if !written.starts_with('/') {
        return RequestedPath {
            written: written.to_owned(),
            canonical: None,
            problem: None,
        };
    }
    match containment::resolve(written, Path::new("/")) {
        Ok(resolved) => RequestedPath {
            written: written.to_owned(),
            canonical: Some(resolved.path().display().to_string()),
            problem: None,
        },
        Err(error) => RequestedPath {
            written: written.to_owned(),
            canonical: None,
            problem: Some(error.to_string()),
        },
    }
}

fn note_for(call: &FacetAction, session: Option<&str>, found: bool) -> String {
    let recorded = "The facet hook records this for the session that made the call, when the call \
                    completes, and states the new facet in the conversation; without the hook \
                    installed nothing changes.";
    match facet_tool::action_of(call) {
        Action::Status if found => {
            "This is the binding of the session this server was started for.".to_owned()
        }
        Action::Status if session.is_some() => format!(
            "No facet state is recorded for session {} yet; it is recorded at the session's \
             first hook event.",
            session.unwrap_or_default()
        ),
        Action::Status => "This server cannot know which session is calling it; the facet hook \
                           states this session's facet in the conversation when this call \
                           completes."
            .to_owned(),
        Action::Add => format!(
            "Grant requested for the rest of the session. Relative paths are taken against the \
             session's directory. {recorded}"
        ),
        Action::Remove => format!("Grants to withdraw. {recorded}"),
        Action::Reset => format!("Every grant is dropped. {recorded}"),
    }
}

fn render_line(call: &FacetAction, paths: &[RequestedPath]) -> String {
    let list = paths
        .iter()
        .map(|path| path.canonical.as_deref().unwrap_or(&path.written))
        .collect::<Vec<_>>()
        .join(", ");
    match facet_tool::action_of(call) {
        Action::Status => "facet: status".to_owned(),
        Action::Add => format!("facet: grant {list} (recorded by the hook)"),
        Action::Remove => format!("facet: revoke {list} (recorded by the hook)"),
        Action::Reset => {
            "facet: every grant dropped; a focus the user set stays (recorded by the hook)"
                .to_owned()
        }
    }
}

impl ServerHandler for FacetServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("facet", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "facet keeps this session to one folder of the project. Work inside it; call \
                 `facet` with action=add only when you actually need a path outside it.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![Self::tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == facet_tool::TOOL_NAME).then(Self::tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != facet_tool::TOOL_NAME {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool `{}`: this server has only `facet`",
                    request.name
                ),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&arguments).into())
    }
}

/// Serve over stdio until the client closes the connection.
pub fn run_stdio(session: Option<String>) -> anyhow::Result<()> {
    // The only place facet builds an async runtime: the hook path stays
    // synchronous so a tool call costs one small process, not a runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let server = FacetServer::new(session, None)
            .serve(rmcp::transport::stdio())
            .await?;
        server.waiting().await?;
        Ok(())
    })
}
