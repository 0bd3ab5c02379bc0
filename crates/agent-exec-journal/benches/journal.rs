//! Journal throughput on SQLite (one file, WAL), each write its own committed transaction:
//! * `transition`: one state change of a running attempt (`synchronous = NORMAL`);
//! * `execution_lifecycle`: the five writes of one run as the runtime makes them —
//!   execution started (fsynced, `FULL`), attempt started, canceling, attempt finished,
//!   execution finished.
#![allow(clippy::unwrap_used)]

use agent_exec_journal::{End, ExecutionStart, SqliteJournal, State, Usage};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn start(id: &str) -> ExecutionStart<'_> {
    ExecutionStart {
        execution_id: id,
        backend: "command",
        request_json: Some(r#"{"execution_id":"bench","prompt":"hello"}"#),
        deadline: None,
    }
}

fn transitions(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (journal, _) = SqliteJournal::open(&dir.path().join("journal.sqlite3")).unwrap();
    let mut group = c.benchmark_group("sqlite");

    journal.start_execution(&start("steady")).unwrap();
    journal.start_attempt("steady", 1, "command").unwrap();
    group.throughput(Throughput::Elements(1));
    let mut canceling = false;
    group.bench_function("transition", |b| {
        b.iter(|| {
            canceling = !canceling;
            let to = if canceling {
                State::Canceling
            } else {
                State::Running
            };
            journal.transition("steady", 1, to, None).unwrap();
        })
    });

    group.throughput(Throughput::Elements(5));
    let mut n = 0u64;
    group.bench_function("execution_lifecycle", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("bench-{n}");
            journal.start_execution(&start(&id)).unwrap();
            journal.start_attempt(&id, 1, "command").unwrap();
            journal.transition(&id, 1, State::Canceling, None).unwrap();
            let end = End {
                outcome: State::Canceled,
                error_json: Some(r#"{"code":"agent.canceled","side_effects":"none"}"#),
                error_code: Some("agent.canceled"),
                usage: Usage::default(),
                cancel_requested: false,
            };
            journal.finish_attempt(&id, 1, &end).unwrap();
            journal.finish_execution(&id, &end).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, transitions);
criterion_main!(benches);
