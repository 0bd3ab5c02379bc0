#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! Escapes from the weakest confinement, a process group, in a test process that is
//! **not** a child subreaper.
//!
//! Why a binary of their own: these tests orphan a `setsid` escapee on purpose. In a
//! process that is a subreaper (every other tree test makes its process one), the
//! orphan is re-parented to the test process, and a concurrent subreaper-confined
//! test whose leader has just exited rightly claims it as its own orphan
//! (`orphans::claimed_by`) and kills it: the escapee vanished under
//! `a_setsid_escapee_is_caught_by_its_marker` in a soak run. Here orphans go to init,
//! as they do for a host that never asked for a subreaper, which is the case these
//! tests are about. Do not merge this file into another test binary.

use std::time::Duration;

use agent_exec_runtime::process::{Confinement, ProcessTree, Sweep};
use agent_exec_runtime::procfs;
use test_support::procfs::{with_cmdline, with_env};

const GRACE: Duration = Duration::from_millis(300);

/// `sh -c script` in a process group, the only confinement asked for.
fn sh_confined(script: &str, limit: Confinement) -> ProcessTree {
    let mut command = agent_exec_runtime::spawn::LeaderCommand::new("sh");
    command.arg("-c").arg(script);
    command.stdin(agent_exec_runtime::spawn::Stdio::null());
    let tree = ProcessTree::spawn_confined(command, limit).expect("spawn sh");
    assert_eq!(
        tree.confinement(),
        limit,
        "a process group is always available"
    );
    tree
}

#[tokio::test]
async fn a_setsid_escapee_is_caught_by_its_marker() {
    // New session and group, orphaned: neither the group nor parentage reaches it.
    let mut tree = sh_confined("(setsid sleep 1000 &) ; exit 0", Confinement::ProcessGroup);
    tree.wait_leader().await.unwrap();
    let marker = tree.marker().to_vec();
    let leader = tree.leader_pid();
    // Wait until the escape is complete: the marked `sleep` runs outside the group.
    let escaped_now = || -> Vec<i32> {
        with_env(&marker)
            .into_iter()
            .filter(|&pid| procfs::stat(pid).is_some_and(|s| s.pgrp != leader))
            .filter(|&pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
            .collect()
    };
    for _ in 0..2000 {
        if !escaped_now().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(escaped_now().len(), 1, "it left the group");
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    // The group is empty, but the pid-range proof must not call the tree gone: the
    // escapee's pid was allocated after the leader's and it carries the marker.
    assert_eq!(done.sweep, Sweep::FullScan, "{done:?}");
    assert_eq!(with_env(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn setsid_env_clearing_orphan_escapes_documented_limit() {
    // Documented limit of the weakest confinement (see `process` module docs): new
    // session, no marker, parent gone before termination, and no subreaper or cgroup.
    // Nothing in /proc links it to the tree any more. This test shows the limit and
    // then cleans up by hand; the tests below show the two mechanisms that close it.
    let unique = format!("1000.{}{}", std::process::id(), line!());
    let mut tree = sh_confined(
        &format!("(setsid env -i sleep {unique} &) ; exit 0"),
        Confinement::ProcessGroup,
    );
    tree.wait_leader().await.unwrap();
    let marker = tree.marker().to_vec();
    // Wait until it has become the marker-less `sleep` (before its last exec it still
    // carries the marker, and would rightly be caught).
    let escaped_now = || -> Vec<i32> {
        with_cmdline(&unique)
            .into_iter()
            .filter(|&pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
                    && !procfs::environ_contains(pid, &marker)
            })
            .collect()
    };
    for _ in 0..2000 {
        if !escaped_now().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let escaped = escaped_now();
    assert_eq!(escaped.len(), 1, "the escapee must be running");
    let done = tree.terminate(GRACE).await;
    assert!(
        done.all_gone(),
        "the tree as far as it can be seen is gone: {done:?}"
    );
    assert_eq!(with_cmdline(&unique), escaped, "the limit: it survives");
    for pid in escaped {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    }
}
