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
//! How a program gets in: the spawn's `pre_exec` hook writes `0` to the run's
//! `cgroup.procs` (opened by the parent; `write` is async-signal-safe), so the program
//! is inside before its first instruction and nothing it forks is ever outside.
//! Decision: that, not moving the pid after the spawn returns — by then the program
//! may already have forked. Not done: `clone3(CLONE_INTO_CGROUP)`, which the standard
//! library's spawn does not offer.
//!
//! Availability is probed once per process ([`availability`]): find the directory,
//! create and remove a child, and open its `cgroup.procs` for writing. Any failure is
//! the answer "no cgroup here" with the reason, and runs use the subreaper instead
//! (see [`crate::process`]).

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Prefix of every run cgroup's name (`agent-exec-<pid>-<n>`).
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

/// Whether this process can give each run its own cgroup (probed once, cached).
pub fn availability() -> &'static Availability {
    AVAILABILITY.get_or_init(|| match probe() {
        Ok(base) => Availability {
            detail: format!("a cgroup v2 per run, under {}", base.display()),
            base: Some(base),
        },
        Err(reason) => Availability {
            base: None,
            detail: reason,
        },
    })
}

fn probe() -> Result<PathBuf, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let (mount, root) =
        cgroup2_mount(&mountinfo).ok_or_else(|| "no cgroup2 file system is mounted".to_owned())?;
    let own = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let path = unified_path(&own)
        .ok_or_else(|| "this process is in no cgroup v2 (no `0::` line)".to_owned())?;
    let relative = Path::new(&path)
        .strip_prefix(&root)
        .map_err(|_| format!("our cgroup {path} is outside the cgroup2 mount's root {root}"))?;
    let base = Path::new(&mount).join(relative);
    // The probe a run would need: create a child and open its cgroup.procs to write.
    let trial = base.join(format!("{NAME_PREFIX}{}-probe", std::process::id()));
    fs::create_dir(&trial).map_err(|e| {
        format!(
            "cannot create a cgroup under {} ({e}); run as root or in a delegated subtree \
             (systemd-run --user --scope -p Delegate=yes …)",
            base.display()
        )
    })?;
    let writable = OpenOptions::new()
        .write(true)
        .open(trial.join("cgroup.procs"))
        .map(drop);
    let kill_file = trial.join("cgroup.kill").exists();
    let _ = fs::remove_dir(&trial);
    writable.map_err(|e| {
        format!(
            "cannot write cgroup.procs under {} ({e}); run as root or in a delegated subtree",
            base.display()
        )
    })?;
    if !kill_file {
        return Err(format!(
            "the kernel has no cgroup.kill (Linux 5.14+) under {}",
            base.display()
        ));
    }
    Ok(base)
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

/// One run's cgroup: created empty, entered by the program in its `pre_exec`,
/// killed and removed at the end.
#[derive(Debug)]
pub struct RunCgroup {
    dir: PathBuf,
    /// The `0::` path processes inside show in `/proc/<pid>/cgroup`.
    path: String,
    procs: File,
}

impl RunCgroup {
    /// Creates a fresh cgroup for one run, when [`availability`] says there can be one.
    pub fn create() -> std::io::Result<RunCgroup> {
        let base = availability()
            .base
            .as_deref()
            .ok_or_else(|| std::io::Error::other(availability().detail.clone()))?;
        let name = format!(
            "{NAME_PREFIX}{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let dir = base.join(&name);
        fs::create_dir(&dir)?;
        let procs = match OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(file) => file,
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let own = fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|t| unified_path(&t))
            .unwrap_or_default();
        let path = format!("{}/{name}", own.trim_end_matches('/'));
        Ok(RunCgroup { dir, path, procs })
    }

    /// The open `cgroup.procs`, for the spawn's `pre_exec` write.
    pub fn procs_fd(&self) -> BorrowedFd<'_> {
        self.procs.as_fd()
    }

    /// The directory in the cgroup file system.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether `pid` (live or zombie) is in this cgroup.
    pub fn holds(&self, pid: i32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .and_then(|t| unified_path(&t))
            .is_some_and(|p| p == self.path)
    }

    /// The live processes in it (zombies are not listed). Unreadable reads as empty
    /// only if the directory is gone.
    pub fn pids(&self) -> Vec<i32> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Sends `signal` to every process in it; SIGKILL goes through `cgroup.kill`,
    /// which also catches a fork in flight.
    pub fn signal(&self, signal: Signal) {
        if signal == Signal::SIGKILL
            && OpenOptions::new()
                .write(true)
                .open(self.dir.join("cgroup.kill"))
                .and_then(|mut f| f.write_all(b"1"))
                .is_ok()
        {
            return;
        }
        for pid in self.pids() {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }

    /// Removes the (empty) directory, retrying briefly: the kernel may still be
    /// releasing the last task. False if it is still there.
    fn remove(&self) -> bool {
        for attempt in 0..20 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
                Err(_) if attempt < 19 => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => {
                    tracing::debug!(dir = %self.dir.display(), %e, "cannot remove run cgroup");
                }
            }
        }
        false
    }
}

impl Drop for RunCgroup {
    /// Nothing of a run outlives its cgroup: kill what is left, then remove it.
    fn drop(&mut self) {
        if !self.pids().is_empty() {
            self.signal(Signal::SIGKILL);
        }
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn reads_the_unified_line_of_proc_cgroup() {
        let text = "9:name=systemd:/\n4:memory:/x\n0::/user.slice/app.scope\n";
        assert_eq!(unified_path(text), Some("/user.slice/app.scope".into()));
        assert_eq!(unified_path("4:memory:/x\n"), None);
        assert_eq!(unescape_octal("\\12"), "\\12", "a short escape is kept");
        assert_eq!(unescape_octal("a\\9zz"), "a\\9zz");
    }
}
