//! agent-exec's integration tests, as one binary: each module was a test file of its
//! own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). They run the `agent-exec` binary as a child process,
//! each in its own scratch folder (config, journal, state, `TMPDIR`).
//!
//! A binary of its own, on purpose: `containment_cli.rs`, whose programs move
//! processes into cgroups they make inside their run cgroup, and which counts the run
//! cgroups made where this test process's cgroup is.

/// The scripted OpenAI-compatible server, shared with agent-exec-backends' tests.
#[path = "../../../agent-exec-backends/tests/support/mod.rs"]
mod support;

mod cli;
mod command_cli;
mod docs;
mod fleet;
mod hardening;
mod probe_cost;
mod request_and_schema;
mod results;
mod resume_cli;
mod resume_live;
mod verification_cache;
