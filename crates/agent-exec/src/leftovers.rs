//! What dead runners left behind: found and ended by every command that opens the
//! journal (issue 20, finding 2).
//!
//! A runner killed with SIGKILL (or crashed) runs no cleanup: its program keeps
//! running and its run cgroup stays. The next `agent-exec` command on the machine
//! ends both, in two ways:
//!
//! * every run cgroup under ours whose name's runner is dead (pid and start time,
//!   `agent_exec_runtime::cgroup::sweep_dead_runners`): `cgroup.kill`, wait for
//!   `populated 0`, folders removed deepest first — whatever journal it used. Costs one
//!   `readdir` when there is nothing to do.
//! * for each execution the journal's recovery just settled `unknown` (its owner proven
//!   dead: host, boot id, pid, start time), the processes carrying that owner's tree
//!   marker anywhere on this machine (`terminate_runner_leftovers`): a run without a
//!   cgroup (subreaper or process-group confinement), or one whose runner sat in
//!   another cgroup than ours.
//!
//! The journal's recovery already settles the execution `unknown` with side effects
//! `possible`; this says on stderr what was ended.

use agent_exec_journal::{Journal, Recovered};

/// Ends what dead runners left (module doc), saying so on stderr.
pub async fn clean_up(journal: &Journal, recovered: &[Recovered]) {
    let swept = agent_exec_runtime::cgroup::sweep_dead_runners();
    if swept.runs > 0 {
        let owners: Vec<String> = swept.owners.iter().map(i32::to_string).collect();
        eprintln!(
            "agent-exec: dead runner(s) (pid {}) left {} run cgroup(s): killed {} process(es), removed {} folder(s)",
            owners.join(", "),
            swept.runs,
            swept.killed,
            swept.removed
        );
    }
    for folder in &swept.left {
        eprintln!(
            "agent-exec: warning: could not remove {} (a process in it would not die)",
            folder.display()
        );
    }
    for run in recovered {
        match terminate_what_dead_runners_left(journal, &run.execution_id).await {
            Ok(Some(why)) => eprintln!("agent-exec: warning: {why}"),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(execution_id = %run.execution_id, %e, "cannot look up its owners")
            }
        }
    }
}

/// Terminates the processes each dead runner of `execution_id` (an attempt's owner
/// proven gone on this host, this boot) left behind, saying so on stderr. `Some(why)`
/// when some would not exit.
pub async fn terminate_what_dead_runners_left(
    journal: &Journal,
    execution_id: &str,
) -> anyhow::Result<Option<String>> {
    use agent_exec_journal::owner::Liveness;
    let Some(record) = journal.show(execution_id).await? else {
        return Ok(None);
    };
    let here = agent_exec_journal::ProcessIdentity::current();
    let mut owners: Vec<_> = record.attempts.iter().map(|a| a.owner.clone()).collect();
    owners.dedup();
    for owner in owners {
        // Same boot only: after a reboot nothing of it is left, and start times restart.
        // Pid 0 is an owner the journal could not read: nothing to judge or terminate.
        if owner.pid == 0
            || owner.boot_id != here.boot_id
            || !matches!(owner.liveness(&here), Liveness::Dead(_))
        {
            continue;
        }
        let (pid, ticks) = (owner.pid, owner.start_ticks);
        let (found, left) = tokio::task::spawn_blocking(move || {
            agent_exec_runtime::terminate_runner_leftovers(
                pid,
                ticks,
                std::time::Duration::from_secs(2),
            )
        })
        .await
        .unwrap_or((0, 0));
        if left > 0 {
            return Ok(Some(format!(
                "{left} of the {found} process(es) the dead runner (pid {pid}) left running did not exit after SIGKILL"
            )));
        }
        if found > 0 {
            eprintln!(
                "agent-exec: terminated {found} process(es) the dead runner (pid {pid}) left running"
            );
        }
    }
    Ok(None)
}
