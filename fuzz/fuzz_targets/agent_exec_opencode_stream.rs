//! The `opencode run --format json` stream: arbitrary bytes, split into lines, go
//! through the pure line parser and through `OpenCodeStream` (the fold into a verdict,
//! usage, events and the session handle) exactly as the driver feeds them; nothing may
//! panic. A handle the backend would put in argv (`--session=ID`) is never an option
//! or a path, and always passes the contract's check.
#![no_main]

use agent_exec_backends::agent_program::StreamParser as _;
use agent_exec_backends::opencode::{OpenCodeStream, is_session_id, parse_line};
use agent_exec_contract::check_session_handle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = OpenCodeStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_line(line);
        stream.line(line, &mut events);
        let _ = stream.verdict();
        if let Some(handle) = stream.session() {
            assert!(!handle.is_empty());
            if is_session_id(handle) {
                assert!(!handle.starts_with('-') && !handle.contains('/'));
                assert!(check_session_handle(handle).is_ok());
            }
        }
    }
    let _ = stream.usage();
});
