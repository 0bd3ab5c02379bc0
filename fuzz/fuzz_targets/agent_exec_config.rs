//! The agent-exec TOML config loader: arbitrary text must parse or give an error that
//! names the file, never panic; a config that loads builds a registry.
#![no_main]

use std::path::Path;

use agent_exec_backends::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("/fuzz/config.toml");
    match Config::parse(file, text) {
        Ok(config) => {
            let _ = config.registry();
        }
        Err(e) => assert!(e.to_string().starts_with("config /fuzz/config.toml: ")),
    }
});
