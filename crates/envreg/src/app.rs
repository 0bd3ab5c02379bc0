//! One invocation: find the registry, turn the subcommand into a tool call, run it
//! through [`envreg_core::tools::call_tool`] (the same path MCP takes), print the result.
//!
//! Wording: a `POLICY_DENIED` after an approval that did not grant is reworded for the
//! person at the terminal ([`for_a_person`]); the core's sentence addresses a model and
//! stays unchanged for MCP and dsh. The CLI adds its own `hint:` line on stderr.
//!
//! Exit codes: 0 success, 1 an expected failure (the tool's error, printed — as
//! `{"error": {code, message, details}}` on stdout under `--json`), 2 a usage error:
//! clap's, and the flag values clap cannot check that the CLI checks before running
//! anything (`--session` / `ENVREG_SESSION_ID`, `serve`'s address rules), which print
//! as `INVALID_ARGUMENT` the way any error does.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use envreg_core::tools::{CallContext, ToolOutput, call_tool};
use envreg_core::{EnvError, ErrorCode, Registry, SessionId};
use serde_json::{Value, json};

use crate::approve::TerminalApprover;
use crate::cli::{Cli, Command, Kind, SessionArg};
use crate::style::Palette;
use crate::{human, init, locate, record_file};

/// A failure to print: the error, and a hint for the person (stderr only, so `--json`
/// stdout stays exactly the error object).
pub struct Failure {
    /// Boxed: an `EnvError` with details is large, and every `Result` here carries it.
    pub error: Box<EnvError>,
    pub hint: Option<String>,
    /// A usage error (exit 2) rather than an expected failure (exit 1).
    pub usage: bool,
}

impl Failure {
    /// A command line that cannot run as given (exit 2, like clap's usage errors).
    fn usage(error: EnvError) -> Failure {
        Failure {
            usage: true,
            ..Failure::from(error)
        }
    }
}

impl From<EnvError> for Failure {
    fn from(error: EnvError) -> Failure {
        Failure {
            error: Box::new(error),
            hint: None,
            usage: false,
        }
    }
}

/// How a command that ran to the end finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Done {
    Success,
    /// `validate` printed its report and the registry has errors (exit 3). Not 1: exit
    /// 1 means "the tool failed" and, with `--json`, an `{"error": …}` object on stdout;
    /// here stdout holds the report, as on success. CI jobs and pre-commit hooks see a
    /// non-zero status, as from a compiler or a linter.
    RegistryInvalid,
}

/// The exit status of `envreg validate` on a registry with errors.
const EXIT_REGISTRY_INVALID: u8 = 3;

pub fn run(cli: Cli) -> ExitCode {
    let json = cli.json;
    match execute(cli) {
        Ok(Done::Success) => ExitCode::SUCCESS,
        Ok(Done::RegistryInvalid) => ExitCode::from(EXIT_REGISTRY_INVALID),
        Err(failure) => {
            print_failure(&failure, json);
            ExitCode::from(if failure.usage { 2 } else { 1 })
        }
    }
}

fn print_failure(failure: &Failure, json: bool) {
    let err = &failure.error;
    if json {
        let body = json!({ "error": {
            "code": err.code.as_str(),
            "message": err.message,
            "details": err.details.clone().unwrap_or(Value::Null),
        }});
        outln!("{}", pretty(&body));
    } else {
        let p = Palette::for_stderr();
        eprintln!(
            "{} {}",
            p.red(&format!("error[{}]:", err.code.as_str())),
            err.message
        );
        if let Some(details) = &err.details {
            eprint!("{}", p.dim(&details_text(details)));
        }
    }
    if let Some(hint) = &failure.hint {
        let p = Palette::for_stderr();
        eprintln!("{} {hint}", p.cyan("hint:"));
    }
}

/// Error details as indented `key: value` lines: scalars as they are, lists of scalars
/// joined, anything deeper as compact JSON.
fn details_text(details: &Value) -> String {
    let Some(map) = details.as_object() else {
        return format!("  {details}\n");
    };
    let mut out = String::new();
    for (key, value) in map {
        let shown = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", "),
            Value::Array(items) => {
                // Lists of objects (blockers, issues, candidates with reasons): one per
                // line, by their message when they have one.
                out.push_str(&format!("  {key}:\n"));
                for item in items {
                    let line = item
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| item.to_string(), str::to_owned);
                    out.push_str(&format!("    - {line}\n"));
                }
                continue;
            }
            other => other.to_string(),
        };
        out.push_str(&format!("  {key}: {shown}\n"));
    }
    out
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The directory the process started in, read once: every relative path a person gave
/// is joined to it (see [`locate`]).
fn start_dir() -> Result<PathBuf, EnvError> {
    std::env::current_dir().map_err(|e| {
        EnvError::new(
            ErrorCode::InvalidArgument,
            format!("cannot read the current directory: {e}"),
        )
    })
}

fn open(cli_registry: Option<&Path>, start: &Path) -> Result<Registry, EnvError> {
    let root = locate::registry_root(cli_registry, start)?;
    Registry::open(root)
}

/// `--session` / `ENVREG_SESSION_ID`, checked before anything runs: a bad value is a
/// usage error.
fn session(arg: &SessionArg) -> Result<SessionId, Failure> {
    SessionId::new(arg.id()).map_err(|e| {
        Failure::usage(EnvError::invalid_argument(format!(
            "--session / ENVREG_SESSION_ID: {}",
            e.message
        )))
    })
}

fn execute(cli: Cli) -> Result<Done, Failure> {
    let start = start_dir();
    let start = || start.clone().map_err(Failure::from);
    let registry_flag = cli.registry.as_deref();
    let json_mode = cli.json;
    let (tool, args, session, yes) = match cli.command {
        Command::Init { dir } => {
            init::run(&dir, json_mode)?;
            return Ok(Done::Success);
        }
        Command::Schema { kind } => {
            outln!("{}", pretty(&kind.schema()));
            return Ok(Done::Success);
        }
        Command::Serve(args) => {
            crate::serve::check(&args).map_err(Failure::usage)?;
            let root = locate::registry_root(registry_flag, &start()?)?;
            crate::serve::run(root, args)
                .map_err(|e| Failure::from(EnvError::internal(format!("serve: {e:#}"))))?;
            return Ok(Done::Success);
        }
        Command::DshBridge => {
            // The registry must be named: the plugin always passes its `registry` key, and
            // a bridge that wandered up to some other envreg.yaml would answer for it.
            let root = match registry_flag {
                Some(dir) => locate::registry_root(Some(dir), &start()?),
                None => Err(EnvError::invalid_argument(
                    "dsh-bridge needs --registry DIR (the plugin's `registry` config key)",
                )),
            };
            crate::dsh_bridge::run(root)
                .map_err(|e| Failure::from(EnvError::internal(format!("dsh-bridge: {e:#}"))))?;
            return Ok(Done::Success);
        }
        Command::Hook(args) => {
            // Relative to where the hook started; an unreadable start directory leaves
            // the name as given (the hook never fails: it asks).
            let named = registry_flag.map(|dir| match start() {
                Ok(start) => locate::absolute(&start, dir),
                Err(_) => dir.to_path_buf(),
            });
            crate::hook::run(named.as_deref(), &args);
            return Ok(Done::Success);
        }
        Command::Ui(args) => {
            // The exposure rule is checked first so a bad address is a usage error.
            envreg_mcp::http::check_exposure(&args.http_options())
                .map_err(|e| Failure::usage(EnvError::invalid_argument(format!("ui: {e}"))))?;
            let root = locate::registry_root(registry_flag, &start()?)?;
            envreg_ui::run(root, args)
                .map_err(|e| Failure::from(EnvError::internal(format!("ui: {e:#}"))))?;
            return Ok(Done::Success);
        }
        Command::Synth { dir, divisor } => {
            synth(&dir, divisor, json_mode)?;
            return Ok(Done::Success);
        }
        Command::List { kind, query } => {
            let mut args = serde_json::Map::new();
            if let Some(kind) = kind {
                args.insert("kind".into(), kind.as_str().into());
            }
            if let Some(query) = query {
                args.insert("query".into(), query.into());
            }
            ("env_list", Value::Object(args), None, false)
        }
        Command::Get { kind, id } => (
            "env_get",
            json!({ "kind": kind.as_str(), "id": id }),
            None,
            false,
        ),
        Command::Find { query } => ("env_find", json!({ "query": query }), None, false),
        Command::Resolve {
            service,
            target,
            session: s,
        } => {
            let mut args = json!({ "serviceId": service });
            put_opt(&mut args, "environmentId", target.environment);
            put_opt(&mut args, "deploymentId", target.deployment);
            ("env_resolve", args, Some(session(&s)?), false)
        }
        Command::ResolveOperation {
            operation,
            service,
            target,
            session: s,
        } => {
            let mut args = json!({ "operation": operation });
            put_opt(&mut args, "environmentId", target.environment);
            put_opt(&mut args, "serviceId", service);
            put_opt(&mut args, "deploymentId", target.deployment);
            ("env_resolve_operation", args, Some(session(&s)?), false)
        }
        Command::Context {
            set,
            clear,
            session: s,
        } => {
            let session = Some(session(&s)?);
            match (set, clear) {
                (Some(env), _) => (
                    "env_set_context",
                    json!({ "environmentId": env }),
                    session,
                    false,
                ),
                (None, true) => (
                    "env_set_context",
                    json!({ "environmentId": null }),
                    session,
                    false,
                ),
                (None, false) => ("env_get_context", json!({}), session, false),
            }
        }
        Command::Save {
            kind,
            file,
            dry_run,
            approval,
        } => {
            let registry = open(registry_flag, &start()?)?;
            let record = read_record(&registry, kind, &file)?;
            let args = json!({ "kind": kind.as_str(), "record": record, "dryRun": dry_run });
            call_and_print(&registry, "env_save", args, None, approval.yes, json_mode)?;
            return Ok(Done::Success);
        }
        Command::Delete {
            kind,
            id,
            confirm,
            approval,
        } => (
            "env_delete",
            json!({ "kind": kind.as_str(), "id": id, "confirm": confirm }),
            None,
            approval.yes,
        ),
        Command::Validate => ("env_validate", json!({}), None, false),
    };
    let registry = open(registry_flag, &start()?)?;
    let value = call_and_print(&registry, tool, args, session, yes, json_mode)?;
    if tool == "env_validate" && value["ok"] == Value::Bool(false) {
        return Ok(Done::RegistryInvalid);
    }
    Ok(Done::Success)
}

fn put_opt(args: &mut Value, key: &str, value: Option<String>) {
    if let (Some(v), Some(obj)) = (value, args.as_object_mut()) {
        obj.insert(key.to_owned(), Value::String(v));
    }
}

fn call_and_print(
    registry: &Registry,
    tool: &str,
    args: Value,
    session: Option<SessionId>,
    yes: bool,
    json_mode: bool,
) -> Result<Value, Failure> {
    let approver = TerminalApprover::new(yes);
    let ctx = CallContext {
        session,
        approver: &approver,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| EnvError::internal(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(call_tool(registry, tool, args.clone(), &ctx));
    match result {
        Ok(ToolOutput { value, render }) => {
            if json_mode {
                outln!("{}", pretty(&value));
            } else {
                let text = human::render(
                    tool,
                    &render,
                    &value,
                    registry.root(),
                    &Palette::for_stdout(),
                );
                out!("{text}");
            }
            Ok(value)
        }
        Err(error) => {
            let hint = hint_for(&error, &approver, &args);
            Err(Failure {
                error: Box::new(for_a_person(error)),
                hint,
                usage: false,
            })
        }
    }
}

/// A `POLICY_DENIED` from an approval that did not grant, in words for the person at
/// the terminal. The core's sentence is written for a model behind an MCP client ("this
/// client cannot ask the user (no MCP elicitation support)", "do not retry unless the
/// user asks"), and MCP and dsh keep it byte for byte; here the reader is the user, and
/// the asking was done by this CLI. Code and details stay as they are.
fn for_a_person(error: EnvError) -> EnvError {
    let details = error.details.as_ref();
    let field = |key: &str| details.and_then(|d| d.get(key)).and_then(Value::as_str);
    let (ErrorCode::PolicyDenied, Some(word), Some(reason)) =
        (error.code, field("approval"), field("reason"))
    else {
        return error;
    };
    let message = match word {
        "rejected" => format!("you did not approve this change ({reason}); nothing was written"),
        "cancelled" => format!(
            "the approval question was left unanswered ({reason}); nothing was written — run the command again to be asked again"
        ),
        "unavailable" => format!(
            "this change needs your approval ({reason}), and there is no terminal to ask you on; nothing was written"
        ),
        _ => return error,
    };
    EnvError { message, ..error }
}

/// What to do next, for the errors where the CLI knows better than the message.
fn hint_for(error: &EnvError, approver: &TerminalApprover, args: &Value) -> Option<String> {
    match error.code {
        ErrorCode::PolicyDenied if approver.was_unavailable() => Some(
            "there is no terminal to ask for approval on; rerun with --yes to approve this write"
                .to_owned(),
        ),
        ErrorCode::DeploymentAmbiguous => {
            Some("pick one of the candidates with --deployment ID".to_owned())
        }
        ErrorCode::RecordInUse => Some(format!(
            "run `envreg delete {} {}` without --confirm to list what refers to it",
            args["kind"].as_str().unwrap_or("KIND"),
            args["id"].as_str().unwrap_or("ID")
        )),
        _ => None,
    }
}

/// The record in FILE (`-` = stdin) as JSON, refusing a file over the registry's
/// `maxRecordBytes` before reading it into memory.
fn read_record(registry: &Registry, kind: Kind, file: &Path) -> Result<Value, Failure> {
    let limit = registry.config().limits.max_record_bytes;
    let too_large = |size: u64| {
        EnvError::new(
            ErrorCode::RecordTooLarge,
            format!(
                "{} is {size} bytes, over the registry's limit of {limit} bytes (limits.maxRecordBytes)",
                if file == Path::new("-") { "stdin".to_owned() } else { file.display().to_string() }
            ),
        )
        .with_details(json!({ "bytes": size, "limit": limit }))
    };
    let cannot_read = |e: std::io::Error| {
        EnvError::invalid_argument(format!("cannot read {}: {e}", file.display()))
    };
    let mut bytes = Vec::new();
    if file == Path::new("-") {
        std::io::stdin()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot_read)?;
    } else {
        let f = std::fs::File::open(file).map_err(cannot_read)?;
        let size = f.metadata().map_err(cannot_read)?.len();
        if size > limit {
            return Err(too_large(size).into());
        }
        f.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot_read)?;
    }
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64).into());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        EnvError::new(
            ErrorCode::RecordInvalid,
            format!(
                "{} is not UTF-8 text (invalid byte at offset {})",
                file.display(),
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    record_file::parse(&text).map_err(|d| {
        let mut message = format!(
            "{} ({}) is not a valid {} record: {}",
            file.display(),
            d.code,
            kind.as_str(),
            d.message
        );
        if let Some(line) = d.line {
            message = format!(
                "{message} [{}:{line}:{}]",
                file.display(),
                d.column.unwrap_or(1)
            );
        }
        Failure::from(
            EnvError::new(ErrorCode::RecordInvalid, message).with_details(json!({ "issues": [d] })),
        )
    })
}

/// `envreg synth DIR`: the core's synthetic registry, plus ids to query it with.
fn synth(dir: &Path, divisor: usize, json_mode: bool) -> Result<(), Failure> {
    use envreg_core::synth::{SynthSpec, generate, sample};
    let spec = if divisor <= 1 {
        SynthSpec::default()
    } else {
        SynthSpec::scaled_down(divisor)
    };
    generate(dir, &spec).map_err(|e| {
        EnvError::new(
            ErrorCode::StorageUnwritable,
            format!(
                "cannot write the synthetic registry to {}: {e}",
                dir.display()
            ),
        )
    })?;
    let sample = sample(&spec);
    let value = json!({
        "registry": dir.display().to_string(),
        "records": spec.total(),
        "sample": {
            "environmentId": sample.environment,
            "serviceId": sample.service,
            "deploymentId": sample.deployment,
            "operation": sample.operation,
            "findQuery": sample.find_query,
        },
    });
    if json_mode {
        outln!("{}", pretty(&value));
    } else {
        outln!(
            "Wrote {} records to {}. Try: envreg --registry {} resolve {} --env {}",
            spec.total(),
            dir.display(),
            dir.display(),
            sample.service,
            sample.environment
        );
    }
    Ok(())
}
