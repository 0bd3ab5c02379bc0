//! The agent-exec command-line tool: one execution contract over interchangeable agent
//! backends, from the shell.
//!
//! A thin shell: argument parsing ([`cli`]), wiring of the config
//! (`agent_exec_backends::config`), the runtime and the journal, and output shaping at
//! the edge. The result JSON on stdout is the contract's `ContractResult` with the Go
//! struct tags; events go to stderr, one JSON object per line; diagnostics go to stderr.
//!
//! Exit codes: 0 succeeded, 1 failed, 2 bad usage or config, 3 unknown, 4 canceled,
//! 5 not ended yet (`wait --timeout` passed, or `result` of a running execution).

mod cli;
mod duration;
mod fleet;
mod listing;
mod request;
mod results;
mod resume;
mod run;
mod verified;

use std::process::ExitCode;

use clap::Parser as _;

/// Exit code for bad usage, bad config, an unreadable journal.
pub const EXIT_USAGE: u8 = 2;

/// Writes `text` to stdout. A reader that has gone away (`agent-exec runs | head -1`)
/// is not an error: the work is done, and for `run` the exit code still carries the
/// outcome. Decision: this instead of `println!`, which panics on a closed pipe.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn main() -> ExitCode {
    let args = cli::Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENT_EXEC_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    // One thread drives the one execution a process runs. Decision: a current-thread
    // runtime, not a multi-thread one. Every task here (the backend, its pipe readers,
    // the event printer, the signal watcher) waits on I/O; worker threads only added
    // hand-offs between threads — about 40 context switches and 4 ms of wall time per
    // `run` on a loaded two-core machine (scripts/bench-agent-exec.sh). Blocking work
    // (workspace walks) still goes to tokio's blocking pool; the journal's SQLite writes
    // are short and happen between the backend's phases, not while it streams.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("agent-exec: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = runtime.block_on(async {
        match &args.command {
            cli::Command::Run(run) => run::run(&args, run).await,
            cli::Command::Resume(r) => resume::resume(&args, r).await,
            cli::Command::Backends(b) => listing::backends(&args, b).await,
            cli::Command::Runs(r) => listing::runs(&args, r).await,
            cli::Command::Result(r) => results::result(&args, r).await,
            cli::Command::Worker(w) => fleet::worker(&args, w).await,
            cli::Command::Submit(s) => fleet::submit(&args, s).await,
            cli::Command::Wait(w) => fleet::wait(&args, w).await,
            cli::Command::Cancel(c) => fleet::cancel(&args, c).await,
        }
    });
    match code {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("agent-exec: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
