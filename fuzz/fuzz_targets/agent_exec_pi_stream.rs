//! The pi `--mode json` line parser and its fold: any bytes, split into lines, never
//! panic, and the verdict and usage can always be read.
#![no_main]
use agent_exec_backends::agent_program::StreamParser;
use agent_exec_backends::pi::PiStream;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = PiStream::new();
    let mut events = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        stream.line(line, &mut events);
    }
    let _ = (stream.verdict(), stream.usage(), stream.ended());
});
