//! The hook's whole answer path on arbitrary stdin bytes, in both dialects:
//! envelope parsing, apply_patch extraction, the decision and the state store.
//! It must never panic, and whatever it answers must be one of the host's shapes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // State goes to a throwaway folder so the fuzzer never touches a real one.
    let state = std::env::temp_dir().join("facet-fuzz-state");
    for dialect in [facet::envelope::Dialect::ClaudeCode, facet::envelope::Dialect::Codex] {
        let config = facet::hook::HookConfig::with_state_dir(dialect, state.clone());
        let answer = facet::hook::answer(data, &config);
        assert!(answer.exit_code == 0 || answer.exit_code == 1);
        if let Some(stdout) = answer.stdout {
            let value: serde_json::Value = serde_json::from_str(&stdout).expect("answer is JSON");
            assert!(value.get("hookSpecificOutput").is_some());
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = facet::apply_patch::patch_paths(text);
    }
});
