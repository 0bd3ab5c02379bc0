//! Journal throughput: state transitions per second on SQLite (one file, WAL,
//! `synchronous = FULL`), each transition its own committed transaction.
#![allow(clippy::unwrap_used)]

use agent_exec_journal::{End, ExecutionStart, SqliteJournal, State, Usage};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn transitions(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (journal, _) = SqliteJournal::open(&dir.path().join("journal.sqlite3")).unwrap();
    let mut group = c.benchmark_group("sqlite");
    // One execution = 5 transitions, each its own transaction: execution started,
    // attempt started, canceling, attempt canceled, execution canceled.
    group.throughput(Throughput::Elements(5));
    let mut n = 0u64;
    group.bench_function("execution_lifecycle_3_transitions", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("bench-{n}");
            journal
                .start_execution(&ExecutionStart {
                    execution_id: &id,
                    backend: "command",
                    request_json: None,
                    deadline: None,
                })
                .unwrap();
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
