//! `envreg-mcp`: the MCP server alone (the same code as `envreg serve`), for hosts that
//! prefer a dedicated binary and for this crate's own tests and benchmarks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// See [`envreg_mcp::ServerAllocator`] for why (and `envreg serve` uses the same).
#[global_allocator]
static ALLOCATOR: envreg_mcp::ServerAllocator = envreg_mcp::ServerAllocator;

/// Serve an environment registry's ten env_* tools over MCP (stdio or streamable HTTP).
#[derive(Debug, Parser)]
#[command(name = "envreg-mcp", version)]
struct Cli {
    /// Registry folder (else $ENVREG_REGISTRY).
    #[arg(long, value_name = "DIR", env = "ENVREG_REGISTRY")]
    registry: PathBuf,
    #[command(flatten)]
    serve: envreg_mcp::ServeArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A relative folder names one below the directory this process started in, once
    // (derived paths — skills, sessions — then never depend on a later directory).
    let registry = std::path::absolute(&cli.registry).unwrap_or(cli.registry);
    match envreg_mcp::run(registry, cli.serve) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("envreg-mcp: {error:#}");
            ExitCode::FAILURE
        }
    }
}
