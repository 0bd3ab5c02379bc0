//! The body of dsh's `facet` tool: read the arguments with the same strict reader
//! as the MCP server, change the session's state, and return the value its output
//! schema ([`super::specs::tool_spec`]) declares.
//!
//! `add` is recorded only for a call the guard put to the user and the user allowed
//! ([`super::held::Approved`], held by the bridge): the plugin cannot grant by calling the body.

use std::path::{Path, PathBuf};

use facet_core::{Change, FacetAction, GrantError, Mode, Session, SessionId};
use mcp_shape::invalid_argument_message;
use serde_json::{Map, Value, json};

use super::held::{Bridge, Caller, Started};
use super::wire;
use crate::facet_tool::{self, TOOL_NAME};

/// An expected failure: code and message for dsh's `HarnessError`.
struct Failure {
    code: &'static str,
    message: String,
    details: Option<Value>,
}

impl Failure {
    fn new(code: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            details: None,
        }
    }
}

impl Bridge {
    /// `facet`: run one call of the tool.
    pub(super) fn facet(
        &mut self,
        id: u64,
        params: &Map<String, Value>,
        caller: &Caller,
    ) -> String {
        match self.run_facet(params, caller) {
            Ok(value) => wire::result(id, value),
            Err(failure) => wire::error(Some(id), failure.code, &failure.message, failure.details),
        }
    }

    fn run_facet(
        &mut self,
        params: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, Failure> {
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let action = facet_tool::parse_arguments(&arguments).map_err(|issues| Failure {
            code: mcp_shape::INVALID_ARGUMENT,
            message: invalid_argument_message(TOOL_NAME, &issues),
            details: Some(json!({"issues": issues})),
        })?;
        let (id, cwd) = caller
            .identity()
            .map_err(|problem| Failure::new("SESSION_CONTEXT_UNAVAILABLE", problem))?;
        let call_id = params.get("callId").and_then(Value::as_str);
        let Some(started) = &self.started else {
            return Err(Failure::new("NOT_CONFIGURED", "`facet` before `configure`"));
        };
        let session = started
            .store
            .load_or_init(&id, cwd, &started.core)
            .map_err(|error| Failure::new("STATE_UNREADABLE", error.to_string()))?;
        if matches!(action, FacetAction::Add(_)) {
            // The guard asks only where the mode is on and the session has a facet;
            // elsewhere nobody was asked, so nothing may be recorded.
            if session.mode == Mode::Off || session.facet_root().is_none() {
                let note = "Nothing was recorded: facet is off for this session or it has no \
                            facet, so no path is out of reach.";
                return Ok(value(&session, &action, &[], note, caller.can_ask));
            }
            let paths = facet_core::session::requested_paths(&arguments);
            let held = self.approved.iter().position(|approved| {
                approved.session == id.as_str()
                    && Some(approved.call_id.as_str()) == call_id
                    && approved.paths == paths
            });
            match held {
                Some(index) => {
                    self.approved.remove(index);
                }
                None => {
                    // The way forward that works whatever the channel: the panel.
                    let grant = facet_core::seed::panel_grant_command(
                        &paths
                            .iter()
                            .map(|path| cwd.join(path).display().to_string())
                            .collect::<Vec<_>>(),
                        id.as_str(),
                        false,
                    );
                    return Err(Failure::new(
                        "NOT_APPROVED",
                        format!(
                            "nobody approved this grant, so it was not recorded: a grant is \
                             recorded only for the `facet action=add` call the user allowed. \
                             The user can grant it with `{grant}` in a terminal."
                        ),
                    ));
                }
            }
        }
        let Some(started) = &self.started else {
            return Err(Failure::new("NOT_CONFIGURED", "`facet` before `configure`"));
        };
        apply(started, &id, cwd, &action, caller.can_ask)
    }
}

fn apply(
    started: &Started,
    id: &SessionId,
    cwd: &Path,
    action: &FacetAction,
    can_ask: bool,
) -> Result<Value, Failure> {
    let outcome = started
        .store
        .update(id, |session| {
            let change = session.apply(action, cwd);
            (change, session.clone())
        })
        .map_err(|error| Failure::new("STATE_UNWRITABLE", error.to_string()))?;
    let (change, session) = outcome;
    let change = change.map_err(grant_failure)?;
    let (changed, headline) = match (&change, action) {
        (Change::Granted(added), FacetAction::Add(paths)) if added.is_empty() => (
            Vec::new(),
            format!(
                "{} already lies in the facet or an earlier grant; nothing was added.",
                paths.join(", ")
            ),
        ),
        (Change::Granted(added), _) => (
            added.clone(),
            format!("Granted {} for the rest of this session.", shown(added)),
        ),
        (Change::Revoked(removed), FacetAction::Remove(paths)) if removed.is_empty() => (
            Vec::new(),
            format!(
                "No grant lies at or below {}; nothing was withdrawn.",
                paths.join(", ")
            ),
        ),
        (Change::Revoked(removed), _) => (removed.clone(), format!("Withdrew {}.", shown(removed))),
        (Change::Reset, _) => (
            Vec::new(),
            "Every grant was dropped; a focus the user set stays.".to_owned(),
        ),
        _ => (Vec::new(), String::new()),
    };
    Ok(value(&session, action, &changed, &headline, can_ask))
}

fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn grant_failure(error: GrantError) -> Failure {
    Failure::new(
        "PATH_UNRESOLVABLE",
        format!("{error}; nothing was changed."),
    )
}

/// The tool's value: the binding after the call and a summary the model reads.
fn value(
    session: &Session,
    action: &FacetAction,
    changed: &[PathBuf],
    headline: &str,
    can_ask: bool,
) -> Value {
    let binding = session.context_text(can_ask);
    let state = if !binding.is_empty() {
        binding
    } else if session.mode == Mode::Off {
        "facet is off for this session: no call is judged.".to_owned()
    } else {
        "This session has no facet: it started at the project's top level, so the whole \
         project is in reach."
            .to_owned()
    };
    let summary = if headline.is_empty() {
        state
    } else {
        format!("{headline}\n{state}")
    };
    let canonical = |paths: &[PathBuf]| -> Vec<String> {
        paths
            .iter()
            .map(|path| path.display().to_string())
            .collect()
    };
    json!({
        "action": facet_tool::action_of(action).as_str(),
        "directory": session.directory.display().to_string(),
        "facet": session.facet_root().map(|root| root.display().to_string()),
        "granted": canonical(&session.extras),
        "changed": canonical(changed),
        "mode": session.mode.as_str(),
        "summary": summary,
    })
}
