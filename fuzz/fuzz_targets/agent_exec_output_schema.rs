//! The two outside inputs of structured output: the caller's `output_schema` (any JSON,
//! compiled by `structured::check_schema`) and the model's final text (checked against
//! it by `Schema::check_text`). Input: schema bytes, a newline, the text. Neither ever
//! panics; every refusal says why, bounded (a reason never quotes a whole 100 KB
//! answer); a text that passes is JSON. Proptest twin:
//! `crates/agent-exec-runtime/tests/proptest_structured.rs`.
#![no_main]

use agent_exec_runtime::structured::check_schema;
use libfuzzer_sys::fuzz_target;

/// A reason's bound: the module's 600 bytes of validator message, plus its framing.
const MAX_REASON_BYTES: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let cut = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (schema, text) = (&data[..cut], data.get(cut + 1..).unwrap_or_default());
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(schema) else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    match check_schema(&schema) {
        Err(why) => assert!(!why.is_empty() && why.len() <= MAX_REASON_BYTES, "{why}"),
        Ok(compiled) => match compiled.check_text(&text) {
            Ok(()) => assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok()),
            Err(why) => assert!(!why.is_empty() && why.len() <= MAX_REASON_BYTES, "{why}"),
        },
    }
});
