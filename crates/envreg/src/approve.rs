//! The CLI's approver (contract §1.3): `--yes` grants; otherwise the question goes to
//! the controlling terminal (`/dev/tty`, like `sudo` and `ssh`, so it works while stdin
//! or stdout is piped); no terminal means `Unavailable`, which the tool layer turns into
//! `POLICY_DENIED`.
//!
//! Invariant: only an explicit `y`/`yes` typed on the terminal grants. Empty input, any
//! other answer, end of input or a read error deny — fail closed.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};

use envreg_core::tools::{ApprovalDecision, ApprovalRequest, Approver};

pub struct TerminalApprover {
    assume_yes: bool,
    /// Set when a question could not be asked, so the CLI can print a hint.
    pub(crate) was_unavailable: AtomicBool,
}

impl TerminalApprover {
    pub fn new(assume_yes: bool) -> Self {
        TerminalApprover {
            assume_yes,
            was_unavailable: AtomicBool::new(false),
        }
    }

    pub fn was_unavailable(&self) -> bool {
        self.was_unavailable.load(Ordering::Relaxed)
    }

    fn ask(&self, req: &ApprovalRequest) -> ApprovalDecision {
        if self.assume_yes {
            return ApprovalDecision::AllowedOnce;
        }
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty");
        let Ok(tty) = tty else {
            self.was_unavailable.store(true, Ordering::Relaxed);
            return ApprovalDecision::Unavailable;
        };
        let Ok(mut out) = tty.try_clone() else {
            self.was_unavailable.store(true, Ordering::Relaxed);
            return ApprovalDecision::Unavailable;
        };
        let prompt = format!(
            "{}\nApprove {} once? [y/N] ",
            req.display_reason.trim_end(),
            req.tool
        );
        if out
            .write_all(prompt.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            self.was_unavailable.store(true, Ordering::Relaxed);
            return ApprovalDecision::Unavailable;
        }
        let mut answer = String::new();
        match BufReader::new(tty).read_line(&mut answer) {
            Ok(0) => ApprovalDecision::Cancelled,
            Ok(_) => decide(&answer),
            Err(_) => ApprovalDecision::Cancelled,
        }
    }
}

/// The answer typed on the terminal, as a decision.
fn decide(answer: &str) -> ApprovalDecision {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::AllowedOnce,
        _ => ApprovalDecision::Rejected,
    }
}

impl Approver for TerminalApprover {
    fn request<'a>(
        &'a self,
        req: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>> {
        // Blocking terminal I/O inside the future is deliberate: the CLI runs one call on
        // a current-thread runtime with nothing else to schedule while a person decides.
        Box::pin(async move { self.ask(req) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_yes_grants() {
        assert!(matches!(decide("y\n"), ApprovalDecision::AllowedOnce));
        assert!(matches!(decide(" YES \n"), ApprovalDecision::AllowedOnce));
        for no in ["", "\n", "n", "no", "yep", "sure", "y y"] {
            assert!(matches!(decide(no), ApprovalDecision::Rejected), "{no:?}");
        }
    }
}
