//! The hook's whole answer path on generated input, in every dialect (the fuzz
//! target `facet_hook_envelope` runs the same property without bounds): it never
//! panics, exits 0 or 1 only, and whatever it writes is one of the host's shapes.
use facet::envelope::Dialect;
use facet::hook::{HookConfig, answer};
use proptest::prelude::*;
use serde_json::{Value, json};

fn check(input: &[u8], state: &std::path::Path) {
    for dialect in [
        Dialect::ClaudeCode,
        Dialect::Codex,
        Dialect::Gemini,
        Dialect::Copilot,
        Dialect::OpenCode,
    ] {
        let reply = answer(
            input,
            &HookConfig::with_state_dir(dialect, state.to_path_buf()),
        );
        assert!(reply.exit_code == 0 || reply.exit_code == 1, "{reply:?}");
        if reply.exit_code == 1 {
            assert!(reply.stdout.is_none());
            assert!(
                reply
                    .stderr
                    .as_deref()
                    .is_some_and(|text| text.starts_with("facet hook: "))
            );
        }
        if let Some(stdout) = reply.stdout {
            let value: Value = serde_json::from_str(&stdout).unwrap();
            if dialect == Dialect::Gemini && value.get("hookSpecificOutput").is_none() {
                // Gemini's own refusal shape; never an ask, never Claude Code's block.
                assert_eq!(value["decision"], "deny", "{value}");
                assert!(value["reason"].is_string(), "{value}");
                continue;
            }
            if dialect == Dialect::Gemini {
                let specific = &value["hookSpecificOutput"];
                assert!(specific.get("permissionDecision").is_none(), "{value}");
                if specific["hookEventName"] == "BeforeTool" {
                    assert!(specific["tool_input"]["dir_path"].is_string(), "{value}");
                    continue;
                }
            }
            if dialect == Dialect::Copilot {
                // Copilot's shape: top-level fields only, one of the two purposes.
                let object = value.as_object().unwrap();
                assert!(object.keys().all(|key| {
                    [
                        "permissionDecision",
                        "permissionDecisionReason",
                        "additionalContext",
                    ]
                    .contains(&key.as_str())
                }));
                assert!(
                    object.contains_key("additionalContext")
                        ^ object.contains_key("permissionDecision")
                );
                continue;
            }
            if dialect == Dialect::OpenCode {
                // OpenCode's answers: a refusal the shim throws, or system-prompt text.
                let object = value.as_object().unwrap();
                if object.contains_key("system") {
                    assert!(value["system"].is_string(), "{value}");
                    assert_eq!(object.len(), 1, "{value}");
                } else {
                    assert_eq!(value["decision"], "deny", "{value}");
                    assert!(value["reason"].is_string(), "{value}");
                    assert_eq!(object.len(), 2, "{value}");
                }
                continue;
            }
            let event = value["hookSpecificOutput"]["hookEventName"]
                .as_str()
                .unwrap();
            assert!(
                [
                    "SessionStart",
                    "UserPromptSubmit",
                    "PreToolUse",
                    "PostToolUse",
                    "BeforeAgent",
                    "AfterTool"
                ]
                .contains(&event)
            );
            if dialect == Dialect::Codex {
                assert_ne!(value["hookSpecificOutput"]["permissionDecision"], "ask");
            }
        }
    }
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "/",
            "..",
            "../x",
            "/etc/passwd",
            "/proc/self/root",
            "~",
            "a\u{0}b",
            "*** Add File: /etc/x\n"
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ]
}

fn envelope() -> impl Strategy<Value = Value> {
    let events = prop::sample::select(vec![
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "BeforeTool",
        "AfterTool",
        "BeforeAgent",
    ]);
    let tools = prop::sample::select(vec![
        "Read",
        "Glob",
        "grep",
        "recall",
        "apply_patch",
        "Bash",
        "mcp__facet__facet",
        "LS",
        "view",
        "rg",
        "facet-facet",
        "unknown",
        "read_file",
        "glob",
        "grep_search",
        "mcp_facet_facet",
    ]);
    let input = prop::collection::btree_map(
        prop::sample::select(vec![
            "file_path",
            "path",
            "pattern",
            "glob",
            "command",
            "action",
            "paths",
            "focus",
            "notebook_path",
            "dir_path",
            "include_pattern",
            "filePath",
            "patchText",
            "include",
        ]),
        prop_oneof![
            scalar(),
            prop::collection::vec(scalar(), 0..3).prop_map(Value::Array)
        ],
        0..4,
    );
    (
        prop_oneof![Just(json!("s")), scalar()],
        prop_oneof![Just(json!("/")), Just(json!("/tmp")), scalar()],
        events,
        tools,
        input,
        prop_oneof![
            Just(json!("default")),
            Just(json!("bypassPermissions")),
            scalar()
        ],
    )
        .prop_map(|(session, cwd, event, tool, input, mode)| {
            json!({
                "session_id": session, "cwd": cwd, "hook_event_name": event,
                "tool_name": tool, "tool_input": input, "permission_mode": mode,
                "tool_response": {"isError": false},
            })
        })
}

/// GitHub Copilot CLI's envelope: no event name, the event read from which fields
/// are there (`toolResult`, `error`, `source`, `prompt`); `toolArgs` an object,
/// text, JSON text or anything else.
fn copilot_envelope() -> impl Strategy<Value = Value> {
    let tools = prop::sample::select(vec![
        "view",
        "create",
        "edit",
        "grep",
        "rg",
        "glob",
        "apply_patch",
        "bash",
        "facet-facet",
        "Read",
    ]);
    let args = prop_oneof![
        prop::collection::btree_map(
            prop::sample::select(vec!["path", "paths", "pattern", "glob", "action", "input"]),
            prop_oneof![
                scalar(),
                prop::collection::vec(scalar(), 0..3).prop_map(Value::Array)
            ],
            0..4,
        )
        .prop_map(|map| json!(map)),
        scalar(),
        Just(json!("{\"path\":\"/etc/passwd\"}")),
        Just(json!(
            "*** Begin Patch\n*** Add File: ../x\n+y\n*** End Patch\n"
        )),
    ];
    let extra = prop::sample::select(vec!["", "toolResult", "error", "source", "prompt"]);
    (
        prop_oneof![Just(json!("s")), scalar()],
        prop_oneof![Just(json!("/")), Just(json!("/tmp")), scalar()],
        prop::option::of(tools),
        args,
        extra,
        prop::option::of(scalar()),
    )
        .prop_map(|(session, cwd, tool, args, extra, value)| {
            let mut event = json!({"sessionId": session, "timestamp": 1, "cwd": cwd});
            if let Some(tool) = tool {
                event["toolName"] = json!(tool);
                event["toolArgs"] = args;
            }
            if !extra.is_empty() {
                event[extra] = value.unwrap_or(json!({"resultType": "success"}));
            }
            event
        })
}

/// What the OpenCode plugin shim sends, with every field drawn from the same values.
fn opencode_event() -> impl Strategy<Value = Value> {
    (
        envelope(),
        prop_oneof![Just(json!("tool.execute.before")), scalar()],
    )
        .prop_map(|(event, hook)| {
            json!({
                "hook": hook, "directory": event["cwd"], "worktree": event["cwd"],
                "input": {"tool": event["tool_name"], "sessionID": event["session_id"],
                          "callID": "c"},
                "output": {"args": event["tool_input"]},
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let state = tempfile::tempdir().unwrap();
        check(&bytes, state.path());
    }

    #[test]
    fn generated_envelopes_never_panic(event in envelope()) {
        let state = tempfile::tempdir().unwrap();
        check(&serde_json::to_vec(&event).unwrap(), state.path());
    }

    #[test]
    fn generated_copilot_envelopes_never_panic(event in copilot_envelope()) {
        let state = tempfile::tempdir().unwrap();
        check(&serde_json::to_vec(&event).unwrap(), state.path());
    }

    #[test]
    fn generated_opencode_events_never_panic(event in opencode_event()) {
        let state = tempfile::tempdir().unwrap();
        check(&serde_json::to_vec(&event).unwrap(), state.path());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A JSON string whose only fault is lone surrogate escapes always reads after
    /// the rewrite, and the rewrite leaves nothing for a second pass to change.
    #[test]
    fn lone_surrogates_are_the_only_thing_rewritten(
        pieces in prop::collection::vec(
            prop::sample::select(vec![
                "a", "\\\\", "\\n", "\\ud800", "\\udc00", "\\uDBFF", "\\ud83d\\ude00",
                "\\u0041", "\\\\ud800", "é", "u", "d800",
            ]),
            0..12,
        )
    ) {
        let text = format!("\"{}\"", pieces.concat());
        let once = facet::envelope::replace_lone_surrogates(text.as_bytes()).into_owned();
        prop_assert!(serde_json::from_slice::<Value>(&once).is_ok(), "{}", String::from_utf8_lossy(&once));
        let twice = facet::envelope::replace_lone_surrogates(&once).into_owned();
        prop_assert_eq!(once, twice);
    }
}
