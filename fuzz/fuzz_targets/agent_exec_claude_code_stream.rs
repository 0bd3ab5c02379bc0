//! The claude-code stream-json parser: arbitrary bytes, split into lines and fed to one
//! parser in order (as the driver does, so its state — open tools, streamed message —
//! is exercised too), must never panic. The session handle it yields (the init line's
//! `session_id`, reported by the driver and later passed as `--resume=ID`): a handle
//! the contract's check accepts is never an option or a path, and a UUID always passes.
#![no_main]

use agent_exec_backends::agent_program::{StreamParser as _, is_uuid};
use agent_exec_backends::claude_code::ClaudeCodeStream;
use agent_exec_contract::check_session_handle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parser = ClaudeCodeStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        parser.line(line, &mut events);
        if let Some(handle) = parser.session() {
            assert!(!handle.is_empty());
            if check_session_handle(handle).is_ok() {
                assert!(!handle.starts_with('-') && !handle.contains('/'));
            }
            if is_uuid(handle) {
                assert!(check_session_handle(handle).is_ok());
            }
        }
    }
    let _ = (parser.verdict(), parser.usage());
});
