//! # envreg: the environment registry on the command line
//!
//! A thin shell over `envreg-core` (the binary, `main.rs`, only calls [`main`]). Every registry subcommand (`list`, `get`, `find`,
//! `resolve`, `resolve-operation`, `context`, `save`, `delete`, `validate`) becomes one
//! call of `envreg_core::tools::call_tool` — the very function the MCP server calls —
//! so the CLI and an agent see the same values, the same errors and the same render
//! lines. `--json` prints the tool's JSON value unchanged; without it the render line
//! comes first, then a readable body ([`human`]).
//!
//! ## Modules
//! - [`cli`]: the clap definition, spelt as issue 2 §3 fixes it.
//! - [`locate`]: which registry (`--registry`, `$ENVREG_REGISTRY`, nearest `envreg.yaml`).
//! - [`app`]: one invocation: subcommand → tool call → output and exit code.
//! - [`human`], [`snippet`], [`style`]: human output; compiler-style diagnostics; colour
//!   only on a terminal, never with `NO_COLOR`.
//! - [`approve`]: approval on `/dev/tty` or `--yes`; no terminal means denied.
//! - [`init`]: `envreg init DIR`.
//! - [`record_file`]: the YAML/JSON file given to `save`.
//! - `serve`: the MCP server (owned by the MCP engineers).
//! - [`dsh_bridge`]: `envreg dsh-bridge`, the process behind the dsh plugin `dsh-envreg`.
//! - [`hook`]: `envreg hook`, the approval table as a host's PreToolUse hook (the verdict
//!   is `envreg_core::host_gate`'s; this reads the envelope and writes the answer).
//! - `ui` is `envreg-ui`'s web page, called straight from [`app`].
//!
//! [`snippet::locate`] is public for its fuzz target (`fuzz/fuzz_targets/envreg_cli_locate.rs`):
//! it reads registry files, which are outside input. [`hook`] is public for the same
//! reason (`envreg_hook_envelope`): it reads a host's hook events.
//!
//! ## Invariants
//! - stdout carries only the result (the JSON value, the error object, or the human
//!   view); prompts go to the terminal, hints and human errors to stderr.
//! - The CLI never reads a credential: it prints what the core returns, and the core
//!   reports credentials as `{ref, configured, source}`.
//! - Exit codes: 0 success, 1 expected failure, 2 usage error.
//!
//! ## Deliberately not done
//! - No interactive editing (`save` takes a whole record, as the contract says).
//! - No output formats beyond human and JSON.

#[macro_use]
mod stdout;
mod app;
mod approve;
mod cli;
pub mod dsh_bridge;
pub mod hook;
mod human;
mod init;
mod locate;
mod record_file;
mod serve;
pub mod snippet;
mod style;

use clap::Parser;

/// Parse the command line, run it, and say how the process should exit.
pub fn main() -> std::process::ExitCode {
    app::run(cli::Cli::parse())
}
