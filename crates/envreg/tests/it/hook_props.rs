//! Property twin of the fuzz target `envreg_hook_envelope`: the hook's verdict on
//! arbitrary bytes and on generated envelopes, through the library function the
//! binary calls (no process per case). Never a panic, never `allow`, and a write that
//! could need approval is never waved through when the registry cannot be read.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use envreg::hook::{Dialect, answer, verdict};
use envreg_core::host_gate::GateVerdict;
use proptest::prelude::*;
use serde_json::json;

const NO_REGISTRY: &str = "/nonexistent/envreg-props-registry";

fn decisions_are_ask_or_deny(v: &GateVerdict) {
    if let Some(text) = answer(v, Dialect::ClaudeCode) {
        assert!(text.contains("\"permissionDecision\":\"ask\""), "{text}");
    }
    if let Some(text) = answer(v, Dialect::Codex) {
        assert!(text.contains("\"permissionDecision\":\"deny\""), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic_and_unreadable_ones_fail_closed(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        let v = verdict(&data, Some(Path::new(NO_REGISTRY)));
        decisions_are_ask_or_deny(&v);
        if serde_json::from_slice::<serde_json::Value>(&data).is_err() {
            prop_assert!(!matches!(v, GateVerdict::NoOpinion));
        }
    }

    #[test]
    fn a_gated_write_is_never_waved_through_without_a_registry(
        server in "[a-z_-]{1,20}",
        qualified in any::<bool>(),
        kind in prop_oneof![Just("environment"), Just("deployment")],
        record in prop_oneof![
            Just(json!({"id": "prod", "schemaVersion": 1, "name": "P", "tier": "production", "platform": "kubernetes"})),
            Just(json!({"id": "x"})),
            Just(json!(null)),
            "[ -~]{0,40}".prop_map(|s| json!(s)),
        ],
        dry_run in prop_oneof![Just(None), Just(Some(json!(false))), Just(Some(json!("true"))), Just(Some(json!(0)))],
        delete in any::<bool>(),
        id in "[ -~]{0,20}",
    ) {
        let tool = match (delete, qualified) {
            (false, false) => "env_save".to_owned(),
            (true, false) => "env_delete".to_owned(),
            (false, true) => format!("mcp__{server}__env_save"),
            (true, true) => format!("mcp__{server}__env_delete"),
        };
        let mut input = if delete {
            json!({"kind": kind, "id": id, "confirm": true})
        } else {
            json!({"kind": kind, "record": record})
        };
        if let (Some(flag), false) = (dry_run, delete) {
            input["dryRun"] = flag;
        }
        let event = json!({"hook_event_name": "PreToolUse", "tool_name": tool,
                           "tool_input": input, "cwd": "/"});
        let v = verdict(event.to_string().as_bytes(), Some(Path::new(NO_REGISTRY)));
        decisions_are_ask_or_deny(&v);
        prop_assert!(!matches!(v, GateVerdict::NoOpinion), "{event}: {v:?}");
    }
}
