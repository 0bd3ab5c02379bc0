//! `envreg hook`: contract §1.3 as a host's PreToolUse command hook — the host's JSON
//! event on stdin, its decision on stdout. The verdict is
//! [`envreg_core::host_gate::judge`]'s; this module only reads the envelope, finds the
//! registry and writes the answer in the host's dialect.
//!
//! - `claude-code` (default; also DeepSeek Harness's Claude Code hooks bridge): a call
//!   that needs approval, or that cannot be judged, gets `permissionDecision: "ask"`
//!   with the gate's sentence.
//! - `codex`: Codex's hook parser rejects `ask`, so the same calls get `"deny"` with the
//!   way forward.
//! - No opinion: nothing on stdout, exit 0, so the host's own rules decide. `allow` is
//!   never emitted: it would skip the host's own prompt.
//!
//! The answer is always exit 0 with the decision on stdout — never exit 2 (Claude Code
//! would show stderr instead of the reason) and never a non-blocking error (the call
//! would run unjudged). An event that cannot be read is answered like a call that
//! cannot be judged: fail closed.
//!
//! Decision: the wire shapes are written here, not shared with facet's hook. envreg
//! needs four envelope fields and one output object; facet's envelope module carries
//! facet's own tables (file tools, path arguments, surrogates in paths). A foundation
//! crate for ~20 lines of JSON would tie two products' releases together; the shapes
//! are instead pinned by live tests of both against the same pinned hosts.
//!
//! Which registry: the one the envreg server started by the same host serves, as that
//! server recorded it ([`envreg_core::served`]) — never one looked up from the event's
//! `cwd`, which the agent controls (issue 19: a decoy `envreg.yaml` there turned the
//! hook silent). `--registry` / `$ENVREG_REGISTRY` names it when no server recorded one
//! (a server on another machine, a system without `/proc`); when both are known they
//! must agree. A hook that cannot tell which registry its server writes to answers like
//! any call it cannot judge: it asks (Claude Code) or refuses (Codex).

use std::io::{Read, Write};
use std::path::Path;

use clap::{Args, ValueEnum};
use envreg_core::host_gate::{self, GateVerdict, WriteTool};
use envreg_core::served::{self, HostRegistry};
use envreg_core::{EnvError, Registry};
use serde_json::{Value, json};

/// The hosts whose hook answers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dialect {
    /// Claude Code, and DeepSeek Harness's Claude Code hooks bridge: asks.
    #[value(name = "claude-code")]
    ClaudeCode,
    /// Codex: has no ask, so refuses with the way forward.
    #[value(name = "codex")]
    Codex,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Which host runs the hook.
    #[arg(long, value_enum, default_value = "claude-code")]
    pub dialect: Dialect,
}

/// Events larger than this are not read (a save's record is capped at 1 MiB by the
/// server; 16 MiB leaves room for any envelope around it).
const LIMIT: usize = 16 * 1024 * 1024;

/// Reads the event from stdin, prints the answer. Never fails: every way it can go
/// wrong is an answer. `registry_flag` is already absolute (made so at start).
pub fn run(registry_flag: Option<&Path>, args: &HookArgs) {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(LIMIT as u64 + 1)
        .read_to_end(&mut input);
    let verdict = match read {
        Err(e) => host_gate::unreadable(format!("the hook event could not be read: {e}")),
        Ok(_) if input.len() > LIMIT => {
            host_gate::unreadable(format!("the hook event is over {LIMIT} bytes"))
        }
        Ok(_) => verdict(&input, registry_flag),
    };
    if let Some(answer) = answer(&verdict, args.dialect) {
        let mut out = std::io::stdout().lock();
        // A closed stdout means the host is gone; nothing useful is left to do.
        let _ = writeln!(out, "{answer}").and_then(|()| out.flush());
    }
}

/// The verdict on one event's bytes.
pub fn verdict(input: &[u8], registry_flag: Option<&Path>) -> GateVerdict {
    let event: Value = match serde_json::from_slice(input) {
        Ok(event) => event,
        Err(e) => return host_gate::unreadable(format!("the hook event is not JSON: {e}")),
    };
    // Registered for another event by mistake: not ours to judge.
    match event.get("hook_event_name") {
        None => {}
        Some(Value::String(name)) if name == "PreToolUse" => {}
        Some(Value::String(_)) => return GateVerdict::NoOpinion,
        Some(_) => return host_gate::unreadable("hook_event_name is not a string"),
    }
    let Some(tool) = event.get("tool_name").and_then(Value::as_str) else {
        return host_gate::unreadable("the hook event has no tool_name");
    };
    let Some(tool) = write_tool(tool) else {
        return GateVerdict::NoOpinion;
    };
    let tool_input = event.get("tool_input").cloned().unwrap_or(Value::Null);
    host_gate::judge(tool, &tool_input, || open(registry_flag))
}

/// The write tool a host's tool name stands for: `env_save`, or the host-qualified
/// `mcp__<server>__env_save` under any server name (Claude Code plugins name theirs
/// `plugin_<plugin>_<server>`). Anything else is not ours.
fn write_tool(host_name: &str) -> Option<WriteTool> {
    let bare = match host_name.strip_prefix("mcp__") {
        Some(rest) => match rest.rsplit_once("__") {
            Some((server, tool)) if !server.is_empty() => tool,
            _ => return None,
        },
        None => host_name,
    };
    match bare {
        "env_save" => Some(WriteTool::Save),
        "env_delete" => Some(WriteTool::Delete),
        _ => None,
    }
}

/// The registry the host's server writes to (see the module docs for the order).
fn open(registry_flag: Option<&Path>) -> Result<Registry, EnvError> {
    let unknown = |why: String| EnvError::invalid_argument(why);
    let named = registry_flag.map(|dir| std::fs::canonicalize(dir).unwrap_or(dir.to_path_buf()));
    let root = match (served::host_registry(), named) {
        (HostRegistry::Known(served), None) => served,
        (HostRegistry::Known(served), Some(named)) if served == named => served,
        (HostRegistry::Known(served), Some(named)) => {
            return Err(unknown(format!(
                "this hook was given the registry {} but the envreg server of this host serves {}; \
                 name the same registry for both (or neither)",
                named.display(),
                served.display()
            )));
        }
        (HostRegistry::Ambiguous(all), _) => {
            return Err(unknown(format!(
                "the envreg servers of this host serve different registries ({}), so this hook \
                 cannot tell which one the call writes to; start one envreg server per host",
                all.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        (HostRegistry::NotRecorded | HostRegistry::Unavailable(_), Some(named)) => named,
        (HostRegistry::NotRecorded, None) => {
            return Err(unknown(
                "no envreg server started by this host recorded which registry it serves; \
                 name it for the hook with --registry DIR or ENVREG_REGISTRY"
                    .to_owned(),
            ));
        }
        (HostRegistry::Unavailable(why), None) => {
            return Err(unknown(format!(
                "which registry this host's envreg server serves cannot be read ({why}); \
                 name it for the hook with --registry DIR or ENVREG_REGISTRY"
            )));
        }
    };
    Registry::open(crate::locate::registry_root(Some(&root), Path::new("/"))?)
}

/// The JSON the host reads, or `None` for no opinion.
pub fn answer(verdict: &GateVerdict, dialect: Dialect) -> Option<String> {
    let (decision, reason) = match dialect {
        Dialect::ClaudeCode => ("ask", verdict.ask_reason()?),
        Dialect::Codex => ("deny", verdict.refusal_reason()?),
    };
    Some(
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }})
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_tools_are_recognised_under_any_server_name() {
        for (name, tool) in [
            ("env_save", Some(WriteTool::Save)),
            ("env_delete", Some(WriteTool::Delete)),
            ("mcp__envreg__env_save", Some(WriteTool::Save)),
            (
                "mcp__plugin_envreg-facet_envreg__env_delete",
                Some(WriteTool::Delete),
            ),
            ("mcp__a__b__env_save", Some(WriteTool::Save)),
            ("mcp____env_save", None),
            ("mcp__env_save", None),
            ("mcp__envreg__env_resolve", None),
            ("env_save_x", None),
            ("Env_save", None),
            ("Read", None),
            ("", None),
        ] {
            assert_eq!(write_tool(name), tool, "{name}");
        }
    }
}
