//! `envreg serve`: the MCP server (crate `envreg-mcp`) behind the CLI.
//!
//! The flags are defined once, in [`envreg_mcp::ServeArgs`], so `envreg serve` and the
//! standalone `envreg-mcp` binary cannot drift apart. The registry folder comes from
//! the CLI's own lookup (`--registry`, `$ENVREG_REGISTRY`, the nearest `envreg.yaml`).
//!
//! Decision: the flag checks the server makes before it starts (a valid stdio session
//! id, a loopback address unless `--allow-remote` with a token) are made here first,
//! with the server's own functions, so the CLI reports them as what they are — usage
//! errors, `INVALID_ARGUMENT`, exit 2 — rather than as a failure of the server. The
//! server makes them again; that costs nothing and keeps `envreg-mcp` safe alone.

use std::path::PathBuf;

use envreg_core::{EnvError, SessionId};
pub use envreg_mcp::ServeArgs;
use envreg_mcp::http::{HttpOptions, check_exposure};

/// The configuration errors `serve` would stop on, found before anything starts.
pub fn check(args: &ServeArgs) -> Result<(), EnvError> {
    match args.http {
        Some(addr) => {
            let token = std::env::var(&args.token_env)
                .ok()
                .filter(|t| !t.is_empty());
            check_exposure(&HttpOptions {
                addr,
                allow_remote: args.allow_remote,
                token,
            })
            .map_err(|e| EnvError::invalid_argument(format!("serve --http: {e}")))
        }
        // Only stdio uses --session / ENVREG_SESSION_ID (HTTP sessions get their own).
        None => match args.session.as_deref() {
            Some(id) => SessionId::new(id).map(drop).map_err(|e| {
                EnvError::invalid_argument(format!("--session / ENVREG_SESSION_ID: {}", e.message))
            }),
            None => Ok(()),
        },
    }
}

/// Serve the registry at `registry_root` over MCP until the client hangs up (stdio) or
/// the process is interrupted (HTTP). Logs go to stderr; stdout is the protocol.
pub fn run(registry_root: PathBuf, args: ServeArgs) -> anyhow::Result<()> {
    envreg_mcp::run(registry_root, args)
}
