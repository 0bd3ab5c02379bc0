//! `resolve` against the kernel's own `realpath` (`std::fs::canonicalize`) on the same
//! existing path, measured in the same run: the walk does one `lstat` per component
//! (and a `readlink` per link) in user space, so its cost is quoted as a ratio to the
//! baseline. Also: a path with a missing tail, which `canonicalize` cannot do at all.
//!
//! Run: `cargo bench -p containment --bench resolve`

#![allow(clippy::unwrap_used)]

use std::fs;
use std::hint::black_box;
use std::os::unix::fs::symlink;

use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(top.join("w/proj/src/controllers/room/occupancy")).unwrap();
    fs::write(top.join("w/proj/src/controllers/room/occupancy/mod.rs"), "").unwrap();
    symlink("src/controllers", top.join("w/proj/ctl")).unwrap();
    let existing = top.join("w/proj/ctl/room/../room/occupancy/mod.rs");
    let missing = top.join("w/proj/ctl/room/occupancy/new/deeper/file.rs");

    let mut group = c.benchmark_group("resolve_existing");
    group.bench_function("std_fs_canonicalize_baseline", |b| {
        b.iter(|| fs::canonicalize(black_box(&existing)).unwrap())
    });
    group.bench_function("containment_resolve", |b| {
        b.iter(|| containment::resolve(black_box(&existing), "/").unwrap())
    });
    group.finish();

    c.bench_function("resolve_missing_tail", |b| {
        b.iter(|| containment::resolve(black_box(&missing), "/").unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
