//! The claude-code stream-json parser: arbitrary bytes, split into lines and fed to one
//! parser in order (as the driver does, so its state — open tools, streamed message —
//! is exercised too), must never panic.
#![no_main]

use agent_exec_backends::agent_program::StreamParser as _;
use agent_exec_backends::claude_code::ClaudeCodeStream;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parser = ClaudeCodeStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        parser.line(line, &mut events);
    }
    let _ = (parser.verdict(), parser.usage());
});
