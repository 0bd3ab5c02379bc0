//! What a browser sends `envreg ui` is outside input: the matrix's query fields
//! (`RawFilter::parse`), the `Host` header (`envreg_mcp::http::is_loopback_host`) and
//! the path segments that become links and record lookups. None may panic; a parsed
//! filter keeps its invariants (page from 1, text lower-cased and at least 2 chars).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\n').map(str::to_owned);
    let raw = envreg_ui::matrix::RawFilter {
        tier: parts.next(),
        platform: parts.next(),
        q: parts.next(),
        page: parts.next(),
    };
    if let Ok(filter) = raw.parse() {
        assert!(filter.page >= 1);
        if let Some(q) = &filter.text {
            assert!(q.chars().count() >= 2);
            assert_eq!(q, &q.to_lowercase());
        }
    }
    let _ = envreg_mcp::http::is_loopback_host(&text);
    let segment = envreg_ui::links::segment(&text);
    assert!(!segment.contains('/'));
    let _ = envreg_ui::links::record_of_file(&text);
});
