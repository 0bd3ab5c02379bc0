//! The runner on its own fixture: every form the crate doc promises, run for real.

#[test]
fn the_fixture_runs_as_printed() {
    doc_commands::Doc::new("crates/doc-commands/tests/fixture.md").run();
    let root = test_support::repo_root();
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

/// Docs are tests: a document that prints a command to run (a block not marked
/// `no-run`) is run by some crate's test, which names it. Without this, a new page's
/// commands would be unchecked until a reader found them broken.
#[test]
fn every_document_with_commands_is_run_by_a_test() {
    let root = test_support::repo_root();
    let mut documents = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("docs/ entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") {
            documents.push(format!("docs/{name}"));
        }
    }
    // Every `.rs` under each crate's `tests/`, at any depth: grouped test binaries keep
    // their modules in `tests/it/`.
    let mut tests = String::new();
    let mut folders: Vec<_> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|krate| krate.expect("crate").path().join("tests"))
        .collect();
    while let Some(folder) = folders.pop() {
        let Ok(dir) = std::fs::read_dir(&folder) else {
            continue;
        };
        for file in dir.flatten() {
            let path = file.path();
            if file.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                tests.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let unrun: Vec<&String> = documents
        .iter()
        .filter(|doc| {
            let text = std::fs::read_to_string(root.join(doc)).expect("document");
            let runnable = doc_commands::parse_blocks(&text).iter().any(|b| !b.no_run);
            runnable && !tests.contains(&format!("\"{doc}\""))
        })
        .collect();
    assert!(
        unrun.is_empty(),
        "these documents print commands no test runs (add a doc-commands test in the \
         crate whose binary they call, or mark a block `no-run` with the reason in the \
         text): {unrun:?}"
    );
}
