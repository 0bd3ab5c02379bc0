//! Events per second of the pi `--mode json` parser on a stream recorded from the
//! real program (tests/data/pi-write.jsonl), repeated to a realistic length, against
//! a baseline measured in the same run: decoding each line to a `serde_json::Value`
//! and nothing else (what a naive parser pays before it even looks at a field).
//! Run: `cargo bench -p agent-exec-backends --bench pi_stream`.
#![allow(clippy::unwrap_used)]
use agent_exec_backends::agent_program::StreamParser;
use agent_exec_backends::pi::PiStream;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let one = include_bytes!("../tests/data/pi-write.jsonl");
    let stream: Vec<u8> = one.repeat(200);
    let lines: Vec<&[u8]> = stream
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut group = c.benchmark_group("pi_stream");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("parse_recorded_lines", |b| {
        let mut events = Vec::with_capacity(64);
        b.iter(|| {
            let mut parser = PiStream::new();
            let mut emitted = 0usize;
            for line in &lines {
                parser.line(line, &mut events);
                emitted += events.len();
                events.clear();
            }
            (emitted, parser.usage())
        })
    });
    group.bench_function("baseline_json_value_only", |b| {
        b.iter(|| {
            lines
                .iter()
                .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
