//! The copilot JSON-lines parser: arbitrary bytes, split into lines and fed to one
//! parser in order (as the driver does, so its state — open tools, streamed messages —
//! is exercised too), must never panic; every tool detail stays bounded. The usage-file
//! reader takes the same bytes as a file's content. The session handle it yields (the
//! `result` line's `sessionId` when the attempt named none) is always a UUID.
#![no_main]

use agent_exec_backends::agent_program::{StreamParser as _, is_uuid};
use agent_exec_backends::copilot::{CopilotStream, MAX_DETAIL, usage_from_file};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parser = CopilotStream::new(None);
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        parser.line(line, &mut events);
        if let Some(handle) = parser.session() {
            assert!(is_uuid(handle));
        }
    }
    for event in &events {
        assert!(event.detail.len() <= MAX_DETAIL + '…'.len_utf8());
    }
    let _ = (parser.verdict(), parser.usage());
    let _ = usage_from_file(data);
});
