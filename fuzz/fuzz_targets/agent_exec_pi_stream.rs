//! The pi `--mode json` line parser and its fold: any bytes, split into lines, never
//! panic, and the verdict and usage can always be read. The session handle: whatever
//! the `session` header's id, the only handle the parser gives the driver
//! (`StreamParser::session`) is a checked pi session id, and matching a listed file
//! name against one never panics.
#![no_main]
use agent_exec_backends::agent_program::StreamParser;
use agent_exec_backends::pi::{PiStream, check_handle, session_file_matches};
use agent_exec_contract::check_session_handle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = PiStream::keeping_session();
    let mut events = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        stream.line(line, &mut events);
        if let Some(handle) = stream.session() {
            assert!(check_handle(handle).is_ok() && check_session_handle(handle).is_ok());
        }
    }
    let _ = (stream.verdict(), stream.usage(), stream.ended());
    // The first line as a listed file name, the second as a handle.
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(2, '\n');
    let (name, id) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if session_file_matches(name, id) {
        assert!(name.ends_with(".jsonl") && !name.contains('/'));
    }
});
