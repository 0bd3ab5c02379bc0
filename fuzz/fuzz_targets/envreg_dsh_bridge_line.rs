//! Fuzzes what the dsh plugin sends `envreg dsh-bridge`: one request line through
//! `envreg::dsh_bridge::parse_line`. Must never panic; a refused line always carries an
//! `INVALID_ARGUMENT` error whose protocol object has a `text` starting with the code.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(bad) = envreg::dsh_bridge::parse_line(text) {
        let object = envreg::dsh_bridge::error_object(&bad.error);
        assert!(
            object["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("INVALID_ARGUMENT: "))
        );
    }
});
