//! The fleet end to end: `agent-exec worker` processes, `submit`, `wait`, `cancel`,
//! against the real PostgreSQL the test command starts (AGENT_EXEC_TEST_PG_URL, from
//! scripts/setup.d/30-postgres.sh). Each test has a database of its own, so tests run
//! in parallel.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A fresh database on the test server; its URL.
fn fresh_database() -> String {
    let admin = test_support::peers::env(
        "AGENT_EXEC_TEST_PG_URL",
        "the PostgreSQL server",
        test_support::peers::Setup::Postgres,
    );
    let name = format!("fleet_test_{}", uuid::Uuid::new_v4().simple());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {admin} is unreachable ({e})"));
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
    });
    with_database(&admin, &name)
}

fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let authority_end = base.find("://").unwrap() + 3;
    let path_start = base[authority_end..]
        .find('/')
        .map_or(base.len(), |i| authority_end + i);
    format!("{}/{name}{query}", &base[..path_start])
}

/// One SQL query's rows, as text.
fn sql(url: &str, query: &str) -> Vec<Vec<Option<String>>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .simple_query(query)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_owned))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    })
}

/// A fleet: a database, a config, a workspace, and the worker processes it started
/// (killed, by pid, when it is dropped).
struct Fleet {
    dir: tempfile::TempDir,
    url: String,
    workers: Vec<Child>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for w in &mut self.workers {
            let _ = w.kill();
            let _ = w.wait();
        }
        // Programs a SIGKILLed worker left behind wrote their pid here.
        if let Ok(entries) = std::fs::read_dir(self.dir.path().join("pids")) {
            for entry in entries.flatten() {
                if let Ok(pid) = std::fs::read_to_string(entry.path())
                    && let Ok(pid) = pid.trim().parse::<i32>()
                {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
    }
}

/// A `command` backend named `append`: appends its execution id to `log`, leaves its
/// process-group id in `pids/<id>`, sleeps when the id starts with `slow-`, prints
/// `done-<id>`. Backend `tree` starts a process tree that runs until canceled.
fn config(dir: &Path) -> String {
    let log = dir.join("log");
    let pids = dir.join("pids");
    let append = format!(
        "echo \"$AGENT_EXEC_EXECUTION_ID\" >> {log}; echo $$ > {pids}/\"$AGENT_EXEC_EXECUTION_ID\"; \
         case \"$AGENT_EXEC_EXECUTION_ID\" in slow-*) sleep 120;; nap-*) sleep 4;; esac; echo \"done-$AGENT_EXEC_EXECUTION_ID\"",
        log = log.display(),
        pids = pids.display()
    );
    let tree = format!(
        "echo $$ > {pids}/\"$AGENT_EXEC_EXECUTION_ID\"; echo \"$AGENT_EXEC_EXECUTION_ID\" >> {log}; \
         sleep 300 & sh -c 'sleep 300' & wait",
        log = log.display(),
        pids = pids.display()
    );
    format!(
        "[backends.append]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n\n\
         [backends.tree]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
        serde_json::to_string(&append).unwrap(),
        serde_json::to_string(&tree).unwrap()
    )
}

impl Fleet {
    fn new() -> Fleet {
        Fleet::on(fresh_database())
    }

    fn on(url: String) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("pids")).unwrap();
        std::fs::write(dir.path().join("config.toml"), config(dir.path())).unwrap();
        Fleet {
            dir,
            url,
            workers: Vec::new(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"));
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(&self.url);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// Starts a worker process; returns its index. Its stderr goes to `worker-<n>.log`.
    fn start_worker(&mut self, concurrency: u32) -> usize {
        self.start_worker_with(concurrency, &[])
    }

    /// [`Fleet::start_worker`] with more `worker` arguments.
    fn start_worker_with(&mut self, concurrency: u32, extra: &[&str]) -> usize {
        let n = self.workers.len();
        let log = std::fs::File::create(self.path(&format!("worker-{n}.log"))).unwrap();
        let child = self
            .command()
            .args(["worker", "--concurrency", &concurrency.to_string()])
            .args(["--backend", "append", "--backend", "tree"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let pid = child.id();
        self.workers.push(child);
        // Up when its queue worker has started (the row names its queue worker id).
        let until = Instant::now() + Duration::from_secs(60);
        while !self.worker_is_up(pid) {
            assert!(
                Instant::now() < until,
                "worker {n} did not come up; {}",
                self.worker_logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        n
    }

    fn worker_is_up(&self, pid: u32) -> bool {
        let tables = sql(
            &self.url,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'agent_exec_fleet_workers'",
        );
        tables[0][0].as_deref() != Some("0")
            && self.count(&format!(
                "SELECT count(*) FROM agent_exec_fleet_workers
                 WHERE pid = {pid} AND state = 'live' AND queue_worker_id IS NOT NULL"
            )) == 1
    }

    fn worker_logs(&self) -> String {
        (0..self.workers.len())
            .map(|n| {
                std::fs::read_to_string(self.path(&format!("worker-{n}.log"))).unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    fn submit(&self, backend: &str, id: &str, extra: &[&str]) -> Output {
        let ws = self.path("ws");
        let mut args = vec![
            "submit",
            "--backend",
            backend,
            "--prompt",
            "hi",
            "--workspace",
            ws.to_str().unwrap(),
            "--execution-id",
            id,
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn submit_ok(&self, backend: &str, id: &str) {
        let out = self.submit(backend, id, &["--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json, serde_json::json!({ "execution_id": id }));
    }

    /// `wait ID --json`: the exit code and the result.
    fn wait(&self, id: &str) -> (i32, Value) {
        let out = self.run(&["wait", id, "--json", "--timeout", "120s"]);
        let code = out.status.code().unwrap_or(-1);
        let result = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "wait {id}: no result JSON ({e}); exit {code}; stderr: {}\nworkers: {}",
                stderr(&out),
                self.worker_logs()
            )
        });
        (code, result)
    }

    fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn wait_for_log(&self, ids: &[&str]) {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let lines = self.log_lines();
            if ids.iter().all(|id| lines.iter().any(|l| l == id)) {
                return;
            }
            assert!(
                Instant::now() < until,
                "{ids:?} never started; log {lines:?}; {}",
                self.worker_logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn count(&self, query: &str) -> usize {
        sql(&self.url, query)[0][0]
            .as_deref()
            .unwrap()
            .parse()
            .unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The pids of live processes whose environment says they belong to execution `id`
/// (the command backend puts `AGENT_EXEC_EXECUTION_ID` in every member's environment).
fn processes_of(id: &str) -> Vec<i32> {
    test_support::procfs::with_env(format!("AGENT_EXEC_EXECUTION_ID={id}"))
}

/// The queue library gives a slot one job per wake-up (a new job's NOTIFY, or its poll),
/// so a slot that finished while jobs were queued sat idle until the next poll; the
/// worker now wakes its slots when a job ends (`agent_exec_fleet::wake`). With the poll
/// an hour away, a backlog queued before the worker started drains only through that
/// wake-up: on the code before it, the first job ran and the other two waited.
#[test]
fn a_backlog_drains_through_freed_slots_without_waiting_for_the_poll() {
    let mut fleet = Fleet::new();
    let ids = ["backlog-1", "backlog-2", "backlog-3"];
    // A worker advertises the backend and stops; the jobs are queued with nobody
    // listening, then a worker with one slot and no poll to speak of starts.
    let first = fleet.start_worker(1);
    let pid = fleet.workers[first].id() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = fleet.workers[first].wait().unwrap();
    assert!(
        status.success(),
        "worker stopped cleanly: {status:?}; {}",
        fleet.worker_logs()
    );
    for id in ids {
        fleet.submit_ok("append", id);
    }
    fleet.start_worker_with(1, &["--poll-interval", "1h"]);
    fleet.wait_for_log(&ids);
    for id in ids {
        let (code, result) = fleet.wait(id);
        assert_eq!(
            (code, &result["outcome"]),
            (0, &serde_json::json!("succeeded")),
            "{id}: {result}"
        );
    }
}

#[test]
fn two_hundred_executions_across_four_workers_each_run_exactly_once() {
    let mut fleet = Fleet::new();
    for _ in 0..4 {
        fleet.start_worker(4);
    }
    let ids: Vec<String> = (0..200).map(|i| format!("bulk-{i:03}")).collect();
    // Submitted and waited for from eight threads at once, as separate processes.
    std::thread::scope(|s| {
        for chunk in ids.chunks(25) {
            let fleet = &fleet;
            s.spawn(move || {
                for id in chunk {
                    fleet.submit_ok("append", id);
                }
            });
        }
    });
    let results: Vec<(String, i32, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(25)
            .map(|chunk| {
                let fleet = &fleet;
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|id| {
                            let (code, result) = fleet.wait(id);
                            (id.clone(), code, result)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    for (id, code, result) in &results {
        assert_eq!(*code, 0, "{id}: {result}");
        assert_eq!(result["outcome"], "succeeded", "{id}: {result}");
        assert_eq!(result["text"], format!("done-{id}\n"), "{id}");
    }
    let lines = fleet.log_lines();
    assert_eq!(lines.len(), 200, "every execution runs once: {lines:?}");
    let unique: HashSet<&String> = lines.iter().collect();
    assert_eq!(unique.len(), 200, "no execution runs twice");
    assert_eq!(
        unique,
        ids.iter().collect::<HashSet<_>>(),
        "exactly the submitted ids"
    );
    // Every worker took part, and the journal says who ran what.
    let per_worker = sql(
        &fleet.url,
        "SELECT worker_id, count(*) FROM agent_exec_fleet_jobs GROUP BY worker_id",
    );
    assert_eq!(per_worker.len(), 4, "{per_worker:?}");
    let out = fleet.run(&["runs", "show", "bulk-007", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["state"], "succeeded");
    assert!(
        record["worker"]["worker_id"].as_str().is_some(),
        "runs show names the worker: {record}"
    );
    let out = fleet.run(&["runs", "--limit", "300"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("WORKER"), "{listing}");
    // Resubmitting an id that has succeeded is refused; the journal keeps one attempt.
    let out = fleet.submit("append", "bulk-000", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already ended succeeded"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_attempts WHERE execution_id = 'bulk-000'"),
        1
    );
}

#[test]
fn a_sigkilled_worker_leaves_its_executions_unknown_and_the_others_finish_the_rest() {
    let mut fleet = Fleet::new();
    let doomed = fleet.start_worker(2);
    fleet.submit_ok("append", "slow-1");
    fleet.submit_ok("append", "slow-2");
    fleet.wait_for_log(&["slow-1", "slow-2"]);
    // The doomed worker is full: these wait in the queue.
    for id in ["fast-1", "fast-2", "fast-3"] {
        fleet.submit_ok("append", id);
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(fleet.workers[doomed].id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    fleet.workers[doomed].wait().unwrap();
    fleet.start_worker(2);

    for id in ["fast-1", "fast-2", "fast-3"] {
        let (code, result) = fleet.wait(id);
        assert_eq!(
            (code, &result["outcome"]),
            (0, &Value::from("succeeded")),
            "{id}: {result}"
        );
    }
    for id in ["slow-1", "slow-2"] {
        let (code, result) = fleet.wait(id);
        assert_eq!(code, 3, "{id}: {result}");
        assert_eq!(result["outcome"], "unknown", "{id}: {result}");
        assert_eq!(result["err"]["code"], "agent.unknown_outcome");
        assert_eq!(result["err"]["side_effects"], "possible");
        let reason = result["err"]["reason"].as_str().unwrap();
        assert!(reason.contains("exited"), "says how we know: {reason}");
    }
    let lines = fleet.log_lines();
    assert_eq!(lines.len(), 5, "none ran twice: {lines:?}");
    assert_eq!(lines.iter().collect::<HashSet<_>>().len(), 5);
    // The dead worker's jobs are out of the queue, not waiting for another claim.
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_queue._private_jobs"),
        0
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_fleet_workers WHERE state = 'dead'"),
        1
    );
}

#[test]
fn cancel_stops_a_running_tree_and_a_queued_job_never_starts() {
    let mut fleet = Fleet::new();
    fleet.start_worker(1);
    fleet.submit_ok("tree", "running-1");
    fleet.wait_for_log(&["running-1"]);
    fleet.submit_ok("append", "queued-1");
    let until = Instant::now() + Duration::from_secs(30);
    while processes_of("running-1").len() < 4 {
        assert!(Instant::now() < until, "the tree never grew");
        std::thread::sleep(Duration::from_millis(20));
    }

    let out = fleet.run(&["cancel", "queued-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("never starts"), "{}", stderr(&out));
    let (code, result) = fleet.wait("queued-1");
    assert_eq!(code, 4, "{result}");
    assert_eq!(result["outcome"], "canceled");
    assert_eq!(result["err"]["side_effects"], "none");

    let out = fleet.run(&["cancel", "running-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (code, result) = fleet.wait("running-1");
    assert_eq!(code, 4, "{result}");
    assert_eq!(result["outcome"], "canceled");
    assert_eq!(result["err"]["code"], "agent.canceled");
    assert_eq!(
        processes_of("running-1"),
        Vec::<i32>::new(),
        "the whole tree is gone"
    );

    assert!(
        !fleet.log_lines().iter().any(|l| l == "queued-1"),
        "the canceled queued job never started"
    );
    let out = fleet.run(&["runs", "show", "queued-1", "--json"]);
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["state"], "canceled");
    assert_eq!(record["attempts"], serde_json::json!([]));
    // The worker is free again: the next job runs.
    fleet.submit_ok("append", "after-1");
    assert_eq!(fleet.wait("after-1").0, 0);
}

#[test]
fn a_job_needing_a_capability_no_live_worker_verified_waits_and_wait_says_why() {
    let mut fleet = Fleet::new();
    fleet.start_worker(1);
    let out = fleet.submit("append", "needs-usage", &["--require", "text,usage"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = fleet.run(&["wait", "needs-usage", "--timeout", "1500ms"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let why = stderr(&out);
    assert!(
        why.contains(
            "still queued: no live worker has verified backend `append` with capabilities text, usage"
        ),
        "{why}"
    );
    assert!(
        why.contains("verified [text, files, stream, cancel]"),
        "{why}"
    );
    assert!(out.stdout.is_empty());
    assert!(fleet.log_lines().is_empty(), "it never ran");
    // A job the worker can run passes it by.
    fleet.submit_ok("append", "plain");
    assert_eq!(fleet.wait("plain").0, 0);
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_fleet_jobs WHERE state = 'queued'"),
        1
    );
}

#[test]
fn bad_input_is_refused_clearly_and_nothing_is_enqueued() {
    let mut fleet = Fleet::new();
    fleet.start_worker(1);
    let jobs = || {
        fleet.count("SELECT count(*) FROM agent_exec_fleet_jobs")
            + fleet.count("SELECT count(*) FROM agent_exec_queue._private_jobs")
    };

    let out = fleet.submit("nope", "x-1", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "unknown backend `nope`: no worker of this fleet has advertised it; known: append, tree"
        ),
        "{}",
        stderr(&out)
    );
    let out = fleet.submit("append", "x-2", &["--require", "telepathy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown capability \"telepathy\""),
        "{}",
        stderr(&out)
    );
    let out = fleet.submit("append", "has space", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid --execution-id"),
        "{}",
        stderr(&out)
    );
    let out = fleet.submit("append", "x-3", &["--deadline", "0s"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(jobs(), 0, "nothing enqueued");

    // The same id twice while queued or running: refused, not duplicated.
    fleet.submit_ok("tree", "twice");
    let out = fleet.submit("tree", "twice", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is already"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("or use a new --execution-id"),
        "the hint in the words of the flag the id came by: {}",
        stderr(&out)
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_queue._private_jobs"),
        1
    );
    assert!(fleet.run(&["cancel", "twice"]).status.success());

    // A URL that does not answer.
    let dead = with_database("postgres://agent_exec@127.0.0.1:1/postgres", "nowhere");
    let out = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
        .env("XDG_STATE_HOME", fleet.path("xdg-state"))
        .args(["--config", fleet.path("config.toml").to_str().unwrap()])
        .args([
            "--journal",
            &dead,
            "submit",
            "--backend",
            "append",
            "--prompt",
            "hi",
        ])
        .args(["--workspace", "/tmp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("journal postgres://agent_exec@127.0.0.1:1/nowhere: cannot connect"),
        "{}",
        stderr(&out)
    );
    // And an SQLite journal is not a fleet (`wait` and `cancel` work on one for
    // local runs: tests/results.rs).
    let out = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
        .args(["--config", fleet.path("config.toml").to_str().unwrap()])
        .args(["--journal", fleet.path("j.sqlite3").to_str().unwrap()])
        .args([
            "submit",
            "--backend",
            "echo",
            "--prompt",
            "p",
            "--workspace",
            "/tmp",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the fleet needs --journal postgres://"),
        "{}",
        stderr(&out)
    );
    let out = fleet.run(&["wait", "never-submitted", "--timeout", "1s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not in the fleet or the journal"),
        "{}",
        stderr(&out)
    );
}

/// A worker row in a state this build does not know (a newer build's, or an edited
/// row) is an error naming that worker, never a silent default: before, the state was
/// a free string, so such a row's advertisement still routed jobs and `submit`
/// enqueued one.
#[test]
fn a_worker_row_in_an_unknown_state_is_an_error_naming_it() {
    let fleet = Fleet::new();
    // Any fleet command creates the tables; with no worker this one is refused.
    let out = fleet.submit("append", "before", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    sql(
        &fleet.url,
        r#"INSERT INTO agent_exec_fleet_workers (worker_id, host, boot_id, pid, start_ticks,
               concurrency, backends_json, state)
           VALUES ('w-odd', 'elsewhere', 'b', 1, 1, 1,
               '[{"name":"append","verified":["tools"]}]', 'retired')"#,
    );
    let out = fleet.submit("append", "x-1", &[]);
    assert!(
        !out.status.success(),
        "submitted on an unreadable worker row"
    );
    assert!(
        stderr(&out).contains(
            r#"stored data for worker "w-odd" is damaged: its state is "retired", not live, stopped or dead; hint: repair or delete that worker's row in agent_exec_fleet_workers"#
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_fleet_jobs"),
        0,
        "nothing enqueued"
    );
}

/// A PostgreSQL cluster of this test's own (the Debian binaries 30-postgres.sh uses), on
/// its own port, so restarting it disturbs no other test. Stopped when dropped.
struct PrivateCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl PrivateCluster {
    fn start() -> PrivateCluster {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL server binaries missing (/usr/lib/postgresql): run scripts/test.sh")
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|b| b.join("initdb").exists())
            .max()
            .expect("no initdb under /usr/lib/postgresql/*/bin");
        let dir = tempfile::Builder::new()
            .prefix("fleet-pg-")
            .tempdir_in("/tmp")
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = PrivateCluster { dir, bin, port };
        if is_root() {
            // initdb refuses root; the cluster belongs to the postgres user.
            let status = Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(cluster.dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        }
        let out = cluster
            .as_owner(&cluster.bin.join("initdb"))
            .arg("-D")
            .arg(cluster.data())
            .args([
                "-U",
                "agent_exec",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", stderr(&out));
        cluster.ctl("start");
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn as_owner(&self, program: &Path) -> Command {
        if is_root() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        }
    }

    fn ctl(&self, action: &str) {
        let mut cmd = self.as_owner(&self.bin.join("pg_ctl"));
        cmd.arg("-D").arg(self.data()).args(["-w", "-t", "60"]);
        if action != "stop" {
            cmd.arg("-l")
                .arg(self.dir.path().join("server.log"))
                .arg("-o")
                .arg(format!(
                    "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
                    self.port,
                    self.dir.path().display()
                ));
        } else {
            cmd.args(["-m", "fast"]);
        }
        let out = cmd.arg(action).output().unwrap();
        assert!(out.status.success(), "pg_ctl {action}: {}", stderr(&out));
    }

    fn url(&self) -> String {
        format!("postgres://agent_exec@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self
            .as_owner(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

#[test]
fn workers_ride_out_a_postgresql_restart_while_idle_and_while_running() {
    let cluster = PrivateCluster::start();
    let mut fleet = Fleet::on(cluster.url());
    fleet.start_worker(2);
    fleet.start_worker(2);
    fleet.submit_ok("append", "before-1");
    assert_eq!(fleet.wait("before-1").0, 0);

    // Idle: nothing queued, nothing running.
    cluster.ctl("restart");
    fleet.submit_ok("append", "idle-1");
    fleet.submit_ok("append", "idle-2");
    for id in ["idle-1", "idle-2"] {
        let (code, result) = fleet.wait(id);
        assert_eq!(code, 0, "{id}: {result}\n{}", fleet.worker_logs());
    }

    // Running: the program is mid-way when the server goes away and comes back.
    fleet.submit_ok("append", "nap-1");
    fleet.wait_for_log(&["nap-1"]);
    cluster.ctl("stop");
    std::thread::sleep(Duration::from_secs(1));
    cluster.ctl("start");
    let (code, result) = fleet.wait("nap-1");
    assert_eq!(code, 0, "{result}\n{}", fleet.worker_logs());
    assert_eq!(result["text"], "done-nap-1\n");
    fleet.submit_ok("append", "after-1");
    assert_eq!(fleet.wait("after-1").0, 0);

    let lines = fleet.log_lines();
    assert_eq!(lines.len(), 5, "nothing lost, nothing run twice: {lines:?}");
    assert_eq!(lines.iter().collect::<HashSet<_>>().len(), 5);
    let logs = fleet.worker_logs();
    assert!(
        logs.contains("reconnecting in"),
        "workers log the reconnect: {logs}"
    );
    let out = fleet.run(&["runs", "show", "nap-1", "--json"]);
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        record["state"], "succeeded",
        "the journal has the end: {record}"
    );
}

#[test]
fn a_worker_on_another_host_is_proven_gone_by_its_expired_lease() {
    let mut fleet = Fleet::new();
    // A real worker creates every table (and is itself alive and fine).
    fleet.start_worker(1);
    // What a worker on host `elsewhere` leaves when it dies mid-run: the journal says
    // running (owned by its process), the fleet says running on it, and its last
    // heartbeat is 25 s old. Nothing on this host can check its pid.
    sql(
        &fleet.url,
        "INSERT INTO agent_exec_executions (execution_id, backend, state, attempts, owner_host,
             owner_boot_id, owner_pid, owner_start_ticks, created_at, updated_at)
         VALUES ('remote-1', 'append', 'running', 1, 'elsewhere', 'boot', 4242, 7, 'x', 'x');
         INSERT INTO agent_exec_attempts (execution_id, attempt, backend, state, started_at,
             owner_host, owner_boot_id, owner_pid, owner_start_ticks)
         VALUES ('remote-1', 1, 'append', 'running', 'x', 'elsewhere', 'boot', 4242, 7);
         INSERT INTO agent_exec_fleet_workers (worker_id, host, boot_id, pid, start_ticks,
             concurrency, backends_json, state, heartbeat_at)
         VALUES ('elsewhere-4242', 'elsewhere', 'boot', 4242, 7, 1, '[]', 'live', now() - interval '25 seconds');
         INSERT INTO agent_exec_fleet_jobs (execution_id, backend, required_json, request_json,
             state, worker_id)
         VALUES ('remote-1', 'append', '[]', '{}', 'running', 'elsewhere-4242');",
    );
    let (code, result) = fleet.wait("remote-1");
    assert_eq!(code, 3, "{result}");
    assert_eq!(result["outcome"], "unknown");
    assert_eq!(result["err"]["side_effects"], "possible");
    let reason = result["err"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("elsewhere-4242 on elsewhere (pid 4242): lease expired"),
        "{reason}"
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_fleet_workers WHERE state = 'dead'"),
        1,
        "only the silent worker is declared gone"
    );
    assert_eq!(
        fleet.count("SELECT count(*) FROM agent_exec_attempts WHERE execution_id = 'remote-1' AND state = 'unknown'"),
        1
    );
}
