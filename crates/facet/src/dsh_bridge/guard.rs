//! The guard on dsh's tool execution (`tools/pre-execute`) and the binding for the
//! runtime-context snapshot: `facet-core`'s judge and the seed's context text, for
//! the session dsh recorded.
//!
//! A call the judge asks about is held in [`Pending`] while the plugin puts the
//! question to the user; the answer settles it ([`Bridge::answer`]).

use facet_core::{Decision, Session};
use serde_json::{Map, Value, json};

use super::held::{
    Approved, Bridge, Caller, MAX_HELD_APPROVALS, MAX_UNANSWERED_SESSIONS, Pending, Started,
};
use super::wire;

fn allow() -> Value {
    json!({"verdict": "allow"})
}

fn deny(reason: &str) -> Value {
    json!({"verdict": "deny", "reason": reason})
}

/// The session's state, recorded at first sight with the directory dsh recorded.
fn session_of(started: &Started, caller: &Caller) -> Result<Session, String> {
    let (id, cwd) = caller.identity()?;
    // Standing grants are live: the user's file is read again (fail closed: a file
    // that cannot be used refuses every judged call, as the hook does).
    let live;
    let config = if started.live_config {
        let fresh = facet_core::Config::load_chosen().map_err(|error| error.to_string())?;
        let mut config = started.core.clone();
        config.projects = fresh.projects;
        live = config;
        &live
    } else {
        &started.core
    };
    started
        .store
        .load_or_init(&id, cwd, config)
        .map_err(|error| error.to_string())
}

/// The refusal when the facet cannot be known: fail closed, and say what to do.
fn unknown_facet(problem: &str) -> String {
    format!(
        "facet could not tell this session's facet ({problem}), so the call is refused. \
         Ask the user to check `facet status`."
    )
}

/// The seed's context text for the caller's session; `""` contributes nothing. A
/// state that cannot be read is said in the binding, since every judged call is
/// refused until it is fixed.
pub(super) fn context_text(started: &Started, caller: &Caller) -> String {
    if caller.identity().is_err() {
        return String::new();
    }
    match session_of(started, caller) {
        Ok(session) => session.context_text(caller.can_ask),
        Err(problem) => format!(
            "facet: this session's state cannot be read ({problem}); every call facet judges \
             is refused until the user fixes it (`facet status`)."
        ),
    }
}

impl Bridge {
    /// `judge`: allow or deny now, or put the question to the user first.
    pub(super) fn judge(
        &mut self,
        id: u64,
        params: &Map<String, Value>,
        caller: Caller,
    ) -> Vec<String> {
        let Some(started) = &self.started else {
            return Vec::new();
        };
        let Some(tool) = params.get("tool").and_then(Value::as_str) else {
            return vec![wire::error(
                Some(id),
                "INVALID_PARAMS",
                "`tool` must be a string",
                None,
            )];
        };
        let policy = &started.policy;
        if !policy.is_facet_tool(tool) && policy.tools().get(tool).is_none() {
            return vec![wire::result(id, allow())];
        }
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let session = match session_of(started, &caller) {
            Ok(session) => session,
            Err(problem) => return vec![wire::result(id, deny(&unknown_facet(&problem)))],
        };
        let Some(cwd) = caller.cwd.clone() else {
            return vec![wire::result(id, deny(&unknown_facet("no directory")))];
        };
        match policy.judge(tool, &arguments, &cwd, &session, caller.can_ask) {
            Decision::NoOpinion => vec![wire::result(id, allow())],
            Decision::Deny(reason) => vec![wire::result(id, deny(&reason))],
            Decision::Ask(reason) => {
                let question = wire::approval(id, tool, &reason);
                self.pending.insert(
                    id,
                    Pending {
                        caller,
                        tool: tool.to_owned(),
                        call_id: params
                            .get("callId")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        arguments,
                        reason,
                    },
                );
                vec![question]
            }
        }
    }

    /// `approval_answer`: settle the pending `judge` of the same id.
    pub(super) fn answer(&mut self, id: u64, params: &Map<String, Value>) -> Vec<String> {
        let Some(pending) = self.pending.remove(&id) else {
            return vec![wire::error(
                Some(id),
                "UNKNOWN_CALL",
                "no question is pending under this id",
                None,
            )];
        };
        let decision = params.get("decision").and_then(Value::as_str);
        let verdict = match decision {
            Some("allowed-once") => {
                self.hold_approval(&pending);
                allow()
            }
            Some("rejected") => deny(&format!(
                "the user rejected tool \"{}\": {}",
                pending.tool, pending.reason
            )),
            Some("cancelled") => deny(&format!(
                "approval for tool \"{}\" was cancelled: {}",
                pending.tool, pending.reason
            )),
            // `unavailable`, or anything else: nobody can answer, so the call is
            // judged as in a session without an approval channel, and so is the
            // session from now on.
            _ => {
                if let Some(session) = &pending.caller.session {
                    if self.unanswered.len() >= MAX_UNANSWERED_SESSIONS {
                        self.unanswered.clear();
                    }
                    self.unanswered.insert(session.clone());
                }
                self.judge_without_channel(&pending)
            }
        };
        vec![wire::result(id, verdict)]
    }

    fn judge_without_channel(&self, pending: &Pending) -> Value {
        let Some(started) = &self.started else {
            return deny(&pending.reason);
        };
        let mut caller = pending.caller.clone();
        caller.can_ask = false;
        let (session, Some(cwd)) = (session_of(started, &caller), caller.cwd.as_deref()) else {
            return deny(&unknown_facet("no directory"));
        };
        let session = match session {
            Ok(session) => session,
            Err(problem) => return deny(&unknown_facet(&problem)),
        };
        match started
            .policy
            .judge(&pending.tool, &pending.arguments, cwd, &session, false)
        {
            Decision::NoOpinion => allow(),
            Decision::Ask(reason) | Decision::Deny(reason) => deny(&reason),
        }
    }

    /// Remember an allowed widening so the `facet` body of this very call records it.
    fn hold_approval(&mut self, pending: &Pending) {
        let Some(started) = &self.started else {
            return;
        };
        if !started.policy.is_facet_tool(&pending.tool) {
            return;
        }
        let (Some(session), Some(call_id)) = (&pending.caller.session, &pending.call_id) else {
            return;
        };
        if self.approved.len() >= MAX_HELD_APPROVALS {
            self.approved.pop_front();
        }
        self.approved.push_back(Approved {
            session: session.clone(),
            call_id: call_id.clone(),
            paths: facet_core::session::requested_paths(&pending.arguments),
        });
    }
}
