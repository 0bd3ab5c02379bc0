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
        /// Code bridge), codex, copilot (GitHub Copilot CLI), gemini (Gemini CLI) or
        /// opencode (the plugin shim in integrations/opencode).
        #[arg(long, default_value = "claude-code", value_parser = parse_dialect)]
        dialect: Dialect,
        /// The host-qualified name of the facet MCP tool (default: the dialect's own,
        /// `mcp__facet__facet`, `facet-facet` for copilot, `mcp_facet_facet` for gemini,
        /// `facet_facet` for opencode).
        #[arg(long, env = "FACET_TOOL_NAME")]
        facet_tool: Option<String>,
        /// The host has no way to put a question to the user (for example DeepSeek
        /// Harness's danger-full-access preset, or Copilot CLI run with `-p`): refuse
        /// instead of asking. Also set by FACET_NO_APPROVAL=1 (or true; 0 and false
        /// leave it off; any other value is a usage error).
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
    Dialect::from_flag(value).ok_or_else(|| {
        format!(
            "unknown dialect `{value}`: use one of {}",
            Dialect::FLAG_VALUES
        )
    })
}

/// Exit code of a usage error, as clap exits on one. A host that runs the hook
/// reads it as a failed hook: Claude Code and Codex block on 2, Copilot CLI refuses
/// the call on any code but 0 — a mistyped setup fails closed.
const EXIT_USAGE: u8 = 2;

/// `FACET_NO_APPROVAL`, the environment form of `--no-approval`, for hosts whose
/// hook command line is shared between their interactive and headless runs (Copilot
/// CLI's settings): set only where the run is headless. Read strictly: a value that
/// is not `1`, `true`, `0` or `false` is an error, never silently "off" (an `ask`
/// nobody can answer would be the result).
fn no_approval_from_env() -> Result<bool, String> {
    const NAME: &str = "FACET_NO_APPROVAL";
    let Some(value) = std::env::var_os(NAME) else {
        return Ok(false);
    };
    match value.to_str() {
        Some("1" | "true") => Ok(true),
        Some("0" | "false") => Ok(false),
        _ => Err(format!(
            "error: {NAME} must be 1 or true (no approval channel: refuse instead of \
             asking) or 0 or false (ask where the host can); it is {value:?}. Fix or unset \
             it."
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Hook {
            dialect,
            facet_tool,
            no_approval,
        } => match no_approval_from_env() {
            Ok(from_env) => run_hook(
                dialect,
                facet_tool.unwrap_or_else(|| dialect.facet_tool_name().to_owned()),
                no_approval || from_env,
            ),
            Err(error) => {
                eprintln!("{error}");
                ExitCode::from(EXIT_USAGE)
            }
        },
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
        Ok(_) if input.len() > LIMIT => facet::hook::answer_too_large(&input, LIMIT, dialect),
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
