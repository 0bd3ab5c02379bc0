//! The agent-exec documents run as printed: every shell command in them, from a scratch
//! copy of the repository root, with what it prints checked (`doc-commands`). Blocks
//! marked `no-run` (the test suite itself, benchmarks against peers) are shown only.

fn doc(path: &str) {
    doc_commands::Doc::new(path)
        .bin("agent-exec", env!("CARGO_BIN_EXE_agent-exec"))
        .run();
}

#[test]
fn agent_exec_md() {
    doc("docs/agent-exec.md");
}

#[test]
fn agent_exec_codex_md() {
    doc("docs/agent-exec-codex.md");
}

#[test]
fn agent_exec_claude_code_md() {
    doc("docs/agent-exec-claude-code.md");
}

#[test]
fn agent_exec_agent_native_md() {
    doc("docs/agent-exec-agent-native.md");
}

#[test]
fn agent_exec_copilot_md() {
    doc("docs/agent-exec-copilot.md");
}

#[test]
fn agent_exec_acp_md() {
    doc("docs/agent-exec-acp.md");
}

#[test]
fn agent_exec_gemini_md() {
    doc("docs/agent-exec-gemini.md");
}

#[test]
fn agent_exec_opencode_md() {
    doc("docs/agent-exec-opencode.md");
}
