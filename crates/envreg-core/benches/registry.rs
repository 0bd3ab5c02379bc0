//! The registry core on the 10,000-record synthetic registry (`synth`).
//!
//! - `cold/load_validate`: `Registry::open` + the snapshot's diagnostics — list
//!   folders, read, parse into the typed model, per-record and cross-record validation.
//! - in the summary line, `validate_first` / `validate_again`: `env_validate` on a
//!   freshly opened registry (the proof that every deployment's Service Context and
//!   picked bindings resolve, computed once per snapshot) and the same call again.
//! - `cold/floor_untyped_yaml`: the floor it is compared against, measured in the same
//!   run: list the same folders, read every file and parse it into an untyped value
//!   (`serde_json::Value` through the same YAML parser), nothing else.
//! - `warm/*`: `find`, `resolve`, `resolve_operation` on an open registry (each call
//!   includes the freshness check).
//!
//! After criterion's own report, a summary line prints the cold/floor ratio and the
//! warm resolve median from interleaved runs, so the figures come from one process.
//!
//! Run: `CARGO_TARGET_DIR=/work/main/target cargo bench -p envreg-core --bench registry`
#![allow(clippy::unwrap_used)] // benchmark setup: a failure should abort loudly

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use envreg_core::synth::{self, SynthSpec};
use envreg_core::{RecordKind, Registry};

fn floor(root: &Path) -> usize {
    let mut values = 0;
    for kind in RecordKind::ALL {
        for entry in std::fs::read_dir(root.join(kind.dir_name())).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            values += usize::from(value.is_object());
        }
    }
    values
}

fn cold(root: &Path) -> usize {
    let registry = Registry::open(root).unwrap();
    let report = envreg_core::ValidateOutput::of(&registry.snapshot());
    report.diagnostics.len() + report.counts.deployment
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    sample: synth::SynthSample,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let spec = SynthSpec::default();
    synth::generate(dir.path(), &spec).unwrap();
    let root = dir.path().to_path_buf();
    let registry = Registry::open(&root).unwrap();
    let report = registry.validate();
    assert!(
        report.ok,
        "synthetic registry must validate: {:?}",
        report.diagnostics.first()
    );
    assert_eq!(registry.snapshot().total(), spec.total());
    Fixture {
        _dir: dir,
        root,
        sample: synth::sample(&spec),
    }
}

fn benches(c: &mut Criterion) {
    let fx = fixture();
    let mut group = c.benchmark_group("cold");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));
    group.bench_function("floor_untyped_yaml", |b| {
        b.iter(|| black_box(floor(&fx.root)))
    });
    group.bench_function("load_validate", |b| b.iter(|| black_box(cold(&fx.root))));
    group.finish();

    let registry = Registry::open(&fx.root).unwrap();
    let s = &fx.sample;
    let mut group = c.benchmark_group("warm");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    group.bench_function("find", |b| {
        b.iter(|| black_box(registry.find(&s.find_query).unwrap()))
    });
    group.bench_function("resolve", |b| {
        b.iter(|| {
            black_box(
                registry
                    .resolve(None, Some(&s.environment), &s.service, None)
                    .unwrap(),
            )
        })
    });
    group.bench_function("resolve_operation", |b| {
        b.iter(|| {
            black_box(
                registry
                    .resolve_operation(
                        None,
                        &s.operation,
                        Some(&s.environment),
                        Some(&s.service),
                        None,
                    )
                    .unwrap(),
            )
        })
    });
    group.bench_function("snapshot_only", |b| {
        b.iter(|| black_box(registry.snapshot()))
    });
    group.finish();
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Interleaved cold/floor runs and a warm resolve median, printed as one line.
fn summary() {
    let fx = fixture();
    let (mut floors, mut colds) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let t = Instant::now();
        black_box(floor(&fx.root));
        floors.push(t.elapsed());
        let t = Instant::now();
        black_box(cold(&fx.root));
        colds.push(t.elapsed());
    }
    let registry = Registry::open(&fx.root).unwrap();
    let s = &fx.sample;
    let mut warm = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        black_box(
            registry
                .resolve(None, Some(&s.environment), &s.service, None)
                .unwrap(),
        );
        warm.push(t.elapsed());
    }
    let (mut firsts, mut agains) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let registry = Registry::open(&fx.root).unwrap();
        let t = Instant::now();
        assert!(black_box(registry.validate()).ok);
        firsts.push(t.elapsed());
        let t = Instant::now();
        black_box(registry.validate());
        agains.push(t.elapsed());
    }
    let (f, c) = (median(floors), median(colds));
    println!(
        "SUMMARY records=10000 floor_median={f:?} cold_load_validate_median={c:?} ratio_cold_over_floor={:.2} warm_resolve_median={:?} validate_first_median={:?} validate_again_median={:?}",
        c.as_secs_f64() / f.as_secs_f64(),
        median(warm),
        median(firsts),
        median(agains)
    );
}

criterion_group!(registry, benches);

fn main() {
    registry();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
