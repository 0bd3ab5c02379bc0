//! What every process-running backend tells its program about the execution, and
//! how it proves it can cancel one: written once, below `command`, the agent CLIs
//! and ACP, so none of them reaches into another for it.
//!
//! The identity variables are the same for every backend (a hook or tool of the
//! program reads them whichever backend started it): [`EXECUTION_ID_VAR`] stays the
//! same across the attempts of one execution, [`ATTEMPT_VAR`] counts them.

use agent_exec_contract::{
    Capability, ContractResult, Error, ExecutionContext, Outcome, SideEffects,
};
use agent_exec_runtime::cause_code;

/// Environment variable holding the execution id.
pub const EXECUTION_ID_VAR: &str = "AGENT_EXEC_EXECUTION_ID";

/// The environment variable that tells a program which attempt of its execution it
/// is (`1` for the first); beside [`EXECUTION_ID_VAR`].
pub const ATTEMPT_VAR: &str = "AGENT_EXEC_ATTEMPT";

/// The execution's identity as environment variables, visible to the program's tools
/// and hooks: the execution id and the attempt.
pub fn identity_env(execution_id: &str, attempt: u32) -> [(String, String); 2] {
    [
        (EXECUTION_ID_VAR.to_owned(), execution_id.to_owned()),
        (ATTEMPT_VAR.to_owned(), attempt.to_string()),
    ]
}

/// Verifies `Cancel` for a backend that runs a process tree: whole-tree cancellation
/// needs `/proc` to find the tree, so without it `Cancel` is a problem, not a claim.
pub fn verify_cancel(verified: &mut Vec<Capability>, problems: &mut Vec<String>) {
    if agent_exec_runtime::procfs::stat(std::process::id() as i32).is_some() {
        verified.push(Capability::Cancel);
    } else {
        problems.push("cancel: /proc is not readable, process trees cannot be found".into());
    }
}

/// The result of an attempt whose execution was canceled before its program started:
/// `canceled`, nothing ran. `None` when there is no cancel yet.
pub fn canceled_before_start(ctx: &ExecutionContext) -> Option<ContractResult> {
    let cause = ctx.cancellation.cause()?;
    Some(ContractResult::with_error(
        Outcome::Canceled,
        Error::new(
            cause_code(Some(cause)),
            "canceled before start",
            SideEffects::None,
        ),
    ))
}
