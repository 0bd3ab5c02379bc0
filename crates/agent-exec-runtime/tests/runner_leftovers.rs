#![allow(clippy::unwrap_used)]
//! `terminate_runner_leftovers`, alone in its own test binary: it terminates every
//! tree of this process's identity, so no other test's trees may run beside it.

use std::time::Duration;

use agent_exec_runtime::process::{Confinement, ProcessTree, become_subreaper};
use agent_exec_runtime::procfs;
use test_support::procfs::with_env;

const GRACE: Duration = Duration::from_millis(300);

/// What a runner that died left running is found by its marker — the runner's pid
/// *and* start time — and terminated; a runner identity that differs only in its start
/// time (a reused pid) touches nothing.
#[tokio::test]
async fn the_leftovers_of_a_runner_are_found_by_its_identity() {
    become_subreaper().unwrap();
    let mut command = agent_exec_runtime::spawn::LeaderCommand::new("sh");
    command.arg("-c").arg("sleep 1000 & wait");
    let mut tree = ProcessTree::spawn_confined(command, Confinement::ProcessGroup).unwrap();
    for _ in 0..2000 {
        if tree.live_members().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let marker = tree.marker().to_vec();
    let me = std::process::id();
    let ticks = procfs::stat(i32::try_from(me).unwrap()).unwrap().start_time;
    assert!(
        marker.starts_with(&agent_exec_runtime::process::runner_marker_prefix(
            me, ticks
        )),
        "the marker names this runner: {}",
        String::from_utf8_lossy(&marker)
    );
    let other = tokio::task::spawn_blocking(move || {
        agent_exec_runtime::terminate_runner_leftovers(me, ticks + 1, GRACE)
    })
    .await
    .unwrap();
    assert_eq!(
        other,
        (0, 0),
        "another process with the same pid owns nothing here"
    );
    assert_eq!(with_env(&marker).len(), 2, "both still alive");
    let (found, left) = tokio::task::spawn_blocking(move || {
        agent_exec_runtime::terminate_runner_leftovers(me, ticks, GRACE)
    })
    .await
    .unwrap();
    assert_eq!((found, left), (2, 0));
    assert!(with_env(&marker).is_empty());
    let _ = tree.terminate(GRACE).await;
}
