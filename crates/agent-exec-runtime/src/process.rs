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
//! ## Which guarantee holds where ([`Confinement`])
//!
//! * **cgroup** — a cgroup v2 per run ([`crate::cgroup`]) where this process may create
//!   one (root, or a delegated subtree): the program is created inside it
//!   (`clone3(CLONE_INTO_CGROUP)`, else it enters in `pre_exec`; [`crate::spawn`]), so
//!   the cgroup lists every process of the run, whatever it did; SIGKILL goes through
//!   `cgroup.kill`. Membership is then the cgroup's list alone.
//! * **subreaper** — no cgroup, but this process is the child subreaper: each leader
//!   is made a subreaper too (in `pre_exec`), so a run's orphans stay the leader's
//!   descendants while it lives and reach us only when it exits; [`crate::orphans`]
//!   attributes them to their run, also with several runs in one process.
//! * **process-group** — neither: the rules above. A process that leaves the group
//!   (`setsid`), clears its environment, *and* whose parent exited before any scan saw
//!   it has no link left to the tree that `/proc` can show, and escapes.
//!   [`ProcessTree::wait_leader_watching`] narrows this to escapes completed between
//!   two scans. The test `setsid_env_clearing_orphan_escapes_documented_limit` shows it.
//!
//! Leftovers: when [`ProcessTree::terminate`] finds members alive after the leader
//! exited on its own, it terminates them and counts them in
//! [`Termination::leftovers`]; [`Termination::report_leftovers`] is the one place the
//! backends turn that into a `logs` line, an event and side effects `possible`.
//!
//! We do not use `process-wrap`: [`crate::spawn`] gives the group, and what
//! process-wrap adds (kill on drop of the group) is a subset of what the sweep below
//! must do anyway.
//!
//! ## Finishing a run that exited on its own: the pid-range proof
//!
//! After a program exits, [`ProcessTree::terminate`] must still establish that nothing
//! of its tree is left, and a full `/proc` scan costs a `stat` (and an `environ`) read
//! per process on the machine: about 2 ms with 150 processes, more on a busy host, and
//! the largest part of `agent-exec run`'s own overhead. It is skipped when a cheaper
//! look proves the same thing, and only then ([`ProcessTree::terminate`] reports which
//! was used in [`Termination::sweep`]):
//!
//! * the leader has been reaped, every member seen so far is gone, and the group is
//!   empty (`kill(-pgid, 0)` fails with `ESRCH`: no member, live or zombie, in it);
//! * every member was created after the leader, and Linux allocates pids in increasing
//!   order until it wraps at `pid_max`; so, without a wrap, every member's pid lies in
//!   `(leader, ns_last_pid]`. Exactly those pids are probed, with the full scan's own
//!   membership rules (group, marker, descendant of a member, seen before) — a `setsid`
//!   escapee carries the marker and is found here as it would be there. A member found
//!   means "not proven": the full scan runs as before.
//! * a member that forks and exits while we probe leaves a child with a pid above the
//!   range read at the start; so `ns_last_pid` is re-read after each round and the new
//!   pids probed, until a round ends with no pid allocated meanwhile. Along any chain of
//!   members pids increase, so a live member at the end implies one seen alive.
//! * no wrap: `ns_last_pid` below the leader means a wrap (full scan). A *complete*
//!   wrap back past the leader cannot be seen afterwards, so the proof is only used
//!   while the time since the spawn is shorter than the free pids divided by
//!   [`MAX_PID_RATE`] (under 16 ms for `pid_max` 32768, 2 s for 4194304 — runs this short
//!   are the ones where the scan's cost shows), and for at most [`MAX_PROBED_PIDS`]
//!   pids (past that, probing costs what a scan does).
//!
//! What the proof does not cover, and the full scan would: a member that chooses its
//! own pid below the leader's (`clone3` with `set_tid`, or writing `ns_last_pid`; both
//! need `CAP_CHECKPOINT_RESTORE`). Any member, privileged or not, can already leave
//! the tree the documented way (new session, cleared environment, parent gone), so
//! this opens no new way out. The proof reads `ns_last_pid` of our own pid namespace,
//! the one `/proc` shows (as every pid here already assumes).
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

use crate::cgroup::RunCgroup;
use crate::orphans;
use crate::procfs::{self, ProcStat, own_start_ticks};
use crate::spawn::{Leader, LeaderCommand, LeaderStdio, Spawner};

/// Name of the environment variable that marks every member of a tree.
pub const TREE_MARKER_VAR: &str = "AGENT_EXEC_TREE";

/// Default time between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Assumed ceiling on pid allocations per second across the whole machine, for the
/// pid-range proof (module doc). Every `clone` and every exit takes the kernel's
/// global `tasklist_lock` for writing, which caps real fork/thread-creation rates far
/// below this (10^4–10^5 per second per core in practice).
pub const MAX_PID_RATE: u64 = 2_000_000;

/// At most this many pids are probed by the pid-range proof before it gives way to the
/// full scan.
pub const MAX_PROBED_PIDS: i32 = 512;

/// How many times the pid-range proof re-reads `ns_last_pid` before giving up.
const MAX_PROBE_ROUNDS: usize = 16;

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

/// How a run's processes are kept from outliving it: the strongest this process and
/// machine allow (module doc, "Which guarantee holds where").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confinement {
    /// Group, descendants and the environment marker only: a `setsid` +
    /// cleared-environment orphan whose parent is gone escapes.
    ProcessGroup,
    /// This process is the child subreaper, and so is each run's leader: orphans come
    /// back to us and are attributed to their run ([`crate::orphans`]).
    Subreaper,
    /// A cgroup v2 per run: every process of the run, whatever it did.
    Cgroup,
}

impl Confinement {
    /// The name `backends --verify` prints: `cgroup`, `subreaper`, `process-group`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confinement::Cgroup => "cgroup",
            Confinement::Subreaper => "subreaper",
            Confinement::ProcessGroup => "process-group",
        }
    }

    /// The strongest confinement a run spawned now would get.
    pub fn available() -> Confinement {
        if crate::cgroup::availability().base.is_some() {
            Confinement::Cgroup
        } else if is_subreaper() {
            Confinement::Subreaper
        } else {
            Confinement::ProcessGroup
        }
    }

    /// One sentence on what [`Confinement::available`] gives and why not more.
    pub fn describe_available() -> String {
        let cgroups = crate::cgroup::availability();
        match Confinement::available() {
            Confinement::Cgroup => cgroups.detail.clone(),
            Confinement::Subreaper => format!(
                "orphans re-parented to this process (child subreaper) and attributed to \
                 their run; no cgroup: {}",
                cgroups.detail
            ),
            Confinement::ProcessGroup => format!(
                "process group, descendants and the environment marker only (not a child \
                 subreaper); no cgroup: {}",
                cgroups.detail
            ),
        }
    }
}

impl std::fmt::Display for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// How the members left at the start were found.
    pub sweep: Sweep,
    /// Processes still alive after the leader had exited on its own, which had to be
    /// terminated (0 after a cancel that found the leader running: then everything
    /// was terminated on purpose).
    pub leftovers: usize,
    /// What kept the tree together.
    pub confinement: Confinement,
    /// Cgroups the run's processes had created inside the run's own, removed with it
    /// (a program hiding processes from the runner; 0 without a cgroup).
    pub nested_cgroups: usize,
}

/// How [`ProcessTree::terminate`] looked for the members left when it was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// Only the pids allocated since the spawn were probed, and proved the tree empty
    /// (see the module doc for when this is sound).
    PidRange,
    /// Every process in `/proc` was looked at.
    FullScan,
    /// The run's cgroup was read: the kernel's own list.
    Cgroup,
}

/// Kind of the event a backend emits when a run had to terminate leftovers
/// ([`Termination::leftovers_event`]). Not one of the Go contract's kinds: an addition
/// beside them, which a Go consumer reads as an unknown kind string.
pub const LEFTOVERS_EVENT: &str = "process_leftovers";

impl Termination {
    /// Whether every member of the tree is gone.
    pub fn all_gone(&self) -> bool {
        self.survivors.is_empty() && self.leader_status.is_some()
    }

    /// The `logs` line for a run whose program exited leaving processes behind, which
    /// were terminated; `None` when there were none.
    pub fn leftovers_note(&self, program: &str) -> Option<String> {
        let nested = (self.nested_cgroups > 0).then(|| {
            format!(
                "its processes had made {} cgroup(s) inside the run's cgroup; \
                 everything in them was killed and the folders removed",
                self.nested_cgroups
            )
        });
        let leftovers = (self.leftovers > 0).then(|| {
            format!(
                "`{program}` exited leaving {} process(es) running; terminated them{} \
                 (confinement: {})",
                self.leftovers,
                if self.killed {
                    " (SIGKILL after the grace period)"
                } else {
                    ""
                },
                self.confinement
            )
        });
        match (leftovers, nested) {
            (Some(l), Some(n)) => Some(format!("{l}; {n}")),
            (Some(l), None) => Some(l),
            (None, Some(n)) => Some(format!("`{program}`: {n}")),
            (None, None) => None,
        }
    }

    /// The [`LEFTOVERS_EVENT`] event for the same, its `detail` the note.
    pub fn leftovers_event(&self, program: &str) -> Option<agent_exec_contract::Event> {
        let note = self.leftovers_note(program)?;
        let mut event = agent_exec_contract::Event::of_kind(agent_exec_contract::EventKind::Other(
            LEFTOVERS_EVENT.to_owned(),
        ));
        event.detail = note;
        Some(event)
    }

    /// Applies the rule for a run that left processes behind to its `result`: the
    /// note goes to `logs`, the event to `events`, and any outcome but success says
    /// side effects `possible` (the leftovers may have acted before they were stopped).
    pub fn report_leftovers(
        &self,
        program: &str,
        result: &mut agent_exec_contract::ContractResult,
        events: &agent_exec_contract::EventSink,
    ) {
        let Some(note) = self.leftovers_note(program) else {
            return;
        };
        if !result.logs.is_empty() && !result.logs.ends_with('\n') {
            result.logs.push('\n');
        }
        result.logs.push_str(&note);
        if let Some(event) = self.leftovers_event(program) {
            events.emit(event);
        }
        if result.outcome != agent_exec_contract::Outcome::Succeeded
            && let Some(err) = result.err.as_mut()
        {
            err.side_effects = agent_exec_contract::SideEffects::Possible;
        }
    }
}

/// A spawned program and everything it starts.
pub struct ProcessTree {
    /// Dropped before `cgroup` (field order): a leader never reaped is killed and
    /// reaped, then the cgroup's drop removes the folder.
    child: Leader,
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
    /// Taken before the spawn: the pid-range proof's window starts no later.
    spawned_at: Instant,
    /// The run's cgroup, when it has one (then it alone says who is a member).
    cgroup: Option<RunCgroup>,
    confinement: Confinement,
    /// This tree's key in the orphan registry.
    id: u64,
    /// What the first [`ProcessTree::terminate`] established.
    terminated: Option<Termination>,
}

static TREE_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ProcessTree {
    /// Spawns `command` as the leader of a new process group, with the tree marker
    /// in its environment, confined as strongly as this machine allows
    /// ([`Confinement::available`]), started by [`crate::spawn`].
    pub fn spawn(command: LeaderCommand) -> std::io::Result<ProcessTree> {
        ProcessTree::spawn_confined(command, Confinement::Cgroup)
    }

    /// [`ProcessTree::spawn`] with at most `limit` (tests of the weaker mechanisms; a
    /// host that must not create cgroups). What the tree got is
    /// [`ProcessTree::confinement`].
    pub fn spawn_confined(
        mut command: LeaderCommand,
        limit: Confinement,
    ) -> std::io::Result<ProcessTree> {
        let id = TREE_COUNTER.fetch_add(1, Ordering::Relaxed);
        // `<pid>-<start ticks>-…`: the runner's own identity first, as the journal
        // records an owner, so the trees of a runner that died can be found again
        // ([`terminate_runner_leftovers`]) and never mistaken for a live process's.
        let marker_value = format!(
            "{}-{}-{}-{}",
            std::process::id(),
            own_start_ticks(),
            id,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        command.env(TREE_MARKER_VAR, &marker_value);
        // No separate availability probe: the create is the trial (cgroup.rs).
        let cgroup = if limit >= Confinement::Cgroup {
            RunCgroup::create()
                .map_err(|e| tracing::debug!(%e, "no cgroup for this run"))
                .ok()
        } else {
            None
        };
        let subreaper_leader = limit >= Confinement::Subreaper && is_subreaper();
        let spawned_at = Instant::now();
        let (child, leader, leader_start) = orphans::spawn_registered(id, || {
            let child = crate::spawn::start(&command, cgroup.as_ref(), subreaper_leader)?;
            let leader = child.pid();
            let leader_start = procfs::stat(leader).map(|s| s.start_time).unwrap_or(0);
            Ok((child, leader, leader_start))
        })?;
        // Created inside the cgroup by clone3; forked, it is in unless its `pre_exec`
        // write failed (then it made itself a subreaper instead, and the tree falls
        // back to that).
        let cloned = child.spawner() == Spawner::Clone3;
        let cgroup = cgroup.filter(|c| {
            let held = cloned || c.holds(leader);
            if !held {
                tracing::debug!(leader, "the program did not enter its cgroup");
            }
            held
        });
        let confinement = if cgroup.is_some() {
            Confinement::Cgroup
        } else if subreaper_leader {
            Confinement::Subreaper
        } else {
            Confinement::ProcessGroup
        };
        let mut members = HashMap::new();
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
            spawned_at,
            cgroup,
            confinement,
            id,
            terminated: None,
        })
    }

    /// What keeps this tree's processes from outliving it.
    pub fn confinement(&self) -> Confinement {
        self.confinement
    }

    /// The run's cgroup directory while it exists.
    pub fn cgroup_dir(&self) -> Option<&std::path::Path> {
        self.cgroup.as_ref().map(RunCgroup::dir)
    }

    /// The run's cgroup as its processes' `/proc/<pid>/cgroup` names it (`0::` line),
    /// while it exists.
    pub fn cgroup_path(&self) -> Option<&str> {
        self.cgroup.as_ref().map(RunCgroup::path)
    }

    /// How the leader was started ([`crate::spawn`]).
    pub fn spawner(&self) -> Spawner {
        self.child.spawner()
    }

    /// The leader's pid (also the process group id).
    pub fn leader_pid(&self) -> i32 {
        self.leader
    }

    /// The marker entry (`AGENT_EXEC_TREE=...`) every member inherits.
    pub fn marker(&self) -> &[u8] {
        &self.marker
    }

    /// The leader's piped stdio handles, to take.
    pub fn child_mut(&mut self) -> &mut LeaderStdio {
        &mut self.child.stdio
    }

    /// Waits for the leader to exit (the rest of the tree may live on; see
    /// [`ProcessTree::terminate`]).
    pub async fn wait_leader(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.leader_status {
            return Ok(status);
        }
        let status = self.child.wait().await?;
        self.set_leader_status(status);
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
                    self.set_leader_status(status);
                    return Ok(status);
                }
                // `scan` keeps every known member that is still alive. A cgroup
                // needs no watching: nothing leaves it.
                _ = tick.tick(), if self.cgroup.is_none() => self.scan(),
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
    ///
    /// Idempotent: once the tree is finished, later calls return the first answer.
    pub async fn terminate(&mut self, grace: Duration) -> Termination {
        if let Some(done) = &self.terminated {
            return done.clone();
        }
        let done = self.terminate_once(grace).await;
        self.terminated = Some(done.clone());
        done
    }

    async fn terminate_once(&mut self, grace: Duration) -> Termination {
        if self.cgroup.is_some() {
            return self.terminate_cgroup(grace).await;
        }
        let mut members_seen: HashSet<i32> = self.members.keys().copied().collect();
        self.try_collect_leader();
        let exited_on_its_own = self.leader_status.is_some();
        let sweep = if self.gone_by_pid_range() {
            Sweep::PidRange
        } else {
            self.scan();
            Sweep::FullScan
        };
        members_seen.extend(self.members.keys());
        let leftovers = if exited_on_its_own {
            self.members.len()
        } else {
            0
        };
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
        self.reap_cgroup_zombies();
        self.finished = true;
        orphans::unregister(self.id);
        let mut survivors: Vec<i32> = self.members.keys().copied().collect();
        survivors.sort_unstable();
        if survivors.is_empty() {
            // Empty now: removing it cannot fail for a member we missed.
            self.cgroup = None;
        }
        tracing::debug!(
            leader = self.leader,
            ?sweep,
            members_seen = members_seen.len(),
            killed,
            leftovers,
            confinement = self.confinement.as_str(),
            survivors = survivors.len(),
            "process tree finished"
        );
        Termination {
            leader_status: self.leader_status,
            survivors,
            members_seen: members_seen.len(),
            killed,
            sweep,
            leftovers,
            confinement: self.confinement,
            nested_cgroups: 0,
        }
    }

    /// [`ProcessTree::terminate`] with a cgroup: the kernel's answers only. Members are
    /// every process of the run's cgroup subtree; SIGTERM to each, then
    /// `cgroup.kill` after `grace`; done when `cgroup.events` says `populated 0`
    /// (waited for, not polled); then the folders go, deepest first.
    async fn terminate_cgroup(&mut self, grace: Duration) -> Termination {
        self.try_collect_leader();
        let exited_on_its_own = self.leader_status.is_some();
        self.scan();
        let mut members_seen: HashSet<i32> = self.members.keys().copied().collect();
        members_seen.insert(self.leader);
        let leftovers = if exited_on_its_own {
            self.members.len()
        } else {
            0
        };
        let Some(cgroup) = &self.cgroup else {
            unreachable!("terminate_cgroup is only called with a cgroup");
        };
        let nested_cgroups = cgroup.nested();
        let dir = cgroup.dir().to_path_buf();
        let mut killed = false;
        if cgroup.populated() {
            cgroup.signal(Signal::SIGTERM);
            if !wait_cgroup_empty(&dir, grace).await {
                if let Some(cgroup) = &self.cgroup {
                    members_seen.extend(cgroup.pids());
                    killed = true;
                    cgroup.signal(Signal::SIGKILL);
                }
                wait_cgroup_empty(&dir, KILL_WAIT).await;
            }
        }
        self.collect_leader().await;
        self.reap_cgroup_zombies();
        self.finished = true;
        orphans::unregister(self.id);
        let mut survivors = self
            .cgroup
            .as_ref()
            .map(RunCgroup::pids)
            .unwrap_or_default();
        survivors.sort_unstable();
        self.members.clear();
        if survivors.is_empty() {
            // Empty now: its drop removes every folder of the subtree.
            self.cgroup = None;
        }
        tracing::debug!(
            leader = self.leader,
            members_seen = members_seen.len(),
            killed,
            leftovers,
            nested_cgroups,
            survivors = survivors.len(),
            "process tree finished (cgroup)"
        );
        Termination {
            leader_status: self.leader_status,
            survivors,
            members_seen: members_seen.len(),
            killed,
            sweep: Sweep::Cgroup,
            leftovers,
            confinement: self.confinement,
            nested_cgroups,
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
                        self.set_leader_status(status);
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
            self.set_leader_status(status);
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
            self.set_leader_status(status);
        }
    }

    fn set_leader_status(&mut self, status: ExitStatus) {
        if self.leader_status.is_none() {
            orphans::leader_exited(self.id);
        }
        self.leader_status = Some(status);
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

    /// Full `/proc` scan: adds every live process that belongs to the tree. With a
    /// cgroup, its process list instead: the kernel's complete answer.
    fn scan(&mut self) {
        if let Some(cgroup) = &self.cgroup {
            let leader_done = self.leader_status.is_some();
            let leader = self.leader;
            self.members = cgroup
                .pids()
                .into_iter()
                .filter(|&pid| !(leader_done && pid == leader))
                .filter_map(procfs::stat)
                .filter(|s| !s.is_gone())
                .map(|s| (s.pid, s.start_time))
                .collect();
            self.refresh_known();
            return;
        }
        let me = std::process::id() as i32;
        let stats: Vec<ProcStat> = procfs::pids()
            .into_iter()
            .filter(|&pid| pid != me)
            .filter_map(procfs::stat)
            .collect();
        let (found, group_zombies) = self.members_among(&stats);
        // Zombies of our group re-parented to us (we are the subreaper) that exited
        // before we ever saw them alive: reap them, or they would linger until we exit.
        for zombie in group_zombies {
            let _ = waitpid(Pid::from_raw(zombie), Some(WaitPidFlag::WNOHANG));
        }
        self.members = found;
        self.refresh_known();
    }

    /// The live members among `stats` (the tree's membership rules: seen before, in
    /// the group, carrying the marker, or a descendant of one of those), and the zombies
    /// of our group that were re-parented to us.
    fn members_among(&mut self, stats: &[ProcStat]) -> (HashMap<i32, u64>, Vec<i32>) {
        let me = std::process::id() as i32;
        let group_is_ours = self.group_is_ours();
        let (all, zombies): (Vec<&ProcStat>, Vec<&ProcStat>) =
            stats.iter().partition(|s| !s.is_gone());
        let group_zombies: Vec<i32> = zombies
            .iter()
            .filter(|z| {
                group_is_ours && z.pgrp == self.leader && z.ppid == me && z.pid != self.leader
            })
            .map(|z| z.pid)
            .collect();
        let mut group_zombies: Vec<i32> = group_zombies;
        let mut found: HashMap<i32, u64> = HashMap::new();
        if self.confinement == Confinement::Subreaper {
            for orphan in orphans::claimed_by(self.id, me, stats) {
                if orphan.is_gone() {
                    group_zombies.push(orphan.pid);
                } else {
                    found.insert(orphan.pid, orphan.start_time);
                }
            }
        }
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
        (found, group_zombies)
    }

    /// The pid-range proof (module doc): true only if probing the pids allocated since
    /// the spawn shows that nothing of the tree is left. False means "not proven", never
    /// "something is left" — the caller then scans all of `/proc`.
    fn gone_by_pid_range(&mut self) -> bool {
        if self.leader_status.is_none() {
            return false;
        }
        self.refresh_known();
        if !self.members.is_empty() {
            return false;
        }
        // No process at all, live or zombie, is left in the group.
        if killpg(Pid::from_raw(self.leader), None) != Err(Errno::ESRCH) {
            return false;
        }
        let Some(window) = wrap_free_window() else {
            return false;
        };
        let mut stats = Vec::new();
        let mut probed_up_to = self.leader;
        for _ in 0..MAX_PROBE_ROUNDS {
            let Some(last) = procfs::last_pid() else {
                return false;
            };
            if last < probed_up_to || last - self.leader > MAX_PROBED_PIDS {
                // Wrapped, or too many pids to probe one by one.
                return false;
            }
            if last == probed_up_to {
                // No pid was allocated while the previous round probed: every member
                // that could exist has a pid we looked at.
                if self.spawned_at.elapsed() > window {
                    return false;
                }
                let (found, group_zombies) = self.members_among(&stats);
                return found.is_empty() && group_zombies.is_empty();
            }
            stats.extend((probed_up_to.saturating_add(1)..=last).filter_map(procfs::stat));
            probed_up_to = last;
        }
        false
    }

    fn signal_all(&mut self, signal: Signal) {
        if let Some(cgroup) = &self.cgroup {
            cgroup.signal(signal);
        }
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

impl ProcessTree {
    /// Reaps zombies of this run's cgroup re-parented to us that no scan saw alive
    /// (they exited first): they hold only a pid, but a library process running many
    /// runs would collect them. A zombie is not in `cgroup.procs`; its
    /// `/proc/<pid>/cgroup` still names the cgroup, so only ours are touched.
    fn reap_cgroup_zombies(&self) {
        let Some(cgroup) = &self.cgroup else {
            return;
        };
        let me = std::process::id() as i32;
        for pid in procfs::children(me) {
            if pid != self.leader
                && procfs::stat(pid).is_some_and(|s| s.is_gone())
                && cgroup.holds(pid)
            {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }
}

/// The start of the tree marker (`AGENT_EXEC_TREE=<pid>-<start ticks>-`) of every
/// tree the runner process `pid`, started at `start_ticks`, spawned.
pub fn runner_marker_prefix(pid: u32, start_ticks: u64) -> Vec<u8> {
    format!("{TREE_MARKER_VAR}={pid}-{start_ticks}-").into_bytes()
}

/// Terminates what a runner that *died* (SIGKILL, a crash: nobody ran its
/// `terminate`) left running: every process on this machine whose tree marker names
/// that runner (`pid` and `start_ticks`, from the journal's owner record) — SIGTERM,
/// `grace`, SIGKILL — and returns how many there were and how many are still alive.
///
/// Why: the runner's agent is orphaned when the runner is killed, and may still hold
/// the session (a Codex thread waiting on the model); a resume must not run a second
/// agent on the same conversation beside it. The caller must have proven the runner
/// dead (the journal's owner check): a live runner's trees are its own business.
/// A process found in a dead runner's run cgroup takes the whole cgroup with it
/// ([`crate::cgroup::kill_dead_runners_cgroup_of`]). Not found: a process that cleared
/// its environment outside any cgroup (see "Leftover processes" in the docs).
pub fn terminate_runner_leftovers(pid: u32, start_ticks: u64, grace: Duration) -> (usize, usize) {
    let prefix = runner_marker_prefix(pid, start_ticks);
    let me = std::process::id();
    let find = || -> Vec<(i32, u64)> {
        procfs::pids()
            .into_iter()
            .filter(|p| u32::try_from(*p).ok() != Some(me))
            .filter_map(|p| {
                procfs::stat(p)
                    .filter(|s| !s.is_gone())
                    .map(|s| (p, s.start_time))
            })
            .filter(|(p, _)| procfs::environ_starts_with(*p, &prefix))
            .collect()
    };
    let found = find();
    if found.is_empty() {
        return (0, 0);
    }
    // A leftover in a dead runner's run cgroup (one not under ours, which
    // `cgroup::sweep_dead_runners` did not see): the whole cgroup goes, processes that
    // cleared their environment included.
    for (p, _) in &found {
        if let Some((dir, killed)) = crate::cgroup::kill_dead_runners_cgroup_of(*p) {
            tracing::info!(dir = %dir.display(), killed, "killed a dead runner's run cgroup");
        }
    }
    // Signalled only while it is still the very process found (pid and start time).
    let signal = |targets: &[(i32, u64)], signal: Signal| {
        for (p, start) in targets {
            if procfs::stat(*p).is_some_and(|s| s.start_time == *start && !s.is_gone()) {
                let _ = kill(Pid::from_raw(*p), signal);
            }
        }
    };
    let alive = |targets: &[(i32, u64)]| -> Vec<(i32, u64)> {
        targets
            .iter()
            .copied()
            .filter(|(p, start)| {
                procfs::stat(*p).is_some_and(|s| s.start_time == *start && !s.is_gone())
            })
            .collect()
    };
    signal(&found, Signal::SIGTERM);
    let until = Instant::now() + grace;
    let mut left = alive(&found);
    while !left.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        left = alive(&left);
    }
    signal(&left, Signal::SIGKILL);
    let until = Instant::now() + Duration::from_secs(2);
    while !left.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
        left = alive(&left);
    }
    // Orphans re-parented to this process (a subreaper) are reaped here.
    for (p, _) in &found {
        let _ = waitpid(Pid::from_raw(*p), Some(WaitPidFlag::WNOHANG));
    }
    (found.len(), left.len())
}

/// Waits, off the async thread, until the cgroup at `dir` is empty or `limit` passes.
async fn wait_cgroup_empty(dir: &std::path::Path, limit: Duration) -> bool {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || crate::cgroup::wait_empty_at(&dir, limit))
        .await
        .unwrap_or(false)
}

/// How long after a spawn pids cannot have wrapped all the way round: the free pids
/// divided by [`MAX_PID_RATE`]. `None` if `pid_max` is unreadable.
fn wrap_free_window() -> Option<Duration> {
    let pid_max = u64::try_from(procfs::pid_max()?).ok()?;
    // Pids below 300 are reserved; leave room for as many tasks as exist now, twice.
    let in_use = procfs::task_count()
        .unwrap_or(pid_max / 2)
        .saturating_mul(2);
    let free = pid_max.saturating_sub(300).saturating_sub(in_use);
    Some(Duration::from_micros(
        free.saturating_mul(1_000_000) / MAX_PID_RATE,
    ))
}

impl Drop for ProcessTree {
    /// Dropped without [`ProcessTree::terminate`] (a future canceled mid-run): kill
    /// everything we can reach, without waiting. Not the normal path.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        orphans::unregister(self.id);
        self.scan();
        self.signal_all(Signal::SIGKILL);
        // The cgroup's own drop kills what is left in it and removes it.
    }
}
