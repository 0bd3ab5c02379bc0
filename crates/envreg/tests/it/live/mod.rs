//! Support for the live host tests (`claude_code_plugin_live.rs`, `codex_live.rs`):
//! the pinned host programs (installed by scripts/setup.d/15-npm-peers.sh), a scratch
//! project holding a copy of the example registry, the freshly built `envreg` and
//! `facet` first on `PATH` (the integrations call them by name, as an installed copy
//! would be called), and readers for what the scripted model server
//! (`model-script`) received.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub use test_support::repo_root;

/// A pinned npm peer's executable; a missing one fails the test, loudly.
pub fn peer(bin: &str, package: &str) -> PathBuf {
    test_support::peers::npm_bin(bin, package)
}

/// The npm peers' `.bin` (Node 22 is there: Claude Code needs it; the system Node may
/// be older).
pub fn node_bin_dir() -> PathBuf {
    test_support::peers::npm_bin_dir()
}

fn version_commit(bin: &Path) -> String {
    let out = Command::new(bin).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_once("(commit ")
        .map(|(_, rest)| rest.trim().trim_end_matches(')').to_owned())
        .unwrap_or_else(|| panic!("{} --version: {text:?}", bin.display()))
}

/// A scratch tree: `project/` (a git top level) with the session's folder
/// `project/ops`, which holds a copy of the example registry (found by `envreg serve`
/// and `envreg hook` by walking up from the session folder), a scratch `home/`, facet's
/// `state/`, and `bin/` with `envreg` and `facet` linked to the freshly built binaries.
pub struct Project {
    pub tmp: tempfile::TempDir,
}

impl Project {
    pub fn new(channel: &str) -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let project = Project { tmp };
        std::fs::create_dir_all(project.path("project/.git")).unwrap();
        std::fs::create_dir_all(project.path("home")).unwrap();
        std::fs::create_dir_all(project.path("state")).unwrap();
        test_support::copy_example("registry", &project.ops());
        let config = std::fs::read_to_string(project.ops().join("envreg.yaml")).unwrap();
        assert!(config.contains("approvalChannel: elicitation"));
        std::fs::write(
            project.ops().join("envreg.yaml"),
            config.replace(
                "approvalChannel: elicitation",
                &format!("approvalChannel: {channel}"),
            ),
        )
        .unwrap();

        // The binaries this test run built. `facet` belongs to another package, so
        // cargo does not hand its path to envreg's tests; it sits beside `envreg` in
        // the same target folder once built (`cargo test --workspace` builds it).
        let envreg = PathBuf::from(env!("CARGO_BIN_EXE_envreg"));
        let facet = envreg.with_file_name("facet");
        assert!(
            facet.exists(),
            "{} is missing: build it first (`cargo build -p facet`; `cargo test --workspace` does)",
            facet.display()
        );
        assert_eq!(
            version_commit(&facet),
            version_commit(&envreg),
            "{} was built from another commit than envreg: rebuild it (`cargo build -p facet`)",
            facet.display()
        );
        std::fs::create_dir_all(project.path("bin")).unwrap();
        std::os::unix::fs::symlink(&envreg, project.path("bin/envreg")).unwrap();
        std::os::unix::fs::symlink(&facet, project.path("bin/facet")).unwrap();
        project
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// The session's folder, and the registry.
    pub fn ops(&self) -> PathBuf {
        self.path("project/ops")
    }

    /// `PATH` with our binaries first, then Node 22, then the system's.
    pub fn path_var(&self) -> String {
        format!(
            "{}:{}:{}",
            self.path("bin").display(),
            node_bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

/// The conversation requests Claude Code sent (side requests — titles, topics — left out).
pub fn messages_requests(server: &model_script::ScriptedServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/messages" && !model_script::anthropic::is_side_request(&r.body))
        .map(|r| r.body)
        .collect()
}

/// The tool names a Messages request offered the model.
pub fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the `tool_result` for `call_id` that reached the model, if any.
pub fn anthropic_tool_result(requests: &[Value], call_id: &str) -> Option<(String, bool)> {
    requests.iter().rev().find_map(|request| {
        request["messages"].as_array()?.iter().find_map(|message| {
            message["content"].as_array()?.iter().find_map(|part| {
                if part["type"] != "tool_result" || part["tool_use_id"] != call_id {
                    return None;
                }
                let text = match &part["content"] {
                    Value::String(text) => text.clone(),
                    Value::Array(blocks) => blocks
                        .iter()
                        .filter_map(|b| b["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => other.to_string(),
                };
                Some((text, part["is_error"] == true))
            })
        })
    })
}

/// The `function_call_output` for `call_id` that reached the model (Responses API).
pub fn responses_tool_output(requests: &[Value], call_id: &str) -> Option<String> {
    requests.iter().rev().find_map(|request| {
        request["input"].as_array()?.iter().find_map(|item| {
            (item["type"] == "function_call_output" && item["call_id"] == call_id).then(|| {
                match &item["output"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                }
            })
        })
    })
}
