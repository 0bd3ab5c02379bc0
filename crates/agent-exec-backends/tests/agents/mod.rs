//! What the live tests of the agent-CLI backends share: finding the real program that
//! `scripts/setup.d/15-npm-peers.sh` installed (or failing loudly), and resolving a
//! backend with a given verification without running its probe again.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_exec_contract::{Backend, Capability, Resolved, Verification};

/// The npm-installed `bin` (from `$AGENT_EXEC_NPM_BIN`, else `$PEERS_DIR`, else the
/// workspace's `target/peers`), or a panic naming the npm `package` to install.
pub fn npm_program(bin: &str, package: &str) -> PathBuf {
    let dir = std::env::var_os("AGENT_EXEC_NPM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let peers = std::env::var_os("PEERS_DIR").map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"),
                PathBuf::from,
            );
            peers.join("npm/node_modules/.bin")
        });
    let program = dir.join(bin);
    assert!(
        program.exists(),
        "the real `{bin}` is missing at {}: npm package {package}; run scripts/test.sh \
         (scripts/setup.d/15-npm-peers.sh installs it)",
        program.display()
    );
    program
}

/// `backend` resolved under `name` as if its probe had verified `verified`.
pub fn resolved(backend: Arc<dyn Backend>, name: &str, verified: &[Capability]) -> Resolved {
    Resolved {
        backend,
        name: name.into(),
        deprecation_warning: None,
        verification: Verification {
            verified: verified.to_vec(),
            ..Default::default()
        },
    }
}
