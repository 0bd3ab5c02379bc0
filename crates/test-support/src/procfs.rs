//! Questions tests ask about processes, answered from `/proc` under the one rule
//! production code uses for "gone": [`agent_exec_runtime::procfs::ProcStat::is_gone`].
//! A zombie main thread with other threads still running is alive (issue 20): a test
//! that counted every `Z` as gone would pass while a process lived on.

use agent_exec_runtime::procfs;

/// Whether `pid` exists and has not exited.
pub fn alive(pid: i32) -> bool {
    procfs::stat(pid).is_some_and(|stat| !stat.is_gone())
}

/// Whether `pid` has exited (or never existed): the negation of [`alive`].
pub fn gone(pid: i32) -> bool {
    !alive(pid)
}

/// Live processes whose environment holds exactly the entry `entry` (`NAME=value`).
pub fn with_env(entry: impl AsRef<[u8]>) -> Vec<i32> {
    procfs::pids()
        .into_iter()
        .filter(|&pid| procfs::environ_contains(pid, entry.as_ref()))
        .filter(|&pid| alive(pid))
        .collect()
}

/// Live processes with an environment entry starting with `prefix` (e.g. a runner's
/// tree marker, `AGENT_EXEC_TREE=<pid>-`).
pub fn with_env_prefix(prefix: impl AsRef<[u8]>) -> Vec<i32> {
    procfs::pids()
        .into_iter()
        .filter(|&pid| procfs::environ_starts_with(pid, prefix.as_ref()))
        .filter(|&pid| alive(pid))
        .collect()
}

/// Live processes whose command line (arguments joined as read) contains `needle`.
pub fn with_cmdline(needle: &str) -> Vec<i32> {
    procfs::pids()
        .into_iter()
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(needle))
        })
        .filter(|&pid| alive(pid))
        .collect()
}

/// The parent of `pid`, while it exists.
pub fn parent(pid: i32) -> Option<i32> {
    procfs::stat(pid).map(|stat| stat.ppid)
}

/// The command name of `pid` (`/proc/<pid>/comm`); empty once it is gone.
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_child_is_gone_and_a_running_one_alive() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("TEST_SUPPORT_MARK", "procfs-1")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(alive(pid));
        assert_eq!(parent(pid), Some(std::process::id() as i32));
        // `spawn` returns once the child's exec has let go of our memory (vfork), a
        // moment before the kernel has set up the new program's environment: until then
        // `/proc/PID/environ` reads empty (seen under load in a soak run).
        let mut found = with_env("TEST_SUPPORT_MARK=procfs-1");
        for _ in 0..2000 {
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            found = with_env("TEST_SUPPORT_MARK=procfs-1");
        }
        assert_eq!(found, vec![pid]);
        assert_eq!(comm(pid), "sleep");
        child.kill().unwrap();
        // Killed, not yet reaped: a zombie with no thread left is gone already.
        while procfs::stat(pid).is_some_and(|stat| stat.state != 'Z') {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(gone(pid));
        assert!(with_env("TEST_SUPPORT_MARK=procfs-1").is_empty());
        child.wait().unwrap();
        assert!(gone(pid));
    }
}
