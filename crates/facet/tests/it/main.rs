//! facet's integration tests, as one binary: each module was a test file of its own,
//! and every test binary links the crate and its dependencies again (ARCHITECTURE.md,
//! "Tests"). They run the real `facet` binary (and the live ones Claude Code, Codex,
//! Gemini CLI, Copilot CLI, OpenCode, dsh) as child processes, each in its own scratch
//! folder; nothing here needs a process to itself. What the tests hand to other
//! programs stays beside them: `tests/py/`, `tests/dsh/`, `tests/opencode/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod claude_code_live;
mod codex_live;
mod codex_patch_forms;
mod copilot_live;
mod docs;
mod dsh_bridge;
mod dsh_bridge_props;
mod dsh_live;
mod envelope_props;
mod gemini_live;
mod hook_cases;
mod hook_flows;
mod hook_snapshots;
mod opencode_live;
mod opencode_shim;
mod panel_grants;
mod paths_named;
mod serve;
mod standing_grants;
mod ways_forward;
