//! `envreg hook` reads a host's PreToolUse event, which is outside input: whatever
//! bytes it gets, it must answer without panicking, and its answer is never `allow` —
//! only no opinion, `ask` (Claude Code) or `deny` (Codex). With no registry to read,
//! a call of a write tool that could need approval is never waved through.
#![no_main]

use std::path::Path;

use envreg::hook::{Dialect, answer, verdict};
use envreg_core::host_gate::GateVerdict;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let v = verdict(data, Some(Path::new("/nonexistent/envreg-fuzz-registry")));
    if let Some(text) = answer(&v, Dialect::ClaudeCode) {
        assert!(text.contains("\"permissionDecision\":\"ask\""), "{text}");
    }
    if let Some(text) = answer(&v, Dialect::Codex) {
        assert!(text.contains("\"permissionDecision\":\"deny\""), "{text}");
    }
    if serde_json::from_slice::<serde_json::Value>(data).is_err() {
        assert!(!matches!(v, GateVerdict::NoOpinion), "unreadable input got no opinion");
    }
});
