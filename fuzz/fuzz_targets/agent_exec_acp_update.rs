//! What an ACP agent writes to us: arbitrary bytes, split into lines, go through the
//! `session/update` mapper exactly as the recorded-stream test and the bench feed it,
//! and every line that decodes as a permission request is judged by a tool policy;
//! nothing may panic, and every tool end has its start before it.
#![no_main]

use agent_exec_backends::acp::policy::Policy;
use agent_exec_backends::acp::updates::UpdateMapper;
use agent_exec_contract::{EventKind, ToolPolicy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut mapper = UpdateMapper::new();
    let mut events = Vec::new();
    let policy = Policy::new(&ToolPolicy {
        profile: "workspace".into(),
        allowlist: Vec::new(),
    });
    for line in data.split(|&b| b == b'\n') {
        mapper.notification_line(line, &mut events);
        if let (Ok(policy), Ok(value)) = (&policy, serde_json::from_slice::<serde_json::Value>(line))
            && let Some(params) = value.get("params")
            && let Ok(request) = serde_json::from_value(params.clone())
        {
            let _ = policy.decide(&request);
        }
    }
    let _ = (mapper.text(), mapper.open_tools(), mapper.context());
    let mut open = 0i64;
    for event in &events {
        match event.kind {
            EventKind::ToolExecStart => open += 1,
            EventKind::ToolExecEnd => {
                open -= 1;
                assert!(open >= 0, "a tool end without its start");
            }
            _ => {}
        }
    }
});
