//! Events per second of the codex `exec --json` parser on a stream recorded from the
//! real program (tests/data/codex-exec.jsonl), repeated to a realistic length: the pure
//! line parser, the fold the driver runs per line (`CodexStream`), and a baseline that
//! only decodes each line to a `serde_json::Value`, in the same run.
//! Run: `cargo bench -p agent-exec-backends --bench codex_stream`.
#![allow(clippy::unwrap_used)]
use agent_exec_backends::agent_program::StreamParser as _;
use agent_exec_backends::codex::{CodexStream, parse_line};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let one = include_bytes!("../tests/data/codex-exec.jsonl");
    let stream: Vec<u8> = one.repeat(200);
    let lines = stream
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    let mut group = c.benchmark_group("codex_stream");
    group.throughput(Throughput::Elements(lines as u64));
    group.bench_function("parse_recorded_lines", |b| {
        b.iter(|| {
            stream
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(parse_line)
                .count()
        })
    });
    // What the driver does per line: the parser folded into a verdict, events kept.
    group.bench_function("codex_stream_fold", |b| {
        b.iter(|| {
            let mut parser = CodexStream::new();
            let mut events = Vec::new();
            for line in stream.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                parser.line(line, &mut events);
            }
            (parser.verdict(), events.len())
        })
    });
    // Baseline in the same run: only decoding each line to a serde_json::Value.
    group.bench_function("baseline_json_value_only", |b| {
        b.iter(|| {
            stream
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
