//! A request handed to `agent-exec run --request` (Go's JSON, with the
//! `output_schema` extension): decoding never panics, a refusal always names what is
//! wrong, and whatever decodes survives its own re-encoding unchanged. Proptest twin:
//! `crates/agent-exec-contract/tests/proptest_wire.rs`.
#![no_main]

use agent_exec_contract::decode_request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_request(data) {
        Ok(request) => {
            let text = serde_json::to_vec(&request).expect("a decoded request encodes");
            let again = decode_request(&text).expect("our own encoding decodes");
            assert_eq!(again, request);
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
