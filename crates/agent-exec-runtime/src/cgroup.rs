//! A cgroup v2 per run: the one place where "every process this run started" is the
//! kernel's answer, not our reconstruction.
//!
//! A process cannot leave its cgroup by `setsid`, by clearing its environment or by
//! losing its parent; only a write to another cgroup's `cgroup.procs` moves it, which
//! needs write access there (root, or the owner of a delegated subtree). So a run's
//! cgroup lists all of its processes, and `cgroup.kill` (Linux 5.14) kills them all
//! in one step, forks in flight included.
//!
//! Where: a child of the cgroup this process is in (`/proc/self/cgroup`, the `0::`
//! line, under the cgroup2 mount found in `/proc/self/mountinfo` — `/sys/fs/cgroup`,
//! or `/sys/fs/cgroup/unified` on a hybrid host). That works for root, and for a user
//! whose process runs in a subtree systemd delegated to them (`systemd-run --user
//! --scope`, a `Delegate=yes` unit). Creating a child needs no controller, so the
//! "no internal processes" rule does not apply: this process stays where it is.
//!
//! How a program gets in: it is created inside, by `clone3(CLONE_INTO_CGROUP)`
//! ([`crate::spawn`]); where the kernel refuses that, the fork spawner's `pre_exec`
//! hook writes `0` to the run's `cgroup.procs` (opened by the parent; `write` is
//! async-signal-safe). Either way the program is inside before its first instruction
//! and nothing it forks is ever outside. Decision: not moving the pid after the spawn
//! returns — by then the program may already have forked. clone3 first because a
//! migration (the `cgroup.procs` write) waits for an RCU grace period under the
//! kernel's `cgroup_threadgroup_rwsem`: milliseconds per run (issue 20).
//!
//! A run is its cgroup's whole *subtree*. With no controller enabled, a program may
//! create cgroups inside its run cgroup and move its processes there (root, or any
//! user in a delegated subtree: the run cgroup is theirs). So the members are every
//! `cgroup.procs` of the subtree, SIGKILL is `cgroup.kill` (which covers
//! descendants), the run is over when the run cgroup's `cgroup.events` says
//! `populated 0` (waited for with `poll(2)`, which the kernel wakes on a change of
//! that file), and the folders are removed deepest first. What was nested is
//! reported ([`crate::process::Termination::nested_cgroups`]).
//!
//! Names: `agent-exec-<runner pid>-<runner start ticks>-<n>`. The runner's identity
//! in the name lets any later process tell that the runner is dead — even once its
//! pid is reused — and clean up what a SIGKILLed runner left
//! ([`sweep_dead_runners`], which every `agent-exec` command that opens the journal
//! runs). Decision: the identity in the name, not a journal column: the name is
//! what a cleanup walking the cgroup directory finds, and the journal may be
//! another machine's PostgreSQL.
//!
//! Availability is found out once per process: find the directory (read once,
//! [`base`]), create a child, open its `cgroup.procs` for writing and see that it has
//! a `cgroup.kill`. Any failure is the answer "no cgroup here" with the reason, and
//! runs use the subreaper instead (see [`crate::process`]). Decision: a run's first
//! [`RunCgroup::create`] *is* that trial, keeping the folder it made; only a caller
//! that asks without creating ([`availability`], e.g. `backends --verify`) makes and
//! removes a `-probe` child. The separate probe before every run's real cgroup (a
//! mkdir, an open, an rmdir) was ~2% of the CPU time of `agent-exec run` (issue 20).

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Prefix of every run cgroup's name (`agent-exec-<runner pid>-<runner start ticks>-<n>`).
pub const NAME_PREFIX: &str = "agent-exec-";

/// Where run cgroups are created, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    /// The directory run cgroups are created in; `None` when cgroups cannot be used.
    pub base: Option<PathBuf>,
    /// Why not, when `base` is `None`; where, when it is set.
    pub detail: String,
}

static AVAILABILITY: OnceLock<Availability> = OnceLock::new();
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether this process can give each run its own cgroup (found out once, cached: by
/// the first [`RunCgroup::create`], or here by creating and removing a `-probe` child).
pub fn availability() -> &'static Availability {
    AVAILABILITY.get_or_init(|| {
        let trial = base().and_then(|base| {
            let (dir, procs) = make_child(&base.dir, &format!("{}probe", own_prefix()))?;
            drop(procs);
            let _ = fs::remove_dir(&dir);
            Ok(base)
        });
        availability_of(trial)
    })
}

fn availability_of(trial: Result<&Base, Unavailable>) -> Availability {
    match trial {
        Ok(base) => Availability {
            detail: format!("a cgroup v2 per run, under {}", base.dir.display()),
            base: Some(base.dir.clone()),
        },
        Err(reason) => Availability {
            base: None,
            detail: reason.to_string(),
        },
    }
}

/// Why this process cannot give a run its own cgroup; says what to do where it can.
/// Cloned out of the once-read answer, so an I/O error is shared.
#[derive(Debug, Clone, thiserror::Error)]
enum Unavailable {
    #[error("cannot read {path}: {error}")]
    Unreadable {
        path: &'static str,
        error: Arc<std::io::Error>,
    },
    #[error("no cgroup2 file system is mounted")]
    NoMount,
    #[error("this process is in no cgroup v2 (no `0::` line)")]
    NoCgroup,
    #[error("our cgroup {path} is outside the cgroup2 mount's root {root}")]
    OutsideRoot { path: String, root: String },
    #[error(
        "cannot create a cgroup under {} ({error}); run as root or in a delegated subtree \
         (systemd-run --user --scope -p Delegate=yes …)",
        base.display()
    )]
    Create {
        base: PathBuf,
        error: Arc<std::io::Error>,
    },
    #[error(
        "cannot write cgroup.procs under {} ({error}); run as root or in a delegated subtree",
        base.display()
    )]
    Procs {
        base: PathBuf,
        error: Arc<std::io::Error>,
    },
    #[error("the kernel has no cgroup.kill (Linux 5.14+) under {}", base.display())]
    NoKill { base: PathBuf },
}

/// Where this process's run cgroups go.
#[derive(Debug)]
struct Base {
    /// The directory run cgroups are created in.
    dir: PathBuf,
    /// This process's own cgroup as `/proc/self/cgroup`'s `0::` line names it.
    own: String,
}

/// The directory run cgroups are created in: the cgroup this process is in, under the
/// cgroup2 mount. Not whether we may create one there ([`availability`] says that).
/// Read once: this process never moves itself to another cgroup.
fn base() -> Result<&'static Base, Unavailable> {
    static BASE: OnceLock<Result<Base, Unavailable>> = OnceLock::new();
    BASE.get_or_init(|| {
        let read = |path: &'static str| {
            fs::read_to_string(path).map_err(|error| Unavailable::Unreadable {
                path,
                error: Arc::new(error),
            })
        };
        let mountinfo = read("/proc/self/mountinfo")?;
        let (mount, root) = cgroup2_mount(&mountinfo).ok_or(Unavailable::NoMount)?;
        let own = read("/proc/self/cgroup")?;
        let path = unified_path(&own).ok_or(Unavailable::NoCgroup)?;
        let relative =
            Path::new(&path)
                .strip_prefix(&root)
                .map_err(|_| Unavailable::OutsideRoot {
                    path: path.clone(),
                    root: root.clone(),
                })?;
        Ok(Base {
            dir: Path::new(&mount).join(relative),
            own: path,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Creates the child cgroup `name` under `base` as a run needs it: `cgroup.procs`
/// open to write, `cgroup.kill` present. On failure nothing is left and the reason
/// says what to do.
fn make_child(base: &Path, name: &str) -> Result<(PathBuf, File), Unavailable> {
    let dir = base.join(name);
    fs::create_dir(&dir).map_err(|error| Unavailable::Create {
        base: base.to_owned(),
        error: Arc::new(error),
    })?;
    let procs = OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
        .map_err(|error| Unavailable::Procs {
            base: base.to_owned(),
            error: Arc::new(error),
        });
    let procs = match procs {
        Ok(procs) if dir.join("cgroup.kill").exists() => procs,
        Ok(_) => {
            let _ = fs::remove_dir(&dir);
            return Err(Unavailable::NoKill {
                base: base.to_owned(),
            });
        }
        Err(reason) => {
            let _ = fs::remove_dir(&dir);
            return Err(reason);
        }
    };
    Ok((dir, procs))
}

/// The mount point and root of the first cgroup2 mount in a `/proc/self/mountinfo`
/// text (`id parent dev root mountpoint opts … - fstype source superopts`).
pub fn cgroup2_mount(mountinfo: &str) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount = fields.next()?;
        Some((unescape_octal(mount), unescape_octal(root)))
    })
}

/// The cgroup v2 path of a `/proc/<pid>/cgroup` text (its `0::` line).
pub fn unified_path(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::to_owned)
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes.get(i) == Some(&b'\\') && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.extend(bytes.get(i));
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One run's cgroup: created empty, the program started inside it ([`crate::spawn`]),
/// killed and removed at the end.
///
/// The run is the whole *subtree*: a program may create cgroups inside its own (no
/// controller is enabled, so nothing stops it, root or not) and move processes there.
/// So every read here covers the subtree: the processes are the union of every
/// `cgroup.procs` in it, `cgroup.kill` kills the subtree, "empty" is the run
/// cgroup's `cgroup.events` saying `populated 0` (which counts descendants), and the
/// folders are removed deepest first.
#[derive(Debug)]
pub struct RunCgroup {
    dir: PathBuf,
    /// The `0::` path processes inside show in `/proc/<pid>/cgroup`.
    path: String,
    procs: File,
}

impl RunCgroup {
    /// Creates a fresh cgroup for one run, unless [`availability`] already said there
    /// can be none. The first one of the process is also the availability trial: its
    /// outcome is what [`availability`] answers from then on.
    pub fn create() -> std::io::Result<RunCgroup> {
        if let Some(known) = AVAILABILITY.get()
            && known.base.is_none()
        {
            return Err(std::io::Error::other(known.detail.clone()));
        }
        let name = format!(
            "{}{}",
            own_prefix(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let made = base().and_then(|base| Ok((base, make_child(&base.dir, &name)?)));
        let known = AVAILABILITY
            .get_or_init(|| availability_of(made.as_ref().map(|(b, _)| *b).map_err(Clone::clone)));
        let (base, (dir, procs)) = made.map_err(std::io::Error::other)?;
        if known.base.is_none() {
            // Another thread's trial failed first: this process runs without cgroups.
            let _ = fs::remove_dir(&dir);
            return Err(std::io::Error::other(known.detail.clone()));
        }
        let path = format!("{}/{name}", base.own.trim_end_matches('/'));
        Ok(RunCgroup { dir, path, procs })
    }

    /// The open `cgroup.procs`, for the fork spawner's `pre_exec` write.
    pub fn procs_fd(&self) -> BorrowedFd<'_> {
        self.procs.as_fd()
    }

    /// The cgroup as `/proc/<pid>/cgroup`'s `0::` line of a process inside names it.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The directory in the cgroup file system.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether `pid` (live or zombie) is in this cgroup or one nested in it.
    pub fn holds(&self, pid: i32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .and_then(|t| unified_path(&t))
            .is_some_and(|p| {
                p.strip_prefix(&self.path)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    }

    /// The live processes in it and in every cgroup nested in it (zombies are not
    /// listed).
    pub fn pids(&self) -> Vec<i32> {
        subtree_pids(&self.dir)
    }

    /// Whether any process is left in the subtree (`cgroup.events`); an unreadable
    /// file reads as populated unless the directory is gone.
    pub fn populated(&self) -> bool {
        populated(&self.dir)
    }

    /// How many cgroups the run's processes created inside this one.
    pub fn nested(&self) -> usize {
        subtree_bottom_up(&self.dir).len().saturating_sub(1)
    }

    /// Sends `signal` to every process in the subtree; SIGKILL goes through
    /// `cgroup.kill`, which covers nested cgroups and a fork in flight.
    pub fn signal(&self, signal: Signal) {
        if signal == Signal::SIGKILL && kill_subtree(&self.dir) {
            return;
        }
        for pid in self.pids() {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }

    /// Blocks until the subtree is empty or `limit` passes: true if it is empty.
    pub fn wait_empty(&self, limit: Duration) -> bool {
        wait_unpopulated(&self.dir, limit)
    }
}

/// [`RunCgroup::wait_empty`] for the cgroup at `dir` (for a blocking task that cannot
/// borrow the `RunCgroup`).
pub fn wait_empty_at(dir: &Path, limit: Duration) -> bool {
    wait_unpopulated(dir, limit)
}

impl RunCgroup {
    /// Removes the (empty) subtree, deepest folder first. The folders still there.
    fn remove(&self) -> Vec<PathBuf> {
        remove_subtree(&self.dir)
    }
}

impl Drop for RunCgroup {
    /// Nothing of a run outlives its cgroup: kill what is left, wait for the kernel
    /// to say the subtree is empty, then remove it.
    fn drop(&mut self) {
        if self.populated() {
            self.signal(Signal::SIGKILL);
            self.wait_empty(KILL_WAIT);
        }
        let left = self.remove();
        if !left.is_empty() {
            tracing::warn!(dir = %self.dir.display(), left = left.len(), "run cgroup folders left");
        }
    }
}

/// How long to wait for a killed subtree to empty.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// At most this many folders of one run's subtree are walked: a program cannot make
/// a walk unbounded by nesting cgroups.
const MAX_SUBTREE_DIRS: usize = 4096;

/// `agent-exec-<pid>-<start ticks>-`: the start of every run cgroup this process
/// creates. With the start time, another process can tell the runner is gone even
/// after its pid was reused ([`owner_of`]).
pub(crate) fn own_prefix() -> String {
    format!(
        "{NAME_PREFIX}{}-{}-",
        std::process::id(),
        crate::procfs::own_start_ticks()
    )
}

/// The runner a run cgroup's name says created it: `(pid, Some(start ticks))` for
/// `agent-exec-<pid>-<ticks>-<n>` (and the `-probe` folder), `(pid, None)` for the
/// older `agent-exec-<pid>-<n>`. `None` for any other name.
pub fn owner_of(name: &str) -> Option<(i32, Option<u64>)> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let parts: Vec<&str> = rest.split('-').collect();
    // Digits only: `parse` would also take `+12`, a name we never make.
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !parts.iter().all(|p| number(p) || *p == "probe") {
        return None;
    }
    let last_ok = |s: &str| s == "probe" || s.parse::<u64>().is_ok();
    match parts.as_slice() {
        [pid, ticks, last] if last_ok(last) => Some((pid.parse().ok()?, Some(ticks.parse().ok()?))),
        [pid, last] if last_ok(last) => Some((pid.parse().ok()?, None)),
        _ => None,
    }
}

/// Whether the runner `(pid, start ticks)` still runs. Without a start time (an
/// older name) any live process with that pid counts: a folder is never taken from
/// a runner that may be alive.
fn owner_alive(pid: i32, ticks: Option<u64>) -> bool {
    crate::procfs::stat(pid)
        .is_some_and(|s| !s.is_gone() && ticks.is_none_or(|t| t == s.start_time))
}

/// What [`sweep_dead_runners`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Run cgroups of dead runners found (each a subtree).
    pub runs: usize,
    /// Processes that were still running in them and were killed.
    pub killed: usize,
    /// Folders removed (nested ones included).
    pub removed: usize,
    /// Folders that could not be removed (a process that would not die).
    pub left: Vec<PathBuf>,
    /// The runner pids they belonged to.
    pub owners: Vec<i32>,
}

/// Kills and removes every run cgroup, under the directory run cgroups are created
/// in, whose runner is dead (SIGKILL, a crash: nobody ran its cleanup): `cgroup.kill`
/// on each, a wait for `populated 0`, then its folders deepest first. A runner that
/// lives is never touched. Costs one `readdir` when there is nothing to do.
///
/// Not reached: run cgroups of a runner that sat in another cgroup (another login
/// session's scope); their processes are found by the tree marker instead
/// ([`crate::process::terminate_runner_leftovers`]). Assumed: every runner creating
/// run cgroups beside ours sees the same pids as we do (one pid namespace). A runner
/// in another pid namespace sharing our cgroup (not how containers are set up: they
/// get a cgroup of their own) would be judged by a pid that is not its own.
pub fn sweep_dead_runners() -> Swept {
    let mut swept = Swept::default();
    let Ok(base) = base() else {
        return swept;
    };
    let Ok(entries) = fs::read_dir(&base.dir) else {
        return swept;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, ticks)) = name.to_str().and_then(owner_of) else {
            continue;
        };
        if owner_alive(pid, ticks) {
            continue;
        }
        let dir = entry.path();
        swept.runs += 1;
        if !swept.owners.contains(&pid) {
            swept.owners.push(pid);
        }
        if populated(&dir) {
            swept.killed += subtree_pids(&dir).len();
            kill_subtree(&dir);
            wait_unpopulated(&dir, KILL_WAIT);
        }
        let folders = subtree_bottom_up(&dir).len();
        let left = remove_subtree(&dir);
        swept.removed += folders.saturating_sub(left.len());
        swept.left.extend(left);
    }
    swept
}

/// Kills and removes the run cgroup `/proc/<pid>/cgroup` names for `pid`, if it is
/// one of a dead runner's; how many processes it held. For a leftover found by its
/// tree marker whose runner sat in another cgroup than ours.
pub fn kill_dead_runners_cgroup_of(pid: i32) -> Option<(PathBuf, usize)> {
    let (mount, root) = cgroup2_mount(&fs::read_to_string("/proc/self/mountinfo").ok()?)?;
    let path = unified_path(&fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?)?;
    // The outermost run cgroup on the path: nested ones are inside it.
    let mut run = PathBuf::from(&mount);
    let relative = Path::new(&path).strip_prefix(&root).ok()?;
    let mut found = None;
    for component in relative.components() {
        run.push(component);
        let name = component.as_os_str().to_str()?;
        if let Some((owner, ticks)) = owner_of(name) {
            found = Some((run.clone(), owner, ticks));
            break;
        }
    }
    let (dir, owner, ticks) = found?;
    if owner_alive(owner, ticks) {
        return None;
    }
    let killed = subtree_pids(&dir).len();
    kill_subtree(&dir);
    wait_unpopulated(&dir, KILL_WAIT);
    remove_subtree(&dir);
    Some((dir, killed))
}

/// Every cgroup folder of the subtree at `dir`, deepest first (`dir` itself last);
/// empty if `dir` is gone.
fn subtree_bottom_up(dir: &Path) -> Vec<PathBuf> {
    if !dir.is_dir() {
        return Vec::new();
    }
    // Pre-order, then reversed: every folder comes after all of its descendants.
    let mut order = vec![dir.to_path_buf()];
    let mut next = 0;
    while next < order.len() && order.len() < MAX_SUBTREE_DIRS {
        if let Ok(entries) = fs::read_dir(&order[next]) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) && order.len() < MAX_SUBTREE_DIRS {
                    order.push(entry.path());
                }
            }
        }
        next += 1;
    }
    order.reverse();
    order
}

/// The live processes of every cgroup in the subtree at `dir`.
fn subtree_pids(dir: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for folder in subtree_bottom_up(dir) {
        if let Ok(text) = fs::read_to_string(folder.join("cgroup.procs")) {
            pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
        }
    }
    pids
}

/// `populated` of the subtree's `cgroup.events`. Unreadable: populated, unless the
/// folder is gone.
fn populated(dir: &Path) -> bool {
    match fs::read_to_string(dir.join("cgroup.events")) {
        Ok(text) => events_populated(&text),
        Err(_) => dir.exists(),
    }
}

/// Whether a `cgroup.events` text says `populated 1` (anything unparsable: yes).
pub fn events_populated(text: &str) -> bool {
    text.lines()
        .find_map(|l| l.strip_prefix("populated "))
        .is_none_or(|v| v.trim() != "0")
}

/// `cgroup.kill` on `dir`: SIGKILL to every process of the subtree. False if the
/// write failed.
fn kill_subtree(dir: &Path) -> bool {
    OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.kill"))
        .and_then(|mut f| f.write_all(b"1"))
        .is_ok()
}

/// Waits until `cgroup.events` of `dir` says `populated 0`, or `limit` passes: true
/// if the subtree is empty. No polling loop: the kernel signals a change of the file
/// to `poll(2)` as `POLLPRI`, and each read re-arms that (kernfs).
fn wait_unpopulated(dir: &Path, limit: Duration) -> bool {
    use std::io::{Read as _, Seek as _};
    let Ok(mut events) = File::open(dir.join("cgroup.events")) else {
        return !dir.exists();
    };
    let until = Instant::now() + limit;
    loop {
        let mut text = String::new();
        if events.rewind().is_err() || events.read_to_string(&mut text).is_err() {
            return !dir.exists();
        }
        if !events_populated(&text) {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(events.as_fd(), PollFlags::POLLPRI)];
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// Removes the folders of the subtree at `dir`, deepest first, retrying each briefly
/// (the kernel may still be releasing the last task). The folders left.
fn remove_subtree(dir: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    for folder in subtree_bottom_up(dir) {
        let mut removed = false;
        for attempt in 0..20 {
            match fs::remove_dir(&folder) {
                Ok(()) => removed = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => removed = true,
                Err(_) if attempt < 19 => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => {
                    tracing::debug!(dir = %folder.display(), %e, "cannot remove a run cgroup folder");
                }
            }
            if removed {
                break;
            }
        }
        if !removed {
            left.push(folder);
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn why_not_keeps_its_words() {
        let denied = Unavailable::Create {
            base: "/sys/fs/cgroup/user.slice".into(),
            error: Arc::new(std::io::Error::from_raw_os_error(13)),
        };
        assert_eq!(
            denied.to_string(),
            "cannot create a cgroup under /sys/fs/cgroup/user.slice (Permission denied (os \
             error 13)); run as root or in a delegated subtree (systemd-run --user --scope -p \
             Delegate=yes …)"
        );
        assert_eq!(
            Unavailable::NoKill {
                base: "/sys/fs/cgroup".into()
            }
            .to_string(),
            "the kernel has no cgroup.kill (Linux 5.14+) under /sys/fs/cgroup"
        );
        let unreadable = Unavailable::Unreadable {
            path: "/proc/self/cgroup",
            error: Arc::new(std::io::Error::from_raw_os_error(2)),
        };
        assert_eq!(
            unreadable.to_string(),
            "cannot read /proc/self/cgroup: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn finds_the_cgroup2_mount_on_pure_and_hybrid_hosts() {
        let hybrid = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                      35 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(("/sys/fs/cgroup/unified".into(), "/".into()))
        );
        let pure =
            "27 22 0:23 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            cgroup2_mount(pure),
            Some(("/sys/fs/cgroup".into(), "/".into()))
        );
        let escaped = "27 22 0:23 /a\\040b /mnt/c\\134g rw - cgroup2 none rw\n";
        assert_eq!(
            cgroup2_mount(escaped),
            Some(("/mnt/c\\g".into(), "/a b".into()))
        );
        for bad in ["", "garbage", "1 2 3 - cgroup2", "1 2 3 4 - cgroup x y"] {
            assert_eq!(cgroup2_mount(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_run_cgroup_name_says_which_runner_made_it() {
        assert_eq!(owner_of("agent-exec-12-3456-0"), Some((12, Some(3456))));
        assert_eq!(owner_of("agent-exec-12-3456-probe"), Some((12, Some(3456))));
        assert_eq!(
            owner_of("agent-exec-12328-0"),
            Some((12328, None)),
            "older name"
        );
        assert_eq!(owner_of("agent-exec-12-probe"), Some((12, None)));
        for other in [
            "agent-exec-",
            "agent-exec-x-1",
            "agent-exec-1-2-3-4",
            "agent-exec-1-x",
            "user.slice",
            "agent-exec-1-2-x",
            "agent-exec-+1-2",
            "agent-exec-1-+2-3",
        ] {
            assert_eq!(owner_of(other), None, "{other}");
        }
    }

    #[test]
    fn cgroup_events_is_populated_unless_it_says_0() {
        assert!(!events_populated("populated 0\nfrozen 0\n"));
        assert!(events_populated("populated 1\nfrozen 0\n"));
        assert!(events_populated(""), "unreadable: assume something is left");
    }

    #[test]
    fn reads_the_unified_line_of_proc_cgroup() {
        let text = "9:name=systemd:/\n4:memory:/x\n0::/user.slice/app.scope\n";
        assert_eq!(unified_path(text), Some("/user.slice/app.scope".into()));
        assert_eq!(unified_path("4:memory:/x\n"), None);
        assert_eq!(unescape_octal("\\12"), "\\12", "a short escape is kept");
        assert_eq!(unescape_octal("a\\9zz"), "a\\9zz");
    }
}
