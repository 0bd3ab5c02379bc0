//! The envreg documents run as written: every shell command in them is run as printed,
//! from the repository root (a scratch copy), and what it prints is compared
//! (crates/doc-commands). `DOC_COMMANDS=overwrite cargo test -p envreg --test it docs::`
//! rewrites the expected outputs after a deliberate change (review the diff).
//!
//! docs/hosts.md has no test here: its commands install a plugin or edit a host's
//! config (`no-run`); what they set up is run by the live tests (codex_live,
//! claude_code_plugin_live).
#![allow(clippy::unwrap_used)]

/// The document's runner, with a private `$TMPDIR`: servers record there which
/// registry they serve for their host's hook (`envreg_core::served`), and a hook in a
/// document must not find the record of a server some ancestor of this test started
/// (say, a host running `cargo test`).
fn doc(path: &str, tmp: &tempfile::TempDir) -> doc_commands::Doc {
    doc_commands::Doc::new(path)
        .bin("envreg", env!("CARGO_BIN_EXE_envreg"))
        .env("TMPDIR", tmp.path().display().to_string())
}

#[test]
fn envreg_cli_md() {
    let tmp = tempfile::tempdir().unwrap();
    doc("docs/envreg-cli.md", &tmp).run();
}

#[test]
fn envreg_mcp_md() {
    let tmp = tempfile::tempdir().unwrap();
    doc("docs/envreg-mcp.md", &tmp).run();
}

#[test]
fn envreg_ui_md() {
    let tmp = tempfile::tempdir().unwrap();
    doc("docs/envreg-ui.md", &tmp).run();
}

/// The README's first commands are envreg's (the rest install software or run the
/// suite: `no-run`); `cargo run -q -p envreg --` is this test's envreg binary.
#[test]
fn readme_md() {
    let tmp = tempfile::tempdir().unwrap();
    doc("README.md", &tmp).run();
}
