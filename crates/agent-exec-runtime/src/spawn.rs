//! The one place where a run's leader is started ([`crate::process::ProcessTree`]
//! calls [`start`]; every backend that runs a program goes through the tree).
//!
//! ## Two spawners, one behaviour
//!
//! * **clone3** — with a run cgroup, the leader is created *inside* it:
//!   `clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)` (Linux 5.7+). There is no migration, so
//!   no write to `cgroup.procs`: a migration takes the kernel's global
//!   `cgroup_threadgroup_rwsem` for writing, which waits for an RCU grace period —
//!   6.3 ms of the 7.4 ms `agent-exec run` added over a direct spawn (issue 20); the
//!   clone takes the read side only. The program is in its cgroup before its first
//!   instruction, as before. The leader is awaited through its pidfd (readable once it
//!   exited, watched by tokio's reactor), not through SIGCHLD.
//! * **fork** — tokio's spawn (fork, then `pre_exec` writes `0` to the run's
//!   `cgroup.procs`, or makes the leader a subreaper), unchanged: used where there is
//!   no run cgroup, where the caller asks for it ([`LeaderCommand::spawner`], the
//!   tests of both), and where the kernel refuses clone3. ENOSYS, E2BIG and EINVAL
//!   (a kernel without clone3 or `CLONE_INTO_CGROUP`) are remembered for the rest of
//!   the process; EPERM, EACCES, EBUSY and EOPNOTSUPP (a seccomp filter, a cgroup
//!   that cannot take a process now) count for that call only. clone3 failing started
//!   nothing, so falling back is safe.
//!
//! What the program gets is the same either way, and what tests/spawn.rs checks for
//! both: its own process group; stdin, stdout and stderr as asked (a pipe, `/dev/null`
//! or ours); the working directory; the environment with the changes asked for; an
//! empty signal mask, SIGPIPE at its default action, no handler of ours (a signal in
//! the moment before `execve` takes its default action instead of running this
//! process's handler in the child). The program is found before anything starts, the
//! way `execvp` would (`PATH` of the environment the program gets, else
//! `/bin:/usr/bin`; a file without `#!` that the kernel refuses with ENOEXEC runs
//! under `/bin/sh`), so a missing program is the same clear error from both
//! spawners; a failure after the clone (`execve`, `chdir`) comes back through a
//! close-on-exec pipe as the step and the errno.
//!
//! The clone3 child is a copy of a multi-threaded process with one thread: before
//! `execve` it makes raw system calls only, on memory prepared before the clone (no
//! allocation, no lock), which is what async-signal-safe means here. All signals are
//! blocked in this thread across the clone, so none is delivered to the child before
//! it has reset the handlers.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::OpenOptions;
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::libc;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, pthread_sigmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{AccessFlags, Pid, access};
use tokio::io::unix::AsyncFd;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// Where one of the program's standard streams goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdio {
    /// This process's own (the default, as for `std::process::Command::spawn`).
    Inherit,
    /// `/dev/null`.
    Null,
    /// A pipe whose other end [`crate::ProcessTree::child_mut`] hands out.
    Piped,
}

impl Stdio {
    /// A pipe to this process.
    pub fn piped() -> Stdio {
        Stdio::Piped
    }

    /// `/dev/null`.
    pub fn null() -> Stdio {
        Stdio::Null
    }

    /// This process's own stream.
    pub fn inherit() -> Stdio {
        Stdio::Inherit
    }
}

/// How a leader was started (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Spawner {
    /// tokio's spawn; with a cgroup, the child writes `0` to its `cgroup.procs`.
    Fork,
    /// `clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)`: created inside the run cgroup.
    Clone3,
}

impl Spawner {
    /// `clone3` or `fork`, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Spawner::Clone3 => "clone3",
            Spawner::Fork => "fork",
        }
    }
}

/// What to start: the part of `tokio::process::Command` the backends use, readable
/// back (a `Command`'s stdio is not), so that it can be started either way.
#[derive(Clone)]
pub struct LeaderCommand {
    program: OsString,
    args: Vec<OsString>,
    /// Changes to the environment: `None` removes the variable.
    env: BTreeMap<OsString, Option<OsString>>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
    /// The most a start may use: [`Spawner::Fork`] never tries clone3.
    spawner: Spawner,
}

impl std::fmt::Debug for LeaderCommand {
    /// Names the environment's variables, never their values (credentials).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderCommand")
            .field("program", &self.program)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("env_clear", &self.env_clear)
            .field("cwd", &self.cwd)
            .field("stdio", &(self.stdin, self.stdout, self.stderr))
            .field("spawner", &self.spawner)
            .finish()
    }
}

impl LeaderCommand {
    /// `program` (searched in `PATH` unless it contains a `/`), no arguments, this
    /// process's environment, working directory and stdio.
    pub fn new(program: impl AsRef<OsStr>) -> LeaderCommand {
        LeaderCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            env_clear: false,
            cwd: None,
            stdin: Stdio::Inherit,
            stdout: Stdio::Inherit,
            stderr: Stdio::Inherit,
            spawner: Spawner::Clone3,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut LeaderCommand {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut LeaderCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut LeaderCommand {
        self.env
            .insert(key.as_ref().to_owned(), Some(value.as_ref().to_owned()));
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut LeaderCommand
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self.env(key, value);
        }
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut LeaderCommand {
        self.env.insert(key.as_ref().to_owned(), None);
        self
    }

    /// Starts from an empty environment instead of this process's.
    pub fn env_clear(&mut self) -> &mut LeaderCommand {
        self.env.clear();
        self.env_clear = true;
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut LeaderCommand {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    pub fn stdin(&mut self, stdio: Stdio) -> &mut LeaderCommand {
        self.stdin = stdio;
        self
    }

    pub fn stdout(&mut self, stdio: Stdio) -> &mut LeaderCommand {
        self.stdout = stdio;
        self
    }

    pub fn stderr(&mut self, stdio: Stdio) -> &mut LeaderCommand {
        self.stderr = stdio;
        self
    }

    /// The most a start may use: [`Spawner::Fork`] keeps to the fork spawner even
    /// with a run cgroup (tests of both; a host whose seccomp policy kills on clone3).
    pub fn spawner(&mut self, most: Spawner) -> &mut LeaderCommand {
        self.spawner = most;
        self
    }

    /// The program as given.
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    /// The environment the program gets.
    fn final_env(&self) -> BTreeMap<OsString, OsString> {
        let mut env: BTreeMap<OsString, OsString> = if self.env_clear {
            BTreeMap::new()
        } else {
            std::env::vars_os().collect()
        };
        for (key, value) in &self.env {
            match value {
                Some(value) => env.insert(key.clone(), value.clone()),
                None => env.remove(key),
            };
        }
        env
    }
}

/// The leader's standard streams, where they were piped; taken by the backends.
#[derive(Debug, Default)]
pub struct LeaderStdio {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// A started leader, awaited by whichever spawner started it.
pub(crate) struct Leader {
    pid: i32,
    spawner: Spawner,
    handle: Handle,
    pub(crate) stdio: LeaderStdio,
}

enum Handle {
    /// tokio's child (killed on drop, reaped by tokio).
    Forked(tokio::process::Child),
    Cloned(Pidfd),
}

/// A clone3 leader: its pidfd, registered with the reactor at the first wait.
struct Pidfd {
    fd: Option<OwnedFd>,
    watched: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
}

impl Leader {
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    pub(crate) fn spawner(&self) -> Spawner {
        self.spawner
    }

    /// Waits for the leader to exit and reaps it. Cancel-safe: nothing changes until
    /// the status is collected.
    #[allow(unsafe_code)]
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let pid = self.pid;
        let cloned = match &mut self.handle {
            Handle::Forked(child) => return child.wait().await,
            Handle::Cloned(cloned) => cloned,
        };
        loop {
            if let Some(status) = cloned.try_wait(pid)? {
                return Ok(status);
            }
            if cloned.watched.is_none() {
                let fd = cloned
                    .fd
                    .take()
                    .ok_or_else(|| std::io::Error::other("the leader's pidfd is gone"))?;
                // SAFETY: the `OwnedFd` is the pidfd, valid and owned by the `AsyncFd`
                // from here on: nothing else closes or replaces it.
                match unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
                {
                    Ok(watched) => cloned.watched = Some(watched),
                    Err(refused) => {
                        let (fd, e) = refused.into_parts();
                        cloned.fd = Some(fd);
                        return Err(e);
                    }
                }
            }
            let Some(watched) = &cloned.watched else {
                unreachable!("registered just above");
            };
            // Readable once the process has exited; the loop's waitpid then reaps
            // it. The readiness is not cleared: a pidfd stays readable, and an exit
            // seen here but not yet reapable is retried after a short sleep rather
            // than waiting for an edge that will not come.
            let _ready = watched.readable().await?;
            if let Some(status) = cloned.try_wait(pid)? {
                return Ok(status);
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// The leader's status if it has exited (reaping it), without waiting.
    pub(crate) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match &mut self.handle {
            Handle::Forked(child) => child.try_wait(),
            Handle::Cloned(cloned) => cloned.try_wait(self.pid),
        }
    }
}

impl Pidfd {
    fn try_wait(&mut self, pid: i32) -> std::io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let status = match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG))? {
            // The raw wait status `ExitStatus` is made of (`<sys/wait.h>` layout).
            WaitStatus::Exited(_, code) => ExitStatus::from_raw((code & 0xff) << 8),
            WaitStatus::Signaled(_, signal, core) => {
                ExitStatus::from_raw(signal as i32 | if core { 0x80 } else { 0 })
            }
            _ => return Ok(None),
        };
        self.status = Some(status);
        Ok(Some(status))
    }
}

impl Drop for Leader {
    /// Dropped before it was reaped (a canceled run; `ProcessTree`'s drop has already
    /// killed the tree): SIGKILL and reap, as tokio's `kill_on_drop` does for the fork
    /// spawner. The pid is still ours until reaped, so the kill cannot hit another
    /// process.
    fn drop(&mut self) {
        let pid = self.pid;
        let Handle::Cloned(cloned) = &mut self.handle else {
            return;
        };
        if matches!(cloned.try_wait(pid), Ok(Some(_)) | Err(_)) {
            return;
        }
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        if !matches!(cloned.try_wait(pid), Ok(Some(_))) {
            std::thread::spawn(move || {
                let _ = waitpid(Pid::from_raw(pid), None);
            });
        }
    }
}

/// clone3 refused with one of these means this kernel has none, or no
/// `CLONE_INTO_CGROUP`: not tried again in this process.
static CLONE3_UNUSABLE: AtomicBool = AtomicBool::new(false);

/// Starts `command` as a process-group leader, inside `cgroup` when there is one
/// (module doc); `subreaper` makes a leader started without a cgroup a child
/// subreaper ([`crate::orphans`]).
pub(crate) fn start(
    command: &LeaderCommand,
    cgroup: Option<&crate::cgroup::RunCgroup>,
    subreaper: bool,
) -> std::io::Result<Leader> {
    let env = command.final_env();
    let path = resolve(command, &env)?;
    if let Some(cgroup) = cgroup
        && command.spawner >= Spawner::Clone3
        && !CLONE3_UNUSABLE.load(Ordering::Relaxed)
    {
        match start_cloned(command, &path, &env, cgroup) {
            Ok(leader) => return Ok(leader),
            Err(Refused::Fallback(errno)) => {
                tracing::debug!(%errno, "clone3 into the run cgroup refused; forking instead");
            }
            Err(Refused::Failed(e)) => return Err(e),
        }
    }
    start_forked(
        command,
        &path,
        cgroup.map(|c| c.procs_fd().as_raw_fd()),
        subreaper,
    )
}

/// The program's path as `execvp` would find it (module doc), checked before
/// anything starts. Relative candidates are checked against the working directory
/// the program gets and passed on relative: `execve` after `chdir` finds the same file.
fn resolve(
    command: &LeaderCommand,
    env: &BTreeMap<OsString, OsString>,
) -> std::io::Result<PathBuf> {
    use std::io::{Error, ErrorKind};
    let shown = Path::new(&command.program).display();
    if let Some(cwd) = &command.cwd
        && !cwd.is_dir()
    {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "its working directory {} does not exist or is not a directory; create it \
                 or give another",
                cwd.display()
            ),
        ));
    }
    let path_var = env.get(OsStr::new("PATH")).map(OsString::as_os_str);
    find_program(&command.program, path_var, command.cwd.as_deref()).map_err(|missing| {
        let (kind, message) = match missing {
            Missing::EmptyName => (ErrorKind::NotFound, "the program name is empty".to_owned()),
            Missing::NoSuchFile => (
                ErrorKind::NotFound,
                format!("`{shown}` does not exist; give the path of an installed program"),
            ),
            Missing::NotExecutable => (
                ErrorKind::PermissionDenied,
                format!(
                    "`{shown}` is not an executable file; make it one (chmod +x) or give another"
                ),
            ),
            Missing::NotOnPath => (
                ErrorKind::NotFound,
                format!("`{shown}` is in no directory of PATH; install it, or give its full path"),
            ),
            Missing::OnPathNotExecutable => (
                ErrorKind::PermissionDenied,
                format!("`{shown}` is in PATH but not an executable file; make it one (chmod +x)"),
            ),
        };
        Error::new(kind, message)
    })
}

/// Why [`find_program`] found nothing to run. Each caller words it for its reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The program name is empty.
    EmptyName,
    /// A path (it has a `/`) to nothing.
    NoSuchFile,
    /// A path to something that is no executable file (a folder, no `x` bit for us).
    NotExecutable,
    /// A name in no folder of the search path.
    NotOnPath,
    /// A name whose only matches in the search path are not executable files.
    OnPathNotExecutable,
}

/// Finds `program` the way `execvp` does, so that what a backend's `verify` finds is
/// what a run starts: a name with a `/` is a path (taken against `cwd` when relative);
/// any other name is looked for in each folder of `path_var` in order (an empty entry
/// is the working folder), or of `/bin:/usr/bin` when there is no `PATH` at all. A
/// match must be a file this process may execute (`access(X_OK)`).
///
/// The one search of the workspace: the runtime's spawn (with the `PATH` of the
/// environment the program gets) and the backends' `verify` and verification keys
/// (with agent-exec's own) both call it.
pub fn find_program(
    program: &OsStr,
    path_var: Option<&OsStr>,
    cwd: Option<&Path>,
) -> Result<PathBuf, Missing> {
    use std::io::ErrorKind;
    let seen = |candidate: &Path| match cwd {
        Some(cwd) if candidate.is_relative() => cwd.join(candidate),
        _ => candidate.to_owned(),
    };
    if program.is_empty() {
        return Err(Missing::EmptyName);
    }
    let program = Path::new(program);
    if program.as_os_str().as_bytes().contains(&b'/') {
        return match executable(&seen(program)) {
            Ok(()) => Ok(program.to_owned()),
            Err(ErrorKind::NotFound) => Err(Missing::NoSuchFile),
            Err(_) => Err(Missing::NotExecutable),
        };
    }
    let search = path_var.unwrap_or(OsStr::new("/bin:/usr/bin"));
    let mut refused = false;
    for dir in search.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() { b".".as_slice() } else { dir };
        let candidate = Path::new(OsStr::from_bytes(dir)).join(program);
        match executable(&seen(&candidate)) {
            Ok(()) => return Ok(candidate),
            Err(ErrorKind::NotFound) => {}
            Err(_) => refused = true,
        }
    }
    Err(if refused {
        Missing::OnPathNotExecutable
    } else {
        Missing::NotOnPath
    })
}

fn executable(path: &Path) -> Result<(), std::io::ErrorKind> {
    use std::io::ErrorKind;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Err(ErrorKind::PermissionDenied),
        Err(_) => Err(ErrorKind::NotFound),
        Ok(meta) if meta.is_dir() => Err(ErrorKind::PermissionDenied),
        Ok(_) => access(path, AccessFlags::X_OK).map_err(|_| ErrorKind::PermissionDenied),
    }
}

/// The fork spawner: tokio's spawn, as before clone3 (module doc).
fn start_forked(
    command: &LeaderCommand,
    path: &Path,
    procs: Option<RawFd>,
    subreaper: bool,
) -> std::io::Result<Leader> {
    let mut forked = tokio::process::Command::new(path);
    forked.arg0(&command.program).args(&command.args);
    if command.env_clear {
        forked.env_clear();
    }
    for (key, value) in &command.env {
        match value {
            Some(value) => forked.env(key, value),
            None => forked.env_remove(key),
        };
    }
    if let Some(cwd) = &command.cwd {
        forked.current_dir(cwd);
    }
    let std_stdio = |s: Stdio| match s {
        Stdio::Inherit => std::process::Stdio::inherit(),
        Stdio::Null => std::process::Stdio::null(),
        Stdio::Piped => std::process::Stdio::piped(),
    };
    forked
        .stdin(std_stdio(command.stdin))
        .stdout(std_stdio(command.stdout))
        .stderr(std_stdio(command.stderr))
        .process_group(0)
        // Last resort if the tree is dropped without `terminate`: the leader at least
        // is killed; the tree's `Drop` sweeps the group.
        .kill_on_drop(true);
    prepare_child(&mut forked, procs, subreaper);
    let mut child = forked.spawn().map_err(|e| exec_error(path, e))?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| std::io::Error::other("spawned child has no pid"))?;
    let stdio = LeaderStdio {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
    };
    Ok(Leader {
        pid,
        spawner: Spawner::Fork,
        handle: Handle::Forked(child),
        stdio,
    })
}

/// The error of an `execve` that failed, the same from both spawners.
fn exec_error(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!("cannot execute `{}`: {e}", path.display()),
    )
}

/// Arranges for the program, between fork and exec, to start with an empty signal
/// mask, and to enter its cgroup (write `0` to the `cgroup.procs` the parent opened)
/// or, if it has none or the write fails and `subreaper` is set, to make itself a
/// child subreaper so that orphans of its subtree stay its descendants while it lives
/// ([`crate::orphans`]).
///
/// The mask: the standard library's spawn leaves the spawning thread's signal mask to
/// the program (tests/spawn.rs found a signal blocked here reaching the program
/// blocked), while the clone3 spawner and every program expect none blocked.
///
/// The hook runs in the forked child of a multi-threaded process: it makes three
/// syscalls on values prepared beforehand (no allocation, no lock), which is what
/// `pre_exec` allows.
#[allow(unsafe_code)]
fn prepare_child(command: &mut tokio::process::Command, procs: Option<RawFd>, subreaper: bool) {
    use std::os::fd::BorrowedFd;
    let empty = SigSet::empty();
    let hook = move || {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&empty), None);
        let entered = procs.is_some_and(|fd| {
            // SAFETY: `fd` is the `cgroup.procs` file the parent keeps open (in the
            // `RunCgroup` it holds) until after the spawn returns; the child has a
            // copy of the descriptor table, so the fd is valid here.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            nix::unistd::write(fd, b"0") == Ok(1)
        });
        if !entered && subreaper {
            let _ = nix::sys::prctl::set_child_subreaper(true);
        }
        Ok(())
    };
    // SAFETY: the hook only calls `pthread_sigmask(3)` (`rt_sigprocmask(2)`),
    // `write(2)` and `prctl(2)`, all async-signal-safe, on data captured by value; it
    // allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(hook);
    }
}

/// Why the clone3 spawner did not start the program.
enum Refused {
    /// Nothing was started and the fork spawner may try (the errno, for the log).
    Fallback(nix::errno::Errno),
    /// Give up: the error is the caller's.
    Failed(std::io::Error),
}

impl From<std::io::Error> for Refused {
    fn from(e: std::io::Error) -> Refused {
        Refused::Failed(e)
    }
}

/// `struct clone_args` of `<linux/sched.h>` up to `cgroup` (`CLONE_ARGS_SIZE_VER2`,
/// Linux 5.7): every field a `u64`, pointers and fds widened.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_PIDFD: u64 = 0x1000;
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// What the clone3 child does before `execve`, all of it prepared before the clone.
/// Raw pointers into the `CString`s and vectors of [`Prepared`], which outlives the
/// clone (the child has a copy of the whole address space).
struct ChildPlan {
    /// (our fd, the child's 0/1/2); every "our fd" is 3 or above, so no `dup2`
    /// overwrites a source a later one needs.
    stdio: [(RawFd, RawFd); 3],
    cwd: *const libc::c_char,
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// `/bin/sh PATH ARGS…` for a file the kernel refuses with ENOEXEC.
    sh_argv: *const *const libc::c_char,
    /// The write end of the report pipe (close-on-exec).
    report: RawFd,
}

/// Steps of the child, reported with the errno when one fails.
const STEP_SETPGID: u32 = 1;
const STEP_STDIO: u32 = 2;
const STEP_CHDIR: u32 = 3;
const STEP_EXEC: u32 = 4;

/// The `CString`s and pointer arrays a [`ChildPlan`] points into (`_argv` and
/// `_envp` are only kept alive: the pointer arrays point into them).
struct Prepared {
    cwd: Option<CString>,
    path: CString,
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
    sh_argv_ptrs: Vec<*const libc::c_char>,
}

fn c_string(bytes: &[u8], what: &str) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what} contains a NUL byte, which no program can receive"),
        )
    })
}

impl Prepared {
    fn new(
        command: &LeaderCommand,
        path: &Path,
        env: &BTreeMap<OsString, OsString>,
    ) -> std::io::Result<Prepared> {
        let mut argv = vec![c_string(command.program.as_bytes(), "the program name")?];
        for arg in &command.args {
            argv.push(c_string(arg.as_bytes(), "an argument")?);
        }
        let mut envp = Vec::with_capacity(env.len());
        for (key, value) in env {
            let mut entry = key.clone().into_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            envp.push(c_string(&entry, "an environment variable")?);
        }
        let cwd = match &command.cwd {
            Some(cwd) => Some(c_string(
                cwd.as_os_str().as_bytes(),
                "the working directory",
            )?),
            None => None,
        };
        let path = c_string(path.as_os_str().as_bytes(), "the program path")?;
        let null_terminated = |strings: &mut dyn Iterator<Item = *const libc::c_char>| {
            strings
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let argv_ptrs = null_terminated(&mut argv.iter().map(|s| s.as_ptr()));
        let envp_ptrs = null_terminated(&mut envp.iter().map(|s| s.as_ptr()));
        let sh_argv_ptrs = null_terminated(
            &mut [c"/bin/sh".as_ptr(), path.as_ptr()]
                .into_iter()
                .chain(argv.iter().skip(1).map(|s| s.as_ptr())),
        );
        Ok(Prepared {
            cwd,
            path,
            _argv: argv,
            _envp: envp,
            argv_ptrs,
            envp_ptrs,
            sh_argv_ptrs,
        })
    }
}

/// `fd`, or a close-on-exec duplicate of it numbered 3 or above: the child's `dup2`
/// onto 0, 1 and 2 must not overwrite a descriptor it still has to read.
fn above_stdio(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    let mut low = Vec::new();
    let mut fd = fd;
    // Each duplicate takes the lowest free number: at most three are below 3.
    while fd.as_raw_fd() < 3 {
        let next = fd.try_clone()?;
        low.push(fd);
        fd = next;
    }
    Ok(fd)
}

/// One stream of the child: the descriptor it gets (ours, kept until the clone) and
/// the end this process keeps for a pipe.
fn child_stream(stdio: Stdio, input: bool) -> std::io::Result<(Option<OwnedFd>, Option<OwnedFd>)> {
    Ok(match stdio {
        Stdio::Inherit => (None, None),
        Stdio::Null => {
            let null = OpenOptions::new()
                .read(input)
                .write(!input)
                .open("/dev/null")?;
            (Some(above_stdio(null.into())?), None)
        }
        Stdio::Piped => {
            let (reader, writer) = std::io::pipe()?;
            let (theirs, ours): (OwnedFd, OwnedFd) = if input {
                (reader.into(), writer.into())
            } else {
                (writer.into(), reader.into())
            };
            (Some(above_stdio(theirs)?), Some(ours))
        }
    })
}

/// The clone3 spawner (module doc).
#[allow(unsafe_code)]
fn start_cloned(
    command: &LeaderCommand,
    path: &Path,
    env: &BTreeMap<OsString, OsString>,
    cgroup: &crate::cgroup::RunCgroup,
) -> Result<Leader, Refused> {
    let prepared = Prepared::new(command, path, env)?;
    let cgroup_dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(cgroup.dir())?;
    let (stdin_theirs, stdin_ours) = child_stream(command.stdin, true)?;
    let (stdout_theirs, stdout_ours) = child_stream(command.stdout, false)?;
    let (stderr_theirs, stderr_ours) = child_stream(command.stderr, false)?;
    let (mut report_read, report_write) = std::io::pipe()?;
    let report_write = above_stdio(report_write.into())?;
    let raw = |fd: &Option<OwnedFd>| fd.as_ref().map_or(-1, |fd| fd.as_raw_fd());
    let plan = ChildPlan {
        stdio: [
            (raw(&stdin_theirs), 0),
            (raw(&stdout_theirs), 1),
            (raw(&stderr_theirs), 2),
        ],
        cwd: prepared
            .cwd
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr()),
        path: prepared.path.as_ptr(),
        argv: prepared.argv_ptrs.as_ptr(),
        envp: prepared.envp_ptrs.as_ptr(),
        sh_argv: prepared.sh_argv_ptrs.as_ptr(),
        report: report_write.as_raw_fd(),
    };
    let mut pidfd: libc::c_int = -1;
    let args = CloneArgs {
        flags: CLONE_PIDFD | CLONE_INTO_CGROUP,
        pidfd: std::ptr::addr_of_mut!(pidfd) as u64,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup_dir.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // Every signal blocked across the clone: the child starts with them blocked and
    // unblocks only after resetting the handlers it inherited.
    let mut mask = SigSet::empty();
    pthread_sigmask(
        SigmaskHow::SIG_SETMASK,
        Some(&SigSet::all()),
        Some(&mut mask),
    )
    .map_err(std::io::Error::from)?;
    // SAFETY: clone3 without CLONE_VM is a fork: the child gets a copy of this address
    // space (so `plan` and what it points into stay valid there) and runs only
    // `exec_child`, which never returns. `args` is a valid `clone_args` of the size
    // passed, and `pidfd` outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            std::ptr::addr_of!(args),
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if ret == 0 {
        // SAFETY: we are the child of the clone above; see `exec_child`.
        unsafe { exec_child(&plan) }
    }
    let clone_error = (ret < 0).then(nix::errno::Errno::last);
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&mask), None);
    if let Some(errno) = clone_error {
        use nix::errno::Errno;
        return Err(match errno {
            Errno::ENOSYS | Errno::E2BIG | Errno::EINVAL => {
                CLONE3_UNUSABLE.store(true, Ordering::Relaxed);
                Refused::Fallback(errno)
            }
            Errno::EPERM | Errno::EACCES | Errno::EBUSY | Errno::EOPNOTSUPP => {
                Refused::Fallback(errno)
            }
            other => Refused::Failed(std::io::Error::from(other)),
        });
    }
    let pid = i32::try_from(ret).map_err(|_| std::io::Error::other("clone3 returned no pid"))?;
    // SAFETY: CLONE_PIDFD succeeded, so the kernel stored a new (close-on-exec) pidfd
    // here, owned by nobody else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // The child's ends are its own now; ours would keep its pipes open.
    drop((
        stdin_theirs,
        stdout_theirs,
        stderr_theirs,
        report_write,
        cgroup_dir,
    ));
    drop(prepared);
    let mut report = Vec::with_capacity(8);
    // EOF at the child's `execve` (close-on-exec), else its step and errno.
    let read = (&mut report_read).take(8).read_to_end(&mut report);
    let cloned = Pidfd {
        fd: Some(pidfd),
        watched: None,
        status: None,
    };
    let failure = match (read, report.as_slice()) {
        (Ok(_), []) => None,
        (Ok(_), [a, b, c, d, e, f, g, h]) => {
            let step = u32::from_ne_bytes([*a, *b, *c, *d]);
            let errno = i32::from_ne_bytes([*e, *f, *g, *h]);
            Some(child_error(step, errno, command, path))
        }
        (Ok(_), _) => Some(std::io::Error::other(
            "the program's start report was cut short",
        )),
        (Err(e), _) => Some(e),
    };
    if let Some(e) = failure {
        // The child exits at once after reporting; collect it before answering.
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = waitpid(Pid::from_raw(pid), None);
        return Err(Refused::Failed(e));
    }
    let leader = |stdio| Leader {
        pid,
        spawner: Spawner::Clone3,
        handle: Handle::Cloned(cloned),
        stdio,
    };
    // From here the program runs: on an error the leader's drop kills and reaps it.
    let pipes = (|| -> std::io::Result<LeaderStdio> {
        Ok(LeaderStdio {
            stdin: stdin_ours
                .map(|fd| ChildStdin::from_std(std::process::ChildStdin::from(fd)))
                .transpose()?,
            stdout: stdout_ours
                .map(|fd| ChildStdout::from_std(std::process::ChildStdout::from(fd)))
                .transpose()?,
            stderr: stderr_ours
                .map(|fd| ChildStderr::from_std(std::process::ChildStderr::from(fd)))
                .transpose()?,
        })
    })();
    match pipes {
        Ok(stdio) => Ok(leader(stdio)),
        Err(e) => {
            drop(leader(LeaderStdio::default()));
            Err(Refused::Failed(e))
        }
    }
}

/// The error for a child that reported `step` failing with `errno`.
fn child_error(step: u32, errno: i32, command: &LeaderCommand, path: &Path) -> std::io::Error {
    let os = std::io::Error::from_raw_os_error(errno);
    let what = match step {
        STEP_SETPGID => "cannot make the program a process-group leader".to_owned(),
        STEP_STDIO => "cannot connect the program's stdin, stdout and stderr".to_owned(),
        STEP_CHDIR => format!(
            "cannot enter its working directory {}",
            command.cwd.as_deref().unwrap_or(Path::new("?")).display()
        ),
        STEP_EXEC => return exec_error(path, os),
        _ => "the program's start failed".to_owned(),
    };
    std::io::Error::new(os.kind(), format!("{what}: {os}"))
}

/// The clone3 child: own process group, stdio, working directory, default signal
/// handling and an empty mask, then `execve`; on a failure, the step and errno go
/// down the report pipe and the child exits 127.
///
/// # Safety
///
/// Only in the child of a clone without CLONE_VM, with `plan` prepared before it.
/// Only async-signal-safe system calls follow (no allocation, no lock, no unwinding);
/// the function never returns.
#[allow(unsafe_code)]
unsafe fn exec_child(plan: &ChildPlan) -> ! {
    // SAFETY (whole body): raw system calls on pointers prepared before the clone
    // (valid in this copy of the address space) and on stack values.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            report_and_exit(plan, STEP_SETPGID);
        }
        for (ours, theirs) in plan.stdio {
            if ours >= 0 && libc::dup2(ours, theirs) < 0 {
                report_and_exit(plan, STEP_STDIO);
            }
        }
        if !plan.cwd.is_null() && libc::chdir(plan.cwd) != 0 {
            report_and_exit(plan, STEP_CHDIR);
        }
        // A handler of ours would run in the child if a signal came before `execve`;
        // the kernel resets handlers at `execve`, so do it now. Ignored signals stay
        // ignored (as std's spawn leaves them), except SIGPIPE, which the Rust runtime
        // ignores for itself and every program expects at its default.
        for signal in 1..=libc::SIGRTMAX() {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && ((old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN)
                    || signal == libc::SIGPIPE)
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(plan.path, plan.argv, plan.envp);
        if *libc::__errno_location() == libc::ENOEXEC {
            // What execvp does for a file the kernel cannot run: a shell script
            // without `#!`.
            libc::execve(c"/bin/sh".as_ptr(), plan.sh_argv, plan.envp);
        }
        report_and_exit(plan, STEP_EXEC);
    }
}

/// Writes `step` and the current errno to the report pipe, then `_exit(127)`.
///
/// # Safety
///
/// As [`exec_child`].
#[allow(unsafe_code)]
unsafe fn report_and_exit(plan: &ChildPlan, step: u32) -> ! {
    // SAFETY: `__errno_location` is this thread's errno; `write` and `_exit` are
    // async-signal-safe, on a stack buffer.
    unsafe {
        let errno = *libc::__errno_location();
        let mut message = [0u8; 8];
        message[..4].copy_from_slice(&step.to_ne_bytes());
        message[4..].copy_from_slice(&errno.to_ne_bytes());
        libc::write(plan.report, message.as_ptr().cast(), message.len());
        libc::_exit(127)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_program_like_execvp_and_says_what_to_do_when_it_cannot() {
        let mut env = BTreeMap::new();
        env.insert(OsString::from("PATH"), OsString::from("/nonexistent:/bin"));
        let found = resolve(&LeaderCommand::new("sh"), &env).unwrap();
        assert_eq!(found, Path::new("/bin/sh"));
        // No PATH at all: execvp's default.
        let found = resolve(&LeaderCommand::new("sh"), &BTreeMap::new()).unwrap();
        assert_eq!(found, Path::new("/bin/sh"));
        let missing = resolve(&LeaderCommand::new("agent-exec-no-such-program"), &env).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            missing.to_string(),
            "`agent-exec-no-such-program` is in no directory of PATH; install it, or give its \
             full path"
        );
        let dir = resolve(&LeaderCommand::new("/tmp"), &env).unwrap_err();
        assert_eq!(dir.kind(), std::io::ErrorKind::PermissionDenied);
        let no_cwd = resolve(
            LeaderCommand::new("sh").current_dir("/nonexistent/agent-exec"),
            &env,
        )
        .unwrap_err();
        assert_eq!(no_cwd.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn the_one_search_says_why_it_found_nothing() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "not a program").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let find = |program: &str, path: Option<&str>, cwd: Option<&Path>| {
            find_program(OsStr::new(program), path.map(OsStr::new), cwd)
        };
        let search = dir.path().to_str().unwrap();
        assert_eq!(find("tool", Some(search), None), Ok(tool.clone()));
        // An empty entry is the working folder, as for execvp.
        assert_eq!(
            find("tool", Some(":/nonexistent"), Some(dir.path())),
            Ok(PathBuf::from("./tool"))
        );
        assert_eq!(
            find("./tool", None, Some(dir.path())),
            Ok(PathBuf::from("./tool"))
        );
        assert_eq!(find("", Some(search), None), Err(Missing::EmptyName));
        assert_eq!(
            find("plain", Some(search), None),
            Err(Missing::OnPathNotExecutable)
        );
        assert_eq!(find("nothing", Some(search), None), Err(Missing::NotOnPath));
        let gone = dir.path().join("gone");
        assert_eq!(
            find(gone.to_str().unwrap(), None, None),
            Err(Missing::NoSuchFile)
        );
        assert_eq!(find(search, None, None), Err(Missing::NotExecutable));
        // No PATH at all: execvp's default folders.
        assert_eq!(find("sh", None, None), Ok(PathBuf::from("/bin/sh")));
    }

    #[test]
    fn keeps_the_childs_descriptors_clear_of_0_1_and_2() {
        let (reader, _writer) = std::io::pipe().unwrap();
        let fd = above_stdio(reader.into()).unwrap();
        assert!(fd.as_raw_fd() >= 3);
    }
}
