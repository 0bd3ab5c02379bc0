#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! Both spawners of `agent_exec_runtime::spawn` — clone3 into the run cgroup, and the
//! fork fallback — give the program the same start: what it reads, where it runs, its
//! environment, process group, signal mask and SIGPIPE disposition, its cgroup from
//! the first instruction, and the same errors when it cannot start. Every test runs
//! the same assertions for both, and checks which spawner was used: a clone3 that
//! silently fell back would fail here (this needs a run cgroup, as process_tree.rs's
//! `cgroup_per_run_is_available_here` demands).

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::time::Duration;

use agent_exec_runtime::process::ProcessTree;
use agent_exec_runtime::spawn::{LeaderCommand, Spawner, Stdio};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const BOTH: [Spawner; 2] = [Spawner::Clone3, Spawner::Fork];
const GRACE: Duration = Duration::from_millis(300);

/// Spawns `command` with at most `spawner` and checks that it was the one used.
fn spawn(mut command: LeaderCommand, spawner: Spawner) -> std::io::Result<ProcessTree> {
    command.spawner(spawner);
    let tree = ProcessTree::spawn(command)?;
    assert_eq!(
        tree.spawner(),
        spawner,
        "asked for {spawner:?} (clone3 needs a run cgroup: root or a delegated subtree)"
    );
    Ok(tree)
}

/// Everything the leader wrote to stdout, and its exit status.
async fn output(tree: &mut ProcessTree) -> (String, std::process::ExitStatus) {
    let mut out = String::new();
    let mut stdout = tree.child_mut().stdout.take().unwrap();
    stdout.read_to_string(&mut out).await.unwrap();
    let status = tree.wait_leader().await.unwrap();
    let done = tree.terminate(GRACE).await;
    assert!(done.all_gone(), "{done:?}");
    (out, status)
}

/// `sh` reports what it was given; only builtins, so `/proc/self` is the leader.
const REPORT: &str = r#"
read -r line; echo "stdin=$line"
echo "cwd=$(pwd -P)"
echo "set=${AGENT_EXEC_SPAWN_SET-unset}"
echo "removed=${CARGO_MANIFEST_DIR-unset}"
read -r stat < /proc/self/stat
set -- $stat
echo "pid=$1 pgid=$5"
while read -r key value; do
  case $key in SigBlk:|SigIgn:) echo "$key$value";; esac
done < /proc/self/status
echo to-stderr >&2
"#;

#[tokio::test]
async fn the_program_gets_the_same_start_from_both_spawners() {
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "cargo sets CARGO_MANIFEST_DIR for tests; the removal below needs it"
    );
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    for spawner in BOTH {
        let mut command = LeaderCommand::new("sh");
        command
            .arg("-c")
            .arg(REPORT)
            .env("AGENT_EXEC_SPAWN_SET", "set-value")
            .env_remove("CARGO_MANIFEST_DIR")
            .current_dir(&cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A signal blocked in the spawning thread must not stay blocked in the
        // program; the Rust runtime ignores SIGPIPE, the program must not.
        let mut blocked = SigSet::empty();
        blocked.add(Signal::SIGUSR2);
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&blocked), None).unwrap();
        let spawned = spawn(command, spawner);
        pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&blocked), None).unwrap();
        let mut tree = spawned.unwrap();
        let leader = tree.leader_pid();
        let mut stdin = tree.child_mut().stdin.take().unwrap();
        stdin.write_all(b"hello\n").await.unwrap();
        drop(stdin);
        let mut stderr = tree.child_mut().stderr.take().unwrap();
        let (out, status) = output(&mut tree).await;
        let mut err = String::new();
        stderr.read_to_string(&mut err).await.unwrap();
        assert!(status.success(), "{spawner:?}: {status:?}\n{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[..5],
            [
                "stdin=hello".to_owned(),
                format!("cwd={}", cwd.display()),
                "set=set-value".to_owned(),
                "removed=unset".to_owned(),
                format!("pid={leader} pgid={leader}"),
            ],
            "{spawner:?}"
        );
        let mask = |key: &str| {
            let line = lines
                .iter()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("{spawner:?}: no {key} in {out}"));
            u64::from_str_radix(line, 16).unwrap()
        };
        assert_eq!(mask("SigBlk:"), 0, "{spawner:?}: no signal blocked");
        let sigpipe = 1u64 << (Signal::SIGPIPE as u32 - 1);
        assert_eq!(
            mask("SigIgn:") & sigpipe,
            0,
            "{spawner:?}: SIGPIPE at its default"
        );
        assert_eq!(err, "to-stderr\n", "{spawner:?}");
    }
}

#[tokio::test]
async fn the_programs_first_instruction_runs_in_the_run_cgroup() {
    for spawner in BOTH {
        let mut command = LeaderCommand::new("cat");
        command.arg("/proc/self/cgroup").stdout(Stdio::piped());
        let mut tree = spawn(command, spawner).unwrap();
        let cgroup = tree.cgroup_path().unwrap().to_owned();
        let (out, status) = output(&mut tree).await;
        assert!(status.success(), "{spawner:?}: {status:?}");
        let unified = out.lines().find_map(|l| l.strip_prefix("0::"));
        assert_eq!(unified, Some(cgroup.as_str()), "{spawner:?}: {out}");
    }
}

#[tokio::test]
async fn a_missing_program_is_the_same_clear_error_from_both() {
    for spawner in BOTH {
        let Err(e) = spawn(LeaderCommand::new("agent-exec-no-such-program"), spawner) else {
            panic!("{spawner:?}: a missing program started");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{spawner:?}");
        assert_eq!(
            e.to_string(),
            "`agent-exec-no-such-program` is in no directory of PATH; install it, or give \
             its full path",
            "{spawner:?}"
        );
    }
}

#[tokio::test]
async fn an_exec_that_fails_after_the_clone_says_why() {
    // The file exists and is executable, but its interpreter does not: only execve
    // itself, in the child, can find that out.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("no-interpreter");
    std::fs::write(&script, "#!/nonexistent/agent-exec-interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    for spawner in BOTH {
        let mut command = LeaderCommand::new(&script);
        command.stdout(Stdio::piped());
        let Err(e) = spawn(command, spawner) else {
            panic!("{spawner:?}: started without an interpreter");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{spawner:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "cannot execute `{}`: No such file or directory (os error 2)",
                script.display()
            ),
            "{spawner:?}"
        );
    }
}

#[tokio::test]
async fn a_script_without_a_shebang_runs_under_sh_and_statuses_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("no-shebang");
    std::fs::write(&script, "echo \"no-shebang $1\"\nexit 7\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    for spawner in BOTH {
        let mut command = LeaderCommand::new(&script);
        command.arg("arg-one").stdout(Stdio::piped());
        let mut tree = spawn(command, spawner).unwrap();
        let (out, status) = output(&mut tree).await;
        assert_eq!(out, "no-shebang arg-one\n", "{spawner:?}");
        assert_eq!(status.code(), Some(7), "{spawner:?}");

        let mut command = LeaderCommand::new("sh");
        command
            .arg("-c")
            .arg("kill -TERM $$")
            .stdout(Stdio::piped());
        let mut tree = spawn(command, spawner).unwrap();
        let (_, status) = output(&mut tree).await;
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{spawner:?}");
    }
}
