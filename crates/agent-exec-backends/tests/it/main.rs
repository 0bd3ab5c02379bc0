//! The backends' integration tests that need no process to themselves, as one binary:
//! each module was a test file of its own, and every test binary links the crate and
//! its dependencies again (ARCHITECTURE.md, "Tests"): the recorded streams, the
//! conformance suite over each agent CLI's stand-in and over openai, and the live runs
//! of the real agent CLIs. Every run here has an execution id of its own, and leftover
//! processes are counted by that id, so suites running side by side cannot see each
//! other's. Kept apart, in binaries of their own: the tests that make the test process
//! a subreaper (`command_backend`, `command_conformance`, `copilot_conformance`,
//! `leftovers`) — a subreaper's finishing run rightly claims every orphan re-parented
//! to it, another test's deliberate escapee included.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../agents/mod.rs"]
mod agents;
#[path = "../stand_in/mod.rs"]
mod stand_in;
#[path = "../support/mod.rs"]
mod support;

mod acp_conformance;
mod acp_live;
mod claude_code_conformance;
mod claude_code_live;
mod codex_conformance;
mod codex_live;
mod codex_recorded;
mod copilot_live;
mod copilot_recorded;
mod gemini_conformance;
mod gemini_live;
mod gemini_recorded;
mod openai;
mod openai_conformance;
mod opencode_conformance;
mod opencode_live;
mod opencode_recorded;
mod pi_conformance;
mod pi_live;
mod pi_recorded;
