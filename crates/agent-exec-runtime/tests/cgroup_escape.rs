#![allow(clippy::unwrap_used)]
//! A program that hides processes in a cgroup it makes inside its own run cgroup
//! (issue 20, finding 4). Nothing stops it — no controller is enabled, and the run
//! cgroup is writable by whoever may write its `cgroup.procs` — so the runtime must
//! treat the run as the whole subtree: kill through `cgroup.kill`, end on
//! `populated 0`, remove the folders deepest first.
//!
//! Before the fix, the run cgroup's own `cgroup.procs` was the member list: the hidden
//! `sleep` was not seen, outlived the run, and the folders stayed.

use std::path::Path;
use std::time::Duration;

use agent_exec_runtime::process::{Confinement, ProcessTree, become_subreaper};
use test_support::procfs::{gone, with_cmdline};

const GRACE: Duration = Duration::from_millis(300);

/// The shell lines that make `$cg/hide/deeper` inside the program's own cgroup and
/// start `sleep TOKEN` there, returning once the kernel lists it there.
fn hide_a_sleeper(token: &str) -> String {
    format!(
        "m=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -n 1 | cut -d' ' -f5)\n\
         cg=$m$(sed -n 's/^0:://p' /proc/self/cgroup)\n\
         mkdir \"$cg/hide\" \"$cg/hide/deeper\" || exit 9\n\
         sh -c 'echo $$ > \"$1/cgroup.procs\" && exec sleep {token}' _ \"$cg/hide/deeper\" &\n\
         until grep -q . \"$cg/hide/deeper/cgroup.procs\"; do :; done\n"
    )
}

/// A `sleep` argument no other process has: its command line is the token.
fn token(n: u32) -> String {
    format!("{}.{}", 1000 + n, std::process::id())
}

fn spawn(script: &str) -> Option<ProcessTree> {
    become_subreaper().unwrap();
    if Confinement::available() != Confinement::Cgroup {
        // process_tree.rs's `cgroup_per_run_is_available_here` fails loudly for this.
        return None;
    }
    let mut command = agent_exec_runtime::spawn::LeaderCommand::new("sh");
    command.arg("-c").arg(script);
    command.stdin(agent_exec_runtime::spawn::Stdio::null());
    let tree = ProcessTree::spawn(command).unwrap();
    assert_eq!(tree.confinement(), Confinement::Cgroup);
    Some(tree)
}

fn folders_under(dir: &Path) -> usize {
    if !dir.exists() {
        return 0;
    }
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| folders_under(&e.path()))
        .sum::<usize>()
        + 1
}

#[tokio::test]
async fn a_process_hidden_in_a_nested_cgroup_is_killed_when_the_program_exits() {
    let token = token(1);
    let Some(mut tree) = spawn(&format!("{}exit 0", hide_a_sleeper(&token))) else {
        return;
    };
    let dir = tree.cgroup_dir().unwrap().to_owned();
    assert!(tree.wait_leader().await.unwrap().success());
    assert_eq!(
        folders_under(&dir),
        3,
        "the run's cgroup, hide, hide/deeper"
    );
    assert_eq!(with_cmdline(&token).len(), 1, "the sleeper runs, hidden");
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert_eq!(
        done.leftovers, 1,
        "the hidden sleeper is a leftover: {done:?}"
    );
    assert_eq!(done.nested_cgroups, 2, "{done:?}");
    let note = done.leftovers_note("sh").unwrap();
    assert!(
        note.contains("2 cgroup(s) inside the run's cgroup"),
        "{note}"
    );
    assert!(
        with_cmdline(&token).is_empty(),
        "the sleeper outlived its run"
    );
    assert_eq!(folders_under(&dir), 0, "every folder of the run is removed");
}

/// The cancel (and deadline) path: the program is still running, itself moved into a
/// nested cgroup. Before the fix the hidden process was killed but `hide/deeper` and
/// `hide` stayed, and the run cgroup with them.
#[tokio::test]
async fn canceling_a_program_that_hid_itself_leaves_no_process_and_no_folder() {
    let token = token(2);
    let script = format!(
        "{}m=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -n 1 | cut -d' ' -f5)\n\
         cg=$m$(sed -n 's/^0:://p' /proc/self/cgroup)\n\
         echo $$ > \"$cg/hide/cgroup.procs\"\n\
         trap '' TERM\n\
         exec sleep 1001",
        hide_a_sleeper(&token)
    );
    let Some(mut tree) = spawn(&script) else {
        return;
    };
    let dir = tree.cgroup_dir().unwrap().to_owned();
    let leader = tree.leader_pid();
    // The leader has moved itself out of the run cgroup's own list, and exec'd: until
    // then its own command line (the script) names the token too (seen as 2 here once
    // under load).
    for _ in 0..4000 {
        let moved = std::fs::read_to_string(dir.join("hide/cgroup.procs"))
            .is_ok_and(|t| t.lines().any(|l| l == leader.to_string()));
        if moved && with_cmdline(&token).len() == 1 {
            break;
        }
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(with_cmdline(&token).len(), 1);
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert!(
        done.killed,
        "the leader ignores SIGTERM: cgroup.kill ends it: {done:?}"
    );
    assert_eq!(done.nested_cgroups, 2, "{done:?}");
    assert!(
        with_cmdline(&token).is_empty(),
        "the sleeper outlived its run"
    );
    assert!(gone(leader));
    assert_eq!(folders_under(&dir), 0, "every folder of the run is removed");
}
