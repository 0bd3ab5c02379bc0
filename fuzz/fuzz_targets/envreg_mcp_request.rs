//! Fuzzes what an MCP peer sends envreg: one stdio line through the guarded decoder
//! (`envreg_mcp::stdio::decode_line`), and, when the line is JSON, its value as the
//! arguments of every tool (`check_arguments`) and as a tool result (`render_line`).
//! Must never panic; a refused line must always get a JSON-RPC error reply.
#![no_main]

use envreg_core::tools;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(reply) = envreg_mcp::stdio::decode_line(text) {
        let value: serde_json::Value = serde_json::from_slice(&reply).expect("reply is JSON");
        assert!(value["error"]["code"].is_i64());
    }
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        for name in tools::TOOL_NAMES {
            let _ = tools::check_arguments(name, &value);
            let _ = tools::render_line(name, &value, &value);
        }
    }
});
