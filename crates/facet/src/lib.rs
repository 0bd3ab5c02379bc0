//! facet's protocol edges: the command hook, the MCP server and the user's panel.
//!
//! The guard itself — the tool tables, the seed's sentences, the decision, the
//! session state — lives in `facet-core`, and "is this path inside this root?" in
//! `containment`. This crate only speaks to hosts:
//!
//! - [`envelope`] reads the JSON event a host writes on the hook's stdin, in the
//!   Claude Code dialect (also DeepSeek Harness's Claude Code bridge) or the Codex
//!   dialect, and never panics on what it is given.
//! - [`apply_patch`] finds the file paths in a Codex `apply_patch` body.
//! - [`hook`] turns one event into one answer: `SessionStart` states the rule and
//!   the binding; `UserPromptSubmit` restates the binding when it changed since
//!   the session was last told; `PreToolUse` decides (ask or deny with the seed's
//!   sentence, or no opinion); `PostToolUse` of an approved `facet` call records
//!   the change for the session — the only place that knows the session id.
//! - [`output`] holds the exact JSON shapes written back.
//! - [`facet_tool`] reads the `facet` tool's arguments, for the server and the hook.
//! - [`serve`] is the MCP server (`rmcp`, stdio), results shaped by `mcp-shape`.
//! - [`panel`] is the user's command line: the channel the agent has no write
//!   path to.
//! - [`state`] is the seam to `facet-core`'s session store (folder, views).
//! - [`dsh_bridge`] is `facet dsh-bridge`: the long-lived process behind the
//!   `dsh-facet` plugin for DeepSeek Harness (guard, binding, `facet` tool), JSON
//!   lines over stdio.
//!
//! ## Invariants
//! - The hook path is synchronous and small: no async runtime, no logging
//!   set-up, one state file. `facet serve` alone builds a tokio runtime.
//! - No opinion is silence: exit 0 with nothing on stdout, so the host's own
//!   permission rules stay in charge. `allow` is never emitted.
//! - A hook that cannot read its event says so on stderr and exits 1, which every
//!   supported host treats as a non-blocking failure (2 would block).
//! - Relative paths resolve against the session's `cwd` from the event, never the
//!   hook process's own directory.
//!
//! ## Deliberately not done
//! - `bash` (and Codex's shell) is not judged: a shell command cannot be judged
//!   reliably from its text. The rule text tells the model so.
//! - This is a scope, not an OS sandbox: hard links, bind mounts and a swap between
//!   the verdict and the tool's own open are outside what a hook can see.

pub mod apply_patch;
pub mod dsh_bridge;
pub mod envelope;
pub mod facet_tool;
pub mod hook;
mod hook_config;
pub mod output;
pub mod panel;
pub mod serve;
pub mod state;
