//! The bridge's state, below the modules that act on it: the guard ([`super::guard`])
//! holds questions and approvals here, the `facet` body ([`super::tool`]) takes its
//! approval back from here, and the request loop ([`super`]) starts and dispatches.
//! Each of them extends [`Bridge`] with its own methods; none imports another.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use facet_core::{Policy, SessionId, StateStore};
use serde_json::{Map, Value};

/// The most sessions remembered as unanswerable (past it the memory starts over:
/// a forgotten session is asked once more and remembered again).
pub(super) const MAX_UNANSWERED_SESSIONS: usize = 4096;

/// The most approvals held between a guard and its `facet` body. One per pending
/// widening call is needed; an approved call that never ran (another policy
/// refused it) is dropped oldest first.
pub(super) const MAX_HELD_APPROVALS: usize = 256;

/// The bridge's state: configuration once `configure` succeeded, questions put to
/// the user, and approved widenings not yet run.
#[derive(Debug, Default)]
pub struct Bridge {
    pub(super) state_dir: Option<PathBuf>,
    /// An explicit configuration (tests, fuzzing); `None` reads the user's file.
    pub(super) config: Option<facet_core::Config>,
    pub(super) started: Option<Started>,
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) approved: VecDeque<Approved>,
    /// Sessions whose question came back `unavailable`: nobody can answer them, so
    /// they are judged — and their binding stated — as having no approval channel.
    pub(super) unanswered: BTreeSet<String>,
}

/// What `configure` established.
#[derive(Debug)]
pub(super) struct Started {
    pub(super) policy: Policy,
    pub(super) core: facet_core::Config,
    pub(super) store: StateStore,
    /// The configuration came from the user's file, which is read again for each
    /// session's standing grants, so a change to `[projects]` counts without a
    /// restart.
    pub(super) live_config: bool,
}

/// Who is calling: dsh's agent and what dsh says about its approval channel.
#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub(super) session: Option<String>,
    pub(super) cwd: Option<PathBuf>,
    pub(super) can_ask: bool,
}

impl Caller {
    pub(super) fn read(params: &Map<String, Value>) -> Caller {
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        let approval = params.get("approval");
        let service = approval
            .and_then(|facts| facts.get("service"))
            .and_then(Value::as_bool)
            == Some(true);
        let never = approval
            .and_then(|facts| facts.get("policy"))
            .and_then(Value::as_str)
            == Some("never");
        Caller {
            session: text("session").filter(|id| !id.is_empty()),
            cwd: text("cwd").map(PathBuf::from),
            can_ask: service && !never,
        }
    }

    /// The session id and its absolute directory, or why there are none.
    pub(super) fn identity(&self) -> Result<(SessionId, &Path), String> {
        let (Some(session), Some(cwd)) = (&self.session, &self.cwd) else {
            return Err(
                "this call belongs to no dsh session with a recorded working \
                        directory, so facet cannot tell which facet applies"
                    .to_owned(),
            );
        };
        if !cwd.is_absolute() {
            return Err(format!(
                "the session's recorded directory {} is not absolute",
                cwd.display()
            ));
        }
        let id = SessionId::new(session).map_err(|error| error.to_string())?;
        Ok((id, cwd))
    }
}

/// A judged call waiting for the user's answer.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub(super) caller: Caller,
    pub(super) tool: String,
    pub(super) call_id: Option<String>,
    pub(super) arguments: Value,
    pub(super) reason: String,
}

/// One widening the user allowed, waiting for its tool body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Approved {
    pub(super) session: String,
    pub(super) call_id: String,
    pub(super) paths: Vec<String>,
}
