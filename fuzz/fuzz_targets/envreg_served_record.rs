//! `envreg hook` reads what servers recorded about the registry they serve
//! (`envreg_core::served`): file names in a folder, `/proc/PID/stat` text and the
//! record's JSON. Whatever those hold, the parsers answer or refuse without panicking,
//! and a record is only ever an absolute path.
#![no_main]

use envreg_core::served::{parse_file_name, parse_record, parse_stat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_stat(text);
        let _ = parse_file_name(text);
    }
    if let Some(path) = parse_record(data) {
        assert!(path.is_absolute(), "{path:?}");
    }
});
