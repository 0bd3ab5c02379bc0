//! The `facet` binary: a thin shell over the `facet` library.
//!
//! `facet hook` is run once per tool call by the host, so its path is kept lean:
//! no async runtime, no logging setup, one read of stdin, one state file, one
//! write of stdout. Only `facet serve` builds a tokio runtime.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use facet::envelope::Dialect;
use facet::panel::{self, PanelCommand};

/// `0.1.0 (commit 644296a1b2c3)`: the version and the commit built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_GIT_COMMIT"),
    ")"
);

/// facet: a session sees one folder of a project; file tools that leave it are
/// asked or refused, and grants widen it. A scope, not an OS sandbox.
#[derive(Parser)]
#[command(name = "facet", version = VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Answer one host hook event: JSON on stdin, decision on stdout.
    Hook {
        /// Which host wrote the event: claude-code (also DeepSeek Harness's Claude
        /// Code bridge), codex, or opencode (the plugin shim in integrations/opencode).
        #[arg(long, default_value = "claude-code", value_parser = parse_dialect)]
        dialect: Dialect,
        /// The host-qualified name of the facet MCP tool.
        #[arg(long, env = "FACET_TOOL_NAME", default_value = facet::facet_tool::DEFAULT_HOST_TOOL_NAME)]
        facet_tool: String,
        /// The host has no way to put a question to the user (for example DeepSeek
        /// Harness's danger-full-access preset): refuse instead of asking.
        #[arg(long)]
        no_approval: bool,
    },
    /// Serve the `facet` tool over MCP (stdio).
    Serve {
        /// A session id whose binding `status` may read (the server cannot learn
        /// the host's session id itself).
        #[arg(long, env = "FACET_SESSION_ID")]
        session: Option<String>,
    },
    /// Serve the dsh-facet plugin for DeepSeek Harness: JSON lines on stdin and
    /// stdout, until stdin closes. Started by the plugin, not by hand.
    DshBridge,
    #[command(flatten)]
    Panel(PanelCommand),
}

fn parse_dialect(value: &str) -> Result<Dialect, String> {
    Dialect::from_flag(value)
        .ok_or_else(|| format!("unknown dialect `{value}`: use {}", Dialect::FLAG_VALUES))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Hook {
            dialect,
            facet_tool,
            no_approval,
        } => run_hook(dialect, facet_tool, no_approval),
        Command::Serve { session } => match facet::serve::run_stdio(session) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("facet serve: {error:#}");
                ExitCode::FAILURE
            }
        },
        Command::DshBridge => match facet::dsh_bridge::run_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("facet dsh-bridge: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Panel(command) => {
            let stdout = std::io::stdout();
            match panel::run(command, &mut stdout.lock()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("facet: {error:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn run_hook(dialect: Dialect, facet_tool: String, no_approval: bool) -> ExitCode {
    let mut input = Vec::new();
    // Bounded: a hook event is a few kilobytes; 16 MiB leaves room for large
    // tool inputs (a long Write) without letting a runaway pipe eat memory. One
    // byte more is read to tell "exactly the limit" from "cut off".
    const LIMIT: usize = 16 * 1024 * 1024;
    let read = std::io::stdin()
        .lock()
        .take(LIMIT as u64 + 1)
        .read_to_end(&mut input);
    let answer = match read {
        Ok(_) if input.len() > LIMIT => facet::hook::answer_too_large(dialect, &input, LIMIT),
        Ok(_) => {
            let config = facet::hook::HookConfig::from_env(dialect, facet_tool, no_approval);
            facet::hook::answer(&input, &config)
        }
        Err(error) => facet::output::HookAnswer::non_blocking_error(format!(
            "facet hook: could not read the hook event from stdin: {error}"
        )),
    };
    if let Some(stdout) = &answer.stdout {
        let mut out = std::io::stdout().lock();
        // A closed stdout means the host is gone; nothing useful is left to do.
        let _ = out.write_all(stdout.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
    if let Some(stderr) = &answer.stderr {
        eprintln!("{stderr}");
    }
    ExitCode::from(u8::try_from(answer.exit_code).unwrap_or(1))
}
