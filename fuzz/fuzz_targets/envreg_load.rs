//! Fuzz the registry record loader: arbitrary bytes as a record file of any kind, as
//! `envreg.yaml`, and as a document for `env_get`. Nothing may panic, hang or blow up
//! memory (alias bombs are cut by the parser limits set in `load::yaml_options`).
#![no_main]

use envreg_core::RecordKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let kind = RecordKind::ALL[usize::from(selector) % RecordKind::ALL.len()];
    let (record, diagnostics) =
        envreg_core::load::parse_record_bytes(kind, "fuzz", "fuzz/fuzz.yaml", body.to_vec());
    // A loaded record has no fatal finding and claims the file's id.
    if let Some(record) = record {
        assert_eq!(record.id(), "fuzz");
        let _ = record.document();
    }
    for d in diagnostics {
        assert!(!d.code.is_empty());
    }
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = envreg_core::Config::parse(text);
        // As the registry reads it: unknown keys located and judged too.
        let (_, findings) = envreg_core::Config::parse_checked(text);
        for d in findings {
            assert_eq!(d.file.as_deref(), Some("envreg.yaml"));
        }
        let _ = envreg_core::load::parse_document(text);
    }
});
