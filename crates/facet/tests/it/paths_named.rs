//! Issue 21, findings 2, 4 and 7, through the real `facet hook` binary (and the dsh
//! bridge): a link's target named in every host's sentence, relative paths taken
//! against the folder the host resolves them in, glob patterns that climb without a
//! literal `..`, and bare searches that would cover facet's own state.
use crate::support;

use facet::dsh_bridge::Bridge;
use serde_json::{Value, json};
use support::{Run, Tree, pre_tool_use, session_event};

fn decided(run: &Run, what: &str) -> (String, String) {
    run.decision()
        .unwrap_or_else(|| panic!("{what}: no opinion; stderr: {}", run.stderr))
}

/// Patterns that climb by escape, class or extglob, or start with `~name`: judged by
/// their most conservative prefix, as `..` is. Before, each got no opinion.
#[test]
fn glob_patterns_that_can_climb_without_a_literal_dot_dot_are_judged() {
    let tree = Tree::new();
    let room = tree.room();
    tree.hook(&[], &session_event("globs", &room, "SessionStart"));
    for (tool, input, named) in [
        ("Glob", json!({"pattern": "\\.\\./\\.\\./other/*"}), "../.."),
        ("Glob", json!({"pattern": "[.][.]/*"}), ".."),
        ("Glob", json!({"pattern": "@(..)/@(..)/**"}), "../.."),
        ("Glob", json!({"pattern": ".[.]/*.rs"}), ".."),
        ("Glob", json!({"pattern": "~root/*"}), "~root"),
        ("Glob", json!({"pattern": "{[.][.],src}/*"}), ".."),
        ("glob", json!({"pattern": "\\.\\./*"}), ".."),
        ("Grep", json!({"pattern": "x", "glob": "[.][.]/**"}), ".."),
        ("grep", json!({"pattern": "x", "include": "+(.)/*"}), ".."),
    ] {
        let what = format!("{tool} {input}");
        let (decision, reason) = decided(
            &tree.hook(&[], &pre_tool_use("globs", &room, tool, input)),
            &what,
        );
        assert_eq!(decision, "ask", "{what}");
        assert!(reason.starts_with(&format!("{named} ")), "{what}: {reason}");
    }
    // Patterns that stay below their base are still left alone.
    for pattern in [
        "**/*.rs",
        "*/x.rs",
        "src/[a-z]*.rs",
        "!(node_modules)/**",
        "**/*.{rs,toml}",
        ".github/*",
    ] {
        tree.hook(
            &[],
            &pre_tool_use("globs", &room, "Glob", json!({ "pattern": pattern })),
        )
        .assert_no_opinion(pattern);
    }
}

/// A session in a folder that holds facet's state folder (a session in `$HOME`
/// holds `~/.local/state/facet`): a search naming no path would read it. Refused,
/// as a call that names the state folder is. Before, no opinion.
#[test]
fn a_search_whose_root_holds_facets_state_is_refused() {
    let tree = Tree::new();
    let home = tree.base.clone();
    tree.hook(&[], &session_event("home", &home, "SessionStart"));
    let sentence = format!(
        "This search would cover {}, which holds facet's own state or configuration ({})",
        home.display(),
        tree.state().display()
    );
    for (tool, input) in [
        ("Grep", json!({"pattern": "mode"})),
        ("Glob", json!({"pattern": "**/*.json"})),
        ("grep", json!({"pattern": "mode"})),
        ("Grep", json!({"pattern": "mode", "path": "."})),
        ("Glob", json!({"pattern": "*", "path": home})),
    ] {
        let what = format!("{tool} {input}");
        let (decision, reason) = decided(
            &tree.hook(&[], &pre_tool_use("home", &home, tool, input)),
            &what,
        );
        assert_eq!(decision, "deny", "{what}");
        assert!(reason.starts_with(&sentence), "{what}: {reason}");
    }
    // A search of a folder beside the state, and a one-level listing: no opinion.
    tree.hook(
        &[],
        &pre_tool_use(
            "home",
            &home,
            "Grep",
            json!({"pattern": "x", "path": "project"}),
        ),
    )
    .assert_no_opinion("a search beside the state");
    tree.hook(&[], &pre_tool_use("home", &home, "LS", json!({})))
        .assert_no_opinion("LS lists names, not the state's contents");
}

/// The session is recorded at `services/search`; the host's working folder has since
/// moved to `services/payments`. A relative path is opened there, so it is judged
/// there — and the sentence names where it leads, since `src/main.rs` read against
/// the facet would be a file inside it.
#[test]
fn relative_paths_are_judged_in_the_hosts_current_folder() {
    let tree = Tree::new();
    for dir in [
        "project/services/search/src",
        "project/services/payments/src",
    ] {
        std::fs::create_dir_all(tree.path(dir)).unwrap();
    }
    for file in [
        "project/services/search/src/main.rs",
        "project/services/payments/src/main.rs",
    ] {
        std::fs::write(tree.path(file), "fn main() {}").unwrap();
    }
    let search = tree.path("project/services/search");
    let payments = tree.path("project/services/payments");
    tree.hook(&[], &session_event("moved", &search, "SessionStart"));

    let run = tree.hook(
        &[],
        &pre_tool_use(
            "moved",
            &payments,
            "Read",
            json!({"file_path": "src/main.rs"}),
        ),
    );
    let (decision, reason) = decided(&run, "a relative path from the moved folder");
    assert_eq!(decision, "ask");
    assert_eq!(
        reason,
        format!(
            "src/main.rs → {} is outside — this session's facet is {}. Ask the user to grant it (`facet action=add`), or work within the facet.",
            payments.join("src/main.rs").display(),
            search.display()
        )
    );
    // The facet did not move with the folder: a path into it is still inside …
    tree.hook(
        &[],
        &pre_tool_use(
            "moved",
            &payments,
            "Read",
            json!({"file_path": "../search/src/main.rs"}),
        ),
    )
    .assert_no_opinion("a relative path back into the facet");
    // … and a folder moved within the facet reads relative paths from there.
    tree.hook(
        &[],
        &pre_tool_use(
            "moved",
            &search.join("src"),
            "Read",
            json!({"file_path": "main.rs"}),
        ),
    )
    .assert_no_opinion("a relative path from a subfolder of the facet");
    // The recorded folder is the facet, whatever the event says now.
    let status = tree.panel(&["status", "--session", "moved", "--json"]);
    assert!(
        status.stdout.contains(&search.display().to_string()),
        "{}",
        status.stdout
    );
}

/// `common-link` is a symbolic link in the facet to a folder outside it. Every host's
/// sentence names both the path the model wrote and where it leads, so the person is
/// not asked to approve a path that looks inside. Before, only the written path.
#[test]
fn a_link_is_named_with_its_target_in_every_hosts_sentence() {
    let tree = Tree::new();
    let room = tree.room();
    tree.symlink(tree.path("project/shared"), "project/src/room/common-link");
    let mut shown = Vec::new();

    // Claude Code: a question, and (no approval channel) a refusal.
    let read = pre_tool_use(
        "links",
        &room,
        "Read",
        json!({"file_path": "common-link/types.rs"}),
    );
    shown.push((
        "Claude Code, ask",
        decided(&tree.hook(&[], &read), "read").1,
    ));
    let mut bypass = read.clone();
    bypass["permission_mode"] = json!("bypassPermissions");
    shown.push((
        "Claude Code, no channel",
        decided(&tree.hook(&[], &bypass), "bypass").1,
    ));
    // The MCP tool's widening question: granting `common-link` grants its target.
    let add = pre_tool_use(
        "links",
        &room,
        "mcp__facet__facet",
        json!({"action": "add", "paths": ["common-link"]}),
    );
    shown.push(("facet action=add", decided(&tree.hook(&[], &add), "add").1));
    // Codex: a patch through the link.
    let mut patch = pre_tool_use(
        "links-codex",
        &room,
        "apply_patch",
        json!({"command": "*** Begin Patch\n*** Update File: common-link/types.rs\n@@\n-t\n+u\n*** End Patch\n"}),
    );
    patch["permission_mode"] = json!("default");
    shown.push((
        "Codex",
        decided(&tree.hook(&["--dialect", "codex"], &patch), "codex").1,
    ));
    // dsh: the native plugin's bridge, for a read and for the `facet` tool.
    let mut bridge = Bridge::with_state_dir(tree.path("state-dsh"));
    let configure = json!({"id": 0, "method": "configure", "params": {"config": {"mode": "ask"}}});
    bridge.handle(configure.to_string().as_bytes());
    for (id, tool, arguments) in [
        (1, "read", json!({"file_path": "common-link/types.rs"})),
        (
            2,
            "facet",
            json!({"action": "add", "paths": ["common-link"]}),
        ),
    ] {
        let request = json!({"id": id, "method": "judge", "params": {
            "session": "links-dsh", "cwd": room,
            "approval": {"service": true, "policy": "ask"},
            "tool": tool, "callId": "c", "arguments": arguments,
        }});
        let lines = bridge.handle(request.to_string().as_bytes());
        let answer: Value = serde_json::from_str(&lines[0]).unwrap();
        let reason = answer["approval"]["reason"]
            .as_str()
            .unwrap_or_else(|| panic!("dsh {tool}: {answer}"));
        shown.push((
            if tool == "read" {
                "dsh, read"
            } else {
                "dsh, facet action=add"
            },
            reason.to_owned(),
        ));
    }

    let target = tree.path("project/shared").display().to_string();
    let text: Vec<String> = shown
        .iter()
        .map(|(host, reason)| {
            assert!(reason.contains(&format!("→ {target}")), "{host}: {reason}");
            format!("{host}:\n{}", tree.redact(reason))
        })
        .collect();
    insta::assert_snapshot!("link_named_in_every_host", text.join("\n\n"));
}
