//! The CLI's field locator (`envreg::snippet::locate`) reads registry files, which are
//! outside input: whatever bytes and field path it gets, it must answer or say "not
//! found", never panic, and a found span must be on a real line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First line: the field path; the rest: the file.
    let text = String::from_utf8_lossy(data);
    let (path, body) = text.split_once('\n').unwrap_or((&text, ""));
    if let Some(span) = envreg::snippet::locate(body, path) {
        assert!(span.line >= 1 && span.line <= body.lines().count().max(1));
    }
});
