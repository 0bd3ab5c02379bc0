//! One hook event in, one answer out.
//!
//! | event | answer |
//! | --- | --- |
//! | `SessionStart` | rule text + context text as `additionalContext` (nothing when unscoped or off); OpenCode: before each model request, as system-prompt text |
//! | `UserPromptSubmit` | the context text, only when it differs from what the session was last told |
//! | `PreToolUse` | `ask` / `deny` with the seed's sentence, or no opinion |
//! | `PostToolUse` of the facet tool | the change recorded for this session; the new binding as `additionalContext` |
//! | anything else | no opinion |
//!
//! ## Decisions
//! - The approval channel exists unless the dialect cannot ask (Codex, Gemini CLI), the
//!   event says `permission_mode: bypassPermissions`, or the hook was started with
//!   `--no-approval`. Without it every ask becomes a deny, widening included.
//!   OpenCode cannot ask either: its plugin can only let a call run or throw.
//! - Every ask and refusal, in every dialect, is written by [`output::decision`].
//! - A `PreToolUse` of a tool the guard does not know never touches the state
//!   folder: the common case stays one parse and one exit.
//! - `PostToolUse` records an `add` only when `PreToolUse` would have asked: an
//!   approval channel exists, the mode is not `off` and the session has a facet.
//!   Otherwise nobody can have approved it, so a call that got through anyway (a
//!   missing `PreToolUse` matcher) must not widen the facet.
//! - The facet tool's arguments are read by the same strict reader the MCP server
//!   uses, so the hook records exactly the calls the server accepted.
//! - A judged call whose canonical target lies in facet's own state folder or
//!   configuration is refused in every mode but `off`, grants notwithstanding: a
//!   session in `$HOME` would otherwise hold its own state and could rewrite it.
//! - A `PreToolUse` that cannot be decoded (too deep, too large) is refused, and so
//!   is every `PreToolUse` while the configuration file cannot be used.
//! - A state folder that cannot be read or written fails closed on `PreToolUse`
//!   for calls the guard would judge (deny, with the cause), and is a
//!   non-blocking error elsewhere.
//! - An event with an empty `session_id` (DeepSeek Harness's bridge outside an
//!   agent) is still judged, against its own `cwd` as a facet seen for the first
//!   time, and nothing is recorded: losing the id must not open the guard.
//! - Codex patches are judged where Codex applies them (`cd DIR && apply_patch`,
//!   a `workdir` when sent); a shell command that runs `apply_patch` in any other
//!   form, or names another environment, is judged as outside: refused, never let
//!   through (see [`apply_patch`]).
//! - Gemini CLI: its own tool table; a bare search in a scoped session is pinned to
//!   the session folder (see [`pinned_search`]), since Gemini would search every
//!   workspace folder.
//! - GitHub Copilot CLI (`--dialect copilot`): its own envelope and answer shape
//!   ([`envelope`], [`output`]) and its own tool table (its `grep`/`glob` collide with
//!   DeepSeek Harness's names); its free-form `apply_patch` is judged where Copilot
//!   writes it, in the session's folder. Copilot refuses a tool call whose hook failed,
//!   so there every `preToolUse` facet cannot read is refused with the cause, and a
//!   judged tool whose arguments are not an object (text that holds no JSON object) is
//!   refused rather than read as naming no path.
//! - Not done: `Bash` is judged only where it runs or carries a patch; `allow` is
//!   never answered.

use std::path::{Path, PathBuf};

use facet_core::{Decision, FacetAction, Mode, Policy, Session};
use serde_json::Value;

use crate::apply_patch;
use crate::envelope::{self, Dialect, Envelope, HookEvent};
use crate::facet_tool;
use crate::output::{self, HookAnswer, Permission};
use crate::state::{self, StateError};

pub use crate::hook_config::HookConfig;

/// Answer one event. Never panics, whatever `input` holds.
pub fn answer(input: &[u8], config: &HookConfig) -> HookAnswer {
    let dialect = config.dialect;
    let envelope = match envelope::parse_as(input, dialect) {
        Ok(envelope) => envelope,
        // Copilot refuses a tool call whose hook failed, so there every unreadable
        // tool call is refused with the cause (a refusal the model can read); Claude
        // Code and Codex would run the tool after a failed hook, so there only what
        // the reader cannot decode at all is refused.
        Err(error)
            if (matches!(error, envelope::EnvelopeError::NotJson(_))
                || dialect == Dialect::Copilot)
                && envelope::may_be_tool_call(input, dialect) =>
        {
            return unreadable_tool_call(dialect, &error.to_string());
        }
        Err(error) => {
            return HookAnswer::non_blocking_error(format!(
                "facet hook: {error}. The event was not judged; facet hook expects the host's \
                 hook event as JSON on stdin (session_id, cwd, hook_event_name, …)."
            ));
        }
    };
    if let Some(problem) = &config.config_problem {
        return match envelope.event {
            // Fail closed: the user's tool list is unknown, so any tool may be one
            // the guard should judge.
            HookEvent::PreToolUse { .. } => HookAnswer::json(output::decision(
                dialect,
                Permission::Deny,
                &format!(
                    "facet could not use its configuration, so the call is refused: {problem}. \
                     Ask the user to fix the file."
                ),
            )),
            _ => HookAnswer::non_blocking_error(format!("facet hook: {problem}")),
        };
    }
    let policy = Policy::with_table(dialect.tool_table(), &config.core)
        .with_guarded(guarded_locations(config));
    let can_ask = config.can_ask(&envelope);
    if envelope.session_id.is_empty() {
        return sessionless(&envelope, config, &policy, can_ask);
    }
    match &envelope.event {
        HookEvent::SessionStart => session_start(&envelope, config, can_ask),
        HookEvent::UserPromptSubmit => user_prompt_submit(&envelope, config, can_ask),
        HookEvent::PreToolUse {
            tool_name,
            tool_input,
        } => pre_tool_use(&envelope, config, &policy, can_ask, tool_name, tool_input),
        HookEvent::PostToolUse {
            tool_name,
            tool_input,
            tool_response,
        } => post_tool_use(
            &envelope,
            config,
            &policy,
            can_ask,
            tool_name,
            tool_input,
            tool_response.as_ref(),
        ),
        HookEvent::Other(_) => HookAnswer::no_opinion(),
    }
}

fn guarded_locations(config: &HookConfig) -> Vec<PathBuf> {
    state::guarded_locations(config.state_dir.as_deref())
}

/// Answer an event larger than the hook reads (`input` is its first bytes): a
/// `PreToolUse` is refused, anything else is a non-blocking error.
pub fn answer_too_large(input: &[u8], limit: usize, dialect: Dialect) -> HookAnswer {
    let problem = format!("the event is larger than {} MiB", limit / (1024 * 1024));
    if envelope::may_be_tool_call(input, dialect) {
        return unreadable_tool_call(dialect, &problem);
    }
    HookAnswer::non_blocking_error(format!("facet hook: {problem}. The event was not judged."))
}

/// A `PreToolUse` the hook cannot decode (nesting past the JSON reader's depth
/// limit, an event over the size cap) though the host considers it valid: refused,
/// because a non-blocking error would let the tool run unjudged. Fail closed.
fn unreadable_tool_call(dialect: Dialect, problem: &str) -> HookAnswer {
    HookAnswer::json(output::decision(
        dialect,
        Permission::Deny,
        &format!("facet could not read this tool call ({problem}); refused."),
    ))
}

/// An event with no session id: nothing can be recorded or restated, but a tool
/// call is still judged — against the event's `cwd` as a facet seen for the first
/// time — so a host that loses its session id does not open the guard.
fn sessionless(
    envelope: &Envelope,
    config: &HookConfig,
    policy: &Policy,
    can_ask: bool,
) -> HookAnswer {
    let HookEvent::PreToolUse {
        tool_name,
        tool_input,
    } = &envelope.event
    else {
        return HookAnswer::no_opinion();
    };
    let Some(judged) = judged_call(config, policy, tool_name, tool_input) else {
        return HookAnswer::no_opinion();
    };
    decide(
        envelope,
        config,
        policy,
        can_ask,
        judged,
        state::ephemeral(config, envelope),
    )
}

fn state_failure(error: &StateError) -> HookAnswer {
    HookAnswer::non_blocking_error(format!("facet hook: {error}"))
}

fn session_start(envelope: &Envelope, config: &HookConfig, can_ask: bool) -> HookAnswer {
    let told = state::update(config, envelope, |session| {
        let context = session.context_text(can_ask);
        session.context_sent = Some(context.clone());
        // The rule goes with a non-empty binding only (see below).
        session.rule_sent |= !context.is_empty();
        context
    });
    match told {
        Ok(context) if context.is_empty() => HookAnswer::no_opinion(),
        Ok(context) => HookAnswer::json(output::additional_context(
            config.dialect,
            "SessionStart",
            &format!("{}\n\n{context}", facet_core::seed::facet_rule_text()),
        )),
        Err(error) => state_failure(&error),
    }
}

fn user_prompt_submit(envelope: &Envelope, config: &HookConfig, can_ask: bool) -> HookAnswer {
    let changed = state::update(config, envelope, |session| {
        let context = session.context_text(can_ask);
        if session.context_sent.as_deref() == Some(context.as_str()) {
            return None;
        }
        session.context_sent = Some(context.clone());
        if context.is_empty() {
            return Some(context);
        }
        // A session unscoped or off at its start was never told the rule; it is
        // now in force, so the rule comes first, once.
        let with_rule = if session.rule_sent {
            context
        } else {
            format!("{}\n\n{context}", facet_core::seed::facet_rule_text())
        };
        session.rule_sent = true;
        Some(with_rule)
    });
    match changed {
        // An empty text contributes nothing, as the seed's context text intends.
        Ok(Some(context)) if !context.is_empty() => HookAnswer::json(output::additional_context(
            config.dialect,
            "UserPromptSubmit",
            &context,
        )),
        Ok(_) => HookAnswer::no_opinion(),
        Err(error) => state_failure(&error),
    }
}

/// What a `PreToolUse` asks the guard to judge.
enum Judged<'a> {
    /// A tool call, judged by the table (or the widening rule).
    Call(&'a str, &'a Value),
    /// Paths pulled out of a Codex patch body, and the folders (below the event's
    /// `cwd`) Codex applies it in.
    Patch {
        paths: Vec<String>,
        folders: Vec<String>,
    },
    /// A Codex patch facet cannot place (see [`apply_patch::PatchCall`]).
    Unplaceable(&'static str),
}

fn pre_tool_use(
    envelope: &Envelope,
    config: &HookConfig,
    policy: &Policy,
    can_ask: bool,
    tool_name: &str,
    tool_input: &Value,
) -> HookAnswer {
    let Some(judged) = judged_call(config, policy, tool_name, tool_input) else {
        // Not a tool the guard reads: no opinion, without touching the state.
        return HookAnswer::no_opinion();
    };
    decide(
        envelope,
        config,
        policy,
        can_ask,
        judged,
        state::observe(config, envelope),
    )
}

/// What the guard must judge in this call, or `None` for a call it has no
/// opinion on whatever the state (an unknown tool, a patch naming no file).
fn judged_call<'a>(
    config: &HookConfig,
    policy: &Policy,
    tool_name: &'a str,
    tool_input: &'a Value,
) -> Option<Judged<'a>> {
    let patch = match config.dialect {
        Dialect::Codex => apply_patch::classify(tool_name, tool_input),
        Dialect::Copilot => apply_patch::classify_copilot(tool_name, tool_input),
        // OpenCode's `apply_patch` tool (offered to GPT models) carries the body in
        // `patchText` and joins its paths to the session directory lexically, as
        // Codex does; its shell is not judged.
        Dialect::OpenCode => apply_patch::classify_opencode(tool_name, tool_input),
        // Claude Code and Gemini CLI have no such tool, and their shells are not judged.
        Dialect::ClaudeCode | Dialect::Gemini => apply_patch::PatchCall::NotPatch,
    };
    match patch {
        apply_patch::PatchCall::Placed { paths, folders } => Some(Judged::Patch { paths, folders }),
        apply_patch::PatchCall::Unplaceable(why) => Some(Judged::Unplaceable(why)),
        // Arguments that are not an object (Copilot's `toolArgs` sent as text that
        // holds no JSON object) name no path the table can read: refused, never let
        // through as a call naming nothing.
        apply_patch::PatchCall::NotPatch
            if (policy.is_facet_tool(tool_name) || policy.tools().get(tool_name).is_some())
                && !tool_input.is_object() =>
        {
            Some(Judged::Unplaceable(UNREADABLE_ARGUMENTS))
        }
        apply_patch::PatchCall::NotPatch
            if policy.is_facet_tool(tool_name) || policy.tools().get(tool_name).is_some() =>
        {
            Some(Judged::Call(tool_name, tool_input))
        }
        apply_patch::PatchCall::NotPatch => None,
    }
}

/// The refusal of a judged tool whose arguments are not an object.
const UNREADABLE_ARGUMENTS: &str = "facet could not read this call's arguments (they are not a JSON object), so it cannot tell which paths the call names. Send the arguments as an object, with paths inside the facet.";

fn decide(
    envelope: &Envelope,
    config: &HookConfig,
    policy: &Policy,
    can_ask: bool,
    judged: Judged<'_>,
    session: Result<Session, StateError>,
) -> HookAnswer {
    let session = match session {
        Ok(session) => session,
        Err(error) => {
            // Fail closed: a call the guard would judge is refused when the facet
            // cannot be known, and the reason says why and what to do.
            return HookAnswer::json(output::decision(
                config.dialect,
                Permission::Deny,
                &format!(
                    "facet could not read this session's state, so the call is refused: {error}. \
                     Ask the user to check `facet status`."
                ),
            ));
        }
    };
    let cwd = Path::new(&envelope.cwd);
    let call = match &judged {
        Judged::Call(tool, input) => Some((*tool, *input)),
        _ => None,
    };
    let decision = match judged {
        Judged::Call(tool, input) => policy.judge(tool, input, cwd, &session, can_ask),
        Judged::Patch { paths, folders } => {
            // Each path where Codex opens it; one that cannot be placed (the home
            // folder unknown) keeps its written form, which the judge cannot place
            // either and so judges outside.
            let placed: Vec<(String, PathBuf)> = paths
                .into_iter()
                .map(|path| {
                    let absolute = apply_patch::place(cwd, &folders, &path)
                        .unwrap_or_else(|| PathBuf::from(&path));
                    (path, absolute)
                })
                .collect();
            policy.judge_placed(&placed, cwd, &session, can_ask)
        }
        Judged::Unplaceable(why) => policy.judge_unplaceable(why, &session, can_ask),
    };
    match decision {
        Decision::NoOpinion => pinned_search(config, policy, &session, envelope, call)
            .map_or_else(HookAnswer::no_opinion, HookAnswer::json),
        Decision::Ask(reason) if config.dialect.honours_ask() => {
            HookAnswer::json(output::decision(config.dialect, Permission::Ask, &reason))
        }
        // Unreachable with can_ask false, but a dialect that cannot ask must never
        // be sent an ask: refuse instead.
        Decision::Ask(reason) | Decision::Deny(reason) => {
            HookAnswer::json(output::decision(config.dialect, Permission::Deny, &reason))
        }
    }
}

/// Gemini CLI runs a search that names no folder (`glob`, `grep_search` without
/// `dir_path`) in *every* workspace folder — the session's, and any the user added
/// (`--include-directories`) — which the event does not list. facet judged the
/// session folder, so in a scoped session it pins the search there: the call's whole
/// input (Gemini replaces it, and tells the model it did) with `dir_path` set to the
/// event's `cwd`. `None` for every other call and dialect.
fn pinned_search(
    config: &HookConfig,
    policy: &Policy,
    session: &Session,
    envelope: &Envelope,
    call: Option<(&str, &Value)>,
) -> Option<String> {
    if config.dialect != Dialect::Gemini
        || session.mode == Mode::Off
        || session.facet_root().is_none()
    {
        return None;
    }
    let (tool, input) = call?;
    let spec = policy.tools().get(tool)?;
    let folder_argument = spec.path_args.first()?;
    let names: Vec<&str> = spec.path_args.iter().map(String::as_str).collect();
    if !spec.implicit_session_path || !facet_core::seed::string_arguments(input, &names).is_empty()
    {
        return None;
    }
    let mut pinned = input.as_object()?.clone();
    pinned.insert(folder_argument.clone(), Value::String(envelope.cwd.clone()));
    Some(output::pinned_tool_input(&Value::Object(pinned)))
}

fn post_tool_use(
    envelope: &Envelope,
    config: &HookConfig,
    policy: &Policy,
    can_ask: bool,
    tool_name: &str,
    tool_input: &Value,
    tool_response: Option<&Value>,
) -> HookAnswer {
    if !policy.is_facet_tool(tool_name) || tool_response.is_some_and(is_error_response) {
        return HookAnswer::no_opinion();
    }
    // The server refused anything this reader refuses, so nothing happened.
    let Ok(action) = facet_tool::parse_arguments(tool_input) else {
        return HookAnswer::no_opinion();
    };
    if matches!(action, FacetAction::Add(_)) && !can_ask {
        return HookAnswer::json(output::additional_context(
            config.dialect,
            "PostToolUse",
            &format!(
                "The grant was not recorded: this session has no approval channel, so nobody \
                 approved it.\n{}",
                current_context(config, envelope, can_ask)
            ),
        ));
    }
    let cwd = Path::new(&envelope.cwd);
    let recorded = state::update(config, envelope, |session| {
        // PreToolUse puts an `add` to the user only when the guard is on and the
        // session has a facet; any other `add` ran without a question (mode off,
        // an unscoped session) and must not outlive a switch back to `ask`.
        let asked = session.mode != Mode::Off && session.facet_root().is_some();
        if matches!(action, FacetAction::Add(_)) && !asked {
            return None;
        }
        let outcome = session.apply(&action, cwd);
        let context = session.context_text(can_ask);
        session.context_sent = Some(context.clone());
        Some((outcome, context))
    });
    let recorded = match recorded {
        Ok(Some(recorded)) => Ok(recorded),
        Ok(None) => {
            return HookAnswer::json(output::additional_context(
                config.dialect,
                "PostToolUse",
                "The grant was not recorded: facet is off for this session or it has no facet, \
                 so nobody was asked to approve it.",
            ));
        }
        Err(error) => Err(error),
    };
    match recorded {
        Ok((Ok(_), context)) if context.is_empty() => HookAnswer::no_opinion(),
        Ok((Ok(_), context)) => HookAnswer::json(output::additional_context(
            config.dialect,
            "PostToolUse",
            &context,
        )),
        Ok((Err(error), context)) => HookAnswer::json(output::additional_context(
            config.dialect,
            "PostToolUse",
            &format!("The facet was not changed: {error}.\n{context}"),
        )),
        Err(error) => state_failure(&error),
    }
}

fn current_context(config: &HookConfig, envelope: &Envelope, can_ask: bool) -> String {
    state::observe(config, envelope)
        .map(|session: Session| session.context_text(can_ask))
        .unwrap_or_default()
}

/// Whether a `tool_response` reports a failed call: an MCP result with
/// `isError: true`, sent as an object or — as Claude Code sends an MCP tool's
/// result — as that object's JSON text; Copilot's `toolResult` with a
/// `resultType` other than `success`. Text that is not a JSON object (DeepSeek
/// Harness's bridge sends the result's joined text) carries no error flag to read.
fn is_error_response(response: &Value) -> bool {
    let flagged = |object: &Value| {
        object.get("isError").and_then(Value::as_bool) == Some(true)
            || object.get("is_error").and_then(Value::as_bool) == Some(true)
            || object
                .get("resultType")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind != "success")
    };
    match response {
        Value::String(text) => serde_json::from_str::<Value>(text)
            .map(|parsed| flagged(&parsed))
            .unwrap_or(false),
        other => flagged(other),
    }
}
