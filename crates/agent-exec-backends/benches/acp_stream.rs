//! Events per second of the ACP `session/update` → contract-event mapping, on the
//! agent→client streams recorded from the real codex-acp (tests/data/acp-codex-*.jsonl),
//! repeated to a realistic length. Baseline in the same run: decoding each line to a
//! `serde_json::Value` only.
//! Run: `cargo bench -p agent-exec-backends --bench acp_stream`.
#![allow(clippy::unwrap_used)]
use agent_exec_backends::acp::updates::UpdateMapper;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut one = include_bytes!("../tests/data/acp-codex-exec.jsonl").to_vec();
    one.extend_from_slice(include_bytes!("../tests/data/acp-codex-patch.jsonl"));
    let stream: Vec<u8> = one.repeat(200);
    let lines: Vec<&[u8]> = stream
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut group = c.benchmark_group("acp_stream");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("map_recorded_lines", |b| {
        b.iter(|| {
            let mut mapper = UpdateMapper::new();
            let mut events = Vec::new();
            for line in &lines {
                mapper.notification_line(line, &mut events);
            }
            events.len()
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
