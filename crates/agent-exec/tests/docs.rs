//! docs/agent-exec.md runs as printed: its console transcripts and scripts, from a
//! scratch copy of the repository root (crates/doc-commands). Blocks marked `no-run`
//! need a program that is not here (`my-agent`) or run for minutes (benchmarks).

#[test]
fn agent_exec_md_runs_as_printed() {
    doc_commands::Doc::new("docs/agent-exec.md")
        .bin("agent-exec", env!("CARGO_BIN_EXE_agent-exec"))
        .run();
}
