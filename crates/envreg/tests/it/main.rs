//! envreg's integration tests, as one binary: each module was a test file of its own,
//! and every test binary links the crate and its dependencies again (ARCHITECTURE.md,
//! "Tests"). They run `envreg` (and the live ones Claude Code, Codex, dsh, chromium) as
//! child processes, each in its own scratch folder with its own `HOME` and `TMPDIR`;
//! nothing here needs a process to itself. The scripts the dsh tests hand to dsh stay
//! in `tests/dsh/`.

mod common;
mod live;

mod bad_input;
mod bad_lines;
mod claude_code_plugin_live;
mod cli;
mod codex_live;
mod docs;
mod docs_registry;
mod dsh_bridge;
mod dsh_live;
mod durability;
mod hook;
mod hook_props;
mod install_script;
mod outside_links;
mod registry_model;
mod relative_paths;
mod ui_browser;
mod version;
