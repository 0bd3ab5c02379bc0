//! # envreg-mcp: the ten `env_*` tools served over the Model Context Protocol
//!
//! This is how the environment registry reaches agents: `envreg serve` (stdio, what a
//! host spawns) or `envreg serve --http 127.0.0.1:PORT` (streamable HTTP, many sessions
//! at once). Built on the official Rust SDK, `rmcp`.
//!
//! ## Design
//! - **Thin.** Tool names, schemas, argument checks, dispatch and render lines live in
//!   `envreg_core::tools`; result shaping (render line for the user, JSON for the
//!   assistant, `structuredContent`, `isError` results) lives in `mcp-shape`. This crate
//!   only knows MCP: sessions, transports, elicitation.
//! - **Sessions.** [`server::EnvregServer`] is built once per MCP session. Over HTTP the
//!   session is the request's `Mcp-Session-Id`; over stdio it is `--session ID`, else
//!   `ENVREG_SESSION_ID`, else a fresh id for this connection. Session defaults are
//!   persisted by the core (`sessions/<id>.json`).
//! - **Approval** goes through one function, [`approval::ask`]: MCP elicitation, or
//!   `writePolicy.approvalChannel: host` for hosts that gate tool calls themselves.
//! - **Registry freshness** is the core's: every call sees hand edits without a restart.
//!
//! ## Invariants
//! - stdout carries only the protocol on stdio; logs go to stderr.
//! - An expected failure is a tool result (`isError: true`, text `CODE: message`), never
//!   a protocol error; only an unknown tool name or an unparseable request is one.
//! - Nothing a peer sends can panic the server; an oversized or malformed request gets
//!   an error and the server keeps serving.
//! - HTTP binds to loopback unless `--allow-remote` *and* a bearer token are given.
//!
//! ## Deliberately not done
//! - No MRTR (`InputRequiredResult`) approval for protocol `2026-07-28` peers yet: on that
//!   version rmcp refuses server→client requests, [`approval::ask`] answers
//!   `Unavailable` and writes needing approval are `POLICY_DENIED` (fail closed).
//! - No TLS: put a reverse proxy in front for remote use.
//! - No resources or prompts: the contract is ten tools.

pub mod approval;
pub mod http;
pub mod server;
pub mod stdio;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use envreg_core::{Registry, SessionId};
use rmcp::ServiceExt as _;

use crate::server::{EnvregServer, SessionSource, Shared};

/// The global allocator a binary serving MCP should install (`envreg-mcp` does; `envreg`
/// for `envreg serve` should too):
/// `#[global_allocator] static A: envreg_mcp::ServerAllocator = envreg_mcp::ServerAllocator;`
///
/// Why mimalloc: every tool answer is built as a `serde_json::Value` tree (rmcp's type
/// for `structuredContent`), serialized, and freed. An `env_resolve` Service Context on
/// the 10,000-record registry is ~600 nodes and ~2,000 small allocations; with glibc's
/// allocator the tool layer took 181–186 µs per call, with mimalloc 103–111 µs (two
/// interleaved runs of `benches/call_path.rs`). Decided here, in one place, rather than
/// in each binary; a library must not install a global allocator itself, so the binary
/// does.
pub use mimalloc::MiMalloc as ServerAllocator;

/// `envreg serve` flags (also the `envreg-mcp` binary's), in one place.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<SocketAddr>,
    /// Allow a non-loopback --http address (needs a bearer token, see --token-env).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// Environment variable holding the HTTP bearer token; when set, every HTTP request
    /// must carry `Authorization: Bearer <token>`.
    #[arg(long, value_name = "NAME", default_value = "ENVREG_HTTP_TOKEN")]
    pub token_env: String,
    /// Session id for stdio (the caller's session; session defaults are kept per id).
    /// Default: $ENVREG_SESSION_ID, else a fresh id for this connection.
    #[arg(long, value_name = "ID", env = "ENVREG_SESSION_ID")]
    pub session: Option<String>,
    /// Log level for stderr: error, warn, info, debug, trace (or a tracing filter).
    #[arg(long, value_name = "LEVEL", default_value = "warn")]
    pub log_level: String,
    /// Benchmark only: also list a trivial `echo` tool (the SDK's floor).
    #[arg(long, hide = true)]
    pub bench_echo: bool,
}

/// Route logs to stderr at `level`; a no-op when a subscriber is already installed.
pub fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// A fresh per-connection session id (stdio without `--session`).
fn connection_session_id() -> anyhow::Result<SessionId> {
    SessionId::new(format!(
        "{}{}",
        envreg_core::session::CONNECTION_SESSION_PREFIX,
        uuid::Uuid::now_v7()
    ))
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Open the registry at `root` and serve it as `args` says, until the client hangs up
/// (stdio) or the process is interrupted (HTTP).
pub async fn serve(root: PathBuf, args: ServeArgs) -> anyhow::Result<()> {
    let registry = Registry::open(&root)
        .map_err(|e| anyhow::anyhow!("cannot open registry {}: {e}", root.display()))?;
    let shared = Arc::new(Shared::new(registry, args.bench_echo));
    match args.http {
        Some(addr) => {
            let token = std::env::var(&args.token_env)
                .ok()
                .filter(|t| !t.is_empty());
            http::serve_http(
                shared,
                http::HttpOptions {
                    addr,
                    allow_remote: args.allow_remote,
                    token,
                },
            )
            .await
        }
        None => {
            let session = match args.session.as_deref() {
                Some(id) => SessionId::new(id)
                    .map_err(|e| anyhow::anyhow!("--session / ENVREG_SESSION_ID: {e}"))?,
                None => connection_session_id()?,
            };
            tracing::info!(session = session.as_str(), root = %root.display(), "serving MCP over stdio");
            // For the host's `envreg hook`: which registry this server writes to
            // (removed when the server ends). Without it the hook asks.
            let _served = envreg_core::served::record(shared.registry.root())
                .inspect_err(|why| tracing::warn!(%why, "the registry served was not recorded for the host's hook"))
                .ok();
            let server = EnvregServer::new(shared, SessionSource::Fixed(session));
            let running = server
                .serve(stdio::GuardedStdio::new())
                .await
                .context("MCP initialization over stdio failed")?;
            running
                .waiting()
                .await
                .context("MCP stdio session failed")?;
            Ok(())
        }
    }
}

/// `envreg serve`: logging, a runtime, [`serve`]. Blocks until the server stops.
pub fn run(root: PathBuf, args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&args.log_level);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(root, args))
}
