//! docs/envreg-registry.md and docs/envreg-resolve.md run as printed: their console and
//! sh blocks, from a scratch copy of the repository root, with this build's `envreg` on
//! `PATH` (`crates/doc-commands`).

#[test]
fn docs_envreg_registry_md_runs_as_printed() {
    doc_commands::Doc::new("docs/envreg-registry.md")
        .bin("envreg", env!("CARGO_BIN_EXE_envreg"))
        .run();
}

#[test]
fn docs_envreg_resolve_md_runs_as_printed() {
    doc_commands::Doc::new("docs/envreg-resolve.md")
        .bin("envreg", env!("CARGO_BIN_EXE_envreg"))
        .run();
}
