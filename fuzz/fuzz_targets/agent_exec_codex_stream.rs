//! The `codex exec --json` stream: arbitrary bytes, split into lines, go through the
//! pure line parser and through `CodexStream` (the fold into a verdict, usage and
//! events) exactly as the driver feeds them; nothing may panic.
#![no_main]

use agent_exec_backends::agent_program::StreamParser as _;
use agent_exec_backends::codex::{CodexStream, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = CodexStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_line(line);
        stream.line(line, &mut events);
        let _ = stream.verdict();
    }
    let _ = stream.usage();
});
