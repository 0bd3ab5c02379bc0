//! docs/facet.md runs as printed: its console and sh blocks, from a scratch copy of the
//! repository root, with this build's `facet` on `PATH` (`crates/doc-commands`).

#[test]
fn docs_facet_md_runs_as_printed() {
    doc_commands::Doc::new("docs/facet.md")
        .bin("facet", env!("CARGO_BIN_EXE_facet"))
        .run();
}
