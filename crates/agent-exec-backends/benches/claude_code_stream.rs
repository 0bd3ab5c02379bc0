//! Events per second of the claude-code stream-json parser on streams recorded from
//! the real Claude Code (tests/data/claude-code-write.jsonl and
//! claude-code-bash-partial.jsonl, the latter with token-level partial messages),
//! repeated to a realistic length, against a baseline in the same run that only
//! decodes each line to a `serde_json::Value`.
//! Run: `cargo bench -p agent-exec-backends --bench claude_code_stream`.
#![allow(clippy::unwrap_used)]
use agent_exec_backends::agent_program::StreamParser as _;
use agent_exec_backends::claude_code::ClaudeCodeStream;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn parse_all(stream: &[u8]) -> usize {
    let mut parser = ClaudeCodeStream::new();
    let mut events = Vec::new();
    for line in stream.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        parser.line(line, &mut events);
    }
    events.len()
}

fn bench(c: &mut Criterion) {
    let mut one = include_bytes!("../tests/data/claude-code-write.jsonl").to_vec();
    one.extend_from_slice(include_bytes!(
        "../tests/data/claude-code-bash-partial.jsonl"
    ));
    let stream: Vec<u8> = one.repeat(100);
    let events = parse_all(&stream);
    let lines = stream
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    eprintln!("claude_code_stream: {lines} lines, {events} events per pass");
    let mut group = c.benchmark_group("claude_code_stream");
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function("parse_recorded_stream", |b| b.iter(|| parse_all(&stream)));
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
