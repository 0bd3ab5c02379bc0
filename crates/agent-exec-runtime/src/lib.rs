//! # agent-exec-runtime
//!
//! What stands between a caller and a backend so that outcomes are honest: attempts
//! under one execution id, one deadline and one budget; cancellation of whole
//! process trees; events in order without blocking; side-effect tracking; and
//! deliverables read back only from inside the workspace.
//!
//! ## Design
//!
//! * [`Runtime::run`] drives one execution: it asks the journal ([`JournalHook`], from
//!   the contract crate) what earlier attempts under the same id left, keeps the
//!   earliest deadline and the remaining token budget, and runs attempts. A step
//!   retry (the caller's, counted in [`RunOptions::step_retries`]) or a fallback to
//!   another backend happens only after a failure whose side effects are `none`
//!   ([`replay_allowed`]); the runtime never adds retries of its own.
//! * [`Runtime::resume`] continues an execution inside its backend's own session
//!   (issue 12 §1): the journal claims it (`execution_resumed`), the journaled request
//!   comes back with the continuation prompt, and exactly one attempt runs — numbered
//!   on, under the execution's deadline and remaining budget, with
//!   `ExecutionContext::resume` set — through the same loop and attempt code as
//!   `run`. Every attempt's session handles are journaled the moment the backend
//!   reports them (a task per attempt, joined before the attempt is settled), so a
//!   runner killed a moment later leaves them behind.
//! * The deadline is a watchdog that fires the execution's
//!   [`Cancellation`](agent_exec_contract::Cancellation) with cause
//!   `Deadline`; a backend cancels exactly as for a caller cancel, and the runtime
//!   reports `agent.deadline_exceeded`. A backend that does not return within
//!   [`DEFAULT_CANCEL_TIMEOUT`] of a cancel is abandoned and reported `unknown` with
//!   `cancel_requested`.
//! * Events go from the backend through an unbounded channel to a consumer task that
//!   forwards them, in order, to the caller's sink; the consumer is drained and
//!   joined before `run` returns, so no event arrives after the result (the Go
//!   contract's "callbacks complete before Execute returns").
//! * Side effects: a metadata snapshot of the workspace before and after each attempt
//!   ([`workspace`]) plus the `tool_execution_start` events seen. Either raises
//!   `Error.side_effects` to `possible`; nothing lowers what a backend claimed.
//! * Settling a result ([`executor`]): an unrecognised outcome is `unknown`;
//!   `canceled` from a backend without a *verified* `cancel` capability becomes
//!   `unknown` + `cancel_requested`; required text that is empty is
//!   `agent.empty_output`; targets are read through the `containment` crate
//!   ([`deliverables`]): outside the root is `agent.path_outside_workspace` with no
//!   bytes returned, missing is `agent.missing_deliverable`.
//! * [`process`]: each program is the leader of its own process group; termination is
//!   SIGTERM, a grace period, SIGKILL, and returns only when every member found in
//!   `/proc` (group, descendants, environment marker) is gone, or says which are not.
//!   After a clean exit, probing only the pids allocated since the spawn stands in for
//!   the scan of all of `/proc` when it proves the same thing (the pid-range proof).
//!   Where the system allows it each run has its own cgroup v2 ([`cgroup`]), which
//!   holds every process of the run; else orphans re-parented to the subreaper are
//!   attributed to their run (`orphans`).
//! * [`spawn`]: the one place a leader is started — with a run cgroup, created inside
//!   it by `clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)` and awaited through its pidfd;
//!   else (or where the kernel refuses clone3) tokio's fork with the `cgroup.procs`
//!   write in `pre_exec`. The program sees the same either way.
//!
//! ## Invariants
//!
//! * A result always comes back; `unknown` is never turned into anything else.
//! * Side effects never go down; replay needs `failed` + `none`.
//! * No bytes of a file outside the workspace root are ever put in a result.
//!
//! ## Deliberately not done
//!
//! * No OS sandbox (invariant 7): path checks govern what we *read back*, not what
//!   a program can touch.
//! * No cgroup controllers: a run's cgroup ([`cgroup`]) only lists and kills. Without
//!   a cgroup or a subreaper, a `setsid` + cleared-environment orphan escapes (see
//!   [`process`], "Which guarantee holds where").
//! * Workspace tracking compares metadata, not contents.

pub mod cgroup;
pub mod deliverables;
pub mod executor;
pub mod input;
pub(crate) mod orphans;
pub mod process;
pub mod procfs;
pub mod spawn;
pub mod structured;
pub mod workspace;

pub use agent_exec_contract::JournalHook;
pub use executor::{
    DEFAULT_CANCEL_TIMEOUT, ResumeOptions, RunOptions, Runtime, cause_code, replay_allowed,
};
pub use process::{
    Confinement, ProcessTree, Sweep, Termination, become_subreaper, terminate_runner_leftovers,
};
