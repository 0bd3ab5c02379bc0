//! Issue 21, finding 6: no escape through Codex's patch forms. Codex applies a patch
//! sent through its shell only as `apply_patch <<'EOF' … EOF` or `cd DIR &&
//! apply_patch <<'EOF' … EOF`, joining `DIR` and then each patch path to its working
//! directory lexically. Through the real `facet hook --dialect codex` binary with
//! Codex's hook envelope: the paths are judged where Codex writes them, and every
//! other way of running `apply_patch` from a shell is refused, never let through.
use crate::support;

use serde_json::{Value, json};
use support::Tree;

const CODEX: [&str; 2] = ["--dialect", "codex"];

/// A Codex PreToolUse envelope, as Codex 0.171 builds it (see codex_live.rs).
fn codex_event(cwd: &std::path::Path, tool: &str, input: Value) -> Value {
    json!({
        "session_id": "codex-forms",
        "turn_id": "turn-1",
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "model": "gpt-5-codex",
        "permission_mode": "bypassPermissions",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "call-1",
    })
}

fn heredoc(prefix: &str, header: &str) -> String {
    format!("{prefix}apply_patch <<'EOF'\n*** Begin Patch\n*** {header}\n+x\n*** End Patch\nEOF\n")
}

/// `(decision, reason)` for a `Bash` call running `command`, or `None` (no opinion).
fn shell(tree: &Tree, command: &str) -> Option<(String, String)> {
    let run = tree.hook(
        &CODEX,
        &codex_event(&tree.room(), "Bash", json!({ "command": command })),
    );
    assert_eq!(run.code, 0, "{command}: {}", run.stderr);
    run.decision()
}

fn refused(tree: &Tree, command: &str) -> String {
    let (decision, reason) =
        shell(tree, command).unwrap_or_else(|| panic!("let through: {command}"));
    assert_eq!(decision, "deny", "{command}");
    reason
}

#[test]
fn cd_dir_and_apply_patch_is_judged_in_dir() {
    let tree = Tree::new();
    let room = tree.room();
    let facet = format!(
        "this session's facet is {}, and this session has no approval channel",
        room.display()
    );

    // `cd ..` then a path that reads as inside the facet: Codex writes one folder up.
    let reason = refused(&tree, &heredoc("cd .. && ", "Add File: other/evil.txt"));
    let target = tree.path("project/src/other/evil.txt");
    assert!(
        reason.starts_with(&format!(
            "other/evil.txt → {} is refused — {facet}",
            target.display()
        )),
        "{reason}"
    );
    // An absolute folder, an unquoted delimiter, `applypatch`.
    let outside = tree.path("outside");
    let command = format!(
        "cd {} && applypatch <<EOF\n*** Begin Patch\n*** Add File: evil.txt\n+x\n*** End Patch\nEOF",
        outside.display()
    );
    let reason = refused(&tree, &command);
    assert!(
        reason.contains(&format!("{}/evil.txt is refused", outside.display())),
        "{reason}"
    );
    // Quoted folders, as Codex's parser takes them.
    refused(&tree, &heredoc("cd '..' && ", "Add File: other/evil.txt"));
    refused(
        &tree,
        &heredoc("cd \"..\" && ", "Update File: other/secret.txt"),
    );
    // A `cd` into the facet's own subfolder, or up and back in: no opinion.
    for command in [
        heredoc("cd sub && ", "Add File: new.txt"),
        heredoc("cd .. && ", "Add File: room/new.txt"),
        heredoc("", "Add File: new.txt"),
    ] {
        assert_eq!(shell(&tree, &command), None, "{command}");
    }
}

/// Codex joins a patch path lexically: `inner/../../x.rs` is `x.rs` two folders up
/// from the facet, whatever `inner` links to (here a folder inside the facet, which
/// the kernel's reading would put back inside).
#[test]
fn patch_paths_are_joined_lexically_as_codex_joins_them() {
    let tree = Tree::new();
    std::fs::create_dir_all(tree.path("project/src/room/a/b")).unwrap();
    tree.symlink(tree.path("project/src/room/a/b"), "project/src/room/inner");
    for tool in ["apply_patch", "Bash"] {
        let body = "*** Begin Patch\n*** Add File: inner/../../x.rs\n+x\n*** End Patch\n";
        let command = if tool == "Bash" {
            format!("apply_patch <<'EOF'\n{body}EOF")
        } else {
            body.to_owned()
        };
        let run = tree.hook(
            &CODEX,
            &codex_event(&tree.room(), tool, json!({ "command": command })),
        );
        let (decision, reason) = run
            .decision()
            .unwrap_or_else(|| panic!("{tool}: let through"));
        assert_eq!(decision, "deny");
        // Read lexically, as a person reads it, the path says where it goes: no
        // target is added.
        assert!(
            reason.starts_with("inner/../../x.rs is refused"),
            "{reason}"
        );
    }
}

#[test]
fn apply_patch_in_a_form_codex_does_not_apply_itself_is_refused() {
    let tree = Tree::new();
    let sentence = "facet cannot tell which folder this `apply_patch` would write in";
    for command in [
        // Two `cd`s: the shell, not Codex, applies it — wherever the shell is.
        heredoc("cd .. && cd other && ", "Add File: x.txt"),
        heredoc("cd sub && cd deeper && ", "Add File: x.txt"),
        heredoc("cd ..; ", "Add File: other/x.txt"),
        heredoc("pushd .. && ", "Add File: other/x.txt"),
        heredoc("FOO=1 ", "Add File: x.txt"),
        format!("{} && echo done", heredoc("", "Add File: x.txt").trim_end()),
        "cd .. && apply_patch < other/p.diff".to_owned(),
        "cat p.diff | /tmp/bin/apply_patch".to_owned(),
        "echo '*** Begin Patch\n*** Add File: ../x\n+x\n*** End Patch' | applypatch".to_owned(),
        "bash -lc \"apply_patch < p.diff\"".to_owned(),
        // A `cd` folder Codex's parser would not take as one word.
        heredoc("cd $HOME && ", "Add File: x.txt"),
        heredoc("cd ../* && ", "Add File: x.txt"),
        // An unterminated heredoc.
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch\n".to_owned(),
    ] {
        let reason = refused(&tree, &command);
        assert!(reason.starts_with(sentence), "{command}: {reason}");
        assert!(reason.contains("cd DIR && apply_patch"), "{reason}");
    }
    // Shell commands that only mention it, or do something else: not judged.
    for command in [
        "grep -rn apply_patch src",
        "rg 'apply_patch <<' docs",
        "cat /etc/passwd",
        "cd .. && ls",
    ] {
        assert_eq!(shell(&tree, command), None, "{command}");
    }
}

#[test]
fn a_workdir_when_sent_places_the_patch_and_an_unreadable_one_is_refused() {
    let tree = Tree::new();
    let event = |workdir: Value, header: &str| {
        codex_event(
            &tree.room(),
            "Bash",
            json!({"command": heredoc("", header), "workdir": workdir}),
        )
    };
    let (decision, reason) = tree
        .hook(&CODEX, &event(json!(".."), "Add File: other/x.txt"))
        .decision()
        .expect("a workdir outside the facet is judged");
    assert_eq!(decision, "deny");
    assert!(reason.starts_with("other/x.txt → "), "{reason}");
    // A workdir and a `cd`: both joined, in that order.
    let command = heredoc("cd ../other && ", "Add File: x.txt");
    let run = tree.hook(
        &CODEX,
        &codex_event(
            &tree.room(),
            "Bash",
            json!({"command": command, "workdir": "sub"}),
        ),
    );
    assert_eq!(
        run.decision(),
        None,
        "room/sub/../other is room/other: inside"
    );
    tree.hook(&CODEX, &event(json!("sub"), "Add File: x.txt"))
        .assert_no_opinion("a workdir inside the facet");
    tree.hook(&CODEX, &event(json!(""), "Add File: x.txt"))
        .assert_no_opinion("an empty workdir is the session's folder, as in Codex");
    let (decision, reason) = tree
        .hook(&CODEX, &event(Value::Null, "Add File: x.txt"))
        .decision()
        .expect("a shell whose folder is unknown");
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("working directory was not sent"),
        "{reason}"
    );
}

#[test]
fn a_patch_naming_another_environment_or_not_text_is_refused() {
    let tree = Tree::new();
    let body =
        "*** Begin Patch\n*** Environment ID: remote\n*** Add File: x.txt\n+x\n*** End Patch\n";
    for (tool, input) in [
        ("apply_patch", json!({ "command": body })),
        (
            "Bash",
            json!({ "command": format!("apply_patch <<'EOF'\n{body}EOF") }),
        ),
        ("apply_patch", json!({ "command": ["not", "text"] })),
    ] {
        let (decision, reason) = tree
            .hook(&CODEX, &codex_event(&tree.room(), tool, input.clone()))
            .decision()
            .unwrap_or_else(|| panic!("let through: {input}"));
        assert_eq!(decision, "deny", "{input}");
        assert!(reason.starts_with("facet c"), "{reason}");
    }
}

#[test]
fn off_unscoped_and_claude_code_are_unchanged() {
    let tree = Tree::new();
    let escape = heredoc("cd .. && cd other && ", "Add File: x.txt");
    // Claude Code's shell is not judged at all.
    tree.hook(
        &[],
        &codex_event(&tree.room(), "Bash", json!({ "command": escape })),
    )
    .assert_no_opinion("Claude Code's Bash");
    // A session at the project's top level has no facet to leave.
    tree.hook(
        &CODEX,
        &codex_event(&tree.path("project"), "Bash", json!({ "command": escape })),
    )
    .assert_no_opinion("an unscoped session");
}
