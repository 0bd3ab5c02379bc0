//! Nothing of a run survives it, through the real binary (issue 20, findings 2 and 4):
//! a SIGKILLed runner's program and cgroup are ended by the next command; a program
//! that hides a process in a cgroup nested in its run cgroup — as root, and as an
//! unprivileged user in a delegated subtree — is killed with it.
//!
//! "Nothing left" is checked two ways: no live process carries the runner's tree
//! marker or the test's unique `sleep` argument, and no folder named after the runner
//! (`agent-exec-<runner pid>-…`) is left where run cgroups are made.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent_exec_runtime::procfs;
use serde_json::Value;
use test_support::procfs::alive;

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(config: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The argv of `agent-exec` in this sandbox (before the subcommand).
    fn argv(&self) -> Vec<String> {
        vec![
            assert_cmd::cargo::cargo_bin!("agent-exec")
                .display()
                .to_string(),
            "--config".into(),
            self.path("config.toml").display().to_string(),
            "--journal".into(),
            self.path("journal.sqlite3").display().to_string(),
        ]
    }

    fn command(&self) -> Command {
        let argv = self.argv();
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        self.environment(&mut cmd);
        cmd
    }

    fn environment(&self, cmd: &mut Command) {
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"));
    }

    fn run_args(&self, backend: &str, prompt: &str, id: &str) -> Vec<String> {
        [
            "run",
            "--backend",
            backend,
            "--prompt",
            prompt,
            "--workspace",
            self.path("ws").to_str().unwrap(),
            "--execution-id",
            id,
            "--json",
        ]
        .map(String::from)
        .to_vec()
    }

    fn show(&self, id: &str) -> Value {
        let out = self
            .command()
            .args(["runs", "show", id, "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn toml(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Where run cgroups are made for processes in this test's cgroup; `None` (and the
/// test returns) where this machine gives no cgroup per run — the runtime's
/// `cgroup_per_run_is_available_here` fails loudly for that.
fn cgroup_base() -> Option<PathBuf> {
    agent_exec_runtime::cgroup::availability().base.clone()
}

/// Folders under `base` (at any depth) named after runner `pid`.
fn folders_of_runner(base: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("agent-exec-{pid}-");
    let mut found = Vec::new();
    let mut stack = vec![base.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    found.push(entry.path());
                }
                stack.push(entry.path());
            }
        }
    }
    found
}

/// Live processes carrying a tree marker of runner `pid`.
fn processes_of_runner(pid: u32) -> Vec<i32> {
    test_support::procfs::with_env_prefix(format!("AGENT_EXEC_TREE={pid}-"))
}

/// Live `sleep ARG` processes (that exact command line: not the runner or the shell
/// that name the same argument).
fn sleepers(arg: &str) -> Vec<i32> {
    let cmdline = format!("sleep\0{arg}\0");
    procfs::pids()
        .into_iter()
        .filter(|p| alive(*p))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == cmdline.as_bytes())
        })
        .collect()
}

/// Polls until `check` holds (or panics after 60 s); for waiting on another process.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `sleep` argument no other process has.
fn unique_sleep(n: u32) -> String {
    format!("{}.{}", 2000 + n, std::process::id())
}

#[test]
fn a_sigkilled_runner_leaves_no_process_and_no_cgroup_after_the_next_command() {
    let Some(base) = cgroup_base() else {
        return;
    };
    let sandbox = Sandbox::new(
        "[backends.sh]\nkind = \"command\"\nargv = [\"sh\", \"-c\"]\nprompt = \"argument\"\n",
    );
    let sleep = unique_sleep(1);
    let mut runner = sandbox
        .command()
        .args(sandbox.run_args("sh", &format!("sleep {sleep}"), "cmd-kill-1"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = runner.id();
    wait_for("the program to start", || sleepers(&sleep).len() == 1);
    assert_eq!(folders_of_runner(&base, pid).len(), 1, "the run's cgroup");
    runner.kill().unwrap(); // SIGKILL: no cleanup
    runner.wait().unwrap();
    // Any agent-exec command on this machine ends what the dead runner left (another
    // test's may come first, so who says it is not asserted): here, `runs`.
    let out = sandbox.command().args(["runs"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sleepers(&sleep), Vec::<i32>::new());
    assert_eq!(processes_of_runner(pid), Vec::<i32>::new());
    assert_eq!(folders_of_runner(&base, pid), Vec::<PathBuf>::new());
    let record = sandbox.show("cmd-kill-1");
    assert_eq!(record["state"], "unknown", "{record:#}");
    assert_eq!(record["error"]["side_effects"], "possible", "{record:#}");
}

/// The shell lines that make `$cg/hide/deeper` inside the program's own cgroup and
/// start `sleep SLEEP` there, returning once the kernel lists it there.
fn hide_a_sleeper(sleep: &str) -> String {
    format!(
        "m=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -n 1 | cut -d' ' -f5)\n\
         cg=$m$(sed -n 's/^0:://p' /proc/self/cgroup)\n\
         mkdir \"$cg/hide\" \"$cg/hide/deeper\" || exit 9\n\
         sh -c 'echo $$ > \"$1/cgroup.procs\" && exec sleep {sleep}' _ \"$cg/hide/deeper\" &\n\
         until grep -q . \"$cg/hide/deeper/cgroup.procs\"; do :; done\n\
         echo hidden\n"
    )
}

/// Runs `runner` (which must run the sandbox's `hider` backend with `--json`) and
/// checks the escape was ended: killed, noted, side effects `possible`, no folder.
fn check_the_escape_is_ended(runner: &mut Command, sleep: &str, base: &Path) {
    let child = runner
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "failed", "{result:#}");
    assert_eq!(result["err"]["side_effects"], "possible", "{result:#}");
    let logs = result["logs"].as_str().unwrap_or_default();
    assert!(
        logs.contains("exited leaving 1 process(es) running")
            && logs.contains("(confinement: cgroup)")
            && logs.contains("made 2 cgroup(s) inside the run's cgroup"),
        "the leftovers are noted: {logs}"
    );
    assert_eq!(sleepers(sleep), Vec::<i32>::new(), "the hidden sleeper");
    assert_eq!(folders_of_runner(base, pid), Vec::<PathBuf>::new());
}

const HIDER_EXIT: &str = "exit 1";

#[test]
fn a_process_hidden_in_a_nested_cgroup_is_killed_as_root() {
    let Some(base) = cgroup_base() else {
        return;
    };
    let sleep = unique_sleep(2);
    let script = format!("{}{HIDER_EXIT}", hide_a_sleeper(&sleep));
    let sandbox = Sandbox::new(&format!(
        "[backends.hider]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
        toml(&script)
    ));
    let mut runner = sandbox.command();
    runner.args(sandbox.run_args("hider", "x", "hide-root"));
    check_the_escape_is_ended(&mut runner, &sleep, &base);
}

/// As uid 65534 (`nobody`) in a subtree delegated to it the way the kernel's
/// delegation model says (cgroup-v2.rst, "Delegation": the directory and its
/// `cgroup.procs`, `cgroup.threads` and `cgroup.subtree_control` chowned to the user):
/// the runner makes its run cgroups there, and the program can make cgroups inside
/// its own and move itself — without any privilege.
#[test]
fn a_process_hidden_in_a_nested_cgroup_is_killed_in_a_delegated_subtree() {
    let Some(base) = cgroup_base() else {
        return;
    };
    use std::os::unix::fs::MetadataExt as _;
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        return; // setting up the delegation needs root; the root test covers the rest
    }
    let delegated = base.join(format!("agent-exec-test-delegated-{}", std::process::id()));
    std::fs::create_dir(&delegated).unwrap();
    let _cleanup = Delegated(delegated.clone());
    for path in [
        delegated.clone(),
        delegated.join("cgroup.procs"),
        delegated.join("cgroup.threads"),
        delegated.join("cgroup.subtree_control"),
    ] {
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    }
    let sleep = unique_sleep(3);
    let script = format!("{}{HIDER_EXIT}", hide_a_sleeper(&sleep));
    let sandbox = Sandbox::new(&format!(
        "[backends.hider]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
        toml(&script)
    ));
    // The sandbox is nobody's to write (journal, workspace, state).
    std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(sandbox.dir.path())
        .status()
        .unwrap();
    // Into the delegated cgroup as root, then drop to nobody and exec the runner.
    let mut argv = sandbox.argv();
    argv.extend(sandbox.run_args("hider", "x", "hide-nobody"));
    let mut runner = Command::new("sh");
    runner
        .arg("-c")
        .arg(
            "echo $$ > \"$1/cgroup.procs\" && shift && \
             exec setpriv --reuid 65534 --regid 65534 --clear-groups \"$@\"",
        )
        .arg("sh")
        .arg(&delegated)
        .args(&argv);
    sandbox.environment(&mut runner);
    check_the_escape_is_ended(&mut runner, &sleep, &delegated);
    let left: Vec<_> = std::fs::read_dir(&delegated)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.path())
        .collect();
    assert_eq!(
        left,
        Vec::<PathBuf>::new(),
        "no folder left in the delegated subtree"
    );
}

/// The delegated cgroup of a test, killed and removed (deepest first) however the
/// test ends.
struct Delegated(PathBuf);

impl Drop for Delegated {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("cgroup.kill"), "1");
        agent_exec_runtime::cgroup::wait_empty_at(&self.0, Duration::from_secs(5));
        let _ = Command::new("find")
            .arg(&self.0)
            .args(["-depth", "-type", "d", "-exec", "rmdir", "{}", ";"])
            .status();
    }
}

/// The deadline path: the program hides a process, moves itself into a nested cgroup
/// and runs on; the deadline ends everything and leaves no folder (before the fix the
/// nested folders, and so the run cgroup, stayed).
#[test]
fn the_deadline_leaves_no_process_and_no_folder_of_a_program_that_hid() {
    let Some(base) = cgroup_base() else {
        return;
    };
    let sleep = unique_sleep(4);
    let script = format!(
        "{}echo $$ > \"$cg/hide/cgroup.procs\"\ntrap '' TERM\nexec sleep 3000",
        hide_a_sleeper(&sleep)
    );
    let sandbox = Sandbox::new(&format!(
        "[backends.hider]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
        toml(&script)
    ));
    let mut args = sandbox.run_args("hider", "x", "hide-deadline");
    args.extend(["--deadline".into(), "3s".into()]);
    let child = sandbox
        .command()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        result["err"]["code"], "agent.deadline_exceeded",
        "{result:#}"
    );
    assert_eq!(result["err"]["side_effects"], "possible", "{result:#}");
    assert_eq!(sleepers(&sleep), Vec::<i32>::new());
    assert_eq!(processes_of_runner(pid), Vec::<i32>::new());
    assert_eq!(folders_of_runner(&base, pid), Vec::<PathBuf>::new());
}

// --- Signals at any moment (issue 20, finding 6): a SIGTERM that reaches the runner
// before its handler was installed killed it outright, its program left running (6 of
// 12 runs whose program signals its parent at once).

/// What a runner that got SIGTERM must have done: exited by itself (not by the
/// signal) with a result saying `canceled` or `unknown`, its program gone.
fn check_canceled_cleanly(out: &Output, sleep: &str, what: &str) {
    assert!(
        matches!(out.status.code(), Some(3 | 4)),
        "{what}: the runner must settle the run, not die: {:?} {}",
        out.status,
        stderr(out)
    );
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: no result ({e}): {}", stderr(out)));
    assert!(
        matches!(result["outcome"].as_str(), Some("canceled" | "unknown")),
        "{what}: {result:#}"
    );
    assert_eq!(
        sleepers(sleep),
        Vec::<i32>::new(),
        "{what}: the program lives on"
    );
}

#[test]
fn a_program_that_sigterms_its_runner_at_once_is_canceled_every_time() {
    let sleep = unique_sleep(5);
    let sandbox = Sandbox::new(&format!(
        "[backends.parricide]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
        toml(&format!("kill -TERM $PPID; exec sleep {sleep}"))
    ));
    for n in 0..12 {
        let out = sandbox
            .command()
            .args(sandbox.run_args("parricide", "x", &format!("parricide-{n}")))
            .output()
            .unwrap();
        check_canceled_cleanly(&out, &sleep, &format!("run {n}"));
    }
}

#[test]
fn an_outside_sigterm_right_after_start_never_leaves_a_program() {
    let sleep = unique_sleep(6);
    let sandbox = Sandbox::new(
        "[backends.sh]\nkind = \"command\"\nargv = [\"sh\", \"-c\"]\nprompt = \"argument\"\n",
    );
    // Delays before the signal, not synchronisation: each lands in another phase of
    // start-up (argument parsing, config, probe, journal, spawn).
    for (n, delay_ms) in [0u64, 1, 2, 5, 10, 20, 50, 100, 200]
        .into_iter()
        .enumerate()
    {
        let runner = sandbox
            .command()
            .args(sandbox.run_args("sh", &format!("sleep {sleep}"), &format!("early-{n}")))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        Command::new("kill")
            .args(["-TERM", &runner.id().to_string()])
            .status()
            .unwrap();
        let out = runner.wait_with_output().unwrap();
        if out.status.code().is_none() {
            // Only acceptable before `main` (the dynamic loader still ran): nothing had
            // started — no execution journaled, no program.
            assert_eq!(sleepers(&sleep), Vec::<i32>::new(), "after {delay_ms} ms");
            let show = sandbox
                .command()
                .args(["runs", "show", &format!("early-{n}")])
                .output()
                .unwrap();
            assert!(
                !show.status.success(),
                "after {delay_ms} ms the runner died by the signal with its run journaled: {}",
                String::from_utf8_lossy(&show.stdout)
            );
            continue;
        }
        check_canceled_cleanly(&out, &sleep, &format!("after {delay_ms} ms"));
    }
}

// --- Files that cannot wedge a run (issue 20, finding 5): a FIFO deliverable hung the
// runner past its deadline and SIGTERM; an 8 GB sparse file or a device node was read
// into memory; `--prompt-file`, `--output-schema` and `--config` read `/dev/zero` until
// memory ran out.

/// Runs `cmd` to its end, or kills it and fails after 60 s (a hang is the bug).
fn output_within_a_minute(cmd: &mut Command, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{what}: still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_fifo_a_sparse_8_gb_file_and_a_device_as_deliverables_are_notes_not_hangs() {
    let sandbox = Sandbox::new(
        "[backends.maker]\nkind = \"command\"\nargv = [\"sh\", \"-c\"]\nprompt = \"argument\"\n",
    );
    let mut cases = vec![
        (
            "mkfifo out.fifo",
            "out.fifo",
            "is a FIFO, not a regular file",
        ),
        (
            "truncate -s 8G out.sparse",
            "out.sparse",
            "8589934592 bytes, over the 16777216-byte cap",
        ),
    ];
    use std::os::unix::fs::MetadataExt as _;
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        cases.push((
            "mknod out.zero c 1 5",
            "out.zero",
            "is a character device, not a regular file",
        ));
    }
    for (n, (make, target, note)) in cases.into_iter().enumerate() {
        let mut args = sandbox.run_args("maker", make, &format!("deliverable-{n}"));
        args.extend(["--target", target, "--deadline", "30s"].map(String::from));
        let out = output_within_a_minute(sandbox.command().args(&args), target);
        assert_eq!(out.status.code(), Some(1), "{target}: {}", stderr(&out));
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            result["err"]["code"], "agent.missing_deliverable",
            "{result:#}"
        );
        let reason = result["err"]["reason"].as_str().unwrap();
        assert!(reason.contains(note), "{target}: {reason}");
        assert!(result["files"].is_null(), "no bytes of it: {result:#}");
    }
}

#[test]
fn every_file_the_cli_reads_is_capped_and_a_fifo_is_not_waited_on() {
    let sandbox = Sandbox::new(
        "[backends.sh]\nkind = \"command\"\nargv = [\"sh\", \"-c\"]\nprompt = \"argument\"\n",
    );
    let fifo = sandbox.path("no-writer.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for file in [Path::new("/dev/zero"), fifo.as_path()] {
        let file = file.to_str().unwrap();
        let ws = sandbox.path("ws").display().to_string();
        let cases: Vec<(&str, Vec<String>)> = vec![
            (
                "--prompt-file",
                [
                    "run",
                    "--backend",
                    "sh",
                    "--workspace",
                    &ws,
                    "--prompt-file",
                    file,
                ]
                .map(String::from)
                .to_vec(),
            ),
            (
                "--output-schema",
                [
                    "run",
                    "--backend",
                    "sh",
                    "--workspace",
                    &ws,
                    "--prompt",
                    "true",
                    "--output-schema",
                    file,
                ]
                .map(String::from)
                .to_vec(),
            ),
            (
                "--request",
                ["run", "--backend", "sh", "--request", file]
                    .map(String::from)
                    .to_vec(),
            ),
        ];
        let mut runs: Vec<(&str, Command)> = cases
            .into_iter()
            .map(|(flag, args)| {
                let mut cmd = sandbox.command();
                cmd.args(args);
                (flag, cmd)
            })
            .collect();
        // --config: the file replaces the sandbox's.
        let mut config = Command::new(sandbox.argv()[0].clone());
        sandbox.environment(&mut config);
        config.args(["--config", file, "runs"]);
        runs.push(("--config", config));
        for (flag, mut cmd) in runs {
            let what = format!("{flag} {file}");
            let out = output_within_a_minute(&mut cmd, &what);
            let said = stderr(&out);
            // A FIFO without a writer reads as empty at once (what that means is the
            // flag's business); /dev/zero is refused at the cap.
            if file == "/dev/zero" {
                assert_eq!(out.status.code(), Some(2), "{what}: {said}");
                assert!(
                    said.contains("the device gave more than") && said.contains("bytes"),
                    "{what}: {said}"
                );
            }
            assert!(!said.contains("panicked"), "{what}: {said}");
        }
    }
}

// --- `default_deadline` in a `[backends.NAME]` table (issue 20, item 9).

#[test]
fn a_backend_default_deadline_applies_when_the_caller_gives_none() {
    let sleep = unique_sleep(7);
    let sandbox = Sandbox::new(
        "[backends.slow]\nkind = \"command\"\nargv = [\"sh\", \"-c\"]\nprompt = \"argument\"\n\
         grace_ms = 300\ndefault_deadline = \"2s\"\n\n[aliases]\nsluggish = \"slow\"\n",
    );
    for (n, backend) in ["slow", "sluggish"].into_iter().enumerate() {
        let out = output_within_a_minute(
            sandbox.command().args(sandbox.run_args(
                backend,
                &format!("sleep {sleep}"),
                &format!("default-deadline-{n}"),
            )),
            backend,
        );
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            result["err"]["code"], "agent.deadline_exceeded",
            "{backend}: {result:#}"
        );
        assert_eq!(sleepers(&sleep), Vec::<i32>::new());
    }
    // The caller's own deadline wins.
    let mut args = sandbox.run_args("slow", "sleep 3; echo done", "own-deadline");
    args.extend(["--deadline".into(), "30s".into()]);
    let out = output_within_a_minute(sandbox.command().args(&args), "own deadline");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "succeeded", "{result:#}");

    let typo = Sandbox::new(
        "[backends.slow]\nkind = \"command\"\nargv = [\"true\"]\ndefault_deadline = \"5x\"\n",
    );
    let out = typo.command().args(["backends"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("backends.slow.default_deadline: invalid duration \"5x\""),
        "{}",
        stderr(&out)
    );
}
