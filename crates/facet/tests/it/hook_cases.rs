//! Every case of `shared/spec/facet.md`, as real trees in a temp folder, through the
//! real `facet hook` binary, for every path-carrying argument of every tool in the
//! tables (DeepSeek Harness and Claude Code; Gemini CLI's, GitHub Copilot CLI's and
//! OpenCode's through their own dialects, envelopes and answers).
use crate::support;

use std::path::Path;

use serde_json::json;
use support::{Run, Tree, copilot_pre_tool_use, opencode_tool_call, pre_tool_use, run_facet};

/// Every (tool, path argument) the guard must read: DeepSeek Harness's table
/// (the seed's, plus `lsp`) and Claude Code's.
const PATH_ARGUMENTS: &[(&str, &str)] = &[
    ("read", "file_path"),
    ("write", "file_path"),
    ("edit", "file_path"),
    ("read_image", "file_path"),
    ("grep", "path"),
    ("glob", "path"),
    ("str_replace_editor", "path"),
    ("lsp", "file_path"),
    ("lsp", "path"),
    ("recall", "path"),
    ("recall", "focus"),
    ("Read", "file_path"),
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
    ("Grep", "path"),
    ("Glob", "path"),
    ("LS", "path"),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Inside,
    Outside,
}

/// The seed's outside reason, written out independently of facet-core.
fn outside_reason(cwd: &Path, raw: &str, root: &Path, verb: &str) -> String {
    let cwd = cwd.display().to_string();
    let prefix = format!("{cwd}/");
    let shown = if raw == cwd {
        ".".to_owned()
    } else {
        raw.strip_prefix(&prefix).unwrap_or(raw).to_owned()
    };
    format!(
        "{shown} is {verb} — this session's facet is {}. Ask the user to grant it (`facet action=add`), or work within the facet.",
        root.display()
    )
}

/// The cases' links, made once in `tree`.
fn build_links(tree: &Tree) {
    let base = &tree.base;
    std::fs::create_dir_all(base.join("outside/a/b")).unwrap();
    std::fs::create_dir_all(base.join("project/src/room/a/b")).unwrap();
    std::fs::create_dir_all(base.join("project/src/room2")).unwrap();
    // A symlink inside the facet to a file outside, and to a folder outside.
    tree.symlink(
        base.join("project/src/other/secret.txt"),
        "project/src/room/secret_link",
    );
    tree.symlink(base.join("project/shared"), "project/src/room/shared_link");
    // `..` after a symlink: lexically inside, really outside …
    tree.symlink(base.join("outside/a"), "project/src/room/up");
    // … and lexically outside, really inside.
    tree.symlink(base.join("project/src/room/a/b"), "project/src/room/inner");
    // A dangling symlink to outside.
    tree.symlink(base.join("outside/nope.txt"), "project/src/room/dangling");
    // A chain of relative symlinks that escapes at the last hop.
    tree.symlink("c2", "project/src/room/c1");
    tree.symlink("c3", "project/src/room/c2");
    tree.symlink(base.join("outside"), "project/src/room/c3");
    // A loop.
    tree.symlink("loop2", "project/src/room/loop1");
    tree.symlink("loop1", "project/src/room/loop2");
}

/// How a sentence names `raw`: as written, and with its canonical target when a
/// symbolic link (or `/proc/self/root`) leads somewhere the written path does not say.
fn named(tree: &Tree, raw: &str) -> String {
    let target = match raw {
        "up/../file.txt" | "c1/file.txt" => tree.path("outside/file.txt"),
        "secret_link" => tree.path("project/src/other/secret.txt"),
        "shared_link/types.rs" => tree.path("project/shared/types.rs"),
        "shared_link/not_yet.rs" => tree.path("project/shared/not_yet.rs"),
        "dangling" => tree.path("outside/nope.txt"),
        "/proc/self/root/etc/passwd" => "/etc/passwd".into(),
        _ => return raw.to_owned(),
    };
    format!("{raw} → {}", target.display())
}

/// (raw path as the model writes it, expected side). Relative paths are relative to
/// the session's folder; the hook itself runs in `project/src/other`, so a guard
/// that resolved against its own directory would get `secret.txt` wrong.
fn cases(tree: &Tree) -> Vec<(String, Expect)> {
    let abs = |relative: &str| tree.path(relative).display().to_string();
    vec![
        ("inside.txt".into(), Expect::Inside),
        (abs("project/src/room/inside.txt"), Expect::Inside),
        ("new/dir/file.rs".into(), Expect::Inside),
        // Exists in the guard's own directory, not in the session's: inside.
        ("secret.txt".into(), Expect::Inside),
        ("../../shared/types.rs".into(), Expect::Outside),
        // Prefix collision: room2 is not inside room.
        ("../room2/x.rs".into(), Expect::Outside),
        (abs("project/src/room2/x.rs"), Expect::Outside),
        (abs("project2/x.txt"), Expect::Outside),
        // `..` after a symlink, both ways.
        ("up/../file.txt".into(), Expect::Outside),
        ("inner/../../x.rs".into(), Expect::Inside),
        // Symlinks inside the facet that lead out: a file, a folder, a new file under it.
        ("secret_link".into(), Expect::Outside),
        ("shared_link/types.rs".into(), Expect::Outside),
        ("shared_link/not_yet.rs".into(), Expect::Outside),
        ("dangling".into(), Expect::Outside),
        ("c1/file.txt".into(), Expect::Outside),
        // A loop fails closed.
        ("loop1/x".into(), Expect::Outside),
        ("/proc/self/root/etc/passwd".into(), Expect::Outside),
        ("/etc/passwd".into(), Expect::Outside),
        // A NUL byte fails closed.
        ("inside\u{0}.txt".into(), Expect::Outside),
    ]
}

fn hook_from(tree: &Tree, current_dir: &Path, event: &serde_json::Value) -> Run {
    run_facet(
        &["hook"],
        &serde_json::to_vec(event).unwrap(),
        &tree.state(),
        current_dir,
    )
}

#[test]
fn every_case_for_every_path_argument_of_both_tables() {
    let tree = Tree::new();
    build_links(&tree);
    let room = tree.room();
    let guard_dir = tree.path("project/src/other");
    let mut failures = Vec::new();
    let mut judged = 0;
    for (tool, argument) in PATH_ARGUMENTS {
        for (raw, expect) in cases(&tree) {
            let event = pre_tool_use("table", &room, tool, json!({ *argument: raw }));
            let run = hook_from(&tree, &guard_dir, &event);
            judged += 1;
            let what = format!("{tool} {argument}={raw:?}");
            if run.code != 0 {
                failures.push(format!("{what}: exit {} ({})", run.code, run.stderr));
                continue;
            }
            match (expect, run.decision()) {
                (Expect::Inside, None) => {}
                (Expect::Outside, Some((decision, reason))) => {
                    let expected = outside_reason(&room, &named(&tree, &raw), &room, "outside");
                    if decision != "ask" || reason != expected {
                        failures.push(format!("{what}: got {decision}: {reason}"));
                    }
                }
                (expect, got) => failures.push(format!("{what}: expected {expect:?}, got {got:?}")),
            }
        }
    }
    assert_eq!(judged, PATH_ARGUMENTS.len() * cases(&tree).len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_root_given_through_a_symlinked_path_is_stored_canonical() {
    let tree = Tree::new();
    tree.symlink(tree.path("project"), "linked_project");
    let linked_room = tree.path("linked_project/src/room");
    let real_room = tree.room();
    let elsewhere = tree.path("elsewhere");
    for (raw, expect) in [
        ("inside.txt".to_owned(), Expect::Inside),
        (
            real_room.join("inside.txt").display().to_string(),
            Expect::Inside,
        ),
        (
            linked_room.join("x.rs").display().to_string(),
            Expect::Inside,
        ),
        (
            tree.path("linked_project/src/other/secret.txt")
                .display()
                .to_string(),
            Expect::Outside,
        ),
    ] {
        for tool in ["Read", "read"] {
            let arg = "file_path";
            let event = pre_tool_use("linked", &linked_room, tool, json!({ arg: raw }));
            let run = hook_from(&tree, &elsewhere, &event);
            match expect {
                Expect::Inside => run.assert_no_opinion(&raw),
                Expect::Outside => {
                    let (decision, reason) = run.decision().expect("a decision");
                    assert_eq!(decision, "ask");
                    // The facet is named by its canonical path, not the link.
                    assert!(
                        reason
                            .contains(&format!("this session's facet is {}.", real_room.display())),
                        "{reason}"
                    );
                }
            }
        }
    }
    let status = tree.panel(&["status", "--session", "linked", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(value["binding"]["facet"], real_room.display().to_string());
}

#[test]
fn searches_naming_no_path_are_judged_against_the_session_directory() {
    let tree = Tree::new();
    std::fs::create_dir_all(tree.path("project/src/room/sub")).unwrap();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    let implicit = ["grep", "glob", "recall", "Grep", "Glob", "LS"];
    // While the facet is the session's own folder, a bare search stays inside.
    for tool in implicit {
        let run = hook_from(
            &tree,
            &elsewhere,
            &pre_tool_use("bare", &room, tool, json!({"pattern": "x"})),
        );
        run.assert_no_opinion(tool);
    }
    // Focused from the panel on a narrower folder, the default is outside it.
    let focus = tree.panel(&["focus", "sub", "--session", "bare"]);
    assert_eq!(focus.code, 0, "{}", focus.stderr);
    let sub = tree.path("project/src/room/sub");
    for tool in implicit {
        let run = hook_from(
            &tree,
            &elsewhere,
            &pre_tool_use("bare", &room, tool, json!({"pattern": "x"})),
        );
        let (decision, reason) = run
            .decision()
            .unwrap_or_else(|| panic!("{tool}: no decision"));
        assert_eq!(decision, "ask", "{tool}");
        assert_eq!(
            reason,
            format!(
                "This search names no `path`, so it would cover this session's directory {} — and this session's facet is {}. Name a folder inside the facet, or ask the user to grant the one you need.",
                room.display(),
                sub.display()
            ),
            "{tool}"
        );
        // Naming a folder inside the focus is fine.
        let run = hook_from(
            &tree,
            &elsewhere,
            &pre_tool_use("bare", &room, tool, json!({"path": "sub"})),
        );
        run.assert_no_opinion(tool);
    }
}

#[test]
fn glob_patterns_with_an_absolute_or_climbing_prefix_are_judged_by_it() {
    let tree = Tree::new();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    for (tool, args, judged) in [
        ("Glob", json!({"pattern": "/etc/*.conf"}), Some("/etc")),
        ("glob", json!({"pattern": "/etc/**"}), Some("/etc")),
        (
            "Glob",
            json!({"pattern": "../other/**/*.txt"}),
            Some("../other"),
        ),
        (
            "glob",
            json!({"pattern": "../../shared/*.rs"}),
            Some("../../shared"),
        ),
        (
            "Grep",
            json!({"pattern": "fn", "glob": "../other/*.txt"}),
            Some("../other"),
        ),
        ("Glob", json!({"pattern": "**/*.rs"}), None),
        ("glob", json!({"pattern": "src/**/*.rs", "path": "."}), None),
    ] {
        let run = hook_from(
            &tree,
            &elsewhere,
            &pre_tool_use("glob", &room, tool, args.clone()),
        );
        match judged {
            None => run.assert_no_opinion(&args.to_string()),
            Some(prefix) => {
                let (decision, reason) = run
                    .decision()
                    .unwrap_or_else(|| panic!("{args}: no decision"));
                assert_eq!(decision, "ask");
                assert_eq!(
                    reason,
                    outside_reason(&room, prefix, &room, "outside"),
                    "{args}"
                );
            }
        }
    }
}

#[test]
fn tools_the_tables_do_not_know_get_no_opinion() {
    let tree = Tree::new();
    let room = tree.room();
    for (tool, args) in [
        ("Bash", json!({"command": "cat /etc/passwd"})),
        ("bash", json!({"command": "cat ../../shared/types.rs"})),
        ("WebFetch", json!({"url": "file:///etc/passwd"})),
        ("mcp__other__read_file", json!({"path": "/etc/passwd"})),
    ] {
        tree.hook(&[], &pre_tool_use("unknown", &room, tool, args))
            .assert_no_opinion(tool);
    }
}

#[test]
fn a_session_started_at_the_project_top_level_is_not_scoped() {
    let tree = Tree::new();
    let top = tree.path("project");
    let start = tree.hook(&[], &support::session_event("top", &top, "SessionStart"));
    start.assert_no_opinion("SessionStart at the top level");
    let run = tree.hook(
        &[],
        &pre_tool_use("top", &top, "Read", json!({"file_path": "/etc/passwd"})),
    );
    run.assert_no_opinion("Read in an unscoped session");
}

#[test]
fn modes_from_the_panel_change_the_decision() {
    let tree = Tree::new();
    let room = tree.room();
    let outside = json!({"file_path": "../../shared/types.rs"});
    let (decision, _) = tree
        .hook(&[], &pre_tool_use("modes", &room, "Read", outside.clone()))
        .decision()
        .unwrap();
    assert_eq!(decision, "ask");

    assert_eq!(tree.panel(&["mode", "deny", "--session", "modes"]).code, 0);
    let (decision, reason) = tree
        .hook(&[], &pre_tool_use("modes", &room, "Read", outside.clone()))
        .decision()
        .unwrap();
    assert_eq!(decision, "deny");
    assert_eq!(
        reason,
        outside_reason(&room, "../../shared/types.rs", &room, "refused")
    );

    assert_eq!(tree.panel(&["mode", "off", "--session", "modes"]).code, 0);
    tree.hook(&[], &pre_tool_use("modes", &room, "Read", outside))
        .assert_no_opinion("mode off");
}

/// Every (tool, path argument) of Gemini CLI 0.61.0's own table.
const GEMINI_PATH_ARGUMENTS: &[(&str, &str)] = &[
    ("read_file", "file_path"),
    ("write_file", "file_path"),
    ("replace", "file_path"),
    ("list_directory", "dir_path"),
    ("glob", "dir_path"),
    ("grep_search", "dir_path"),
];

/// The refusal Gemini CLI gets for `raw` (it cannot ask): the seed's no-channel
/// sentence, naming the panel command that grants it to this session.
fn gemini_refusal_holds(reason: &str, shown: &str, root: &Path, session: &str) -> bool {
    reason.starts_with(&format!(
        "{shown} is refused — this session's facet is {}, and this session has no approval channel, so nobody can be asked to grant it here. Ask the user to run `facet grant ",
        root.display()
    )) && reason.ends_with(&format!(
        " --session {session}` in a terminal, or work within the facet."
    ))
}

fn gemini_hook(tree: &Tree, current_dir: &Path, event: &serde_json::Value) -> Run {
    run_facet(
        &["hook", "--dialect", "gemini"],
        &serde_json::to_vec(event).unwrap(),
        &tree.state(),
        current_dir,
    )
}

#[test]
fn every_case_for_every_path_argument_of_gemini_cli_refused_in_its_own_shape() {
    let tree = Tree::new();
    build_links(&tree);
    let room = tree.room();
    let guard_dir = tree.path("project/src/other");
    let mut failures = Vec::new();
    for (tool, argument) in GEMINI_PATH_ARGUMENTS {
        for (raw, expect) in cases(&tree) {
            // A search naming its folder is judged by it; the pattern is harmless.
            let event = support::gemini_event(
                "table",
                &room,
                "BeforeTool",
                tool,
                json!({ *argument: raw, "pattern": "x" }),
            );
            let run = gemini_hook(&tree, &guard_dir, &event);
            let what = format!("{tool} {argument}={raw:?}");
            if run.code != 0 {
                failures.push(format!("{what}: exit {} ({})", run.code, run.stderr));
                continue;
            }
            match (expect, run.gemini_decision()) {
                (Expect::Inside, None) => {}
                (Expect::Outside, Some((decision, reason))) => {
                    let shown = named(&tree, &raw);
                    if decision != "deny" || !gemini_refusal_holds(&reason, &shown, &room, "table")
                    {
                        failures.push(format!("{what}: got {decision}: {reason}"));
                    }
                }
                (expect, got) => failures.push(format!("{what}: expected {expect:?}, got {got:?}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// google-gemini/gemini-cli#29075: Gemini's `glob` checks `dir_path` against its
/// workspace but not the pattern, so `../` in the pattern lists files outside (seen
/// with 0.61.0: `../outside/*.txt` found `/…/outside/secret.txt`). facet judges the
/// pattern's fixed prefix, with or without a `dir_path`.
#[test]
fn gemini_glob_patterns_that_climb_out_are_refused() {
    let tree = Tree::new();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    for (args, judged) in [
        (json!({"pattern": "../../x/*.rs"}), "../../x"),
        (json!({"pattern": "../other/*.txt"}), "../other"),
        (json!({"pattern": "/etc/*.conf"}), "/etc"),
        (json!({"pattern": "../*", "dir_path": "."}), "./.."),
        (
            json!({"pattern": "x", "include_pattern": "../../shared/*.rs"}),
            "../../shared",
        ),
    ] {
        let tool = if args.get("include_pattern").is_some() {
            "grep_search"
        } else {
            "glob"
        };
        let run = gemini_hook(
            &tree,
            &elsewhere,
            &support::gemini_event("g29075", &room, "BeforeTool", tool, args.clone()),
        );
        let (decision, reason) = run
            .gemini_decision()
            .unwrap_or_else(|| panic!("{args}: let through"));
        assert_eq!(decision, "deny", "{args}");
        assert!(
            gemini_refusal_holds(&reason, judged, &room, "g29075"),
            "{args}: {reason}"
        );
    }
}

/// Gemini's `glob` names its folder `dir_path`, DeepSeek Harness's `path`: under the
/// Claude Code dialect's tables a Gemini `glob` of `/etc` would be a bare search of
/// the session folder — which is why Gemini has a table of its own.
#[test]
fn gemini_tools_are_read_by_gemini_s_table_only() {
    let tree = Tree::new();
    let room = tree.room();
    let args = json!({"pattern": "*", "dir_path": "/etc"});
    let event = support::gemini_event("tables", &room, "BeforeTool", "glob", args.clone());
    let (decision, _) = gemini_hook(&tree, &room, &event).gemini_decision().unwrap();
    assert_eq!(decision, "deny");
    tree.hook(&[], &pre_tool_use("tables", &room, "glob", args))
        .assert_no_opinion("dsh's glob has no dir_path");
    // And the other way: DeepSeek Harness's and Claude Code's names mean nothing to
    // Gemini, which has no such tools.
    for tool in ["read", "Read"] {
        let event = support::gemini_event(
            "tables",
            &room,
            "BeforeTool",
            tool,
            json!({"file_path": "/etc/passwd"}),
        );
        gemini_hook(&tree, &room, &event).assert_no_opinion(tool);
    }
}

/// A Gemini search naming no folder runs in every workspace folder, which the event
/// does not list; in a scoped session facet pins it to the session folder by
/// answering the call's whole input with `dir_path` added.
#[test]
fn gemini_searches_naming_no_folder_are_pinned_to_the_session_folder() {
    let tree = Tree::new();
    let room = tree.room();
    for tool in ["glob", "grep_search"] {
        let input = json!({"pattern": "*.rs", "total_max_matches": 5});
        let run = gemini_hook(
            &tree,
            &room,
            &support::gemini_event("pin", &room, "BeforeTool", tool, input),
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            run.json().unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {
                "pattern": "*.rs", "total_max_matches": 5, "dir_path": room}}}),
            "{tool}"
        );
        // Naming a folder: judged by it, nothing to pin.
        let named = json!({"pattern": "*.rs", "dir_path": "src"});
        gemini_hook(
            &tree,
            &room,
            &support::gemini_event("pin", &room, "BeforeTool", tool, named),
        )
        .assert_no_opinion(tool);
    }
    // An unscoped session (the project's top level) is left alone.
    let top = tree.path("project");
    gemini_hook(
        &tree,
        &top,
        &support::gemini_event("top", &top, "BeforeTool", "glob", json!({"pattern": "*"})),
    )
    .assert_no_opinion("unscoped");
    // Focused on a narrower folder, a bare search is refused, not pinned.
    std::fs::create_dir_all(room.join("sub")).unwrap();
    assert_eq!(tree.panel(&["focus", "sub", "--session", "pin"]).code, 0);
    let (decision, reason) = gemini_hook(
        &tree,
        &room,
        &support::gemini_event("pin", &room, "BeforeTool", "glob", json!({"pattern": "*"})),
    )
    .gemini_decision()
    .unwrap();
    assert_eq!(decision, "deny");
    assert!(
        reason.starts_with("This search names no `path`"),
        "{reason}"
    );
}

#[test]
fn gemini_session_start_and_prompts_carry_the_rule_and_the_binding() {
    let tree = Tree::new();
    let room = tree.room();
    let start = gemini_hook(
        &tree,
        &room,
        &support::gemini_event("ctx", &room, "SessionStart", "", json!({})),
    );
    let (event, context) = start.context().unwrap();
    assert_eq!(event, "SessionStart");
    assert!(context.starts_with("# Facet scope"), "{context}");
    assert!(
        context.contains(&format!("facet: {}", room.display())),
        "{context}"
    );
    // Gemini cannot ask: the binding says so, and names no `facet action=add` that
    // could be granted.
    assert!(context.contains("no approval channel"), "{context}");
    // Unchanged binding: the prompt adds nothing; after a grant it restates it.
    gemini_hook(
        &tree,
        &room,
        &support::gemini_event("ctx", &room, "BeforeAgent", "", json!({})),
    )
    .assert_no_opinion("unchanged");
    let other = tree.path("project/src/other");
    let grant = tree.panel(&["grant", &other.display().to_string(), "--session", "ctx"]);
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let (event, context) = gemini_hook(
        &tree,
        &room,
        &support::gemini_event("ctx", &room, "BeforeAgent", "", json!({})),
    )
    .context()
    .unwrap();
    assert_eq!(event, "BeforeAgent");
    assert!(
        context.contains(&format!("granted outside it: {}", other.display())),
        "{context}"
    );
}

/// A dialect facet does not speak is a usage error naming every one it does: never a
/// hook that answers in a shape its host ignores.
#[test]
fn an_unknown_dialect_is_a_usage_error_listing_every_dialect() {
    let tree = Tree::new();
    let run = run_facet(
        &["hook", "--dialect", "gemni"],
        b"{}",
        &tree.state(),
        &tree.room(),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    insta::assert_snapshot!(run.stderr, @"
    error: invalid value 'gemni' for '--dialect <DIALECT>': unknown dialect `gemni`: use one of claude-code (also claude, dsh), codex, copilot, gemini, opencode

    For more information, try '--help'.
    ");
}

/// Gemini's `AfterTool` of the facet tool records a narrowing the server made, and the
/// new binding goes back to the model as `AfterTool` context; an `add` that got there
/// is not recorded (nobody could approve it).
#[test]
fn gemini_after_tool_records_a_narrowing_and_never_an_unasked_grant() {
    let tree = Tree::new();
    let room = tree.room();
    let other = tree.path("project/src/other");
    let hook = |event: serde_json::Value| {
        run_facet(
            &[
                "hook",
                "--dialect",
                "gemini",
                "--facet-tool",
                "mcp_facet_facet",
            ],
            &serde_json::to_vec(&event).unwrap(),
            &tree.state(),
            &room,
        )
    };
    let after = |input: serde_json::Value| {
        let mut event =
            support::gemini_event("after", &room, "AfterTool", "mcp_facet_facet", input);
        event["tool_response"] = json!({"llmContent": "ok", "returnDisplay": "ok"});
        event
    };
    hook(support::gemini_event(
        "after",
        &room,
        "SessionStart",
        "",
        json!({}),
    ));
    let grant = tree.panel(&["grant", &other.display().to_string(), "--session", "after"]);
    assert_eq!(grant.code, 0, "{}", grant.stderr);

    let added = hook(after(json!({"action": "add", "paths": ["../../shared"]})));
    let (event, context) = added.context().unwrap();
    assert_eq!(event, "AfterTool");
    assert!(
        context.starts_with("The grant was not recorded"),
        "{context}"
    );

    let removed = hook(after(
        json!({"action": "remove", "paths": [other.display().to_string()]}),
    ));
    let (event, context) = removed.context().unwrap();
    assert_eq!(event, "AfterTool");
    assert!(!context.contains("granted outside it"), "{context}");
    let status = tree.panel(&["status", "--session", "after", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(value["binding"]["granted"], json!([]), "{value}");
}

/// Every (tool, path argument) of GitHub Copilot CLI 1.0.102's table.
const COPILOT_PATH_ARGUMENTS: &[(&str, &str)] = &[
    ("view", "path"),
    ("create", "path"),
    ("edit", "path"),
    ("grep", "paths"),
    ("rg", "paths"),
    ("glob", "paths"),
];

/// How a Copilot call names `raw`: each argument as the string, as a one-item list
/// and after an inside path in a list (`paths`); a patch naming it in each header.
fn copilot_calls(tool: &str, argument: &str, raw: &str) -> Vec<serde_json::Value> {
    let mut calls = vec![json!({ argument: raw })];
    if argument == "paths" {
        calls.push(json!({ argument: [raw] }));
        calls.push(json!({ argument: ["inside.txt", raw] }));
    }
    if tool == "glob" {
        for call in &mut calls {
            call["pattern"] = json!("*.txt");
        }
    }
    calls
}

fn copilot_hook(
    tree: &Tree,
    current_dir: &Path,
    event: &serde_json::Value,
    env: &[(&str, &str)],
) -> Run {
    let env: Vec<(&str, &std::ffi::OsStr)> = env
        .iter()
        .map(|(name, value)| (*name, std::ffi::OsStr::new(*value)))
        .collect();
    support::run_facet_with(
        &["hook", "--dialect", "copilot"],
        &serde_json::to_vec(event).unwrap(),
        &tree.state(),
        current_dir,
        &env,
    )
}

/// The Claude Code and Codex corpus through Copilot's envelope and answer: every
/// case for every path argument of Copilot's tools (string and list forms), and for
/// every header of an `apply_patch` body. The session runs in a sub-folder of a
/// repository (`project/src/room`), the scoping Copilot's own hooks cannot do
/// (github/copilot-cli#3579): a file elsewhere in the same repository is outside.
#[test]
fn every_case_for_every_path_argument_of_copilots_table() {
    let tree = Tree::new();
    build_links(&tree);
    let room = tree.room();
    let guard_dir = tree.path("project/src/other");
    let mut failures = Vec::new();
    let mut judged = 0;
    let mut check = |what: String, run: Run, expect: Expect, raw: &str| {
        judged += 1;
        if run.code != 0 {
            failures.push(format!("{what}: exit {} ({})", run.code, run.stderr));
            return;
        }
        match (expect, run.copilot_decision()) {
            (Expect::Inside, None) => {}
            (Expect::Outside, Some((decision, reason))) => {
                let expected = outside_reason(&room, &named(&tree, raw), &room, "outside");
                if decision != "ask" || reason != expected {
                    failures.push(format!("{what}: got {decision}: {reason}"));
                }
            }
            (expect, got) => failures.push(format!("{what}: expected {expect:?}, got {got:?}")),
        }
    };
    for (tool, argument) in COPILOT_PATH_ARGUMENTS {
        for (raw, expect) in cases(&tree) {
            for args in copilot_calls(tool, argument, &raw) {
                let event = copilot_pre_tool_use("copilot-table", &room, tool, args.clone());
                let run = copilot_hook(&tree, &guard_dir, &event, &[]);
                check(format!("{tool} {args}"), run, expect, &raw);
            }
        }
    }
    for header in ["Add File", "Update File", "Delete File"] {
        for (raw, expect) in cases(&tree) {
            // Copilot joins a patch path to its folder lexically, as Codex does (seen
            // live: `up/../x` landed beside `up`, not above the link's target), and
            // facet places it the same way: these two read the other way round.
            let expect = match raw.as_str() {
                "up/../file.txt" => Expect::Inside,
                "inner/../../x.rs" => Expect::Outside,
                _ => expect,
            };
            let patch = format!("*** Begin Patch\n*** {header}: {raw}\n+x\n*** End Patch\n");
            let event = copilot_pre_tool_use("copilot-table", &room, "apply_patch", json!(patch));
            let run = copilot_hook(&tree, &guard_dir, &event, &[]);
            check(format!("apply_patch {header}: {raw:?}"), run, expect, &raw);
        }
    }
    let per_raw: usize = COPILOT_PATH_ARGUMENTS
        .iter()
        .map(|(tool, argument)| copilot_calls(tool, argument, "x").len())
        .sum::<usize>()
        + 3;
    assert_eq!(judged, per_raw * cases(&tree).len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn copilot_searches_naming_no_paths_and_climbing_patterns_are_judged() {
    let tree = Tree::new();
    std::fs::create_dir_all(tree.path("project/src/room/sub")).unwrap();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    let hook = |args: serde_json::Value, tool: &str| {
        copilot_hook(
            &tree,
            &elsewhere,
            &copilot_pre_tool_use("copilot-bare", &room, tool, args),
            &[],
        )
    };
    for tool in ["grep", "rg", "glob"] {
        hook(json!({"pattern": "x"}), tool).assert_no_opinion(tool);
        hook(json!({"pattern": "x", "paths": []}), tool).assert_no_opinion(tool);
    }
    assert_eq!(
        tree.panel(&["focus", "sub", "--session", "copilot-bare"])
            .code,
        0
    );
    let sub = tree.path("project/src/room/sub");
    for tool in ["grep", "rg", "glob"] {
        for args in [
            json!({"pattern": "x"}),
            json!({"pattern": "x", "paths": []}),
        ] {
            let (decision, reason) = hook(args, tool)
                .copilot_decision()
                .unwrap_or_else(|| panic!("{tool}: no decision"));
            assert_eq!(decision, "ask", "{tool}");
            assert!(
                reason.contains(&format!(
                    "so it would cover this session's directory {} — and this session's facet is {}.",
                    room.display(),
                    sub.display()
                )),
                "{tool}: {reason}"
            );
        }
        hook(json!({"pattern": "x", "paths": "sub"}), tool).assert_no_opinion(tool);
        hook(json!({"pattern": "x", "paths": ["sub", "sub/."]}), tool).assert_no_opinion(tool);
    }
    // A pattern (glob's) or a filter (grep's) that climbs is judged by its prefix,
    // below each listed root.
    for (tool, args, judged) in [
        ("glob", json!({"pattern": "../*"}), ".."),
        ("glob", json!({"pattern": "/etc/*"}), "/etc"),
        (
            "glob",
            json!({"pattern": "../x/*", "paths": ["sub", "sub/."]}),
            "sub/../x",
        ),
        (
            "grep",
            json!({"pattern": "x", "paths": "sub", "glob": "../../*"}),
            "sub/../..",
        ),
        ("rg", json!({"pattern": "x", "glob": "/etc/*"}), "/etc"),
    ] {
        // `sub/..` is the session directory: outside the focus on `sub`.
        let run = hook(args.clone(), tool);
        let (decision, reason) = run
            .copilot_decision()
            .unwrap_or_else(|| panic!("{tool} {args}: no decision"));
        assert_eq!(decision, "ask", "{tool} {args}");
        assert!(
            reason.starts_with(&format!("{judged} is outside")),
            "{tool} {args}: {reason}"
        );
    }
    // A list holding anything but strings is judged as the widest root, `/` — which
    // holds facet's own state, so the search is refused outright.
    let (decision, reason) = hook(json!({"pattern": "x", "paths": ["sub", 7]}), "grep")
        .copilot_decision()
        .unwrap();
    assert_eq!(decision, "deny");
    assert!(reason.starts_with("This search would cover /,"), "{reason}");
}

/// Copilot sends `toolArgs` as an object, or as text: JSON text is the object it
/// holds; other text for a tool whose arguments must be read is refused, never let
/// through as a call naming no path.
#[test]
fn copilot_tool_args_as_text_are_read_or_refused() {
    let tree = Tree::new();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    let as_text = json!(json!({"path": "/etc/passwd"}).to_string());
    let run = copilot_hook(
        &tree,
        &elsewhere,
        &copilot_pre_tool_use("copilot-text", &room, "view", as_text),
        &[],
    );
    let (decision, reason) = run.copilot_decision().unwrap();
    assert_eq!(decision, "ask");
    assert_eq!(
        reason,
        outside_reason(&room, "/etc/passwd", &room, "outside")
    );

    let run = copilot_hook(
        &tree,
        &elsewhere,
        &copilot_pre_tool_use("copilot-text", &room, "view", json!("/etc/passwd")),
        &[],
    );
    let (decision, reason) = run.copilot_decision().unwrap();
    assert_eq!(decision, "ask");
    assert!(
        reason.contains("could not read this call's arguments"),
        "{reason}"
    );

    // Tools no table names, text or not: no opinion.
    for (tool, args) in [
        ("bash", json!({"command": "cat /etc/passwd"})),
        ("sql", json!("select 1")),
        ("Read", json!({"file_path": "/etc/passwd"})),
    ] {
        copilot_hook(
            &tree,
            &elsewhere,
            &copilot_pre_tool_use("copilot-text", &room, tool, args),
            &[],
        )
        .assert_no_opinion(tool);
    }
}

/// Headless Copilot (`-p`) refuses an `ask` itself, with its own words: run there
/// with `FACET_NO_APPROVAL=1`, the hook refuses and names the panel command that
/// widens the session. A value other than 1/true/0/false is a usage error (exit 2,
/// which Copilot answers by refusing the call): a typo never turns approval back on.
#[test]
fn copilot_without_an_approval_channel_refuses_naming_the_panel() {
    let tree = Tree::new();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    let event = copilot_pre_tool_use(
        "copilot-headless",
        &room,
        "view",
        json!({"path": tree.path("outside/file.txt")}),
    );
    for value in ["1", "true"] {
        let run = copilot_hook(&tree, &elsewhere, &event, &[("FACET_NO_APPROVAL", value)]);
        let (decision, reason) = run.copilot_decision().unwrap();
        assert_eq!(decision, "deny", "{value}");
        assert!(
            reason.contains(&format!(
                "Ask the user to run `facet grant {} --session copilot-headless` in a terminal",
                tree.path("outside/file.txt").display()
            )),
            "{reason}"
        );
    }
    for value in ["0", "false"] {
        let run = copilot_hook(&tree, &elsewhere, &event, &[("FACET_NO_APPROVAL", value)]);
        assert_eq!(run.copilot_decision().unwrap().0, "ask", "{value}");
    }
    for value in ["yes", "", "TRUE", "2"] {
        let run = copilot_hook(&tree, &elsewhere, &event, &[("FACET_NO_APPROVAL", value)]);
        assert_eq!(run.code, 2, "{value:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{value:?}: {}", run.stdout);
        assert!(
            run.stderr.contains("FACET_NO_APPROVAL must be 1 or true"),
            "{}",
            run.stderr
        );
    }
}

/// Copilot's Claude-style hook entries (`PreToolUse`) send Claude's envelope with
/// Claude's tool names over Copilot's arguments: `view` arrives as `Read` with
/// `path`, not `file_path`. Pinned here, both ways: the claude-code dialect reads
/// no path in it and lets the read through (docs/hosts.md warns: do not register
/// facet under that form); the copilot dialect refuses the form outright.
#[test]
fn copilots_claude_style_envelope_passes_the_claude_dialect_and_is_refused_by_copilots() {
    let tree = Tree::new();
    let room = tree.room();
    let secret = tree.path("outside/file.txt");
    // As Copilot 1.0.102 sent it for `view` under a `PreToolUse` entry.
    let event = json!({
        "hook_event_name": "PreToolUse",
        "session_id": "claude-form",
        "timestamp": "2026-12-07T01:14:33.857Z",
        "cwd": room,
        "tool_name": "Read",
        "tool_input": {"path": secret},
    });
    tree.hook(&[], &event)
        .assert_no_opinion("the claude-code dialect reads no `file_path` in Copilot's `Read`");
    let run = tree.hook(&["--dialect", "copilot"], &event);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (decision, reason) = run.copilot_decision().unwrap();
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("Copilot's Claude-style `PreToolUse` form"),
        "{reason}"
    );
}

/// github/copilot-cli#3579: Copilot's repository hooks cannot be scoped to a
/// sub-folder of a monorepo — they apply to the whole repository. facet scopes a
/// Copilot session started in `project/src/room` to that folder: a file elsewhere in
/// the same repository is outside, one in the folder is not, and a search of the
/// repository's top level is outside too.
#[test]
fn copilot_cli_3579_a_session_in_a_repository_sub_folder_is_scoped_to_it() {
    let tree = Tree::new();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    let sibling = tree.path("project/src/other/secret.txt");
    let hook = |tool: &str, args: serde_json::Value| {
        copilot_hook(
            &tree,
            &elsewhere,
            &copilot_pre_tool_use("monorepo", &room, tool, args),
            &[],
        )
    };
    let (decision, reason) = hook("view", json!({"path": sibling}))
        .copilot_decision()
        .expect("a file elsewhere in the repository is judged");
    assert_eq!(decision, "ask");
    assert_eq!(
        reason,
        outside_reason(&room, &sibling.display().to_string(), &room, "outside")
    );
    hook("view", json!({"path": room.join("inside.txt")})).assert_no_opinion("inside");
    let (decision, _) = hook(
        "grep",
        json!({"pattern": "x", "paths": tree.path("project")}),
    )
    .copilot_decision()
    .expect("a search of the repository's top level is judged");
    assert_eq!(decision, "ask");
}

/// Copilot names the `facet` tool of the MCP server `facet` `facet-facet`: the copilot
/// dialect knows it without `--facet-tool`, so a widening through it is put to the
/// user (never let through as an unknown tool), and refused without a channel.
#[test]
fn copilots_facet_tool_is_known_without_the_flag() {
    let tree = Tree::new();
    let room = tree.room();
    let elsewhere = tree.path("elsewhere");
    let add = copilot_pre_tool_use(
        "copilot-add",
        &room,
        "facet-facet",
        json!({"action": "add", "paths": ["../../shared"]}),
    );
    let (decision, reason) = copilot_hook(&tree, &elsewhere, &add, &[])
        .copilot_decision()
        .expect("the widening is judged");
    assert_eq!(decision, "ask");
    assert!(reason.starts_with("Grant "), "{reason}");
    let (decision, _) = copilot_hook(&tree, &elsewhere, &add, &[("FACET_NO_APPROVAL", "1")])
        .copilot_decision()
        .unwrap();
    assert_eq!(decision, "deny");
}

/// Every (tool, path argument) of OpenCode's table (opencode-ai 1.18.33).
const OPENCODE_PATH_ARGUMENTS: &[(&str, &str)] = &[
    ("read", "filePath"),
    ("write", "filePath"),
    ("edit", "filePath"),
    ("lsp", "filePath"),
    ("grep", "path"),
    ("glob", "path"),
];

/// The start of the refusal where nobody can be asked (OpenCode's plugin can only
/// throw), written out independently of facet-core; the grant command follows.
fn refused_lead(raw_shown: &str, root: &Path) -> String {
    format!(
        "{raw_shown} is refused — this session's facet is {}, and this session has no approval channel, so nobody can be asked to grant it here. Ask the user to run `facet grant ",
        root.display()
    )
}

fn opencode_hook(tree: &Tree, current_dir: &Path, event: &serde_json::Value) -> Run {
    run_facet(
        &["hook", "--dialect", "opencode"],
        &serde_json::to_vec(event).unwrap(),
        &tree.state(),
        current_dir,
    )
}

#[test]
fn every_case_for_every_path_argument_of_the_opencode_table() {
    let tree = Tree::new();
    build_links(&tree);
    let room = tree.room();
    let worktree = tree.path("project");
    let guard_dir = tree.path("project/src/other");
    let mut failures = Vec::new();
    for (tool, argument) in OPENCODE_PATH_ARGUMENTS {
        for (raw, expect) in cases(&tree) {
            // OpenCode joins a relative path to its directory lexically
            // (`path.join`), so `inner/../../x.rs` opens `project/src/x.rs` although
            // the kernel's reading (through the link `inner`) stays inside.
            let expect = if raw == "inner/../../x.rs" {
                Expect::Outside
            } else {
                expect
            };
            let event = opencode_tool_call("oc", &room, &worktree, tool, json!({ *argument: raw }));
            let run = opencode_hook(&tree, &guard_dir, &event);
            let what = format!("{tool} {argument}={raw:?}");
            if run.code != 0 {
                failures.push(format!("{what}: exit {} ({})", run.code, run.stderr));
                continue;
            }
            match (expect, run.opencode_refusal()) {
                (Expect::Inside, None) => {}
                (Expect::Outside, Some(reason)) => {
                    let lead = refused_lead(&named(&tree, &raw), &room);
                    if !reason.starts_with(&lead)
                        || !reason
                            .ends_with("--session oc` in a terminal, or work within the facet.")
                    {
                        failures.push(format!("{what}: got {reason}"));
                    }
                }
                (expect, got) => failures.push(format!("{what}: expected {expect:?}, got {got:?}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The security finding: OpenCode opens `inner/../../x.rs` as `path.join(directory,
/// …)` does, lexically, so judging only the kernel's reading let a read of a file
/// outside the facet through. Both readings are judged; either leaving refuses.
#[test]
fn a_climb_through_a_link_is_judged_as_opencode_opens_it() {
    let tree = Tree::new();
    build_links(&tree);
    std::fs::write(tree.path("project/src/x.rs"), "outside the facet").unwrap();
    let room = tree.room();
    let event = opencode_tool_call(
        "climb",
        &room,
        &tree.path("project"),
        "read",
        json!({"filePath": "inner/../../x.rs"}),
    );
    let reason = opencode_hook(&tree, &tree.path("elsewhere"), &event)
        .opencode_refusal()
        .expect("refused");
    assert!(
        reason.starts_with(&refused_lead("inner/../../x.rs", &room)),
        "{reason}"
    );
    // The same path in a Claude Code session: the kernel's reading is what Claude
    // Code's Read opens, and it is inside.
    tree.hook(
        &[],
        &pre_tool_use(
            "climb-cc",
            &room,
            "Read",
            json!({"file_path": "inner/../../x.rs"}),
        ),
    )
    .assert_no_opinion("Claude Code's Read of inner/../../x.rs");
}

/// anomalyco/opencode#7758: OpenCode's own `external_directory` check is made against
/// the folder it runs in, not the worktree, and it sends `worktree: "/"` outside git.
/// facet decides on the session's facet and its grants alone: `worktree` widens
/// nothing, and a sibling folder of the worktree becomes reachable by a grant from
/// the panel — the person's decision, not OpenCode's folder.
#[test]
fn opencode_7758_the_worktree_widens_nothing_and_a_grant_does() {
    let tree = Tree::new();
    std::fs::write(tree.path("project/src/other/secret.txt"), "x").unwrap();
    let room = tree.room();
    let sibling = tree
        .path("project/src/other/secret.txt")
        .display()
        .to_string();
    for worktree in [tree.path("project"), "/".into()] {
        let event =
            opencode_tool_call("wt", &room, &worktree, "read", json!({"filePath": sibling}));
        let reason = opencode_hook(&tree, &tree.path("elsewhere"), &event)
            .opencode_refusal()
            .unwrap_or_else(|| panic!("worktree {}: not refused", worktree.display()));
        assert!(
            reason.starts_with(&refused_lead(&sibling, &room)),
            "{reason}"
        );
    }
    let grant = tree.panel(&["grant", "../other", "--session", "wt"]);
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let event = opencode_tool_call(
        "wt",
        &room,
        &tree.path("project"),
        "read",
        json!({"filePath": sibling}),
    );
    opencode_hook(&tree, &tree.path("elsewhere"), &event).assert_no_opinion("granted sibling");
}

#[test]
fn opencode_searches_patches_and_unknown_tools() {
    let tree = Tree::new();
    let room = tree.room();
    let worktree = tree.path("project");
    let elsewhere = tree.path("elsewhere");
    let judge = |tool: &str, args: serde_json::Value| {
        opencode_hook(
            &tree,
            &elsewhere,
            &opencode_tool_call("s", &room, &worktree, tool, args),
        )
    };
    // A bare search stays in the session directory; a climbing pattern does not.
    judge("grep", json!({"pattern": "fn"})).assert_no_opinion("bare grep");
    judge("glob", json!({"pattern": "**/*.rs"})).assert_no_opinion("bare glob");
    for (tool, args) in [
        ("glob", json!({"pattern": "../other/*.txt"})),
        ("grep", json!({"pattern": "fn", "include": "../../*.rs"})),
        ("grep", json!({"pattern": "fn", "path": "/etc"})),
    ] {
        assert!(
            judge(tool, args.clone()).opencode_refusal().is_some(),
            "{tool} {args}"
        );
    }
    // `apply_patch` (GPT models): the paths in `patchText`, joined lexically.
    let patch = |path: &str| json!({"patchText": format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch")});
    judge("apply_patch", patch("new.txt")).assert_no_opinion("patch inside");
    let reason = judge("apply_patch", patch("../other/new.txt"))
        .opencode_refusal()
        .expect("patch outside refused");
    assert!(
        reason.starts_with(&refused_lead("../other/new.txt", &room)),
        "{reason}"
    );
    let reason = judge("apply_patch", json!({"patchText": 7}))
        .opencode_refusal()
        .expect("unreadable patch refused");
    assert!(reason.contains("`patchText` is not text"), "{reason}");
    // Names the table does not hold: no opinion (DeepSeek Harness's `file_path` is
    // not OpenCode's argument, and the shell is not judged).
    judge("bash", json!({"command": "cat /etc/passwd"})).assert_no_opinion("bash");
    judge("webfetch", json!({"url": "file:///etc/passwd"})).assert_no_opinion("webfetch");
    judge("read_image", json!({"file_path": "/etc/passwd"})).assert_no_opinion("read_image");
    // A widening through the facet MCP tool (`facet_facet` in OpenCode) is refused:
    // nobody can approve it from a plugin.
    let run = run_facet(
        &[
            "hook",
            "--dialect",
            "opencode",
            "--facet-tool",
            "facet_facet",
        ],
        &serde_json::to_vec(&opencode_tool_call(
            "s",
            &room,
            &worktree,
            "facet_facet",
            json!({"action": "add", "paths": ["../other"]}),
        ))
        .unwrap(),
        &tree.state(),
        &elsewhere,
    );
    let reason = run.opencode_refusal().expect("widening refused");
    assert!(
        reason.starts_with(
            "`facet action=add` cannot be granted here — this session has no approval channel"
        ),
        "{reason}"
    );
}
