//! Credential redaction of streamed and whole text (values, URL user-info): arbitrary
//! text, split into arbitrary pieces, must never panic, and the streamed output never
//! shows the configured secret.
#![no_main]

use agent_exec_backends::redact::StreamRedactor;
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "sk-fuzz-secret-42";

fuzz_target!(|data: &[u8]| {
    // The first byte picks the piece size, so boundaries land everywhere.
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let size = usize::from(split).max(1);
    let mut redactor = StreamRedactor::of_values(vec![SECRET.to_owned()]);
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(size) {
        out.push_str(&redactor.push(&piece.iter().collect::<String>()));
    }
    out.push_str(&redactor.finish());
    assert!(!out.contains(SECRET), "{out:?}");
    let whole = redactor.redact_whole(&text);
    assert!(!whole.contains(SECRET), "{whole:?}");
    let _ = agent_exec_contract::redact::redact_url_credentials(&text);
    let _ = agent_exec_contract::redact::open_url_authority(&text);
});
