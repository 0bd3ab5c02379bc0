//! The `codex exec --json` line parser: arbitrary bytes, split into lines, must never
//! panic.
#![no_main]

use agent_exec_backends::codex::parse_line;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        let _ = parse_line(line);
    }
});
