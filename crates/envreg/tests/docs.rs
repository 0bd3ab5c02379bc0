//! The envreg documents run as written: every shell command in them is run as printed,
//! from the repository root (a scratch copy), and what it prints is compared
//! (crates/doc-commands). `DOC_COMMANDS=overwrite cargo test -p envreg --test docs`
//! rewrites the expected outputs after a deliberate change (review the diff).
//!
//! docs/hosts.md has no test here: its commands install a plugin or edit a host's
//! config (`no-run`); what they set up is run by the live tests (codex_live,
//! claude_code_plugin_live).
#![allow(clippy::unwrap_used)]

fn doc(path: &str) -> doc_commands::Doc {
    doc_commands::Doc::new(path).bin("envreg", env!("CARGO_BIN_EXE_envreg"))
}

#[test]
fn envreg_cli_md() {
    doc("docs/envreg-cli.md").run();
}

#[test]
fn envreg_mcp_md() {
    doc("docs/envreg-mcp.md").run();
}

#[test]
fn envreg_ui_md() {
    doc("docs/envreg-ui.md").run();
}
