//! The pi `--mode json` line parser and its fold: any bytes, split into lines, never
//! panic, and the verdict and usage can always be read. The session handle: whatever
//! the `session` header's id, only a checked pi session id is kept and reported, and
//! matching a listed file name against it never panics.
#![no_main]
use agent_exec_backends::agent_program::StreamParser;
use agent_exec_backends::pi::{PiStream, check_handle, session_file_matches};
use agent_exec_contract::{SessionReporter, check_session_handle};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (reporter, mut reported) = SessionReporter::channel();
    let mut stream = PiStream::with_reporter(reporter);
    let mut events = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        stream.line(line, &mut events);
    }
    let _ = (stream.verdict(), stream.usage(), stream.ended());
    if let Some(id) = stream.session_id() {
        assert!(check_handle(id).is_ok());
    }
    drop(stream);
    while let Ok(handle) = reported.try_recv() {
        assert!(check_handle(&handle).is_ok() && check_session_handle(&handle).is_ok());
    }
    // The first line as a listed file name, the second as a handle.
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(2, '\n');
    let (name, id) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if session_file_matches(name, id) {
        assert!(name.ends_with(".jsonl") && !name.contains('/'));
    }
});
