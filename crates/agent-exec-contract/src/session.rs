//! Resume: a backend's own handle on the agent's conversation, reported while an
//! attempt runs and handed back when the caller resumes the execution.
//!
//! # Why a handle, and why reported early
//! An agent program keeps its conversation itself (a Codex thread, a Claude Code
//! session, a pi session file, an ACP session). Continuing an execution *inside* that
//! conversation — so the agent sees what it already did instead of starting over — needs
//! only the program's id for it. The backend reports the id through
//! [`SessionReporter`] the moment its stream shows it, and the runtime journals it at
//! once: a runner killed with SIGKILL a moment later still leaves it behind.
//!
//! # Invariants
//! * A handle is data, never a path, a command line fragment or SQL: backends map it to
//!   their program's argument themselves, and [`check_session_handle`] refuses anything
//!   that could be mistaken for more than an id (control characters, a leading `-`, a
//!   path separator, more than [`MAX_SESSION_HANDLE_BYTES`]).
//! * Resume is never automatic (invariant 5): only the caller asks for it, and the
//!   journal records it as a new attempt of the same execution, which keeps its budget
//!   and deadline (invariant 1).
//!
//! Decision: a separate channel, not a new [`crate::EventKind`]. Events are the Go
//! contract's wire type, and a kind Go does not know would reach its consumers; the
//! handle is bookkeeping between the backend and the journal, not process output.

use futures::channel::mpsc;

/// Longest session handle accepted (bytes). Program ids are UUIDs or short file
/// stems; anything longer is not an id.
pub const MAX_SESSION_HANDLE_BYTES: usize = 256;

/// Checks that `handle` is usable as an opaque id: non-empty, at most
/// [`MAX_SESSION_HANDLE_BYTES`], ASCII letters, digits and `_ . : @ + =` or `-` (not
/// first), so it can be neither an option nor a path.
pub fn check_session_handle(handle: &str) -> Result<(), String> {
    if handle.is_empty() {
        return Err("session handle is empty".into());
    }
    if handle.len() > MAX_SESSION_HANDLE_BYTES {
        return Err(format!(
            "session handle is {} bytes, more than {MAX_SESSION_HANDLE_BYTES}",
            handle.len()
        ));
    }
    if handle.starts_with('-') || handle.starts_with('.') {
        return Err("session handle starts with `-` or `.`".into());
    }
    if let Some(bad) = handle
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.:@+=".contains(*c)))
    {
        return Err(format!(
            "session handle holds {bad:?}; only ASCII letters, digits and -_.:@+= are allowed"
        ));
    }
    Ok(())
}

/// Where a backend reports its session handle: never blocks, may be called more than
/// once (the last handle of an attempt is the one resumed).
#[derive(Debug, Clone)]
pub struct SessionReporter {
    sender: Option<mpsc::UnboundedSender<String>>,
}

impl SessionReporter {
    /// A reporter and its receiving end (the runtime drains it into the journal).
    pub fn channel() -> (SessionReporter, mpsc::UnboundedReceiver<String>) {
        let (sender, receiver) = mpsc::unbounded();
        (
            SessionReporter {
                sender: Some(sender),
            },
            receiver,
        )
    }

    /// A reporter that drops everything (no journal, or a test).
    pub fn discard() -> SessionReporter {
        SessionReporter { sender: None }
    }

    /// Reports `handle`. An invalid one is dropped here, so nothing downstream
    /// (journal, CLI, a later argument list) ever sees it; the backend logs why.
    pub fn report(&self, handle: &str) -> Result<(), String> {
        check_session_handle(handle)?;
        if let Some(sender) = &self.sender {
            // A closed receiver means nobody records any more; not an error of the run.
            let _ = sender.unbounded_send(handle.to_owned());
        }
        Ok(())
    }
}

/// What a resumed attempt continues: handed to [`crate::Backend::execute`] in
/// [`crate::ExecutionContext::resume`]. The request's `prompt` is then the
/// *continuation* prompt; everything else is the execution's original request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeFrom {
    /// The handle an earlier attempt of this execution reported on this backend.
    pub session: String,
    /// The attempt that reported it.
    pub attempt: u32,
    /// The prompt the execution started with, for a backend whose "session" is only
    /// the conversation it resends (a stateless API).
    pub original_prompt: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_pass_and_anything_else_is_refused() {
        for ok in [
            "0199a213-81c0-7800-8aa1-bbab2a035a53",
            "sess_01",
            "a.b:c@d+e=f",
        ] {
            assert_eq!(check_session_handle(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "-c",
            "--resume",
            ".hidden",
            "../etc/passwd",
            "a/b",
            "a\\b",
            "a b",
            "a\nb",
            "é",
            &"x".repeat(MAX_SESSION_HANDLE_BYTES + 1),
        ] {
            assert!(check_session_handle(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_refused_handle_never_reaches_the_receiver() {
        let (reporter, mut receiver) = SessionReporter::channel();
        assert!(reporter.report("../x").is_err());
        assert_eq!(reporter.report("good-1"), Ok(()));
        drop(reporter);
        let got: Vec<String> =
            futures::executor::block_on(futures::StreamExt::collect(&mut receiver));
        assert_eq!(got, vec!["good-1".to_owned()]);
    }
}
