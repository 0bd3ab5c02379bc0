//! Journal throughput: state transitions per second on SQLite (one file, WAL,
//! `synchronous = FULL`), each transition its own committed transaction.
#![allow(clippy::unwrap_used)]

use agent_exec_journal::{AttemptEnd, AttemptStart, SqliteJournal, State, Usage};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn transitions(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (journal, _) = SqliteJournal::open(&dir.path().join("journal.sqlite3")).unwrap();
    let mut group = c.benchmark_group("sqlite");
    // One execution = 3 transitions (running, cancel_requested, canceled).
    group.throughput(Throughput::Elements(3));
    let mut n = 0u64;
    group.bench_function("execution_lifecycle_3_transitions", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("bench-{n}");
            let attempt = journal
                .start_attempt(&AttemptStart {
                    execution_id: &id,
                    backend: "command",
                    request_json: None,
                })
                .unwrap();
            journal
                .transition(&id, attempt, State::CancelRequested, None)
                .unwrap();
            journal
                .finish_attempt(
                    &id,
                    attempt,
                    &AttemptEnd {
                        outcome: State::Canceled,
                        error_json: Some(r#"{"code":"agent.canceled","side_effects":"none"}"#),
                        error_code: Some("agent.canceled"),
                        usage: Usage::default(),
                        cancel_requested: false,
                    },
                )
                .unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, transitions);
criterion_main!(benches);
