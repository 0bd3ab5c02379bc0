//! Snapshots of what a user and a model see: every hook answer shape and sentence,
//! the panel's text, and the stderr of an unreadable event. The temp folder is
//! shown as `[TMP]`.
use crate::support;

use serde_json::{Value, json};
use support::{
    Run, Tree, copilot_post_tool_use, copilot_pre_tool_use, copilot_session_start, post_tool_use,
    pre_tool_use, session_event,
};

fn shown(tree: &Tree, run: &Run) -> String {
    let stdout = match run.json() {
        Some(value) => serde_json::to_string_pretty(&value).unwrap(),
        None => "(no output)".to_owned(),
    };
    let mut text = format!("exit {}\n{}", run.code, tree.redact(&stdout));
    if !run.stderr.is_empty() {
        text.push_str(&format!("\nstderr: {}", tree.redact(run.stderr.trim_end())));
    }
    text
}

fn bypass(mut event: Value) -> Value {
    event["permission_mode"] = json!("bypassPermissions");
    event
}

#[test]
fn hook_answers() {
    let tree = Tree::new();
    std::fs::create_dir_all(tree.path("project/src/room/sub")).unwrap();
    let room = tree.room();
    let tool = "mcp__facet__facet";
    let add = json!({"action": "add", "paths": ["../../shared"]});

    insta::assert_snapshot!(
        "session_start",
        shown(
            &tree,
            &tree.hook(&[], &session_event("snap", &room, "SessionStart"))
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_outside_ask",
        shown(
            &tree,
            &tree.hook(
                &[],
                &pre_tool_use(
                    "snap",
                    &room,
                    "Read",
                    json!({"file_path": "../other/secret.txt"})
                )
            )
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_absolute_under_cwd_is_shown_relative",
        shown(
            &tree,
            &tree.hook(
                &[],
                &pre_tool_use(
                    "snap",
                    &room.join("sub"),
                    "Read",
                    json!({"file_path": room.join("sub/../../other/x")})
                )
            )
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_inside_no_opinion",
        shown(
            &tree,
            &tree.hook(
                &[],
                &pre_tool_use("snap", &room, "Write", json!({"file_path": "inside.txt"}))
            )
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_widen_ask",
        shown(
            &tree,
            &tree.hook(&[], &pre_tool_use("snap", &room, tool, add.clone()))
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_bypass_deny",
        shown(
            &tree,
            &tree.hook(
                &[],
                &bypass(pre_tool_use(
                    "snap",
                    &room,
                    "Read",
                    json!({"file_path": "/etc/passwd"})
                ))
            )
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_bypass_widen_deny",
        shown(
            &tree,
            &tree.hook(&[], &bypass(pre_tool_use("snap", &room, tool, add.clone())))
        )
    );
    insta::assert_snapshot!(
        "post_tool_use_grant",
        shown(
            &tree,
            &tree.hook(&[], &post_tool_use("snap", &room, tool, add, json!({})))
        )
    );
    insta::assert_snapshot!(
        "user_prompt_submit_unchanged",
        shown(
            &tree,
            &tree.hook(&[], &session_event("snap", &room, "UserPromptSubmit"))
        )
    );
    let focus = tree.panel(&["focus", "sub", "--session", "snap"]);
    insta::assert_snapshot!("panel_focus", tree.redact(&focus.stdout));
    insta::assert_snapshot!(
        "user_prompt_submit_changed",
        shown(
            &tree,
            &tree.hook(&[], &session_event("snap", &room, "UserPromptSubmit"))
        )
    );
    insta::assert_snapshot!(
        "pre_tool_use_implicit_search",
        shown(
            &tree,
            &tree.hook(
                &[],
                &pre_tool_use("snap", &room, "Grep", json!({"pattern": "fn main"}))
            )
        )
    );
    let mode = tree.panel(&["mode", "deny", "--session", "snap"]);
    insta::assert_snapshot!("panel_mode", tree.redact(&mode.stdout));
    insta::assert_snapshot!(
        "pre_tool_use_mode_deny",
        shown(
            &tree,
            &tree.hook(
                &[],
                &pre_tool_use(
                    "snap",
                    &room,
                    "edit",
                    json!({"file_path": "../other/secret.txt"})
                )
            )
        )
    );
    insta::assert_snapshot!(
        "codex_apply_patch_deny",
        shown(
            &tree,
            &tree.hook(
                &["--dialect", "codex"],
                &json!({
                    "session_id": "codex", "turn_id": "t", "transcript_path": null, "cwd": room,
                    "hook_event_name": "PreToolUse", "model": "gpt-5-codex", "permission_mode": "default",
                    "tool_name": "apply_patch", "tool_use_id": "call",
                    "tool_input": {"command": "*** Begin Patch\n*** Add File: ../../shared/new.rs\n+x\n*** End Patch\n"}
                })
            )
        )
    );
    insta::assert_snapshot!(
        "opencode_read_refused",
        shown(
            &tree,
            &tree.hook(
                &["--dialect", "opencode"],
                &support::opencode_tool_call(
                    "ses_snap",
                    &room,
                    &tree.path("project"),
                    "read",
                    json!({"filePath": "../other/secret.txt"})
                )
            )
        )
    );
    insta::assert_snapshot!(
        "unreadable_envelope",
        shown(
            &tree,
            &support::run_facet(
                &["hook"],
                b"{\"session_id\": 1}",
                &tree.state(),
                &tree.path("elsewhere")
            )
        )
    );
    let status = tree.panel(&["status", "--session", "snap"]);
    insta::assert_snapshot!("panel_status", tree.redact(&status.stdout));
    let status_json = tree.panel(&["status", "--session", "snap", "--json"]);
    insta::assert_snapshot!("panel_status_json", tree.redact(&status_json.stdout));
}

/// What GitHub Copilot CLI and its model see (`--dialect copilot`): Copilot's answer
/// shape, the refusals only this dialect has, and the usage errors that make Copilot
/// refuse the call (exit 2).
#[test]
fn copilot_answers() {
    let tree = Tree::new();
    let room = tree.room();
    let copilot = |event: &Value, env: &[(&str, &str)]| {
        let env: Vec<(&str, &std::ffi::OsStr)> = env
            .iter()
            .map(|(name, value)| (*name, std::ffi::OsStr::new(*value)))
            .collect();
        support::run_facet_with(
            &[
                "hook",
                "--dialect",
                "copilot",
                "--facet-tool",
                "facet-facet",
            ],
            &serde_json::to_vec(event).unwrap(),
            &tree.state(),
            &tree.path("elsewhere"),
            &env,
        )
    };
    insta::assert_snapshot!(
        "copilot_session_start",
        shown(
            &tree,
            &copilot(&copilot_session_start("snap-cp", &room), &[])
        )
    );
    let outside = copilot_pre_tool_use(
        "snap-cp",
        &room,
        "view",
        json!({"path": "../other/secret.txt"}),
    );
    insta::assert_snapshot!(
        "copilot_pre_tool_use_outside_ask",
        shown(&tree, &copilot(&outside, &[]))
    );
    insta::assert_snapshot!(
        "copilot_pre_tool_use_outside_no_approval",
        shown(&tree, &copilot(&outside, &[("FACET_NO_APPROVAL", "1")]))
    );
    insta::assert_snapshot!(
        "copilot_pre_tool_use_arguments_not_an_object",
        shown(
            &tree,
            &copilot(
                &copilot_pre_tool_use("snap-cp", &room, "view", json!("../other/secret.txt")),
                &[]
            )
        )
    );
    insta::assert_snapshot!(
        "copilot_apply_patch_not_text",
        shown(
            &tree,
            &copilot(
                &copilot_pre_tool_use("snap-cp", &room, "apply_patch", json!({"patch": 1})),
                &[]
            )
        )
    );
    let claude_form = json!({
        "hook_event_name": "PreToolUse", "session_id": "snap-cp", "cwd": room,
        "tool_name": "Read", "tool_input": {"path": "../other/secret.txt"},
    });
    insta::assert_snapshot!(
        "copilot_claude_style_envelope",
        shown(&tree, &copilot(&claude_form, &[]))
    );
    insta::assert_snapshot!(
        "copilot_post_tool_use_of_the_facet_tool",
        shown(
            &tree,
            &copilot(
                &copilot_post_tool_use(
                    "snap-cp",
                    &room,
                    "facet-facet",
                    json!({"action": "status"}),
                    json!({"resultType": "success", "textResultForLlm": "ok"})
                ),
                &[]
            )
        )
    );
    insta::assert_snapshot!(
        "copilot_no_approval_typo",
        shown(&tree, &copilot(&outside, &[("FACET_NO_APPROVAL", "yes")]))
    );
    insta::assert_snapshot!(
        "unknown_dialect",
        shown(&tree, &tree.hook(&["--dialect", "copliot"], &outside))
    );
}
