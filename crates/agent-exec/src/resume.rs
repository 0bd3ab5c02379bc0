//! `agent-exec resume ID`: continue an interrupted execution inside its backend's own
//! session, under the same execution id (issue 12 §1).
//!
//! The journal decides what can be resumed. This module asks it first, read only
//! (`Journal::resumable`), so a refusal — not journaled, succeeded, still running under
//! a live owner, no session handle — comes before the backend's probe runs; then it
//! resolves the *journaled* backend with `resume` required and hands over to
//! `Runtime::resume`, which claims the execution in one transaction and checks all of
//! it again (another process may have moved in between).

use std::sync::Arc;

use agent_exec_contract::{Capability, ContractResult, Error, ErrorCode, SideEffects};
use agent_exec_journal::JournalError;
use agent_exec_runtime::{ResumeOptions, Runtime};
use anyhow::bail;

use crate::cli::{Args, ResumeArgs};
use crate::run::{
    arm_cancellation, event_printer, exit_code, open_journal, prepare, print_result, resolve,
};

/// The continuation prompt when the caller gives none. Fixed, so the agent is told
/// the same thing every time: what happened, and to check before it redoes anything
/// (the earlier attempt may have written files or run commands).
pub const DEFAULT_CONTINUATION: &str = "This task was interrupted before it finished: the process running it stopped. Continue the original task from where it stopped. First check what was already done (files written, commands run) and do not redo work that is complete; then finish what remains.";

pub async fn resume(args: &Args, r: &ResumeArgs) -> anyhow::Result<u8> {
    crate::request::check_execution_id(&r.id)
        .map_err(|e| anyhow::anyhow!("invalid execution id: {e}"))?;
    let prompt = match (&r.prompt, &r.prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => crate::request::read_prompt_file(file)?,
        (None, None) => DEFAULT_CONTINUATION.to_owned(),
    };
    if prompt.trim().is_empty() {
        bail!(
            "the continuation prompt is empty; give --prompt TEXT, or leave it out for the default"
        );
    }
    let deadline = r
        .deadline
        .as_deref()
        .map(crate::request::deadline_from_now)
        .transpose()?;
    let (config, registry) = prepare(args)?;
    let journal = open_journal(args, &config).await?;

    let candidate = match journal.resumable(&r.id).await {
        Ok(candidate) => candidate,
        // The journal itself failed: a usage/journal error (exit 2), as for every command.
        Err(
            e @ (JournalError::Sqlite { .. }
            | JournalError::Postgres { .. }
            | JournalError::Io { .. }
            | JournalError::NewerSchema { .. }),
        ) => return Err(e.into()),
        Err(refusal) => {
            // In the words and shape the runtime uses for the same refusal.
            let result = ContractResult::failed(Error::new(
                ErrorCode::Internal,
                format!("not resumed: journal: {refusal}"),
                SideEffects::None,
            ));
            print_result(r.json, &r.id, &result)?;
            return Ok(exit_code(&result.outcome));
        }
    };

    // The runner that died may have left its agent running (nobody terminated its
    // tree): stop it before a second agent continues the same conversation.
    if let Some(why) = crate::leftovers::terminate_what_dead_runners_left(&journal, &r.id).await? {
        // Fail closed: never a second agent beside one that would not stop.
        let result = ContractResult::failed(Error::new(
            ErrorCode::Internal,
            format!("not resumed: {why}"),
            SideEffects::None,
        ));
        print_result(r.json, &r.id, &result)?;
        return Ok(exit_code(&result.outcome));
    }

    let (cancellation, _disarm) = arm_cancellation(deadline);
    let resolved = match resolve(
        &registry,
        &candidate.backend,
        &[Capability::Resume],
        &cancellation,
        r.json,
        &r.id,
    )
    .await?
    {
        Ok(resolved) => resolved,
        Err(exit) => return Ok(exit),
    };

    let journal = Arc::new(journal);
    let runtime = Runtime::new().with_journal(journal.clone());
    let watcher =
        crate::run::watch_cancel_requests(journal.clone(), r.id.clone(), cancellation.clone());
    let (events, printer) = event_printer(r.events);
    let options = ResumeOptions {
        events,
        cancellation,
        deadline,
    };
    let result = runtime.resume(&r.id, &prompt, &resolved, options).await;
    watcher.abort();
    crate::run::keep_output_tail(&journal, &r.id, printer.await.unwrap_or_default(), &result).await;
    print_result(r.json, &r.id, &result)?;
    Ok(exit_code(&result.outcome))
}
