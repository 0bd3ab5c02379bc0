//! Which run an orphan belongs to, when there is no cgroup to ask: the bookkeeping
//! behind [`crate::process::Confinement::Subreaper`].
//!
//! This process is the child subreaper ([`crate::process::become_subreaper`]), so a
//! process whose parent dies is re-parented to us — with nothing left to say which
//! run it came from when it also left the group (`setsid`) and dropped the tree
//! marker (`env -i`). Two rules make the answer exact in the cases that matter:
//!
//! * Each run's leader is made a child subreaper too (in its `pre_exec`). While it
//!   lives, an orphan of its subtree is re-parented to *it*, and so stays its
//!   descendant, found by the tree's parentage rule. Orphans reach this process only
//!   when a leader exits.
//! * So an orphan found here (parent = us, not a leader we spawned, started after the
//!   run did) belongs to a run whose leader has exited and whose tree is not finished.
//!   With one such run — always the case for the CLI, which runs one at a time — the
//!   answer is exact. With several (two leaders exiting between two looks), the orphan
//!   is claimed by each of them: all of them are finishing, and each terminates what it
//!   claims, so it is killed either way; it may be reported by a run it did not come
//!   from. With none (a program that cleared its own subreaper flag), it is claimed
//!   only if exactly one run is live.
//!
//! Decision: one registry per process behind a mutex, touched once per run start, end
//! and full scan — not one helper subreaper process per run, which would need a binary
//! of ours to exec in every host program that uses this library.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::procfs::{self, ProcStat};

#[derive(Debug, Clone, Copy)]
struct Entry {
    leader: i32,
    leader_start: u64,
    leader_exited: bool,
}

static TREES: Mutex<Option<HashMap<u64, Entry>>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut HashMap<u64, Entry>) -> R) -> R {
    let mut guard = TREES.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// Spawns a run's leader with `spawn` (which returns it with its pid and start time)
/// and registers it, under the registry's lock: a scan that reads `/proc` and then
/// the registry can never see a new leader as an orphan of ours.
pub(crate) fn spawn_registered<T>(
    tree: u64,
    spawn: impl FnOnce() -> std::io::Result<(T, i32, u64)>,
) -> std::io::Result<(T, i32, u64)> {
    let mut guard = TREES.lock().unwrap_or_else(|p| p.into_inner());
    let (value, leader, leader_start) = spawn()?;
    guard.get_or_insert_with(HashMap::new).insert(
        tree,
        Entry {
            leader,
            leader_start,
            leader_exited: false,
        },
    );
    Ok((value, leader, leader_start))
}

/// The run's leader has been collected.
pub(crate) fn leader_exited(tree: u64) {
    with(|trees| {
        if let Some(entry) = trees.get_mut(&tree) {
            entry.leader_exited = true;
        }
    });
}

/// The run is finished: it claims nothing more.
pub(crate) fn unregister(tree: u64) {
    with(|trees| trees.remove(&tree));
}

/// The orphans among `stats` (parent `me`, not a registered leader) that `tree`
/// claims, zombies included (module doc for the rules).
pub(crate) fn claimed_by(tree: u64, me: i32, stats: &[ProcStat]) -> Vec<ProcStat> {
    let trees: Vec<Run> = with(|trees| {
        trees
            .iter()
            .map(|(id, e)| Run {
                id: *id,
                leader: e.leader,
                leader_start: e.leader_start,
                exited: e.leader_exited
                    || procfs::stat(e.leader)
                        .is_none_or(|s| s.start_time != e.leader_start || s.is_gone()),
            })
            .collect()
    });
    // A run with a cgroup of its own takes care of its orphans: never claim one.
    let in_a_run_cgroup = |pid: i32| {
        crate::cgroup::availability().base.is_some()
            && std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
                .ok()
                .and_then(|t| crate::cgroup::unified_path(&t))
                .is_some_and(|path| {
                    // Any level: a run's processes may sit in a cgroup nested in it.
                    let prefix = crate::cgroup::own_prefix();
                    path.split('/').any(|name| name.starts_with(&prefix))
                })
    };
    let mut claimed = claims(tree, &trees, me, stats);
    claimed.retain(|s| !in_a_run_cgroup(s.pid));
    claimed
}

/// A registered run as [`claims`] sees it.
#[derive(Debug, Clone, Copy)]
struct Run {
    id: u64,
    leader: i32,
    leader_start: u64,
    exited: bool,
}

/// The rule of [`claimed_by`] over a snapshot of the registry (pure, for tests).
fn claims(tree: u64, runs: &[Run], me: i32, stats: &[ProcStat]) -> Vec<ProcStat> {
    let Some(own) = runs.iter().find(|r| r.id == tree) else {
        return Vec::new();
    };
    stats
        .iter()
        .filter(|s| s.ppid == me && !runs.iter().any(|r| r.leader == s.pid))
        .filter(|s| s.start_time >= own.leader_start)
        .filter(|s| {
            let mut candidates = runs.iter().filter(|r| r.leader_start <= s.start_time);
            if candidates.clone().any(|r| r.exited) {
                own.exited
            } else {
                candidates.nth(1).is_none()
            }
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orphan(pid: i32, ppid: i32, start_time: u64) -> ProcStat {
        ProcStat {
            pid,
            state: 'S',
            ppid,
            pgrp: pid,
            session: pid,
            start_time,
            threads: 1,
        }
    }

    fn run(id: u64, leader: i32, leader_start: u64, exited: bool) -> Run {
        Run {
            id,
            leader,
            leader_start,
            exited,
        }
    }

    const ME: i32 = 100;

    #[test]
    fn an_orphan_goes_to_the_run_whose_leader_exited() {
        let runs = [run(1, 200, 50, true), run(2, 300, 60, false)];
        let o = orphan(400, ME, 70);
        assert_eq!(
            claims(1, &runs, ME, &[o]),
            vec![o],
            "the exited run claims it"
        );
        assert!(
            claims(2, &runs, ME, &[o]).is_empty(),
            "the live run does not"
        );
    }

    #[test]
    fn two_exited_runs_both_claim_and_a_lone_live_run_claims_what_comes() {
        let o = orphan(400, ME, 70);
        let both = [run(1, 200, 50, true), run(2, 300, 60, true)];
        assert_eq!(claims(1, &both, ME, &[o]), vec![o]);
        assert_eq!(claims(2, &both, ME, &[o]), vec![o]);
        // A leader that cleared its own subreaper flag sends orphans while it runs.
        let lone = [run(2, 300, 60, false)];
        assert_eq!(claims(2, &lone, ME, &[o]), vec![o]);
        let two_live = [run(1, 200, 50, false), run(2, 300, 60, false)];
        assert!(
            claims(1, &two_live, ME, &[o]).is_empty(),
            "ambiguous: no one"
        );
        assert!(
            claims(2, &two_live, ME, &[o]).is_empty(),
            "ambiguous: no one"
        );
    }

    #[test]
    fn never_a_leader_a_stranger_or_an_older_process() {
        let runs = [run(1, 200, 50, true)];
        assert!(
            claims(1, &runs, ME, &[orphan(200, ME, 50)]).is_empty(),
            "a leader"
        );
        assert!(
            claims(1, &runs, ME, &[orphan(400, 1, 70)]).is_empty(),
            "not our child"
        );
        assert!(
            claims(1, &runs, ME, &[orphan(400, ME, 49)]).is_empty(),
            "older than the run"
        );
        assert!(
            claims(9, &runs, ME, &[orphan(400, ME, 70)]).is_empty(),
            "unknown run"
        );
        // The run started after the orphan: not a candidate, so the older run gets it.
        let runs = [run(1, 200, 50, true), run(2, 300, 80, true)];
        assert_eq!(claims(1, &runs, ME, &[orphan(400, ME, 70)]).len(), 1);
        assert!(claims(2, &runs, ME, &[orphan(400, ME, 70)]).is_empty());
    }
}
