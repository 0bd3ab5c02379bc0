//! `facet dsh-bridge` on arbitrary lines: a configured bridge is fed the input split
//! at newlines (requests, approval answers, garbage, in any order). It must never
//! panic, and every line it writes must be one JSON object answering an id (or
//! `null` for a line with none).
//! The CI twin is crates/facet/tests/it/dsh_bridge_props.rs.
#![no_main]

use facet::dsh_bridge::Bridge;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let state = std::env::temp_dir().join("facet-fuzz-dsh-bridge");
    if std::fs::create_dir_all(&state).is_err() {
        return;
    }
    let mut bridge = Bridge::with_state_dir(state);
    let configure = br#"{"id":0,"method":"configure","params":{"config":{"mode":"ask"}}}"#;
    let _ = bridge.handle(configure);
    for line in data.split(|byte| *byte == b'\n') {
        for answer in bridge.handle(line) {
            let value: Value = serde_json::from_str(&answer).expect("an answer is JSON");
            assert!(value.get("id").is_some(), "{answer}");
        }
    }
});
