//! Every case of `shared/spec/facet.md`, as real trees in a temp folder, through the
//! real `facet hook` binary, for every path-carrying argument of every tool in the
//! tables (DeepSeek Harness and Claude Code; OpenCode's through its own dialect).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use serde_json::json;
use support::{Run, Tree, opencode_tool_call, pre_tool_use, run_facet};

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

#[test]
fn an_unknown_dialect_is_a_usage_error_listing_every_dialect() {
    let tree = Tree::new();
    let run = run_facet(
        &["hook", "--dialect", "opencodee"],
        b"{}",
        &tree.state(),
        &tree.path("elsewhere"),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "unknown dialect `opencodee`: use claude-code (also claude, dsh), codex, opencode"
        ),
        "{}",
        run.stderr
    );
}
