//! The `envreg` binary: everything lives in the library (`lib.rs`).

// `envreg serve` shapes large MCP answers; the server's allocator is chosen in one
// place (`envreg_mcp::ServerAllocator`) and installed by each binary that serves.
#[global_allocator]
static ALLOCATOR: envreg_mcp::ServerAllocator = envreg_mcp::ServerAllocator;

fn main() -> std::process::ExitCode {
    envreg::main()
}
