//! Process trees: spawn a program as the leader of its own process group, and
//! terminate the *whole* tree — SIGTERM, a grace period, SIGKILL — returning only
//! when every member is gone or reporting exactly which ones are not.
//!
//! ## Who is a member
//!
//! A tree is found in `/proc`, not assumed from the group alone:
//! * every process in the leader's process group;
//! * every descendant (by parent pid) of a member — this catches a child that called
//!   `setsid`/`setpgid` while its parent is alive;
//! * every process whose environment carries the tree's marker
//!   (`AGENT_EXEC_TREE=<unique>`, set on the leader and inherited) — this catches a
//!   double-forked `setsid` daemon whose parent is gone.
//!
//! Membership is sticky: once a (pid, start time) pair is seen as a member it stays
//! one until it is gone, so a member that `exec`s with a cleared environment is still
//! tracked. The start time also guards against pid reuse: a pid is only signalled if
//! it is still the process we saw.
//!
//! ## Deliberately not done, and the limit that follows
//!
//! A process that leaves the group (`setsid`), clears its environment, *and* whose
//! parent exited before any scan saw it has no link left to the tree that `/proc`
//! can show, and escapes. [`ProcessTree::wait_leader_watching`] (used by the
//! `command` backend, every 250 ms) narrows this to escapes completed between two
//! scans: one seen once stays a member. The hard guarantee is a cgroup v2 per run (kill
//! the cgroup), which needs a delegated cgroup this runtime does not assume. The
//! test `setsid_env_clearing_orphan_escapes_documented_limit` shows the limit.
//!
//! We do not use `process-wrap`: tokio's `Command::process_group(0)` gives the group,
//! and what process-wrap adds (kill on drop of the group) is a subset of what the
//! sweep below must do anyway.
//!
//! ## Zombies and the subreaper
//!
//! Orphans of a killed tree are re-parented to the nearest *child subreaper*, else
//! to PID 1, which in a container may never reap them. [`become_subreaper`] (call it
//! once, early in `main`) makes this process that subreaper, so orphans of our trees
//! are re-parented to us and [`ProcessTree::terminate`] reaps the ones it saw. A
//! zombie counts as gone either way: it runs nothing and holds nothing but a pid.

use std::collections::{HashMap, HashSet};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use crate::procfs::{self, ProcStat};

/// Name of the environment variable that marks every member of a tree.
pub const TREE_MARKER_VAR: &str = "AGENT_EXEC_TREE";

/// Default time between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// How long to wait after SIGKILL before declaring survivors. SIGKILL cannot be
/// caught, so only an uninterruptible sleep (`D` state) or an escape keeps a process.
pub const KILL_WAIT: Duration = Duration::from_secs(2);

/// Makes this process the child subreaper of its descendants (Linux
/// `PR_SET_CHILD_SUBREAPER`, through nix, no `unsafe`). Idempotent.
pub fn become_subreaper() -> std::io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)
}

/// Whether this process is a child subreaper.
pub fn is_subreaper() -> bool {
    nix::sys::prctl::get_child_subreaper().unwrap_or(false)
}

/// What [`ProcessTree::terminate`] established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    /// The leader's exit status, if it was collected.
    pub leader_status: Option<ExitStatus>,
    /// Members still alive when we gave up (empty means the whole tree is gone).
    pub survivors: Vec<i32>,
    /// Members we saw (leader included), for logs.
    pub members_seen: usize,
    /// Whether SIGKILL had to be sent (something outlived the grace period).
    pub killed: bool,
}

impl Termination {
    /// Whether every member of the tree is gone.
    pub fn all_gone(&self) -> bool {
        self.survivors.is_empty() && self.leader_status.is_some()
    }
}

/// A spawned program and everything it starts.
pub struct ProcessTree {
    child: tokio::process::Child,
    leader: i32,
    /// The leader's start time, to notice its pid (and so the group id) being reused.
    leader_start: u64,
    marker: Vec<u8>,
    /// (pid → start time) of every member seen alive.
    members: HashMap<i32, u64>,
    /// (pid, start time) of processes whose environment was read and lacked the
    /// marker. A process cannot gain the marker later (only a fork of a member
    /// inherits it, and that is a new pid), so each environment is read once: this
    /// keeps repeated scans to one small `stat` read per process.
    unmarked: HashSet<(i32, u64)>,
    leader_status: Option<ExitStatus>,
    finished: bool,
}

static TREE_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ProcessTree {
    /// Spawns `command` as the leader of a new process group, with the tree marker
    /// in its environment.
    pub fn spawn(mut command: tokio::process::Command) -> std::io::Result<ProcessTree> {
        let marker_value = format!(
            "{}-{}-{}",
            std::process::id(),
            TREE_COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        command.process_group(0);
        command.env(TREE_MARKER_VAR, &marker_value);
        // Last resort if this struct is dropped without `terminate`: the leader at
        // least is killed; `Drop` below sweeps the group.
        command.kill_on_drop(true);
        let child = command.spawn()?;
        let leader = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| std::io::Error::other("spawned child has no pid"))?;
        let mut members = HashMap::new();
        let leader_start = procfs::stat(leader).map(|s| s.start_time).unwrap_or(0);
        members.insert(leader, leader_start);
        Ok(ProcessTree {
            child,
            leader,
            leader_start,
            marker: format!("{TREE_MARKER_VAR}={marker_value}").into_bytes(),
            members,
            unmarked: HashSet::new(),
            leader_status: None,
            finished: false,
        })
    }

    /// The leader's pid (also the process group id).
    pub fn leader_pid(&self) -> i32 {
        self.leader
    }

    /// The marker entry (`AGENT_EXEC_TREE=...`) every member inherits.
    pub fn marker(&self) -> &[u8] {
        &self.marker
    }

    /// The leader, for its stdio handles.
    pub fn child_mut(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// Waits for the leader to exit (the rest of the tree may live on; see
    /// [`ProcessTree::terminate`]).
    pub async fn wait_leader(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.leader_status {
            return Ok(status);
        }
        let status = self.child.wait().await?;
        self.leader_status = Some(status);
        Ok(status)
    }

    /// Waits for the leader to exit like [`ProcessTree::wait_leader`], scanning the
    /// tree every `every` meanwhile. Membership is sticky, so a process seen once —
    /// say a `setsid` child while its parent still ran — is terminated later even if
    /// by then nothing in `/proc` links it to the tree. Costs one `/proc` scan per tick.
    pub async fn wait_leader_watching(&mut self, every: Duration) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.leader_status {
            return Ok(status);
        }
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                status = self.child.wait() => {
                    let status = status?;
                    self.leader_status = Some(status);
                    return Ok(status);
                }
                // `scan` keeps every known member that is still alive.
                _ = tick.tick() => self.scan(),
            }
        }
    }

    /// Live members right now (leader included while it runs).
    pub fn live_members(&mut self) -> Vec<i32> {
        self.scan();
        self.members.keys().copied().collect()
    }

    /// Terminates the whole tree: SIGTERM to every member, up to `grace` for them to
    /// exit, then SIGKILL, then up to [`KILL_WAIT`]. Also the way to finish a run whose
    /// leader exited on its own: stragglers left in the tree are terminated the same way.
    pub async fn terminate(&mut self, grace: Duration) -> Termination {
        let mut members_seen: HashSet<i32> = self.members.keys().copied().collect();
        self.scan();
        members_seen.extend(self.members.keys());
        let mut killed = false;

        if !self.everything_gone() {
            self.signal_all(Signal::SIGTERM);
            let gone = self
                .wait_gone(grace, Signal::SIGTERM, &mut members_seen)
                .await;
            if !gone {
                killed = true;
                self.signal_all(Signal::SIGKILL);
                self.wait_gone(KILL_WAIT, Signal::SIGKILL, &mut members_seen)
                    .await;
            }
        }
        self.collect_leader().await;
        self.finished = true;
        let mut survivors: Vec<i32> = self.members.keys().copied().collect();
        survivors.sort_unstable();
        Termination {
            leader_status: self.leader_status,
            survivors,
            members_seen: members_seen.len(),
            killed,
        }
    }

    /// Polls until every member is gone or `limit` passes; members that appear
    /// meanwhile (forked after the signal) get `signal` too.
    async fn wait_gone(
        &mut self,
        limit: Duration,
        signal: Signal,
        seen: &mut HashSet<i32>,
    ) -> bool {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            self.try_collect_leader();
            self.refresh_known();
            if self.members.is_empty() {
                // Known ones are gone; one full scan confirms nothing new appeared.
                let before: HashSet<i32> = self.members.keys().copied().collect();
                self.scan();
                if self.members.is_empty() {
                    return self.leader_status.is_some() || self.leader_gone();
                }
                let fresh: Vec<i32> = self
                    .members
                    .keys()
                    .filter(|p| !before.contains(p))
                    .copied()
                    .collect();
                seen.extend(&fresh);
                for pid in fresh {
                    self.signal_one(pid, signal);
                }
            }
            if start.elapsed() >= limit {
                self.scan();
                seen.extend(self.members.keys());
                return self.members.is_empty();
            }
            // Wake on the leader's exit (SIGCHLD-driven) or on the next poll tick,
            // whichever is first: on a loaded machine every wake-up costs a trip
            // through the run queue, so we do not spin on short sleeps.
            let leader_running = self.leader_status.is_none();
            tokio::select! {
                status = self.child.wait(), if leader_running => {
                    if let Ok(status) = status {
                        self.leader_status = Some(status);
                    }
                }
                _ = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    fn everything_gone(&mut self) -> bool {
        self.try_collect_leader();
        self.refresh_known();
        self.members.is_empty()
    }

    /// Whether the group id still belongs to our tree: false once the leader's pid
    /// names another process (reused after the leader was reaped and its group
    /// emptied), after which only the marker and parentage identify members.
    fn group_is_ours(&self) -> bool {
        procfs::stat(self.leader).is_none_or(|s| s.start_time == self.leader_start)
    }

    fn leader_gone(&self) -> bool {
        procfs::stat(self.leader).is_none_or(|s| s.is_gone())
    }

    fn try_collect_leader(&mut self) {
        if self.leader_status.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.leader_status = Some(status);
        }
    }

    async fn collect_leader(&mut self) {
        if self.leader_status.is_some() {
            return;
        }
        // The leader is gone from /proc's point of view or we gave up on it; a short
        // bounded wait collects its status without hanging on a survivor.
        if let Ok(Ok(status)) =
            tokio::time::timeout(Duration::from_millis(100), self.child.wait()).await
        {
            self.leader_status = Some(status);
        }
    }

    /// Drops members that are gone, reaping zombies re-parented to us.
    fn refresh_known(&mut self) {
        let me = std::process::id() as i32;
        let leader = self.leader;
        self.members
            .retain(|&pid, &mut start| match procfs::stat(pid) {
                None => false,
                Some(stat) if stat.start_time != start => false,
                Some(stat) if stat.is_gone() => {
                    // The leader is tokio's to reap; an orphan re-parented to us is ours.
                    if pid != leader && stat.ppid == me {
                        let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
                    }
                    false
                }
                Some(_) => true,
            });
        if self.leader_status.is_some() {
            self.members.remove(&leader);
        }
    }

    /// Full `/proc` scan: adds every live process that belongs to the tree.
    fn scan(&mut self) {
        let me = std::process::id() as i32;
        let group_is_ours = self.group_is_ours();
        let (all, zombies): (Vec<ProcStat>, Vec<ProcStat>) = procfs::pids()
            .into_iter()
            .filter(|&pid| pid != me)
            .filter_map(procfs::stat)
            .partition(|s| !s.is_gone());
        // Zombies of our group re-parented to us (we are the subreaper) that exited
        // before we ever saw them alive: reap them, or they would linger until we exit.
        for zombie in zombies {
            if group_is_ours
                && zombie.pgrp == self.leader
                && zombie.ppid == me
                && zombie.pid != self.leader
            {
                let _ = waitpid(Pid::from_raw(zombie.pid), Some(WaitPidFlag::WNOHANG));
            }
        }
        let mut found: HashMap<i32, u64> = HashMap::new();
        for stat in &all {
            let known = self.members.get(&stat.pid) == Some(&stat.start_time);
            let in_group = group_is_ours && stat.pgrp == self.leader;
            if known || in_group {
                found.insert(stat.pid, stat.start_time);
                continue;
            }
            let key = (stat.pid, stat.start_time);
            if self.unmarked.contains(&key) {
                continue;
            }
            if procfs::environ_contains(stat.pid, &self.marker) {
                found.insert(stat.pid, stat.start_time);
            } else {
                self.unmarked.insert(key);
            }
        }
        // Descendants of members, to a fixpoint (trees are shallow; this is cheap).
        loop {
            let before = found.len();
            for stat in &all {
                if !found.contains_key(&stat.pid) && found.contains_key(&stat.ppid) {
                    found.insert(stat.pid, stat.start_time);
                }
            }
            if found.len() == before {
                break;
            }
        }
        if self.leader_status.is_some() {
            found.remove(&self.leader);
        }
        self.members = found;
        self.refresh_known();
    }

    fn signal_all(&mut self, signal: Signal) {
        // The group first: one syscall reaches members we have not scanned yet.
        if !self.group_is_ours() {
            self.signal_members(signal);
            return;
        }
        match killpg(Pid::from_raw(self.leader), signal) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(e) => tracing::debug!(pgid = self.leader, %e, "killpg failed"),
        }
        self.signal_members(signal);
    }

    fn signal_members(&self, signal: Signal) {
        let pids: Vec<i32> = self.members.keys().copied().collect();
        for pid in pids {
            self.signal_one(pid, signal);
        }
    }

    /// Signals `pid` only if it is still the process we recorded (pid reuse guard).
    fn signal_one(&self, pid: i32, signal: Signal) {
        let Some(&start) = self.members.get(&pid) else {
            return;
        };
        if procfs::stat(pid).is_some_and(|s| s.start_time == start && !s.is_gone()) {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }
}

impl Drop for ProcessTree {
    /// Dropped without [`ProcessTree::terminate`] (a future canceled mid-run): kill
    /// everything we can reach, without waiting. Not the normal path.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.scan();
        self.signal_all(Signal::SIGKILL);
    }
}
