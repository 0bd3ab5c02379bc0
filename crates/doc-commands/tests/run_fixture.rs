//! The runner on its own fixture: every form the crate doc promises, run for real.

#[test]
fn the_fixture_runs_as_printed() {
    doc_commands::Doc::new("crates/doc-commands/tests/fixture.md").run();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(
        !root.join("made").exists(),
        "a document's commands wrote into the checkout"
    );
}

#[test]
#[should_panic(expected = "does not run as printed")]
fn a_wrong_output_fails() {
    doc_commands::Doc::new("crates/doc-commands/tests/wrong.md").run();
}
