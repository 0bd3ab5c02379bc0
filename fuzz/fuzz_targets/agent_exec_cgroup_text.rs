//! What agent-exec reads from the cgroup file system, written by others: a folder's
//! name (any process that may create cgroups there chooses it), `cgroup.events`,
//! `/proc/self/mountinfo` and `/proc/<pid>/cgroup`. Every parser is total: an answer or
//! `None`, never a panic; a name it accepts as a run cgroup's is one we could make.
#![no_main]

use agent_exec_runtime::cgroup::{cgroup2_mount, events_populated, owner_of, unified_path};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((pid, _ticks)) = owner_of(text) {
        assert!(pid >= 0 && text.starts_with("agent-exec-"), "{text:?}");
        assert!(
            text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
            "a run cgroup name is digits, dashes and `probe`: {text:?}"
        );
    }
    let _ = events_populated(text);
    let _ = cgroup2_mount(text);
    let _ = unified_path(text);
});
