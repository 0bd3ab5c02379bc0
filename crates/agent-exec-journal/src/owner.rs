//! Who owns a running attempt, and whether that owner is provably gone.
//!
//! Decision: ownership is the identity of the writing process — host name, kernel boot
//! id, pid and the process start time in clock ticks since boot (`/proc/<pid>/stat`
//! field 22). A pid alone is not enough (pids are reused); a pid with its start time on
//! the same boot identifies one process for its whole life. Not taken: a lease renewed by
//! a heartbeat — it needs a background writer in every runner and turns a slow disk or a
//! paused laptop into a false `unknown`. The cost of the decision: a runner on *another*
//! host cannot be checked from here, so its executions are left alone (see
//! [`Liveness::Foreign`]) until an open on that host, or an operator, settles them.

use serde::Serialize;

/// The process that wrote an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessIdentity {
    pub host: String,
    pub boot_id: String,
    pub pid: u32,
    /// Start time in clock ticks since boot; 0 when it could not be read.
    pub start_ticks: u64,
}

/// What an open can say about an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    /// The very process is still running (same pid, same start time, not a zombie).
    Alive,
    /// Provably gone; the string says why.
    Dead(String),
    /// On another host: nothing can be proven from here.
    Foreign,
}

impl ProcessIdentity {
    /// The identity of the calling process.
    pub fn current() -> ProcessIdentity {
        let pid = std::process::id();
        ProcessIdentity {
            host: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_default(),
            boot_id: read_trimmed("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
            pid,
            start_ticks: process_start_ticks(pid).map_or(0, |(ticks, _)| ticks),
        }
    }

    /// The owner a store read back from one row. A pid or start time that is no valid
    /// value (the row was edited, or written by another program) cannot be judged:
    /// the identity then has 0 there, and the second value says what is wrong, so the
    /// caller reports that row and goes on with the others — one bad row never makes
    /// a journal nobody can open.
    pub(crate) fn from_stored(
        host: String,
        boot_id: String,
        pid: StoredInt,
        start_ticks: StoredInt,
    ) -> (ProcessIdentity, Option<String>) {
        let mut problems = Vec::new();
        let pid = match pid {
            StoredInt::Int(n) if n > 0 && n <= i64::from(u32::MAX) => n as u32,
            other => {
                problems.push(format!("owner_pid {other} is not a process id"));
                0
            }
        };
        let start_ticks = match start_ticks {
            StoredInt::Int(n) if n >= 0 => n as u64,
            other => {
                problems.push(format!("owner_start_ticks {other} is not a start time"));
                0
            }
        };
        let identity = ProcessIdentity {
            host,
            boot_id,
            pid,
            start_ticks,
        };
        let problem = (!problems.is_empty()).then(|| problems.join(", "));
        (identity, problem)
    }

    /// Decides whether this owner is still running, as seen from `here`.
    pub fn liveness(&self, here: &ProcessIdentity) -> Liveness {
        if self.host != here.host {
            return Liveness::Foreign;
        }
        if self.boot_id != here.boot_id {
            return Liveness::Dead(format!(
                "host {} rebooted since pid {} started",
                self.host, self.pid
            ));
        }
        match process_start_ticks(self.pid) {
            None => Liveness::Dead(format!("owner pid {} has exited", self.pid)),
            Some((_, 'Z')) | Some((_, 'X')) => {
                Liveness::Dead(format!("owner pid {} has exited (zombie)", self.pid))
            }
            Some((ticks, _)) if ticks != self.start_ticks => Liveness::Dead(format!(
                "owner pid {} has exited (the pid now belongs to another process)",
                self.pid
            )),
            Some(_) => Liveness::Alive,
        }
    }
}

/// An integer column as stored: a number, or whatever else the row holds (SQLite
/// keeps any type in any column), shown as it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredInt {
    Int(i64),
    Other(String),
}

impl std::fmt::Display for StoredInt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoredInt::Int(n) => write!(f, "{n}"),
            StoredInt::Other(text) => write!(f, "{text}"),
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// `(start time in ticks, state letter)` of a live pid, from `/proc/<pid>/stat`.
fn process_start_ticks(pid: u32) -> Option<(u64, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may itself
/// contain spaces and parentheses, so the fields are counted from the *last* `)`.
pub(crate) fn parse_stat(stat: &str) -> Option<(u64, char)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    // `state` is field 3; starttime is field 22, i.e. 18 fields further on.
    let start = fields.nth(18)?.parse().ok()?;
    Some((start, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_counts_from_the_last_parenthesis() {
        // Fields 4..=21 are 1..=18; field 22 (starttime) is 1234567.
        let stat = "4242 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 1234567 99 100";
        assert_eq!(parse_stat(stat), Some((1234567, 'S')));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) R 1 2"), None);
    }

    #[test]
    fn an_owner_that_is_no_process_is_a_problem_not_a_guess() {
        let stored = |pid, ticks| ProcessIdentity::from_stored("h".into(), "b".into(), pid, ticks);
        let (owner, problem) = stored(StoredInt::Int(-1), StoredInt::Int(5));
        assert_eq!((owner.pid, owner.start_ticks), (0, 5));
        assert_eq!(problem.as_deref(), Some("owner_pid -1 is not a process id"));
        let (_, problem) = stored(StoredInt::Int(1 << 40), StoredInt::Other("'x'".into()));
        assert_eq!(
            problem.as_deref(),
            Some(
                "owner_pid 1099511627776 is not a process id, owner_start_ticks 'x' is not a start time"
            )
        );
        let (owner, problem) = stored(StoredInt::Int(42), StoredInt::Int(7));
        assert_eq!((owner.pid, owner.start_ticks, problem), (42, 7, None));
    }

    #[test]
    fn the_current_process_is_alive_and_an_exited_child_is_dead() {
        let here = ProcessIdentity::current();
        assert!(here.start_ticks > 0, "could not read /proc/self/stat");
        assert_eq!(here.liveness(&here), Liveness::Alive);

        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = ProcessIdentity {
            pid,
            ..here.clone()
        };
        assert!(matches!(gone.liveness(&here), Liveness::Dead(_)));

        let reused = ProcessIdentity {
            start_ticks: here.start_ticks + 1,
            ..here.clone()
        };
        assert!(matches!(reused.liveness(&here), Liveness::Dead(_)));

        let rebooted = ProcessIdentity {
            boot_id: "another-boot".into(),
            ..here.clone()
        };
        assert!(matches!(rebooted.liveness(&here), Liveness::Dead(_)));

        let elsewhere = ProcessIdentity {
            host: "another-host".into(),
            ..here.clone()
        };
        assert_eq!(elsewhere.liveness(&here), Liveness::Foreign);
    }
}
