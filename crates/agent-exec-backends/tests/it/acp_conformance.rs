//! The conformance suite (the contract's seven invariants, structured output, resume)
//! on the `acp` backend: the real `AcpBackend` — its handshake and verify, its
//! JSON-RPC conversation through the ACP SDK, its settling, `session/load` — driving a
//! stand-in ACP v1 agent (`tests/data/acp-stand-in.py`, Python stdlib only) that
//! speaks what codex-acp 0.16 speaks on the wire (`tests/data/acp-codex-*.jsonl`).
//! The processes, their trees, the sessions a later process loads and the files they
//! write are real; only the agent's words are scripted. The live suite, against the
//! real codex-acp, is `acp_live.rs`.
//!
//! What this suite found (fixed, docs/agent-exec-acp.md): the agent was never told
//! the execution's identity (`AGENT_EXEC_EXECUTION_ID`, `AGENT_EXEC_ATTEMPT`, which
//! every other program backend sets), nor the request's `context` and `targets` —
//! an ACP agent could not know which files to write.

use std::sync::Arc;

use agent_exec_backends::acp::AcpBackend;

use crate::stand_in;
use stand_in::StandInHarness;

fn harness() -> StandInHarness {
    StandInHarness::new(
        "acp-stand-in",
        include_str!("../data/acp-stand-in.py"),
        |config, _| Arc::new(AcpBackend::new(config)),
    )
}

agent_exec_conformance::conformance_tests!(harness());

/// The stand-in passes the real verify (an `initialize` handshake) with every declared
/// capability — `resume` from its `loadSession` — so the suite runs the paths a
/// verified agent takes. Its one problem, `usage`, is not declared: ACP v1 has no token
/// counts to verify it with.
#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    let verification = stand_in::passes_verify_with_every_declared_capability(&harness()).await;
    assert!(
        verification.adapter_version.ends_with("acp-stand-in 1.0.0"),
        "{verification:?}"
    );
}
