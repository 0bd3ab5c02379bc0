//! The OpenAI-compatible chat-completions stream decoder (SSE framing + chunk JSON):
//! arbitrary bytes, split into arbitrary chunks, must never panic, and a decoded stream
//! is complete only if it saw `[DONE]` or a finish reason.
#![no_main]

use agent_exec_backends::sse::decode_chunks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk size, so boundaries land everywhere.
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let size = usize::from(split).max(1);
    let chunks: Vec<&[u8]> = body.chunks(size).collect();
    let decoded = decode_chunks(&chunks, 1 << 20);
    if decoded.is_complete() {
        assert!(decoded.stream.done || decoded.stream.finish_reason.is_some());
    }
    let text: String = decoded
        .events
        .iter()
        .filter(|e| e.kind == agent_exec_contract::EventKind::TextDelta)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(text, decoded.stream.text, "events carry exactly the text");
});
