//! The hook's whole answer path on arbitrary stdin bytes, in every dialect
//! (Claude Code, Codex, Gemini CLI, GitHub Copilot CLI, OpenCode):
//! envelope parsing, apply_patch extraction (the patch body, the shell forms Codex
//! intercepts, where it lands), the glob-pattern reading, the decision and the state
//! store.
//! It must never panic, and whatever it answers must be one of the host's shapes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // State goes to a throwaway folder so the fuzzer never touches a real one.
    let state = std::env::temp_dir().join("facet-fuzz-state");
    use facet::envelope::Dialect;
    for dialect in [
        Dialect::ClaudeCode,
        Dialect::Codex,
        Dialect::Gemini,
        Dialect::Copilot,
        Dialect::OpenCode,
    ] {
        let config = facet::hook::HookConfig::with_state_dir(dialect, state.clone());
        let answer = facet::hook::answer(data, &config);
        assert!(answer.exit_code == 0 || answer.exit_code == 1);
        if let Some(stdout) = answer.stdout {
            let value: serde_json::Value = serde_json::from_str(&stdout).expect("answer is JSON");
            match dialect {
                // Gemini CLI's own refusal, never an ask (its context and pinned
                // searches use the block).
                Dialect::Gemini if value.get("hookSpecificOutput").is_none() => {
                    assert_eq!(value["decision"], "deny")
                }
                Dialect::Copilot => assert!(
                    value.get("permissionDecision").is_some()
                        || value.get("additionalContext").is_some()
                ),
                // OpenCode: system-prompt text, or Gemini's refusal shape.
                Dialect::OpenCode => assert!(
                    value["system"].is_string()
                        || (value["decision"] == "deny" && value["reason"].is_string())
                ),
                _ => assert!(value.get("hookSpecificOutput").is_some()),
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = facet::apply_patch::patch_paths(text);
        let _ = facet::apply_patch::classify_copilot("apply_patch", &serde_json::json!(text));
        let _ = facet::apply_patch::classify_opencode(
            "apply_patch",
            &serde_json::json!({"patchText": text}),
        );
        for tool in ["Bash", "apply_patch"] {
            let input = serde_json::json!({"command": text, "workdir": text});
            if let facet::apply_patch::PatchCall::Placed { paths, folders } =
                facet::apply_patch::classify(tool, &input)
            {
                for path in &paths {
                    let _ = facet::apply_patch::place(std::path::Path::new("/w"), &folders, path);
                }
            }
        }
        let _ = facet_core::tools::pattern_escape_prefixes(text);
    }
});
