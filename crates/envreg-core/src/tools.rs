//! The ten `env_*` tools, free of any transport: their specs, argument checking,
//! dispatch onto [`Registry`], approval between plan and commit, and render lines.
//!
//! Both edges sit on this module: the MCP server (`envreg-mcp`) lists [`tool_specs`]
//! and forwards every `tools/call` to [`call_tool`]; the CLI may do the same. One
//! concept, one place: a tool's name, description, schemas, hints and render line are
//! written here and nowhere else.
//!
//! # Design
//! - **Input schemas are the contract's `parameters`, verbatim**: `additionalProperties:
//!   false`, the contract's enums, required fields, and `env_set_context`'s
//!   `oneOf: [string, null]`. Arguments are checked against that same JSON (a small
//!   checker for exactly the keywords the schemas use, see [`check_arguments`]), so the
//!   schema a host sees and the check we apply cannot drift apart. Every failure is
//!   `INVALID_ARGUMENT` naming the field, so a model can correct its call.
//! - **Output schemas come from the core's output types** (`schemars`, subschemas
//!   inlined so hosts without `$ref` support can read them). The Python MCP client
//!   validates every `structuredContent` against them in the tests.
//! - **Approval sits between plan and commit**: [`Registry::plan_save`] /
//!   [`Registry::plan_delete`] say whether approval is needed (contract §1.3 and the
//!   config); the [`Approver`] of the [`CallContext`] asks; only
//!   [`ApprovalDecision::AllowedOnce`] commits, everything else is `POLICY_DENIED`
//!   with a message saying how to proceed.
//! - **Render lines are computed from the JSON value** (the contract's field names),
//!   so they describe exactly what the model receives.
//!
//! # Invariants
//! - [`call_tool`] never panics on any `args` value and never writes for a read tool.
//! - A session-scoped tool without a session fails with
//!   `SESSION_CONTEXT_UNAVAILABLE`; it never guesses one (contract §1.3).
//! - Arguments over [`MAX_ARGUMENT_BYTES`] are refused before they are looked at.
//!
//! # Deliberately not done
//! - No knowledge of MCP, JSON-RPC or stdio: result shaping is `mcp-shape`'s job, the
//!   session id and the approval channel come from the edge.
//! - No general JSON Schema engine: the checker covers the keywords these ten schemas
//!   use and a unit test proves every schema stays within them.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

pub use crate::approval::{ApprovalDecision, ApprovalRequest, Approver};
use crate::error::{EnvError, ErrorCode};
use crate::kind::RecordKind;
use crate::operation::OperationResolution;
use crate::resolve::ServiceContext;
use crate::session::SessionId;
use crate::{
    ContextOutput, DeleteOutput, FindOutput, GetOutput, ListOutput, Registry, SaveOutput,
    ValidateOutput,
};

/// Arguments larger than this (as compact JSON) are refused with `INVALID_ARGUMENT`
/// before any check or dispatch. A record is capped far lower (`maxRecordBytes`).
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// The names of the ten tools, in contract order.
pub const TOOL_NAMES: [&str; 10] = [
    "env_list",
    "env_get",
    "env_find",
    "env_resolve",
    "env_resolve_operation",
    "env_get_context",
    "env_set_context",
    "env_save",
    "env_delete",
    "env_validate",
];

/// Everything a host needs to list one tool.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    /// Starts with the contract's decision rule ("Use when …").
    pub description: &'static str,
    /// The contract's `parameters` as JSON Schema (`additionalProperties: false`).
    pub input_schema: Value,
    /// The JSON Schema of the success value (an object).
    pub output_schema: Value,
    /// Never writes a file (`readOnlyHint`).
    pub read_only: bool,
    /// May remove data (`destructiveHint`).
    pub destructive: bool,
    /// Repeating the same call has no further effect (`idempotentHint`).
    pub idempotent: bool,
}

/// Who is calling and how to ask for approval.
pub struct CallContext<'a> {
    /// The caller's session (MCP session id, `--session`, …); `None` when there is none.
    pub session: Option<SessionId>,
    pub approver: &'a dyn Approver,
}

/// A tool's success: the declared JSON value and the one-line summary for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub value: Value,
    pub render: String,
}

const KINDS: [&str; 5] = [
    "environment",
    "service",
    "deployment",
    "ruleProfile",
    "operationBinding",
];

fn kind_property(description: &str) -> Value {
    json!({ "type": "string", "enum": KINDS, "description": description })
}

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The JSON Schema of `T`, with subschemas inlined (hosts differ in `$ref` support).
fn output_schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        // MCP wants a plain object schema; the dialect URI and title add nothing for hosts.
        object.remove("$schema");
        object.remove("title");
    }
    strip_rust_formats(&mut value);
    value
}

/// schemars marks integers with Rust formats (`uint32`, `int64`, …) that are not JSON
/// Schema formats; validators warn about them (the Inspector's ajv does). The range is
/// already stated by `minimum`, so the format adds nothing a host can use.
fn strip_rust_formats(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let rust_format = object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| {
                    matches!(
                        f,
                        "uint"
                            | "uint8"
                            | "uint16"
                            | "uint32"
                            | "uint64"
                            | "uint128"
                            | "int"
                            | "int8"
                            | "int16"
                            | "int32"
                            | "int64"
                            | "int128"
                            | "float"
                            | "double"
                    )
                });
            if rust_format {
                object.remove("format");
            }
            object.values_mut().for_each(strip_rust_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_rust_formats),
        _ => {}
    }
}

/// The ten tools, in contract order.
pub fn tool_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "env_list",
            description: "Use when the caller needs an inventory or wants to discover ids before a specific call. Lists records sorted by kind, then id; registry diagnostics are summarized in `warnings`.",
            input_schema: object_schema(
                json!({
                    "kind": kind_property("Restrict to one record kind."),
                    "query": { "type": "string", "description": "Case-insensitive match over id, name and alias." },
                }),
                &[],
            ),
            output_schema: output_schema_of::<ListOutput>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_get",
            description: "Use when the caller already has an id and needs the full record. Returns the parsed record and its on-disk YAML (helpful for edits).",
            input_schema: object_schema(
                json!({
                    "kind": kind_property("The record kind."),
                    "id": { "type": "string", "description": "Record id, e.g. test-a." },
                }),
                &["kind", "id"],
            ),
            output_schema: output_schema_of::<GetOutput>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_find",
            description: "Use when the caller has a name or fragment and wants candidate ids. Prefer this over guessing an id. Ranked: exact id, prefix id, name, alias, category; at most 25 hits.",
            input_schema: object_schema(
                json!({
                    "query": { "type": "string", "description": "Fragment of an id, name, alias or category (min 2 characters)." },
                }),
                &["query"],
            ),
            output_schema: output_schema_of::<FindOutput>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_resolve",
            description: "Use when the caller needs concrete paths, log sources, class locations or variables for a service in an environment. This is the authoritative answer; do not reconstruct paths from templates.",
            input_schema: object_schema(
                json!({
                    "environmentId": { "type": "string", "description": "Defaults to the session environment." },
                    "serviceId": { "type": "string", "description": "The service to resolve." },
                    "deploymentId": { "type": "string", "description": "Required when the service has more than one binding in the environment; a single binding is selected automatically." },
                }),
                &["serviceId"],
            ),
            output_schema: output_schema_of::<ServiceContext>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_resolve_operation",
            description: "Use before acting: ask which Skill handles an operation for this context and what parameters it expects. This tool does not execute the Skill. At least one of serviceId / deploymentId is required; environmentId falls back to the session default.",
            input_schema: object_schema(
                json!({
                    "operation": { "type": "string", "description": "deploy | redeploy | restart | rollback | collect-logs | health-check | … (standard id or a bound custom id)." },
                    "environmentId": { "type": "string", "description": "Defaults to the session environment." },
                    "serviceId": { "type": "string", "description": "The service the operation is for." },
                    "deploymentId": { "type": "string", "description": "The deployment the operation is for." },
                }),
                &["operation"],
            ),
            output_schema: output_schema_of::<OperationResolution>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_get_context",
            description: "Use to check what environment the current session defaults to.",
            input_schema: object_schema(json!({}), &[]),
            output_schema: output_schema_of::<ContextOutput>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_set_context",
            description: "Use when the user says \"work on test-a\" and later calls should omit `environmentId`. Sets (or, with null, clears) this session's default environment.",
            input_schema: object_schema(
                json!({
                    "environmentId": {
                        "oneOf": [ { "type": "string" }, { "type": "null" } ],
                        "description": "Environment id, or null to clear the session default.",
                    },
                }),
                &["environmentId"],
            ),
            output_schema: output_schema_of::<ContextOutput>(),
            read_only: false,
            destructive: false,
            idempotent: true,
        },
        ToolSpec {
            name: "env_save",
            description: "Use to create or replace a record. Prefer env_get first, edit the YAML, then save the whole record; do not send a partial patch. Production records require approval.",
            input_schema: object_schema(
                json!({
                    "kind": kind_property("The record kind."),
                    "record": { "description": "Complete record; id and schemaVersion are required. Host timestamps are set by the plugin and ignored if supplied." },
                    "dryRun": { "type": "boolean", "description": "Validate and report without writing." },
                }),
                &["kind", "record"],
            ),
            output_schema: output_schema_of::<SaveOutput>(),
            read_only: false,
            destructive: false,
            // Saving the same record twice leaves the same file (timestamps aside), but the
            // first call may create and the second replace: not idempotent in its answer.
            idempotent: false,
        },
        ToolSpec {
            name: "env_delete",
            description: "Use only when the user explicitly asks to remove a record. confirm: false checks references only; confirm: true deletes after approval and refuses while the record is referenced.",
            input_schema: object_schema(
                json!({
                    "kind": kind_property("The record kind."),
                    "id": { "type": "string", "description": "Record id." },
                    "confirm": { "type": "boolean", "description": "false checks references only; true deletes after approval." },
                }),
                &["kind", "id", "confirm"],
            ),
            output_schema: output_schema_of::<DeleteOutput>(),
            read_only: false,
            destructive: true,
            idempotent: false,
        },
        ToolSpec {
            name: "env_validate",
            description: "Use after hand-editing YAML or before trusting a resolve result. Always succeeds; `ok: false` is a report, not a failure.",
            input_schema: object_schema(json!({}), &[]),
            output_schema: output_schema_of::<ValidateOutput>(),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
    ]
}

/// The specs, built once: deriving ten output schemas costs far more than a warm
/// `env_resolve`, so no call path may rebuild them.
fn cached_specs() -> &'static [ToolSpec] {
    static SPECS: std::sync::OnceLock<Vec<ToolSpec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(tool_specs)
}

/// The input schema of one tool, or `None` for an unknown name.
fn input_schema(name: &str) -> Option<&'static Value> {
    cached_specs()
        .iter()
        .find(|spec| spec.name == name)
        .map(|spec| &spec.input_schema)
}

// ---------------------------------------------------------------------------
// Argument checking
// ---------------------------------------------------------------------------

/// One way the arguments fail their tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArgumentIssue {
    /// The argument's path, e.g. `kind`; empty for the arguments object itself.
    pub path: String,
    pub message: String,
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        "number" => value.is_number(),
        other => json_type_name(value) == other,
    }
}

/// Check `value` against `schema`, which uses only `type`, `enum`, `oneOf`,
/// `properties`, `required`, `additionalProperties: false` and `description`.
fn check_value(schema: &Value, value: &Value, path: &str, issues: &mut Vec<ArgumentIssue>) {
    let issue = |message: String| ArgumentIssue {
        path: path.to_owned(),
        message,
    };
    if let Some(expected) = schema.get("type").and_then(Value::as_str)
        && !type_matches(expected, value)
    {
        issues.push(issue(format!(
            "must be a {expected}, got {}",
            json_type_name(value)
        )));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let names: Vec<String> = allowed
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect();
        issues.push(issue(format!("must be one of {}", names.join(", "))));
        return;
    }
    if let Some(choices) = schema.get("oneOf").and_then(Value::as_array) {
        let matching = choices
            .iter()
            .filter(|choice| {
                let mut sub = Vec::new();
                check_value(choice, value, path, &mut sub);
                sub.is_empty()
            })
            .count();
        if matching != 1 {
            let types: Vec<&str> = choices
                .iter()
                .filter_map(|c| c.get("type").and_then(Value::as_str))
                .collect();
            issues.push(issue(format!(
                "must be one of: {}, got {}",
                types.join(" or "),
                json_type_name(value)
            )));
        }
        return;
    }
    if let (Some(properties), Some(object)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        let child = |key: &str| {
            if path.is_empty() {
                key.to_owned()
            } else {
                format!("{path}.{key}")
            }
        };
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(required) {
                issues.push(ArgumentIssue {
                    path: child(required),
                    message: "is required".to_owned(),
                });
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (key, item) in object {
            match properties.get(key) {
                Some(sub) => check_value(sub, item, &child(key), issues),
                None if closed => {
                    let known: Vec<&str> = properties.keys().map(String::as_str).collect();
                    issues.push(ArgumentIssue {
                        path: child(key),
                        message: if known.is_empty() {
                            "is not a parameter of this tool (it takes none)".to_owned()
                        } else {
                            format!("is not a parameter (known: {})", known.join(", "))
                        },
                    });
                }
                None => {}
            }
        }
    }
}

/// Check `args` against the input schema of tool `name`. `Ok(())` when they fit.
/// `Err` lists every problem, each naming its field. An unknown tool is `Err` too.
pub fn check_arguments(name: &str, args: &Value) -> Result<(), Vec<ArgumentIssue>> {
    let Some(schema) = input_schema(name) else {
        return Err(vec![ArgumentIssue {
            path: String::new(),
            message: format!("unknown tool {name}"),
        }]);
    };
    let mut issues = Vec::new();
    check_value(schema, args, "", &mut issues);
    if issues.is_empty() {
        Ok(())
    } else {
        Err(issues)
    }
}

/// The `INVALID_ARGUMENT` error for a list of issues: the message names every field,
/// `details.issues` lists `{path, message}`.
pub fn invalid_arguments(tool: &str, issues: &[ArgumentIssue]) -> EnvError {
    let parts: Vec<String> = issues
        .iter()
        .map(|i| {
            if i.path.is_empty() {
                i.message.clone()
            } else {
                format!("`{}`: {}", i.path, i.message)
            }
        })
        .collect();
    EnvError::invalid_argument(format!(
        "invalid arguments for {tool}: {}",
        parts.join("; ")
    ))
    .with_details(json!({ "issues": issues }))
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

fn str_arg<'v>(args: &'v Value, key: &str) -> Option<&'v str> {
    args.get(key).and_then(Value::as_str)
}

fn bool_arg(args: &Value, key: &str) -> Option<bool> {
    args.get(key).and_then(Value::as_bool)
}

/// The kind argument; the schema check has already ensured it is one of the five.
fn kind_arg(args: &Value) -> Result<RecordKind, EnvError> {
    let raw = args.get("kind").cloned().unwrap_or(Value::Null);
    serde_json::from_value(raw).map_err(|_| {
        EnvError::invalid_argument(format!("`kind` must be one of {}", KINDS.join(", ")))
    })
}

fn required_str<'v>(args: &'v Value, key: &str) -> Result<&'v str, EnvError> {
    str_arg(args, key).ok_or_else(|| EnvError::invalid_argument(format!("`{key}` is required")))
}

fn to_value<T: serde::Serialize>(output: &T) -> Result<Value, EnvError> {
    serde_json::to_value(output)
        .map_err(|_| EnvError::internal("could not serialize the tool's result"))
}

fn session_required<'c>(ctx: &'c CallContext<'_>, tool: &str) -> Result<&'c SessionId, EnvError> {
    ctx.session.as_ref().ok_or_else(|| {
        EnvError::new(
            ErrorCode::SessionContextUnavailable,
            format!(
                "{tool} needs the caller's session, and this call has none; over stdio start the server with --session ID or ENVREG_SESSION_ID"
            ),
        )
    })
}

/// Ask for approval; anything but `AllowedOnce` is `POLICY_DENIED` saying how to proceed.
async fn approve(ctx: &CallContext<'_>, request: &ApprovalRequest) -> Result<(), EnvError> {
    let decision = ctx.approver.request(request).await;
    let (word, next) = match decision {
        ApprovalDecision::AllowedOnce => return Ok(()),
        ApprovalDecision::Rejected => (
            "rejected",
            "the user declined; do not retry unless the user asks for it again",
        ),
        ApprovalDecision::Cancelled => (
            "cancelled",
            "the approval prompt was dismissed; ask the user whether to retry",
        ),
        ApprovalDecision::Unavailable => (
            "unavailable",
            "this client cannot ask the user (no MCP elicitation support); use a client that supports elicitation, run the same change with the envreg CLI, or set `writePolicy.approvalChannel: host` in envreg.yaml and gate this tool with the host's own approval (see docs/envreg-mcp.md)",
        ),
    };
    Err(EnvError::new(
        ErrorCode::PolicyDenied,
        format!(
            "{} needs approval ({}) and approval was {word}: {next}",
            request.tool, request.reason
        ),
    )
    .with_details(json!({ "tool": request.tool, "approval": word, "reason": request.reason })))
}

/// Run one tool. `Ok` carries the declared value and its render line; `Err` is an
/// expected failure with its contract code.
pub async fn call_tool(
    registry: &Registry,
    name: &str,
    args: Value,
    ctx: &CallContext<'_>,
) -> Result<ToolOutput, EnvError> {
    if !TOOL_NAMES.contains(&name) {
        return Err(EnvError::invalid_argument(format!(
            "unknown tool {name}; the tools are {}",
            TOOL_NAMES.join(", ")
        )));
    }
    // `null` or absent arguments mean "no arguments" (hosts send either for `{}` tools).
    let args = if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    };
    let size = serde_json::to_vec(&args).map(|v| v.len()).unwrap_or(0);
    if size > MAX_ARGUMENT_BYTES {
        return Err(EnvError::invalid_argument(format!(
            "arguments of {name} are {size} bytes, over the limit of {MAX_ARGUMENT_BYTES} bytes (1 MiB)"
        ))
        .with_details(json!({ "bytes": size, "limit": MAX_ARGUMENT_BYTES })));
    }
    if let Err(issues) = check_arguments(name, &args) {
        return Err(invalid_arguments(name, &issues));
    }
    let value = match name {
        "env_list" => {
            let kind = match args.get("kind") {
                Some(_) => Some(kind_arg(&args)?),
                None => None,
            };
            to_value(&registry.list(kind, str_arg(&args, "query"))?)?
        }
        "env_get" => to_value(&registry.get(kind_arg(&args)?, required_str(&args, "id")?)?)?,
        "env_find" => to_value(&registry.find(required_str(&args, "query")?)?)?,
        "env_resolve" => to_value(&registry.resolve(
            ctx.session.as_ref(),
            str_arg(&args, "environmentId"),
            required_str(&args, "serviceId")?,
            str_arg(&args, "deploymentId"),
        )?)?,
        "env_resolve_operation" => {
            let service = str_arg(&args, "serviceId");
            let deployment = str_arg(&args, "deploymentId");
            if service.is_none() && deployment.is_none() {
                return Err(invalid_arguments(
                    name,
                    &[ArgumentIssue {
                        path: "serviceId".to_owned(),
                        message: "serviceId or deploymentId is required (at least one)".to_owned(),
                    }],
                ));
            }
            to_value(&registry.resolve_operation(
                ctx.session.as_ref(),
                required_str(&args, "operation")?,
                str_arg(&args, "environmentId"),
                service,
                deployment,
            )?)?
        }
        "env_get_context" => to_value(&registry.get_context(session_required(ctx, name)?))?,
        "env_set_context" => {
            let session = session_required(ctx, name)?;
            to_value(&registry.set_context(session, str_arg(&args, "environmentId"))?)?
        }
        "env_save" => {
            let kind = kind_arg(&args)?;
            let record = args.get("record").cloned().unwrap_or(Value::Null);
            let dry_run = bool_arg(&args, "dryRun").unwrap_or(false);
            let plan = registry.plan_save(kind, record, dry_run)?;
            if let Some(request) = plan.approval() {
                approve(ctx, &request).await?;
            }
            to_value(&registry.commit_save(plan)?)?
        }
        "env_delete" => {
            let kind = kind_arg(&args)?;
            let confirm = bool_arg(&args, "confirm").unwrap_or(false);
            let plan = registry.plan_delete(kind, required_str(&args, "id")?, confirm)?;
            if let Some(request) = plan.approval() {
                approve(ctx, &request).await?;
            }
            to_value(&registry.commit_delete(plan)?)?
        }
        "env_validate" => to_value(&registry.validate())?,
        _ => {
            return Err(EnvError::internal(format!(
                "tool {name} is listed but not dispatched"
            )));
        }
    };
    let render = render_line(name, &args, &value);
    Ok(ToolOutput { value, render })
}

// ---------------------------------------------------------------------------
// Render lines (contract examples, computed from the JSON value)
// ---------------------------------------------------------------------------

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn array_len(value: &Value, key: &str) -> usize {
    value.get(key).and_then(Value::as_array).map_or(0, Vec::len)
}

fn object_len(value: &Value, key: &str) -> usize {
    value
        .get(key)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

fn text<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn kind_nouns(kind: &str) -> (&'static str, &'static str) {
    serde_json::from_value::<RecordKind>(Value::String(kind.to_owned()))
        .map_or(("record", "records"), RecordKind::noun)
}

/// Count diagnostics by severity in `value[key]`.
fn severity_counts(value: &Value, key: &str) -> (usize, usize) {
    let mut errors = 0;
    let mut warnings = 0;
    for d in value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match d.get("severity").and_then(Value::as_str) {
            Some("error") => errors += 1,
            Some("warning") => warnings += 1,
            _ => {}
        }
    }
    (errors, warnings)
}

/// The one-line summary of a tool's success, exactly in the contract's phrasing.
pub fn render_line(name: &str, args: &Value, value: &Value) -> String {
    match name {
        "env_list" => {
            let mut counts: Vec<(String, usize)> = Vec::new();
            for item in value
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = item.get("kind").and_then(Value::as_str).unwrap_or("record");
                match counts.last_mut() {
                    Some((last, n)) if last == kind => *n += 1,
                    _ => counts.push((kind.to_owned(), 1)),
                }
            }
            let mut line = if counts.is_empty() {
                "0 records".to_owned()
            } else {
                counts
                    .iter()
                    .map(|(kind, n)| {
                        let (one, many) = kind_nouns(kind);
                        plural(*n, one, many)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let warnings = array_len(value, "warnings")
                + value
                    .get("omittedWarnings")
                    .and_then(Value::as_u64)
                    .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
            if warnings > 0 {
                let _ = write!(line, " ({})", plural(warnings, "warning", "warnings"));
            }
            line.push('.');
            line
        }
        "env_get" => {
            let kind = str_arg(args, "kind").unwrap_or("record");
            let id = text(value, "/record/id").unwrap_or_default();
            let mut line = format!("{kind} {id}");
            if let Some(name) = text(value, "/record/name") {
                let _ = write!(line, " ({name})");
            }
            if let Some(updated) = text(value, "/record/updatedAt") {
                let _ = write!(line, ", updated {}", updated.get(..10).unwrap_or(updated));
            }
            line.push('.');
            line
        }
        "env_find" => {
            let hits = array_len(value, "hits");
            format!(
                "{} for \"{}\".",
                plural(hits, "match", "matches"),
                str_arg(args, "query").unwrap_or_default()
            )
        }
        "env_resolve" => {
            let paths = object_len(value, "paths")
                + array_len(value, "logSources")
                + array_len(value, "classLocations");
            format!(
                "Resolved {} in {} ({}): {}, {}, {}.",
                text(value, "/service/id").unwrap_or_default(),
                text(value, "/environment/id").unwrap_or_default(),
                text(value, "/deployment/platform")
                    .or_else(|| text(value, "/environment/platform"))
                    .unwrap_or("unknown platform"),
                plural(paths, "path", "paths"),
                plural(object_len(value, "variables"), "variable", "variables"),
                plural(array_len(value, "warnings"), "warning", "warnings"),
            )
        }
        "env_resolve_operation" => {
            let target = text(value, "/requested/serviceId")
                .or_else(|| text(value, "/requested/deploymentId"))
                .unwrap_or_default();
            let environment = text(value, "/requested/environmentId").unwrap_or_default();
            let skill = text(value, "/skill/name").unwrap_or_default();
            let mut notes = Vec::new();
            if value.pointer("/policy/requiresApproval") == Some(&Value::Bool(true)) {
                notes.push("approval required");
            }
            if value.pointer("/skill/available") == Some(&Value::String("unknown".to_owned())) {
                notes.push("skill availability unknown");
            }
            let operation = text(value, "/operation").unwrap_or_default();
            let mut line = format!("{operation} {target}/{environment} → {skill}");
            if !notes.is_empty() {
                let _ = write!(line, " ({})", notes.join(", "));
            }
            line.push('.');
            line
        }
        "env_get_context" => match text(value, "/defaultEnvironmentId") {
            Some(env) => format!("Session default: {env}."),
            None => "Session default: none.".to_owned(),
        },
        "env_set_context" => {
            let mut line = match text(value, "/defaultEnvironmentId") {
                Some(env) => format!("Session default set to {env}"),
                None => "Session default cleared".to_owned(),
            };
            if value.get("persisted") == Some(&Value::Bool(false)) {
                line.push_str(" (not persisted: this process only)");
            }
            line.push('.');
            line
        }
        "env_save" => {
            let kind = text(value, "/kind").unwrap_or("record");
            let id = text(value, "/id").unwrap_or_default();
            let created = value.get("created") == Some(&Value::Bool(true));
            let warnings = plural(array_len(value, "warnings"), "warning", "warnings");
            if value.get("dryRun") == Some(&Value::Bool(true)) {
                let would = if created {
                    "would create"
                } else {
                    "would update"
                };
                format!("Dry run: {kind} {id} is valid ({would}, {warnings}).")
            } else {
                let how = if created { "created" } else { "updated" };
                format!("Saved {kind} {id} ({how}, {warnings}).")
            }
        }
        "env_delete" => {
            let kind = text(value, "/kind").unwrap_or("record");
            let id = text(value, "/id").unwrap_or_default();
            let blockers = array_len(value, "blockers");
            if value.get("deleted") == Some(&Value::Bool(true)) {
                format!("Deleted {kind} {id} (backup kept).")
            } else if blockers == 0 {
                format!("{kind} {id} is not referenced; not deleted (confirm: true deletes).")
            } else {
                format!(
                    "{kind} {id} is referenced ({}); not deleted.",
                    plural(blockers, "blocker", "blockers")
                )
            }
        }
        "env_validate" => {
            let (errors, warnings) = severity_counts(value, "diagnostics");
            let state = if value.get("ok") == Some(&Value::Bool(true)) {
                "valid"
            } else {
                "invalid"
            };
            format!(
                "Registry {state}: {}, {}.",
                plural(errors, "error", "errors"),
                plural(warnings, "warning", "warnings")
            )
        }
        _ => format!("{name} done."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUPPORTED: [&str; 8] = [
        "type",
        "enum",
        "oneOf",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "items",
    ];

    fn keywords_within(schema: &Value, path: &str) {
        let Some(object) = schema.as_object() else {
            return;
        };
        for (key, sub) in object {
            assert!(
                SUPPORTED.contains(&key.as_str()),
                "{path}: keyword {key} is not covered by check_value"
            );
            match key.as_str() {
                "properties" => {
                    for (name, prop) in sub.as_object().into_iter().flatten() {
                        keywords_within(prop, &format!("{path}.{name}"));
                    }
                }
                "oneOf" => {
                    for choice in sub.as_array().into_iter().flatten() {
                        keywords_within(choice, path);
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn ten_tools_in_contract_order_with_use_when_descriptions() {
        let specs = tool_specs();
        let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, TOOL_NAMES);
        for spec in &specs {
            assert!(spec.description.starts_with("Use "), "{}", spec.name);
            assert_eq!(spec.input_schema["type"], "object");
            assert_eq!(spec.input_schema["additionalProperties"], false);
            assert_eq!(spec.output_schema["type"], "object", "{}", spec.name);
            keywords_within(&spec.input_schema, spec.name);
        }
        let read_only: Vec<&str> = specs
            .iter()
            .filter(|s| s.read_only)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            read_only,
            [
                "env_list",
                "env_get",
                "env_find",
                "env_resolve",
                "env_resolve_operation",
                "env_get_context",
                "env_validate"
            ]
        );
        let destructive: Vec<&str> = specs
            .iter()
            .filter(|s| s.destructive)
            .map(|s| s.name)
            .collect();
        assert_eq!(destructive, ["env_delete"]);
    }

    /// What every host lists (names, descriptions, input schemas, hints): a change is
    /// reviewed as a snapshot diff, not discovered by a model. Output schemas are left
    /// out on purpose: they follow the core's output types (owned elsewhere) and are
    /// checked for truthfulness by the Python MCP client against real results.
    #[test]
    fn tool_list_snapshot() {
        let specs: Vec<Value> = tool_specs()
            .into_iter()
            .map(|s| {
                json!({
                    "name": s.name, "description": s.description,
                    "inputSchema": s.input_schema,
                    "readOnly": s.read_only, "destructive": s.destructive, "idempotent": s.idempotent,
                })
            })
            .collect();
        insta::assert_json_snapshot!("tool_specs", specs);
    }

    #[test]
    fn checker_names_each_bad_field() {
        let err = check_arguments("env_delete", &json!({"kind": "planet", "id": 3}))
            .expect_err("bad args");
        let paths: Vec<&str> = err.iter().map(|i| i.path.as_str()).collect();
        assert!(paths.contains(&"kind"), "{err:?}");
        assert!(paths.contains(&"id"), "{err:?}");
        assert!(paths.contains(&"confirm"), "{err:?}");
        let extra = check_arguments("env_validate", &json!({"x": 1})).expect_err("extra");
        assert_eq!(extra[0].path, "x");
        let not_object = check_arguments("env_list", &json!([1])).expect_err("array");
        assert_eq!(not_object[0].path, "");
    }

    #[test]
    fn set_context_takes_string_or_null_only() {
        assert!(check_arguments("env_set_context", &json!({"environmentId": "dev"})).is_ok());
        assert!(check_arguments("env_set_context", &json!({"environmentId": null})).is_ok());
        assert!(check_arguments("env_set_context", &json!({"environmentId": 5})).is_err());
        assert!(check_arguments("env_set_context", &json!({})).is_err());
    }

    #[test]
    fn save_record_accepts_any_json() {
        assert!(
            check_arguments(
                "env_save",
                &json!({"kind": "service", "record": {"id": "x"}})
            )
            .is_ok()
        );
        assert!(
            check_arguments(
                "env_save",
                &json!({"kind": "service", "record": {}, "dryRun": "yes"})
            )
            .is_err()
        );
    }

    #[test]
    fn invalid_arguments_error_lists_issues() {
        let issues = check_arguments("env_get", &json!({})).expect_err("missing");
        let err = invalid_arguments("env_get", &issues);
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("`kind`") && err.message.contains("`id`"));
        assert_eq!(err.details.expect("details")["issues"][0]["path"], "kind");
    }

    #[test]
    fn render_lines_follow_the_contract_examples() {
        let list = json!({"items": [
            {"kind": "environment", "id": "a", "name": "A"},
            {"kind": "environment", "id": "b", "name": "B"},
            {"kind": "service", "id": "s", "name": "S"}],
            "warnings": [{"severity": "warning", "code": "X", "message": "m"}, {"severity": "warning", "code": "X", "message": "m"}]});
        assert_eq!(
            render_line("env_list", &json!({}), &list),
            "2 environments, 1 service (2 warnings)."
        );
        assert_eq!(
            render_line(
                "env_list",
                &json!({}),
                &json!({"items": [], "warnings": []})
            ),
            "0 records."
        );
        let get = json!({"record": {"id": "test-a", "name": "Test A", "updatedAt": "2026-11-01T10:00:00Z"}, "yaml": ""});
        assert_eq!(
            render_line("env_get", &json!({"kind": "environment"}), &get),
            "environment test-a (Test A), updated 2026-11-01."
        );
        assert_eq!(
            render_line(
                "env_find",
                &json!({"query": "aico"}),
                &json!({"hits": [{}, {}, {}]})
            ),
            "3 matches for \"aico\"."
        );
        let ctx = json!({
            "environment": {"id": "test-a", "platform": "kubernetes"}, "service": {"id": "aicoservice"},
            "paths": {"a": "", "b": "", "c": ""}, "logSources": [{}, {}], "classLocations": ["x", "y"],
            "variables": {"a": "1", "b": "2"}, "warnings": [{}]});
        assert_eq!(
            render_line("env_resolve", &json!({}), &ctx),
            "Resolved aicoservice in test-a (kubernetes): 7 paths, 2 variables, 1 warning."
        );
        let op = json!({"operation": "redeploy",
            "requested": {"environmentId": "test-a", "serviceId": "aicoservice"},
            "skill": {"name": "redeploy-k8s-service", "available": true},
            "policy": {"requiresApproval": true}});
        assert_eq!(
            render_line("env_resolve_operation", &json!({}), &op),
            "redeploy aicoservice/test-a → redeploy-k8s-service (approval required)."
        );
        assert_eq!(
            render_line(
                "env_get_context",
                &json!({}),
                &json!({"defaultEnvironmentId": "test-a"})
            ),
            "Session default: test-a."
        );
        assert_eq!(
            render_line(
                "env_set_context",
                &json!({}),
                &json!({"defaultEnvironmentId": "test-a", "persisted": true})
            ),
            "Session default set to test-a."
        );
        assert_eq!(
            render_line(
                "env_set_context",
                &json!({}),
                &json!({"defaultEnvironmentId": null, "persisted": true})
            ),
            "Session default cleared."
        );
        let save = json!({"id": "test-a", "kind": "environment", "created": false, "dryRun": false,
            "warnings": [{"severity": "warning"}]});
        assert_eq!(
            render_line("env_save", &json!({}), &save),
            "Saved environment test-a (updated, 1 warning)."
        );
        let delete =
            json!({"id": "test-a", "kind": "environment", "deleted": true, "blockers": []});
        assert_eq!(
            render_line("env_delete", &json!({}), &delete),
            "Deleted environment test-a (backup kept)."
        );
        let validate = json!({"ok": false, "diagnostics": [
            {"severity": "error"}, {"severity": "error"}, {"severity": "warning"}, {"severity": "info"}]});
        assert_eq!(
            render_line("env_validate", &json!({}), &validate),
            "Registry invalid: 2 errors, 1 warning."
        );
    }

    fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-zA-Z_. -]{0,12}".prop_map(Value::String),
            prop::sample::select(vec![
                "environment",
                "service",
                "kind",
                "id",
                "confirm",
                "environmentId"
            ])
            .prop_map(|s| Value::String(s.to_owned())),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "kind",
                            "id",
                            "query",
                            "record",
                            "confirm",
                            "dryRun",
                            "environmentId",
                            "serviceId",
                            "deploymentId",
                            "operation",
                            "items",
                            "hits",
                            "record",
                            "warnings",
                            "paths",
                            "requested",
                            "skill",
                            "policy",
                            "other",
                        ]),
                        inner
                    ),
                    0..6
                )
                .prop_map(|pairs| Value::Object(
                    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Whatever a peer sends, checking and rendering never panic, and the checker
        /// accepts exactly what it reports no issue for.
        #[test]
        fn checker_and_render_never_panic(value in arbitrary_json()) {
            for name in TOOL_NAMES {
                let checked = check_arguments(name, &value);
                if let Err(issues) = &checked {
                    proptest::prop_assert!(!issues.is_empty());
                }
                let _ = render_line(name, &value, &value);
            }
        }
    }
}
