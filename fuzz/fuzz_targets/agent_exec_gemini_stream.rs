//! The `gemini --output-format stream-json` stream: arbitrary bytes, split into lines,
//! go through the pure line parser and through `GeminiStream` (the fold into a
//! verdict, usage, events and the session handle) exactly as the driver feeds them;
//! nothing may panic. A handle the contract's check accepts is never an option or a
//! path, and a UUID (what `--resume` is given) always passes that check.
#![no_main]

use agent_exec_backends::agent_program::{StreamParser as _, is_uuid};
use agent_exec_backends::gemini::{GeminiStream, parse_line};
use agent_exec_contract::check_session_handle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = GeminiStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_line(line);
        stream.line(line, &mut events);
        let _ = stream.verdict();
        if let Some(handle) = stream.session() {
            assert!(!handle.is_empty());
            if check_session_handle(handle).is_ok() {
                assert!(!handle.starts_with('-') && !handle.contains('/'));
            }
            if is_uuid(handle) {
                assert!(check_session_handle(handle).is_ok());
            }
        }
    }
    let _ = stream.usage();
});
