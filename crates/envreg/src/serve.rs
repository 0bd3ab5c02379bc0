//! `envreg serve`: the MCP server (crate `envreg-mcp`) behind the CLI.
//!
//! The flags are defined once, in [`envreg_mcp::ServeArgs`], so `envreg serve` and the
//! standalone `envreg-mcp` binary cannot drift apart. The registry folder comes from
//! the CLI's own lookup (`--registry`, `$ENVREG_REGISTRY`, the nearest `envreg.yaml`).

use std::path::PathBuf;

pub use envreg_mcp::ServeArgs;

/// Serve the registry at `registry_root` over MCP until the client hangs up (stdio) or
/// the process is interrupted (HTTP). Logs go to stderr; stdout is the protocol.
pub fn run(registry_root: PathBuf, args: ServeArgs) -> anyhow::Result<()> {
    envreg_mcp::run(registry_root, args)
}
