//! Contract JSON from a peer (a Go caller, a journal row): decoding never panics, and
//! whatever decodes survives its own re-encoding unchanged.
#![no_main]

use agent_exec_contract::{BackendDescriptor, ContractRequest, ContractResult, Error, Event};
use libfuzzer_sys::fuzz_target;

fn round_trip<T>(data: &[u8])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    if let Ok(value) = serde_json::from_slice::<T>(data) {
        let text = serde_json::to_vec(&value).expect("a decoded value encodes");
        let again: T = serde_json::from_slice(&text).expect("our own encoding decodes");
        assert_eq!(again, value);
    }
}

fuzz_target!(|data: &[u8]| {
    round_trip::<ContractRequest>(data);
    round_trip::<ContractResult>(data);
    round_trip::<Event>(data);
    round_trip::<Error>(data);
    round_trip::<BackendDescriptor>(data);
});
