#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! Whole-tree termination against real process trees built with `sh`.
//!
//! Every check of "nothing left" scans `/proc` for the tree's marker (and, where a
//! test makes a process drop the marker, for a unique command line).

use std::collections::HashSet;
use std::time::Duration;

use agent_exec_runtime::process::{Confinement, ProcessTree, Sweep, become_subreaper};
use agent_exec_runtime::procfs;
use test_support::procfs::{with_cmdline, with_env};

/// The tests of this binary run one at a time: the test process is every run's
/// subreaper, and a run that finishes rightly claims every orphan re-parented to
/// it — so a concurrent test's run would kill (and count) this test's deliberate
/// escapee. Runs that overlap on purpose do so inside one test.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const GRACE: Duration = Duration::from_millis(300);

/// `sh -c script` with the strongest confinement this machine gives.
fn sh(script: &str) -> ProcessTree {
    sh_confined(script, Confinement::Cgroup)
}

/// `sh -c script` confined at most by `limit`.
fn sh_confined(script: &str, limit: Confinement) -> ProcessTree {
    become_subreaper().expect("PR_SET_CHILD_SUBREAPER");
    let mut command = agent_exec_runtime::spawn::LeaderCommand::new("sh");
    command.arg("-c").arg(script);
    command.stdin(agent_exec_runtime::spawn::Stdio::null());
    let tree = ProcessTree::spawn_confined(command, limit).expect("spawn sh");
    assert_eq!(
        tree.confinement(),
        limit.min(Confinement::available()),
        "the tree got what the machine gives"
    );
    tree
}

/// Every mechanism this machine gives that catches a `setsid` + `env -i` orphan:
/// a cgroup per run where the system allows it, the subreaper everywhere (the tests
/// make themselves subreapers). `cgroup_per_run_is_available_here` says whether the
/// first is expected.
fn confinements() -> Vec<Confinement> {
    become_subreaper().expect("PR_SET_CHILD_SUBREAPER");
    [Confinement::Cgroup, Confinement::Subreaper]
        .into_iter()
        .filter(|&c| c <= Confinement::available())
        .collect()
}

/// Waits (bounded) until the tree has at least `n` live members.
async fn wait_members(tree: &mut ProcessTree, n: usize) {
    for _ in 0..2000 {
        if tree.live_members().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("tree never reached {n} members: {:?}", tree.live_members());
}

#[tokio::test]
async fn grandchildren_are_terminated_with_the_leader() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    let mut tree = sh("sleep 1000 & sh -c 'sleep 1000 & sleep 1000 & wait' & wait");
    wait_members(&mut tree, 5).await;
    let marker = tree.marker().to_vec();
    assert_eq!(with_env(&marker).len(), 5);
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert!(!done.killed, "sh and sleep honour SIGTERM: {done:?}");
    assert!(done.members_seen >= 5, "{done:?}");
    assert_eq!(with_env(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_after_the_grace_period() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    // `trap '' TERM` is inherited by the sleeps: nothing here honours SIGTERM.
    let mut tree = sh("trap '' TERM; sleep 1000 & sleep 1000 & wait");
    wait_members(&mut tree, 3).await;
    let marker = tree.marker().to_vec();
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert!(done.killed, "SIGKILL must have been needed: {done:?}");
    assert_eq!(with_env(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn a_double_forked_orphan_is_found_after_the_leader_exits() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    // The subshell forks the sleep and exits; the leader then exits too. The sleep is
    // an orphan, re-parented to us (the subreaper), still in the group.
    let mut tree = sh("(sleep 1000 &) ; exit 0");
    let status = tree.wait_leader().await.unwrap();
    assert!(status.success());
    let marker = tree.marker().to_vec();
    assert_eq!(with_env(&marker).len(), 1, "the orphan must exist");
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert_eq!(with_env(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn a_clean_exit_is_proved_gone_without_scanning_all_of_proc() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    // The proof gives way to the full scan under conditions a loaded machine can
    // create (too many pids allocated meanwhile, too long since the spawn), so it must
    // hold in at least one of several tries — and every try must end all gone.
    let mut proved = 0;
    for _ in 0..20 {
        let mut tree = sh_confined("exit 0", Confinement::Subreaper);
        assert!(tree.wait_leader().await.unwrap().success());
        let done = tree.terminate(GRACE).await;
        assert!(done.all_gone(), "{done:?}");
        assert!(!done.killed, "{done:?}");
        proved += usize::from(done.sweep == Sweep::PidRange);
    }
    assert!(
        proved > 0,
        "the pid-range proof was never used for a clean exit"
    );
}

#[tokio::test]
async fn a_leftover_in_the_group_is_never_proved_gone() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    // The leader exits leaving a grandchild in its group: `kill(-pgid, 0)` succeeds,
    // so the full scan must run, find it and terminate it.
    let mut tree = sh_confined("(sleep 1000 &) ; exit 0", Confinement::Subreaper);
    tree.wait_leader().await.unwrap();
    let marker = tree.marker().to_vec();
    let done = tree.terminate(GRACE).await;
    assert_eq!(done.sweep, Sweep::FullScan, "{done:?}");
    assert!(done.all_gone(), "{done:?}");
    assert!(done.members_seen >= 2, "{done:?}");
    assert_eq!(with_env(&marker), Vec::<i32>::new());
}

#[tokio::test]
async fn a_member_that_exec_s_without_the_marker_is_still_tracked() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    let unique = format!("1000.{}{}", std::process::id(), line!());
    let mut tree = sh(&format!("env -i sleep {unique} & wait"));
    wait_members(&mut tree, 2).await;
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert!(with_cmdline(&unique).is_empty());
}

#[tokio::test]
async fn a_thousand_cancel_cycles_leave_no_process_behind() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    let mut markers = HashSet::new();
    for cycle in 0..1000 {
        let mut tree = sh("sleep 1000 & sleep 1000 & wait");
        if cycle % 10 == 0 {
            // Some cycles cancel a fully formed tree, the rest a tree still forming.
            wait_members(&mut tree, 3).await;
        }
        markers.insert(tree.marker().to_vec());
        let done = tree.terminate(GRACE).await;
        assert!(done.all_gone(), "cycle {cycle}: {done:?}");
    }
    let leftovers: Vec<i32> = markers.iter().flat_map(with_env).collect();
    assert_eq!(leftovers, Vec::<i32>::new());
}

#[tokio::test]
async fn an_escapee_seen_while_watching_is_terminated_later() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    // It leaves the group and clears its environment, but its parent (the leader)
    // lives long enough for a watching scan to see it; then the leader exits.
    let unique = format!("1000.{}{}", std::process::id(), line!());
    let mut tree = sh(&format!("setsid env -i sleep {unique} & sleep 0.5; exit 0"));
    let status = tree
        .wait_leader_watching(Duration::from_millis(50))
        .await
        .unwrap();
    assert!(status.success());
    assert_eq!(with_cmdline(&unique).len(), 1, "the escapee is running");
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert!(
        with_cmdline(&unique).is_empty(),
        "remembered and terminated"
    );
}

// --- issue 14 §2: nothing of a run outlives it, whatever the program does. Each test
// runs under every mechanism this machine gives (a cgroup per run, the subreaper);
// on the code before them, the escapee survived under both.

/// A unique `sleep` argument: the only way to find a process that dropped every marker.
fn unique_sleep() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "1000.{}{:04}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// Waits (bounded) until the `sleep` with `needle` in its command line runs (not
/// only a shell that will start it).
async fn wait_running(needle: &str) {
    for _ in 0..2000 {
        if with_cmdline(needle).into_iter().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        }) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("`{needle}` never ran");
}

/// Runs `script` under `confinement` until its leader exits, waits for the escapee
/// `needle` to run, finishes the tree, and checks that nothing is left.
async fn leftovers_are_terminated(
    script: &str,
    needle: &str,
    confinement: Confinement,
) -> agent_exec_runtime::Termination {
    let mut tree = sh_confined(script, confinement);
    assert!(tree.wait_leader().await.unwrap().success());
    wait_running(needle).await;
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{confinement}: {done:?}");
    assert_eq!(done.confinement, confinement);
    assert!(
        done.leftovers >= 1,
        "{confinement}: the escapee counts as a leftover: {done:?}"
    );
    assert_eq!(
        with_cmdline(needle),
        Vec::<i32>::new(),
        "{confinement}: the escapee survived the run"
    );
    done
}

#[test]
fn cgroup_per_run_is_available_here() {
    // This machine (root, cgroup2 mounted) gives a cgroup per run; a machine that does
    // not must say so explicitly, or the cgroup half of the tests below would silently
    // not run.
    if std::env::var_os("AGENT_EXEC_TEST_NO_CGROUP").is_some() {
        assert_ne!(Confinement::available(), Confinement::Cgroup);
        return;
    }
    assert!(
        agent_exec_runtime::cgroup::availability().base.is_some(),
        "no cgroup per run on this machine ({}); set AGENT_EXEC_TEST_NO_CGROUP=1 to test \
         the subreaper only",
        agent_exec_runtime::cgroup::availability().detail
    );
}

#[tokio::test]
async fn the_issue_command_leaves_nothing_behind() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    for confinement in confinements() {
        let needle = unique_sleep();
        let script = format!("(env -i setsid sh -c 'sleep {needle}' &); echo started");
        leftovers_are_terminated(&script, &needle, confinement).await;
    }
}

#[tokio::test]
async fn a_double_fork_with_setsid_and_a_cleared_environment_is_terminated() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    for confinement in confinements() {
        let needle = unique_sleep();
        // setsid in the first fork, the sleep forked again and its parent gone.
        let script = format!("(env -i setsid sh -c '(sleep {needle} &) ; exit 0' &) ; exit 0");
        leftovers_are_terminated(&script, &needle, confinement).await;
    }
}

#[tokio::test]
async fn a_leftover_that_ignores_sigterm_is_killed() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    for confinement in confinements() {
        let needle = unique_sleep();
        // The run ends only once the leftover ignores SIGTERM: without the marker, a
        // loaded machine could deliver the SIGTERM before `trap` ran (the test once
        // failed that way, the leftover dead without the SIGKILL it asserts).
        let ready = tempfile::NamedTempFile::new().expect("marker");
        let ready = ready.into_temp_path();
        std::fs::remove_file(&ready).expect("marker path free");
        let mark = ready.display();
        let script = format!(
            "(env -i setsid sh -c 'trap \"\" TERM; : > {mark}; sleep {needle}' &) ; \
             while [ ! -e {mark} ]; do sleep 0.01; done; exit 0"
        );
        let done = leftovers_are_terminated(&script, &needle, confinement).await;
        assert!(done.killed, "{confinement}: SIGKILL was needed: {done:?}");
    }
}

#[tokio::test]
async fn overlapping_runs_each_terminate_their_own_escapee() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    // Library use: several runs in one process. Run A's escapee must be terminated when
    // A ends, and B's — still running — must be left alone until B ends.
    for confinement in confinements() {
        let (a, b) = (unique_sleep(), unique_sleep());
        let mut tree_b = sh_confined(
            &format!("(env -i setsid sh -c 'sleep {b}' &); sleep 1000"),
            confinement,
        );
        wait_running(&b).await;
        let mut tree_a = sh_confined(
            &format!("(env -i setsid sh -c 'sleep {a}' &); exit 0"),
            confinement,
        );
        tree_a.wait_leader().await.unwrap();
        wait_running(&a).await;
        let done_a = tree_a.terminate(GRACE).await;
        assert!(done_a.all_gone(), "{confinement}: {done_a:?}");
        assert!(with_cmdline(&a).is_empty(), "{confinement}: A's escapee");
        assert!(
            !with_cmdline(&b).is_empty(),
            "{confinement}: B's escapee belongs to B, still running"
        );
        let done_b = tree_b.terminate(GRACE).await;
        assert!(done_b.all_gone(), "{confinement}: {done_b:?}");
        assert!(with_cmdline(&b).is_empty(), "{confinement}: B's escapee");
    }
}

#[tokio::test]
async fn a_clean_run_in_a_cgroup_reports_no_leftovers_and_removes_its_cgroup() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    if Confinement::available() != Confinement::Cgroup {
        return; // `cgroup_per_run_is_available_here` fails loudly for this case
    }
    let mut tree = sh("exit 0");
    let dir = tree.cgroup_dir().expect("a cgroup").to_owned();
    assert!(dir.join("cgroup.procs").exists());
    assert!(tree.wait_leader().await.unwrap().success());
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    assert_eq!((done.leftovers, done.sweep), (0, Sweep::Cgroup), "{done:?}");
    assert!(!dir.exists(), "the run's cgroup is removed when it ends");
    assert_eq!(tree.cgroup_dir(), None);
}

// --- A leader whose main thread exited while its other threads run. `/proc/<pid>/stat`
// then shows the thread group's leader as `Z`, yet the process runs on and cannot be
// reaped. Node does this for a moment when SIGKILL tears down its threads on a loaded
// machine; a program can do it on purpose (`pthread_exit` in `main`). On the code before
// this test, such a leader counted as gone: the tree looked empty, nothing was signalled,
// the leader's status was never collected (settled as "processes [] still alive after
// SIGKILL"), and the thread ran on after the run.

#[tokio::test]
async fn a_leader_whose_main_thread_exited_still_runs_until_its_last_thread_is_gone() {
    let _one_at_a_time = ONE_AT_A_TIME.lock().await;
    let token = unique_sleep();
    // The worker thread runs for 30 s; the main thread exits at once.
    let script = format!(
        "exec python3 -c 'import ctypes, threading, time  # {token}\n\
         threading.Thread(target=time.sleep, args=(30,)).start()\n\
         ctypes.CDLL(None).pthread_exit(None)'"
    );
    for confinement in confinements() {
        let mut tree = sh_confined(&script, confinement);
        let leader = tree.leader_pid();
        // Wait until /proc shows the state this test is about: leader `Z`, threads on.
        let mut seen = false;
        for _ in 0..2000 {
            let zombie_leader = procfs::stat(leader).is_some_and(|s| s.state == 'Z');
            if zombie_leader && procfs::thread_count(leader).is_some_and(|n| n > 1) {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            seen,
            "the leader never reached Z with a live thread ({confinement:?})"
        );
        assert!(
            tree.live_members().contains(&leader),
            "a leader with a live thread is a live member ({confinement:?})"
        );
        let end = tree.terminate(GRACE).await;
        assert!(
            end.leader_status.is_some(),
            "the leader's status is collected ({confinement:?}): {end:?}"
        );
        assert!(end.survivors.is_empty(), "{end:?}");
        assert!(
            with_cmdline(&token).is_empty(),
            "the thread outlived the run ({confinement:?})"
        );
    }
}
