//! SIGTERM and SIGINT, handled from the first instruction of `main` (issue 20,
//! finding 6).
//!
//! Before, the handler was installed by a task the run spawned, which first ran
//! once the run's future yielded: a SIGTERM in the first milliseconds (a program that
//! signals its parent at once, an orchestrator stopping a job it just started) took
//! the default action and killed the runner outright — no result, its program left
//! running. Now:
//!
//! 1. [`block`], the first thing `main` does, blocks both signals: one that arrives
//!    now stays pending instead of killing the process.
//! 2. [`install`] (in the runtime, before the command starts) registers tokio's
//!    handlers and a watcher task that records the first signal, then unblocks: a
//!    pending signal is delivered to the handler at that moment.
//! 3. [`stopped`] resolves once a signal was recorded — before or after the run asked.
//!
//! A command that does not cancel anything (`runs`, `backends`, …) calls [`unblock`]
//! instead: there a signal keeps its default action. Children never inherit the block:
//! the runtime's spawn (`agent_exec_runtime::spawn`, either spawner) resets the signal
//! mask before exec.

use std::sync::OnceLock;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use tokio_util::sync::CancellationToken;

/// Cancelled at the first SIGTERM or SIGINT once [`install`] ran.
static STOP: OnceLock<CancellationToken> = OnceLock::new();

fn set() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGINT);
    set
}

/// Blocks SIGTERM and SIGINT in this thread and every thread it starts later.
pub fn block() {
    if let Err(e) = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set()), None) {
        tracing::warn!(%e, "cannot block SIGTERM/SIGINT during start-up");
    }
}

/// Unblocks them: a pending one is delivered now.
pub fn unblock() {
    if let Err(e) = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set()), None) {
        tracing::warn!(%e, "cannot unblock SIGTERM/SIGINT");
    }
}

/// Installs the handlers and the watcher, then unblocks (module doc). Inside the
/// tokio runtime. If a handler cannot be installed, the signal keeps its default
/// action (the process ends), as before.
pub fn install() {
    use tokio::signal::unix::{SignalKind, signal};
    let stop = STOP.get_or_init(CancellationToken::new).clone();
    let terminate = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    if let (Ok(mut terminate), Ok(mut interrupt)) = (terminate, interrupt) {
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            stop.cancel();
        });
    } else {
        tracing::warn!("cannot install SIGTERM/SIGINT handlers; a signal ends the process");
    }
    unblock();
}

/// Resolves at the first SIGTERM or SIGINT since [`install`] (at once if one came
/// already); never without [`install`].
pub async fn stopped() {
    match STOP.get() {
        Some(stop) => stop.cancelled().await,
        None => std::future::pending().await,
    }
}
