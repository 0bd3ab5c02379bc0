//! Just enough of Linux `/proc` to find the members of a process tree.
//!
//! Parsing is total: a process that vanishes mid-read, or a line we cannot parse, is
//! "not there" rather than an error, because processes come and go while we look.

use std::fs;
use std::io::Read as _;

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// One-letter state: `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// Start time in clock ticks after boot: with the pid, identifies a process
    /// across pid reuse.
    pub start_time: u64,
    /// Threads in the process (field 20), an exited main thread included.
    pub threads: u64,
}

impl ProcStat {
    /// Whether the process has exited: a zombie or dead entry still in the table, with
    /// no thread left running.
    ///
    /// The state field is the *main thread's*: a process whose main thread exited
    /// (`pthread_exit`, or the first thread torn down by SIGKILL on a loaded machine)
    /// reads `Z` while its other threads run on, and cannot be reaped until the last
    /// one ends. Such a process is alive; its thread count (the exited main thread
    /// still counted) says so.
    pub fn is_gone(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x') && self.threads <= 1
    }
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) is in
/// parentheses and may itself contain spaces and parentheses, so fields are counted
/// from the *last* `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid: i32 = text.get(..open)?.trim().parse().ok()?;
    let rest = text.get(close + 1..)?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // fields[0] is field 3 (state); field N is fields[N - 3].
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let session = fields.get(3)?.parse().ok()?;
    let threads = fields.get(17)?.parse().ok()?;
    let start_time = fields.get(19)?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        pgrp,
        session,
        start_time,
        threads,
    })
}

/// Reads `/proc/<pid>/stat`; `None` if the process is gone.
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// How many threads the process `pid` has (`/proc/<pid>/stat` field 20), counting a
/// main thread that already exited; `None` if it is gone.
pub fn thread_count(pid: i32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text).map(|s| s.threads)
}

/// Every pid in `/proc`.
pub fn pids() -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The children of `pid`, from `/proc/<pid>/task/*/children` (each thread's own
/// list: an orphan is re-parented to one of the reaper's threads). Empty when
/// unreadable.
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| fs::read_to_string(task.ok()?.path().join("children")).ok())
        .flat_map(|text| {
            text.split_ascii_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// The pid most recently allocated in this pid namespace
/// (`/proc/sys/kernel/ns_last_pid`); `None` if unreadable.
pub fn last_pid() -> Option<i32> {
    read_number("/proc/sys/kernel/ns_last_pid")
}

/// The largest pid plus one (`/proc/sys/kernel/pid_max`): allocation wraps there.
pub fn pid_max() -> Option<i32> {
    read_number("/proc/sys/kernel/pid_max")
}

/// How many tasks (processes and threads, zombies included) exist: the total in
/// `/proc/loadavg`'s fourth field (`running/total`).
pub fn task_count() -> Option<u64> {
    parse_loadavg_tasks(&fs::read_to_string("/proc/loadavg").ok()?)
}

/// The task total of a `/proc/loadavg` line.
pub fn parse_loadavg_tasks(text: &str) -> Option<u64> {
    let field = text.split_ascii_whitespace().nth(3)?;
    let (_, total) = field.split_once('/')?;
    total.parse().ok()
}

fn read_number(path: &str) -> Option<i32> {
    parse_number(&fs::read_to_string(path).ok()?)
}

/// A non-negative decimal number with optional surrounding whitespace (a sysctl file).
pub fn parse_number(text: &str) -> Option<i32> {
    text.trim().parse().ok().filter(|n: &i32| *n >= 0)
}

/// Whether the environment of `pid` holds exactly `needle` (`NAME=value`) as one of
/// its NUL-separated entries. Unreadable (another user, gone, a kernel thread) is no.
pub fn environ_contains(pid: i32, needle: &[u8]) -> bool {
    let Ok(mut file) = fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return false;
    }
    bytes.split(|b| *b == 0).any(|entry| entry == needle)
}

/// Whether the environment of `pid` has an entry starting with `prefix`.
/// Unreadable is no.
pub fn environ_starts_with(pid: i32, prefix: &[u8]) -> bool {
    let Ok(mut file) = fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return false;
    }
    bytes
        .split(|b| *b == 0)
        .any(|entry| entry.starts_with(prefix))
}

/// This process's start time in clock ticks since boot (`/proc/self/stat` field 22,
/// as the journal's owner identity has it); 0 when unreadable.
pub(crate) fn own_start_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        i32::try_from(std::process::id())
            .ok()
            .and_then(stat)
            .map_or(0, |s| s.start_time)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parens() {
        let line =
            "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 50";
        let stat = parse_stat(line).unwrap();
        assert_eq!(
            (stat.pid, stat.state, stat.ppid, stat.pgrp, stat.session),
            (4242, 'S', 1, 4242, 4242)
        );
        assert_eq!(stat.start_time, 987654);
        assert_eq!(stat.threads, 1);
    }

    #[test]
    fn a_zombie_main_thread_with_threads_left_is_not_gone() {
        let line = |state: char, threads: u32| {
            format!("7 (node) {state} 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 {threads} 0 99 1000 50")
        };
        let gone = |state, threads| parse_stat(&line(state, threads)).unwrap().is_gone();
        assert!(gone('Z', 1));
        assert!(gone('X', 0));
        assert!(!gone('Z', 2), "a running thread keeps the process alive");
        assert!(!gone('S', 1));
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        for line in ["", "(", ")", "12 (x", "x (y) S", "1 (a) S 2 3"] {
            assert_eq!(parse_stat(line), None, "{line:?}");
        }
    }

    #[test]
    fn sysctl_numbers() {
        assert_eq!(parse_number("4194304\n"), Some(4194304));
        for bad in ["", "x", "-1", "1 2", "99999999999"] {
            assert_eq!(parse_number(bad), None, "{bad:?}");
        }
        assert_eq!(
            parse_loadavg_tasks("0.52 0.58 0.59 3/467 12345\n"),
            Some(467)
        );
        for bad in [
            "",
            "0.5 0.5 0.5",
            "0.5 0.5 0.5 3-467 1",
            "0.5 0.5 0.5 3/x 1",
        ] {
            assert_eq!(parse_loadavg_tasks(bad), None, "{bad:?}");
        }
        // On Linux all three are there, and every pid is below pid_max.
        assert!(task_count().is_some_and(|n| n > 0));
        let me = std::process::id() as i32;
        assert!(last_pid().is_some_and(|last| last > 0));
        assert!(pid_max().is_some_and(|max| max > me));
    }

    #[test]
    fn reads_our_own_process() {
        let me = stat(std::process::id() as i32).unwrap();
        assert!(!me.is_gone());
        assert_eq!(me.pid, std::process::id() as i32);
    }
}
