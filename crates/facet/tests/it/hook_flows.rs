//! Whole-session flows through the real `facet hook` binary: what the model is
//! told and when, grants recorded on PostToolUse, the approval channel, the Codex
//! dialect, concurrency, and envelopes that cannot be read.
use crate::support;

use serde_json::{Value, json};
use support::{Tree, post_tool_use, pre_tool_use, session_event};

const FACET_TOOL: &str = "mcp__facet__facet";

fn status(tree: &Tree, session: &str) -> Value {
    let run = tree.panel(&["status", "--session", session, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn the_model_is_told_the_rule_at_start_and_the_binding_only_when_it_changed() {
    let tree = Tree::new();
    let room = tree.room();
    let start = tree.hook(&[], &session_event("flow", &room, "SessionStart"));
    let (event, context) = start.context().expect("SessionStart context");
    assert_eq!(event, "SessionStart");
    assert!(context.starts_with("# Facet scope\n"), "{context}");
    assert!(
        context.ends_with(&format!(
            "facet: {}\noutside the facet: put to the user as a question — say in one line what you need and why, then record it with `facet action=add` so the rest of the session does not have to ask again",
            room.display()
        )),
        "{context}"
    );

    // Nothing changed since the session was told: no output.
    tree.hook(&[], &session_event("flow", &room, "UserPromptSubmit"))
        .assert_no_opinion("unchanged binding");

    // The user grants from the panel: the next prompt carries the new binding, once.
    let grant = tree.panel(&["grant", "../../shared", "--session", "flow"]);
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let (event, context) = tree
        .hook(&[], &session_event("flow", &room, "UserPromptSubmit"))
        .context()
        .expect("changed binding is restated");
    assert_eq!(event, "UserPromptSubmit");
    assert!(context.contains("granted outside it: "), "{context}");
    assert!(context.contains(&tree.path("project/shared").display().to_string()));
    tree.hook(&[], &session_event("flow", &room, "UserPromptSubmit"))
        .assert_no_opinion("told once");

    // A change of approval channel changes the binding's last line, so it is restated.
    let mut bypass = session_event("flow", &room, "UserPromptSubmit");
    bypass["permission_mode"] = json!("bypassPermissions");
    let (_, context) = tree.hook(&[], &bypass).context().expect("restated");
    assert!(
        context.contains("this session has no approval channel"),
        "{context}"
    );
}

#[test]
fn an_approved_facet_add_is_recorded_by_the_hook_for_that_session() {
    let tree = Tree::new();
    let room = tree.room();
    let shared = tree.path("project/shared");
    let add = json!({"action": "add", "paths": ["../../shared"]});

    // PreToolUse: the widening is put to the user with the seed's sentence.
    let (decision, reason) = tree
        .hook(&[], &pre_tool_use("grant", &room, FACET_TOOL, add.clone()))
        .decision()
        .unwrap();
    assert_eq!(decision, "ask");
    assert_eq!(
        reason,
        "Grant ../../shared to this session — outside its facet — for the rest of the conversation?"
    );
    // Before approval nothing is granted.
    assert_eq!(status(&tree, "grant")["binding"]["granted"], json!([]));

    // PostToolUse (the user said yes, the tool ran): recorded, canonical, and the
    // new binding goes back to the model.
    let (event, context) = tree
        .hook(
            &[],
            &post_tool_use("grant", &room, FACET_TOOL, add, json!({"isError": false})),
        )
        .context()
        .expect("new binding");
    assert_eq!(event, "PostToolUse");
    assert!(
        context.contains(&format!("granted outside it: {}", shared.display())),
        "{context}"
    );
    assert_eq!(
        status(&tree, "grant")["binding"]["granted"],
        json!([shared.display().to_string()])
    );

    // Now inside the grant: no opinion.
    tree.hook(
        &[],
        &pre_tool_use(
            "grant",
            &room,
            "Read",
            json!({"file_path": "../../shared/types.rs"}),
        ),
    )
    .assert_no_opinion("granted path");

    // Another session is not affected.
    let (decision, _) = tree
        .hook(
            &[],
            &pre_tool_use(
                "other",
                &room,
                "Read",
                json!({"file_path": "../../shared/types.rs"}),
            ),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "ask");

    // remove and reset are recorded too; status changes nothing.
    let remove = json!({"action": "remove", "paths": [shared.display().to_string()]});
    tree.hook(
        &[],
        &pre_tool_use("grant", &room, FACET_TOOL, remove.clone()),
    )
    .assert_no_opinion("remove narrows: no question");
    tree.hook(
        &[],
        &post_tool_use("grant", &room, FACET_TOOL, remove, json!({})),
    );
    assert_eq!(status(&tree, "grant")["binding"]["granted"], json!([]));
}

#[test]
fn the_agents_reset_never_drops_the_users_focus() {
    // A session started at the project's top level has no facet until the user
    // focuses it; the agent's `reset` must not take that focus away (it would turn the
    // guard off), while the user's own reset may.
    let tree = Tree::new();
    let top = tree.path("project");
    let secret = json!({"file_path": "src/other/secret.txt"});
    tree.hook(&[], &session_event("top", &top, "SessionStart"));
    tree.hook(&[], &pre_tool_use("top", &top, "Read", secret.clone()))
        .assert_no_opinion("unscoped before the focus");
    let run = tree.panel(&["focus", "src/room", "--session", "top"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outside_focus = |tree: &Tree| {
        tree.hook(&[], &pre_tool_use("top", &top, "Read", secret.clone()))
            .decision()
            .map(|(decision, _)| decision)
    };
    assert_eq!(outside_focus(&tree).as_deref(), Some("ask"));

    let reset = json!({"action": "reset"});
    tree.hook(&[], &pre_tool_use("top", &top, FACET_TOOL, reset.clone()))
        .assert_no_opinion("reset never widens, so it is not asked");
    tree.hook(
        &[],
        &post_tool_use("top", &top, FACET_TOOL, reset, json!({"isError": false})),
    );
    assert_eq!(status(&tree, "top")["binding"]["focused"], json!(true));
    assert_eq!(outside_focus(&tree).as_deref(), Some("ask"));

    // A focus only narrows: a folder outside the session's is refused.
    let run = tree.panel(&["focus", "../outside", "--session", "top"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("inside the session's folder"),
        "{}",
        run.stderr
    );

    // The user's reset clears it.
    let run = tree.panel(&["reset", "--session", "top"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(status(&tree, "top")["binding"]["focused"], json!(false));
}

#[test]
fn grants_are_stored_canonical() {
    let tree = Tree::new();
    let room = tree.room();
    tree.symlink(tree.path("project/shared"), "project/src/room/shared_link");
    let add = json!({"action": "add", "paths": ["shared_link"]});
    tree.hook(
        &[],
        &post_tool_use("canon", &room, FACET_TOOL, add, json!({})),
    );
    assert_eq!(
        status(&tree, "canon")["binding"]["granted"],
        json!([tree.path("project/shared").display().to_string()])
    );
    // Reached by its real path, the grant holds.
    let real = tree.path("project/shared/types.rs").display().to_string();
    tree.hook(
        &[],
        &pre_tool_use("canon", &room, "Write", json!({"file_path": real})),
    )
    .assert_no_opinion("granted by its canonical path");
}

#[test]
fn a_failed_or_rejected_facet_call_records_nothing() {
    let tree = Tree::new();
    let room = tree.room();
    for (input, response) in [
        (
            json!({"action": "add", "paths": ["../../shared"]}),
            json!({"isError": true}),
        ),
        // Claude Code sends an MCP tool's result as its JSON text.
        (
            json!({"action": "add", "paths": ["../../shared"]}),
            json!(r#"{"content":[{"type":"text","text":"STATE_UNREADABLE: no"}],"isError":true}"#),
        ),
        (
            json!({"action": "add", "paths": ["../../shared"], "bogus": 1}),
            json!({}),
        ),
        (
            json!({"action": "grow", "paths": ["../../shared"]}),
            json!({}),
        ),
    ] {
        tree.hook(
            &[],
            &post_tool_use("failed", &room, FACET_TOOL, input.clone(), response),
        )
        .assert_no_opinion(&input.to_string());
    }
    tree.hook(&[], &session_event("failed", &room, "SessionStart"));
    assert_eq!(status(&tree, "failed")["binding"]["granted"], json!([]));
}

#[test]
fn bypass_permissions_has_no_approval_channel() {
    let tree = Tree::new();
    let room = tree.room();
    let bypass = |mut event: Value| {
        event["permission_mode"] = json!("bypassPermissions");
        event
    };
    let (decision, reason) = tree
        .hook(
            &[],
            &bypass(pre_tool_use(
                "bypass",
                &room,
                "Edit",
                json!({"file_path": "/etc/hosts"}),
            )),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "deny");
    assert_eq!(
        reason,
        format!(
            "/etc/hosts is refused — this session's facet is {}, and this session has no approval channel, so nobody can be asked to grant it here. Ask the user to run `facet grant /etc/hosts --session bypass` in a terminal, or work within the facet.",
            room.display()
        )
    );
    let add = json!({"action": "add", "paths": ["/etc"]});
    let (decision, reason) = tree
        .hook(
            &[],
            &bypass(pre_tool_use("bypass", &room, FACET_TOOL, add.clone())),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "deny");
    assert!(reason.contains("no approval channel"), "{reason}");
    // Even if the call got through (no PreToolUse matcher), nothing is recorded.
    let (_, context) = tree
        .hook(
            &[],
            &bypass(post_tool_use("bypass", &room, FACET_TOOL, add, json!({}))),
        )
        .context()
        .unwrap();
    assert!(
        context.starts_with("The grant was not recorded"),
        "{context}"
    );
    assert_eq!(status(&tree, "bypass")["binding"]["granted"], json!([]));
    // Inside the facet, still no opinion.
    tree.hook(
        &[],
        &bypass(pre_tool_use(
            "bypass",
            &room,
            "Edit",
            json!({"file_path": "inside.txt"}),
        )),
    )
    .assert_no_opinion("inside under bypass");
}

#[test]
fn no_approval_flag_refuses_instead_of_asking() {
    let tree = Tree::new();
    let room = tree.room();
    let (decision, _) = tree
        .hook(
            &["--no-approval"],
            &pre_tool_use("noapp", &room, "read", json!({"file_path": "/etc/hosts"})),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "deny");
}

fn codex_event(session: &str, cwd: &std::path::Path, tool: &str, command: &str) -> Value {
    json!({
        "session_id": session,
        "turn_id": "turn-1",
        "transcript_path": null,
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": {"command": command},
        "tool_use_id": "call-1",
    })
}

#[test]
fn codex_apply_patch_paths_are_judged_and_only_deny_is_said() {
    let tree = Tree::new();
    let room = tree.room();
    let codex = ["--dialect", "codex"];
    let deny_for = |command: &str, tool: &str| {
        let run = tree.hook(&codex, &codex_event("codex", &room, tool, command));
        run.decision()
    };
    let inside = "*** Begin Patch\n*** Add File: notes.md\n+hi\n*** Update File: inside.txt\n@@\n-in\n+out\n*** End Patch\n";
    assert_eq!(deny_for(inside, "apply_patch"), None);

    for (patch, judged) in [
        (
            "*** Begin Patch\n*** Add File: ../../shared/new.rs\n+x\n*** End Patch",
            "../../shared/new.rs",
        ),
        (
            "*** Begin Patch\n*** Delete File: /etc/hosts\n*** End Patch",
            "/etc/hosts",
        ),
        (
            "*** Begin Patch\n*** Update File: inside.txt\n*** Move to: ../other/moved.txt\n@@\n-in\n+in\n*** End Patch",
            "../other/moved.txt",
        ),
    ] {
        let (decision, reason) =
            deny_for(patch, "apply_patch").unwrap_or_else(|| panic!("{patch}"));
        assert_eq!(decision, "deny", "Codex is never asked");
        assert!(
            reason.starts_with(&format!("{judged} is refused — ")),
            "{reason}"
        );
    }
    // A shell heredoc that Codex applies as a patch is judged the same way…
    let heredoc = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: /tmp/escape.txt\n+x\n*** End Patch\nEOF";
    assert_eq!(deny_for(heredoc, "Bash").unwrap().0, "deny");
    // … any other shell command is not judged.
    assert_eq!(deny_for("cat /etc/passwd", "Bash"), None);
    // Widening cannot be asked in Codex: refused.
    let mut add = codex_event("codex", &room, FACET_TOOL, "");
    add["tool_input"] = json!({"action": "add", "paths": ["/etc"]});
    let (decision, _) = tree.hook(&codex, &add).decision().unwrap();
    assert_eq!(decision, "deny");
    // The same Claude Code envelope with apply_patch is not Codex's: no opinion.
    tree.hook(
        &[],
        &codex_event("cc", &room, "apply_patch", "*** Add File: /etc/x\n"),
    )
    .assert_no_opinion("apply_patch outside the codex dialect");
}

#[test]
fn two_hooks_granting_at_once_both_land() {
    let tree = Tree::new();
    let room = tree.room();
    let rounds = 8;
    for round in 0..rounds {
        for side in ["a", "b"] {
            std::fs::create_dir_all(tree.path(&format!("outside/{side}{round}"))).unwrap();
        }
    }
    tree.hook(&[], &session_event("race", &room, "SessionStart"));
    for round in 0..rounds {
        let events: Vec<Value> = ["a", "b"]
            .iter()
            .map(|side| {
                let path = tree
                    .path(&format!("outside/{side}{round}"))
                    .display()
                    .to_string();
                post_tool_use(
                    "race",
                    &room,
                    FACET_TOOL,
                    json!({"action": "add", "paths": [path]}),
                    json!({}),
                )
            })
            .collect();
        // Both processes are started before either is waited for.
        let children: Vec<_> = events
            .into_iter()
            .map(|event| {
                let tree_state = tree.state();
                let elsewhere = tree.path("elsewhere");
                std::thread::spawn(move || {
                    support::run_facet(
                        &["hook"],
                        &serde_json::to_vec(&event).unwrap(),
                        &tree_state,
                        &elsewhere,
                    )
                })
            })
            .collect();
        for child in children {
            let run = child.join().unwrap();
            assert_eq!(run.code, 0, "{}", run.stderr);
        }
    }
    let granted = status(&tree, "race")["binding"]["granted"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(granted, 2 * rounds, "every grant survived");
}

#[test]
fn unreadable_envelopes_never_panic_and_never_block() {
    let tree = Tree::new();
    let garbage: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"   \n".to_vec(),
        b"not json".to_vec(),
        b"[1,2,3]".to_vec(),
        b"\"PreToolUse\"".to_vec(),
        b"{}".to_vec(),
        br#"{"session_id":"s","hook_event_name":"PreToolUse"}"#.to_vec(),
        br#"{"session_id":"s","cwd":"relative/dir","hook_event_name":"PreToolUse"}"#.to_vec(),
        br#"{"session_id":"","cwd":"/tmp","hook_event_name":"PreToolUse"}"#.to_vec(),
        br#"{"session_id":{"x":1},"cwd":"/tmp","hook_event_name":"SessionStart"}"#.to_vec(),
        br#"{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":[1]}"#.to_vec(),
        br#"{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_input":{}}"#.to_vec(),
        vec![0xff, 0xfe, 0x00, 0x7b],
        b"{\"session_id\":\"s\",\"cwd\":\"/tmp".to_vec(),
        "{\"session_id\":\"s\",\"cwd\":\"/tmp/\u{0}x\",\"hook_event_name\":\"SessionStart\"}".as_bytes().to_vec(),
    ];
    for input in garbage {
        for dialect in ["claude-code", "codex"] {
            let run = support::run_facet(
                &["hook", "--dialect", dialect],
                &input,
                &tree.state(),
                &tree.path("elsewhere"),
            );
            let shown = String::from_utf8_lossy(&input);
            assert_eq!(
                run.code, 1,
                "{shown:?}: non-blocking exit; stderr {}",
                run.stderr
            );
            assert!(run.stdout.is_empty(), "{shown:?}: stdout {}", run.stdout);
            assert!(
                run.stderr.starts_with("facet hook: "),
                "{shown:?}: {}",
                run.stderr
            );
            assert!(
                !run.stderr.contains("panicked"),
                "{shown:?}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn a_session_id_is_data_not_a_path() {
    let tree = Tree::new();
    let room = tree.room();
    for id in ["../../escape", "/etc/passwd", "a/b", ".", ".."] {
        let run = tree.hook(&[], &session_event(id, &room, "SessionStart"));
        assert_eq!(run.code, 0, "{id}: {}", run.stderr);
        assert!(run.context().is_some(), "{id}");
    }
    // Every state file stayed inside the state folder.
    let parent_entries: Vec<_> = std::fs::read_dir(tree.base.clone())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !parent_entries.iter().any(|name| name.contains("escape")),
        "{parent_entries:?}"
    );
    let sessions = tree.panel(&["sessions", "--json"]);
    let listed: Vec<Value> = serde_json::from_str(&sessions.stdout).unwrap();
    assert_eq!(listed.len(), 5);
}

#[test]
fn the_panel_defaults_to_the_most_recently_changed_session() {
    let tree = Tree::new();
    let room = tree.room();
    tree.hook(&[], &session_event("older", &room, "SessionStart"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    tree.hook(&[], &session_event("newer", &room, "SessionStart"));
    let shown = tree.panel(&["status", "--json"]);
    let value: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(value["binding"]["session"], "newer");

    std::thread::sleep(std::time::Duration::from_millis(20));
    let grant = tree.panel(&["grant", "/etc", "--session", "older", "--json"]);
    let value: Value = serde_json::from_str(&grant.stdout).unwrap();
    assert_eq!(value["change"]["kind"], "granted");
    let listed: Vec<Value> =
        serde_json::from_str(&tree.panel(&["sessions", "--json"]).stdout).unwrap();
    let order: Vec<&str> = listed
        .iter()
        .map(|row| row["session"].as_str().unwrap())
        .collect();
    assert_eq!(order, vec!["older", "newer"]);

    // An unknown session is a clear error, not a new session.
    let unknown = tree.panel(&["status", "--session", "nope"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("no facet state for session nope"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn the_facet_tool_name_is_configurable() {
    let tree = Tree::new();
    let room = tree.room();
    let add = json!({"action": "add", "paths": ["/etc"]});
    let renamed = "mcp__scope__facet";
    // Unknown under the default name: no opinion.
    tree.hook(&[], &pre_tool_use("named", &room, renamed, add.clone()))
        .assert_no_opinion("unrecognised facet tool");
    let (decision, _) = tree
        .hook(
            &["--facet-tool", renamed],
            &pre_tool_use("named", &room, renamed, add.clone()),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "ask");
    tree.hook(
        &["--facet-tool", renamed],
        &post_tool_use("named", &room, renamed, add, json!({})),
    );
    assert_eq!(
        status(&tree, "named")["binding"]["granted"],
        json!(["/etc"])
    );
}

/// The envelope DeepSeek Harness's `@deepseek-ai/dsh-hooks-claude-code` bridge builds
/// (read from its published source, 0.0.1-rc.5): no `permission_mode`, a string
/// `transcript_path` that may be `""`, `tool_response` as the result's joined text,
/// and `session_id: ""` when a tool runs outside any agent.
fn dsh_event(session: &str, cwd: &std::path::Path, event: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "",
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "call_1",
    })
}

#[test]
fn deepseek_harness_bridge_envelopes() {
    let tree = Tree::new();
    let room = tree.room();
    // Its lower-case tools, judged; an approval channel is assumed (the bridge maps
    // `ask` onto the harness's own ask).
    let (decision, _) = tree
        .hook(
            &[],
            &dsh_event(
                "dsh",
                &room,
                "PreToolUse",
                "read",
                json!({"file_path": "../other/secret.txt"}),
            ),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "ask");
    // A granted facet call: tool_response is text, recorded all the same.
    let add = json!({"action": "add", "paths": ["../other"]});
    let mut post = dsh_event("dsh", &room, "PostToolUse", FACET_TOOL, add);
    post["tool_response"] =
        json!("facet: grant ../other (recorded by the hook)\n{\"action\":\"add\"}");
    let (_, context) = tree.hook(&[], &post).context().unwrap();
    assert!(context.contains("granted outside it: "), "{context}");
    tree.hook(
        &[],
        &dsh_event(
            "dsh",
            &room,
            "PreToolUse",
            "grep",
            json!({"path": "../other"}),
        ),
    )
    .assert_no_opinion("granted folder");
}

#[test]
fn an_event_without_a_session_id_is_judged_without_state() {
    let tree = Tree::new();
    let room = tree.room();
    let (decision, reason) = tree
        .hook(
            &[],
            &dsh_event(
                "",
                &room,
                "PreToolUse",
                "write",
                json!({"file_path": "/etc/hosts"}),
            ),
        )
        .decision()
        .expect("judged against the event's cwd");
    assert_eq!(decision, "ask");
    assert!(
        reason.contains(&format!("this session's facet is {}.", room.display())),
        "{reason}"
    );
    tree.hook(
        &[],
        &dsh_event(
            "",
            &room,
            "PreToolUse",
            "write",
            json!({"file_path": "inside.txt"}),
        ),
    )
    .assert_no_opinion("inside");
    tree.hook(&[], &session_event("", &room, "SessionStart"))
        .assert_no_opinion("nothing to record");
    let mut post = dsh_event(
        "",
        &room,
        "PostToolUse",
        FACET_TOOL,
        json!({"action": "add", "paths": ["/etc"]}),
    );
    post["tool_response"] = json!("ok");
    tree.hook(&[], &post).assert_no_opinion("nothing to record");
    assert_eq!(
        std::fs::read_dir(tree.state()).unwrap().count(),
        0,
        "no state was written"
    );
}

/// `event` as JSON text with the string `"MARK"` replaced by `replacement` (raw JSON
/// that `serde_json` itself would never write).
fn raw_event(event: &Value, replacement: &str) -> Vec<u8> {
    serde_json::to_string(event)
        .unwrap()
        .replace("\"MARK\"", replacement)
        .into_bytes()
}

#[test]
fn a_lone_surrogate_escape_is_judged_not_an_error() {
    // Node's JSON.stringify writes a lone surrogate as `\ud800`; serde_json refuses
    // it. The path is judged as Node writes it to disk (U+FFFD), outside the facet.
    let tree = Tree::new();
    let room = tree.room();
    let outside = tree.path("outside").display().to_string();
    let event = pre_tool_use("lone", &room, "Read", json!({"file_path": "MARK"}));
    for (dialect, expected) in [("claude-code", "ask"), ("codex", "deny")] {
        for escape in [r"\ud800", r"\uDFFF", r"x\udc00\ud83d"] {
            let input = raw_event(&event, &format!("\"{outside}/{escape}\""));
            let run = support::run_facet(
                &["hook", "--dialect", dialect],
                &input,
                &tree.state(),
                &tree.path("elsewhere"),
            );
            let (decision, reason) = run
                .decision()
                .unwrap_or_else(|| panic!("{escape}: no decision; stderr {}", run.stderr));
            assert_eq!(decision, expected, "{escape}: {reason}");
            assert!(reason.contains('\u{FFFD}'), "{reason}");
        }
    }
    // An escaped backslash before `ud800` is text: still a path, still judged.
    let input = raw_event(&event, &format!("\"{outside}/\\\\ud800\""));
    let (decision, _) =
        support::run_facet(&["hook"], &input, &tree.state(), &tree.path("elsewhere"))
            .decision()
            .unwrap();
    assert_eq!(decision, "ask");
}

#[test]
fn a_tool_call_too_deep_or_too_large_to_read_is_refused() {
    let tree = Tree::new();
    let room = tree.room();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let pre = pre_tool_use(
        "deep",
        &room,
        "Write",
        json!({"file_path": "/etc/passwd", "extra": "MARK"}),
    );
    // Whitespace around the colon must not hide the event name.
    let spaced = String::from_utf8(raw_event(&pre, &deep))
        .unwrap()
        .replace("\"hook_event_name\":", "\"hook_event_name\" :\n ");
    for input in [raw_event(&pre, &deep), spaced.into_bytes()] {
        for dialect in ["claude-code", "codex"] {
            let run = support::run_facet(
                &["hook", "--dialect", dialect],
                &input,
                &tree.state(),
                &tree.path("elsewhere"),
            );
            assert_eq!(run.code, 0, "a deny exits 0; stderr {}", run.stderr);
            let (decision, reason) = run.decision().expect("a decision");
            assert_eq!(decision, "deny");
            assert!(
                reason.starts_with("facet could not read this tool call (")
                    && reason.ends_with("); refused."),
                "{reason}"
            );
        }
    }

    // Over the 16 MiB cap.
    let big = format!("\"{}\"", "a".repeat(17 * 1024 * 1024));
    let input = raw_event(
        &pre_tool_use(
            "big",
            &room,
            "Write",
            json!({"file_path": "x", "content": "MARK"}),
        ),
        &big,
    );
    let run = support::run_facet(&["hook"], &input, &tree.state(), &tree.path("elsewhere"));
    let (decision, reason) = run.decision().expect("a decision");
    assert_eq!(decision, "deny");
    assert_eq!(
        reason,
        "facet could not read this tool call (the event is larger than 16 MiB); refused."
    );

    // Any other event that cannot be read stays a non-blocking error.
    let post = post_tool_use("deep", &room, FACET_TOOL, json!({"x": "MARK"}), json!({}));
    for input in [raw_event(&post, &deep), raw_event(&post, &big)] {
        let run = support::run_facet(&["hook"], &input, &tree.state(), &tree.path("elsewhere"));
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert!(run.stderr.starts_with("facet hook: "), "{}", run.stderr);
    }
}

#[test]
fn the_users_configuration_is_read_configured_tools_and_markers_count() {
    let tree = Tree::new();
    let room = tree.room();
    let outside = tree.path("outside/file.txt");
    let read_outside = pre_tool_use("cfg", &room, "mcp__fs__read_file", json!({"path": outside}));
    let src = tree.path("project/src");
    std::fs::write(src.join(".facet-top"), "").unwrap();
    let read_from_src = pre_tool_use("cfg-top", &src, "Read", json!({"file_path": outside}));
    let run = |env: &[(&str, &std::ffi::OsStr)], event: &Value| {
        support::run_facet_with(
            &["hook"],
            &serde_json::to_vec(event).unwrap(),
            &tree.state(),
            &tree.path("elsewhere"),
            env,
        )
    };

    // No configuration: the MCP tool is unknown and project/src is scoped.
    run(&[], &read_outside).assert_no_opinion("unconfigured tool");
    assert_eq!(run(&[], &read_from_src).decision().unwrap().0, "ask");

    let text = "project_markers = [\".facet-top\"]\n[tools]\n\"mcp__fs__read_file\" = [\"path\"]\n";
    // The default path ($XDG_CONFIG_HOME/facet/config.toml) and FACET_CONFIG.
    let xdg = tree.path("xdg-config");
    std::fs::create_dir_all(xdg.join("facet")).unwrap();
    std::fs::write(xdg.join("facet/config.toml"), text).unwrap();
    let named = tree.path("named.toml");
    std::fs::write(&named, text).unwrap();
    let empty_xdg = tree.path("empty-xdg");
    for env in [
        vec![],
        vec![
            ("FACET_CONFIG", named.as_os_str()),
            ("XDG_CONFIG_HOME", empty_xdg.as_os_str()),
        ],
    ] {
        let (decision, reason) = run(&env, &read_outside).decision().expect("judged");
        assert_eq!(decision, "ask");
        assert!(reason.contains("outside/file.txt"), "{reason}");
        // project/src holds a configured marker: a session there is not scoped.
        let session = format!("cfg-top-{}", env.len());
        let event = pre_tool_use(&session, &src, "Read", json!({"file_path": outside}));
        run(&env, &event).assert_no_opinion("session at a configured project top");
    }
}

#[test]
fn a_configuration_that_cannot_be_used_refuses_every_tool_call() {
    let tree = Tree::new();
    let room = tree.room();
    let broken = tree.path("broken.toml");
    std::fs::write(&broken, "tools = 5\n").unwrap();
    let missing = tree.path("missing.toml");
    let relative = std::ffi::OsStr::new("config.toml");
    for (config, fault) in [
        (broken.as_os_str(), "broken.toml: line 1"),
        (missing.as_os_str(), "missing.toml: "),
        (relative, "FACET_CONFIG must be an absolute path"),
    ] {
        let env = [("FACET_CONFIG", config)];
        for tool in ["Read", "Bash", "mcp__anything"] {
            let event = pre_tool_use("broken", &room, tool, json!({"file_path": "inside.txt"}));
            let run = support::run_facet_with(
                &["hook"],
                &serde_json::to_vec(&event).unwrap(),
                &tree.state(),
                &tree.path("elsewhere"),
                &env,
            );
            let (decision, reason) = run.decision().expect("refused");
            assert_eq!(decision, "deny");
            assert!(
                reason.starts_with("facet could not use its configuration")
                    && reason.contains(fault),
                "{reason}"
            );
        }
        let start = support::run_facet_with(
            &["hook"],
            &serde_json::to_vec(&session_event("broken", &room, "SessionStart")).unwrap(),
            &tree.state(),
            &tree.path("elsewhere"),
            &env,
        );
        assert_eq!(start.code, 1, "{}", start.stderr);
        assert!(start.stderr.contains(fault), "{}", start.stderr);
    }
}

#[test]
fn the_state_folder_is_never_the_hooks_working_directory() {
    let tree = Tree::new();
    let room = tree.room();
    let xdg_state = tree.path("xdg-state");
    let listing = |dir: &std::path::Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing(&room);
    let event = |session: &str| {
        serde_json::to_vec(&pre_tool_use(
            session,
            &room,
            "Read",
            json!({"file_path": "../other/secret.txt"}),
        ))
        .unwrap()
    };

    // Empty is unset: the default folder ($XDG_STATE_HOME/facet), not the cwd.
    let run = support::run_facet_with(
        &["hook"],
        &event("empty"),
        &tree.state(),
        &room,
        &[
            ("FACET_STATE_DIR", std::ffi::OsStr::new("")),
            ("XDG_STATE_HOME", xdg_state.as_os_str()),
        ],
    );
    assert_eq!(run.decision().expect("judged").0, "ask");
    assert_eq!(listing(&room), before, "nothing written into the facet");
    assert!(
        listing(&xdg_state.join("facet"))
            .iter()
            .any(|name| name.to_string_lossy() == "empty.json"),
        "the session is recorded in the default folder"
    );

    // Relative is refused: a judged call is denied, other events are a stderr message.
    let env = [("FACET_STATE_DIR", std::ffi::OsStr::new("state-here"))];
    let run = support::run_facet_with(&["hook"], &event("relative"), &tree.state(), &room, &env);
    let (decision, reason) = run.decision().expect("refused");
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("FACET_STATE_DIR must be an absolute path"),
        "{reason}"
    );
    let start = support::run_facet_with(
        &["hook"],
        &serde_json::to_vec(&session_event("relative", &room, "SessionStart")).unwrap(),
        &tree.state(),
        &room,
        &env,
    );
    assert_eq!(start.code, 1);
    assert!(
        start
            .stderr
            .contains("FACET_STATE_DIR must be an absolute path"),
        "{}",
        start.stderr
    );
    assert_eq!(listing(&room), before, "nothing written into the facet");
}

#[test]
fn facets_own_state_and_configuration_are_out_of_every_tools_reach() {
    // A session whose facet holds the state folder (a session in $HOME holds
    // ~/.local/state/facet) must not rewrite its own facet with a file tool.
    let tree = Tree::new();
    let home = tree.base.clone();
    let state_file = tree.path("state/home.json");
    let config_dir = tree.path("xdg-config/facet");
    std::fs::create_dir_all(&config_dir).unwrap();
    tree.symlink(tree.path("state"), "project/src/room/state-link");
    tree.hook(&[], &session_event("home", &home, "SessionStart"));
    assert!(state_file.exists(), "the session is recorded");
    // Even a grant of the folder by the user does not open it to file tools.
    let grant = tree.panel(&[
        "grant",
        &tree.path("state").display().to_string(),
        "--session",
        "home",
    ]);
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let guarded_state = tree.path("state").display().to_string();
    let guarded_config = config_dir.display().to_string();
    let cases = [
        (
            "Edit",
            json!({"file_path": state_file, "old_string": "ask", "new_string": "off"}),
            guarded_state.as_str(),
        ),
        (
            "Write",
            json!({"file_path": "state/home.json", "content": "{}"}),
            &guarded_state,
        ),
        (
            "Read",
            json!({"file_path": "project/src/room/state-link/home.json"}),
            &guarded_state,
        ),
        (
            "Glob",
            json!({"pattern": "*.json", "path": "state"}),
            &guarded_state,
        ),
        (
            "Write",
            json!({"file_path": config_dir.join("config.toml"), "content": "default_mode = \"off\""}),
            &guarded_config,
        ),
    ];
    for (tool, input, dir) in cases {
        for mode in ["ask", "deny"] {
            let set = tree.panel(&["mode", mode, "--session", "home"]);
            assert_eq!(set.code, 0, "{}", set.stderr);
            let run = tree.hook(&[], &pre_tool_use("home", &home, tool, input.clone()));
            let (decision, reason) = run
                .decision()
                .unwrap_or_else(|| panic!("{tool} {input}: no decision; {}", run.stderr));
            assert_eq!(decision, "deny", "{tool} {input}");
            assert!(
                reason.contains(&format!("lies in facet's own state or configuration ({dir}), which no tool call may touch")),
                "{reason}"
            );
        }
    }
    assert_eq!(
        status(&tree, "home")["binding"]["mode"],
        json!("deny"),
        "the state was not rewritten"
    );
    // A file named by FACET_CONFIG is guarded too (not its folder).
    let named = tree.path("outside/facet.toml");
    std::fs::write(&named, "").unwrap();
    let env = [("FACET_CONFIG", named.as_os_str())];
    let run = |input: Value| {
        support::run_facet_with(
            &["hook"],
            &serde_json::to_vec(&pre_tool_use("home", &home, "Edit", input)).unwrap(),
            &tree.state(),
            &tree.path("elsewhere"),
            &env,
        )
    };
    assert_eq!(
        run(json!({"file_path": named})).decision().unwrap().0,
        "deny"
    );
    run(json!({"file_path": tree.path("outside/file.txt")})).assert_no_opinion("beside it");
    // Mode off turns every opinion off, this one included.
    assert_eq!(tree.panel(&["mode", "off", "--session", "home"]).code, 0);
    tree.hook(
        &[],
        &pre_tool_use("home", &home, "Edit", json!({"file_path": state_file})),
    )
    .assert_no_opinion("mode off");
}

#[test]
fn an_add_made_while_facet_is_off_is_not_recorded() {
    let tree = Tree::new();
    let room = tree.room();
    let add = json!({"action": "add", "paths": ["../../shared"]});
    tree.hook(&[], &session_event("offadd", &room, "SessionStart"));
    assert_eq!(tree.panel(&["mode", "off", "--session", "offadd"]).code, 0);
    // Mode off: the add is not asked about, so it must not be recorded.
    tree.hook(&[], &pre_tool_use("offadd", &room, FACET_TOOL, add.clone()))
        .assert_no_opinion("mode off asks nothing");
    let (_, context) = tree
        .hook(
            &[],
            &post_tool_use("offadd", &room, FACET_TOOL, add.clone(), json!({})),
        )
        .context()
        .expect("told why");
    assert!(
        context.starts_with("The grant was not recorded"),
        "{context}"
    );
    assert_eq!(status(&tree, "offadd")["binding"]["granted"], json!([]));
    // Back to ask: the path outside is still asked about.
    assert_eq!(tree.panel(&["mode", "ask", "--session", "offadd"]).code, 0);
    let (decision, _) = tree
        .hook(
            &[],
            &pre_tool_use(
                "offadd",
                &room,
                "Read",
                json!({"file_path": "../../shared/types.rs"}),
            ),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "ask");
    // An unscoped session (started at the project top) is not asked either.
    let top = tree.path("project");
    tree.hook(
        &[],
        &post_tool_use(
            "topadd",
            &top,
            FACET_TOOL,
            json!({"action": "add", "paths": ["/etc"]}),
            json!({}),
        ),
    );
    assert_eq!(status(&tree, "topadd")["binding"]["granted"], json!([]));
}

#[test]
fn the_rule_is_sent_once_when_a_silent_session_comes_under_the_guard() {
    let tree = Tree::new();
    let top = tree.path("project");
    let rule_then_binding = |run: &support::Run| {
        let (event, context) = run.context().expect("told");
        assert_eq!(event, "UserPromptSubmit");
        assert!(context.starts_with("# Facet scope\n"), "{context}");
        assert!(context.contains("\n\nfacet: "), "{context}");
    };

    // Unscoped at its start (the project top): told nothing, then focused.
    tree.hook(&[], &session_event("silent", &top, "SessionStart"))
        .assert_no_opinion("unscoped start");
    assert_eq!(
        tree.panel(&["focus", "src/room", "--session", "silent"])
            .code,
        0
    );
    rule_then_binding(&tree.hook(&[], &session_event("silent", &top, "UserPromptSubmit")));
    // Once: a later change restates the binding alone.
    assert_eq!(
        tree.panel(&["grant", "shared", "--session", "silent"]).code,
        0
    );
    let (_, context) = tree
        .hook(&[], &session_event("silent", &top, "UserPromptSubmit"))
        .context()
        .expect("restated");
    assert!(context.starts_with("facet: "), "{context}");

    // Off at its start (the configured default mode), then switched to ask.
    let xdg = tree.path("xdg-config/facet");
    std::fs::create_dir_all(&xdg).unwrap();
    std::fs::write(xdg.join("config.toml"), "default_mode = \"off\"\n").unwrap();
    let room = tree.room();
    tree.hook(&[], &session_event("quiet", &room, "SessionStart"))
        .assert_no_opinion("off at start");
    assert_eq!(tree.panel(&["mode", "ask", "--session", "quiet"]).code, 0);
    rule_then_binding(&tree.hook(&[], &session_event("quiet", &room, "UserPromptSubmit")));
}

#[test]
fn glob_brace_alternatives_cannot_hide_a_way_out() {
    let tree = Tree::new();
    let room = tree.room();
    for (pattern, named) in [
        ("{..,a}/**", ".."),
        ("{/etc,a}/*", "/etc"),
        ("a/{../../..,b}/f", "a/../../../f"),
        ("{a,{b,../../other}}/*", "../../other"),
    ] {
        for (mode, expected) in [("ask", "ask"), ("deny", "deny")] {
            let session = format!("brace-{mode}");
            tree.hook(&[], &session_event(&session, &room, "SessionStart"));
            assert_eq!(tree.panel(&["mode", mode, "--session", &session]).code, 0);
            let run = tree.hook(
                &[],
                &pre_tool_use(&session, &room, "Glob", json!({"pattern": pattern})),
            );
            let (decision, reason) = run
                .decision()
                .unwrap_or_else(|| panic!("{pattern}: no opinion; {}", run.stderr));
            assert_eq!(decision, expected, "{pattern}");
            assert!(reason.contains(named), "{pattern}: {reason}");
        }
    }
    // Braces that stay in the facet are left alone.
    tree.hook(
        &[],
        &pre_tool_use(
            "brace-ask",
            &room,
            "Glob",
            json!({"pattern": "**/*.{rs,toml}"}),
        ),
    )
    .assert_no_opinion("braces inside");
}

#[test]
fn a_path_is_judged_as_sent_as_well_as_trimmed() {
    // The seed trims paths, but the tool opens the string as sent: `"out "` is not
    // `"out"`, and here it is a symbolic link out of the facet.
    let tree = Tree::new();
    let room = tree.room();
    std::fs::create_dir_all(room.join("out")).unwrap();
    tree.symlink(tree.path("outside"), "project/src/room/out ");
    for (tool, input) in [
        ("Read", json!({"file_path": "out /file.txt"})),
        ("Read", json!({"file_path": "out "})),
        ("Grep", json!({"pattern": "x", "path": "out "})),
    ] {
        let run = tree.hook(&[], &pre_tool_use("untrimmed", &room, tool, input.clone()));
        let (decision, _) = run
            .decision()
            .unwrap_or_else(|| panic!("{input}: no opinion; {}", run.stderr));
        assert_eq!(decision, "ask", "{input}");
    }
    tree.hook(
        &[],
        &pre_tool_use("untrimmed", &room, "Read", json!({"file_path": " out/x\n"})),
    )
    .assert_no_opinion("both spellings inside");
}

#[test]
fn a_long_session_id_is_guarded_and_recorded_like_any_other() {
    // Ids over 80 bytes were refused by the store: every judged call was denied and
    // nothing could be granted. They are stored under a digest of the id now.
    let tree = Tree::new();
    let room = tree.room();
    let id = format!("{}/{}", "s".repeat(150), "é".repeat(40));
    let (_, context) = tree
        .hook(&[], &session_event(&id, &room, "SessionStart"))
        .context()
        .expect("told the rule");
    assert!(context.starts_with("# Facet scope\n"), "{context}");
    let add = json!({"action": "add", "paths": ["../../shared"]});
    assert_eq!(
        tree.hook(&[], &pre_tool_use(&id, &room, FACET_TOOL, add.clone()))
            .decision()
            .unwrap()
            .0,
        "ask"
    );
    tree.hook(&[], &post_tool_use(&id, &room, FACET_TOOL, add, json!({})));
    tree.hook(
        &[],
        &pre_tool_use(
            &id,
            &room,
            "Read",
            json!({"file_path": "../../shared/types.rs"}),
        ),
    )
    .assert_no_opinion("granted");
    assert_eq!(
        status(&tree, &id)["binding"]["granted"],
        json!([tree.path("project/shared")])
    );
    // Still refused past 1024 bytes: judged calls fail closed.
    let huge = "x".repeat(1025);
    let (decision, reason) = tree
        .hook(
            &[],
            &pre_tool_use(&huge, &room, "Read", json!({"file_path": "/etc/hosts"})),
        )
        .decision()
        .unwrap();
    assert_eq!(decision, "deny");
    assert!(reason.contains("invalid session id"), "{reason}");
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = std::process::Command::new(support::facet_bin())
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let line = String::from_utf8(output.stdout).unwrap();
    let rest = line
        .strip_prefix("facet ")
        .and_then(|rest| rest.split_once(" (commit "))
        .map(|(_, commit)| commit.trim_end().trim_end_matches(')').to_owned())
        .unwrap_or_else(|| panic!("unexpected --version: {line:?}"));
    assert!(
        rest == "unknown" || (rest.len() == 12 && rest.bytes().all(|b| b.is_ascii_hexdigit())),
        "unexpected commit in --version: {line:?}"
    );
}
