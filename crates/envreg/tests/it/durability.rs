//! Crash safety and concurrent saves, with real `envreg save` processes (issue 2 §5):
//!
//! - SIGKILL a saving process at random moments, at least 200 times; after every kill
//!   the record is exactly the old or the new version (never torn), the registry
//!   validates, and no temp file is ever loaded as a record.
//! - Two processes save the same record 500 times each, concurrently; every save
//!   succeeds, the registry stays valid, and the final record is one of those written.
//!
//! The random delays come from a seed printed on failure, so a failing run can be
//! replayed with `ENVREG_CRASH_SEED=<seed>`.

// Helpers outside #[test] functions unwrap too: a panic there is a failed test.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::Value;

const KILLS: usize = 200;
const CONCURRENT_SAVES: usize = 500;
/// Labels padding each crash-test version (about 10 KB).
const LABELS: usize = 150;

fn envreg_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("envreg")
}

/// A service record whose `description` marks its version. Padded with labels so the
/// write takes long enough for kills to land mid-write, not only before or after.
fn service_version(marker: &str) -> String {
    let mut text = format!(
        "id: durable\nschemaVersion: 1\nname: Durable\ndescription: {marker}\ncategory: backend\nlabels:\n"
    );
    for i in 0..LABELS {
        text.push_str(&format!(
            "  label{i:04}: \"{marker}-{i:04}-padding-padding-padding\"\n"
        ));
    }
    text
}

fn save_command(sandbox: &Sandbox, file: &Path) -> Command {
    let mut cmd = Command::new(envreg_bin());
    cmd.arg("--registry")
        .arg(sandbox.registry())
        .args(["--json", "save", "service"])
        .arg(file)
        .env("HOME", sandbox.home())
        .env_remove("ENVREG_REGISTRY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn get_json(sandbox: &Sandbox, args: &[&str]) -> (bool, Value) {
    let output = sandbox.envreg().arg("--json").args(args).output().unwrap();
    (
        output.status.success(),
        serde_json::from_slice(&output.stdout).unwrap_or(Value::Null),
    )
}

/// The record file as JSON; panics (fails the test) when it does not parse.
fn read_record(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} unreadable: {e}", path.display()));
    envreg_core::load::parse_document(&text)
        .unwrap_or_else(|e| panic!("{} is torn or invalid: {e:?}\n{text}", path.display()))
}

/// xorshift64*: enough randomness for kill timing without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A registry holding only its config: every `envreg` process loads it, so keeping it
/// small keeps 1,400 process runs affordable; what is tested is the one record.
fn small_registry() -> Sandbox {
    let sandbox = Sandbox::empty();
    sandbox.write("envreg.yaml", "limits: { maxRecords: 100 }\n");
    sandbox.write(
        "environments/dev.yaml",
        "id: dev\nschemaVersion: 1\nname: Dev\ntier: dev\nplatform: docker\n",
    );
    sandbox
}

#[test]
fn sigkill_during_save_never_tears_a_record() {
    let sandbox = small_registry();
    let old_file = sandbox.tmp.path().join("old.yaml");
    let new_file = sandbox.tmp.path().join("new.yaml");
    std::fs::write(&old_file, service_version("version-old")).unwrap();
    std::fs::write(&new_file, service_version("version-new")).unwrap();
    let seed = std::env::var("ENVREG_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let mut rng = Rng(seed);

    // The first version is saved completely; measure how long an uninterrupted save
    // takes so the kills spread over the whole run of the process.
    let started = Instant::now();
    assert!(
        save_command(&sandbox, &old_file)
            .status()
            .unwrap()
            .success()
    );
    let full = started.elapsed();
    let window_us = (full.as_micros() as u64).max(1_000) * 3 / 2;

    let mut killed_mid_run = 0usize;
    let mut current = "version-old";
    for round in 0..KILLS {
        let (file, marker) = if round.is_multiple_of(2) {
            (&new_file, "version-new")
        } else {
            (&old_file, "version-old")
        };
        let mut child = save_command(&sandbox, file).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(window_us)));
        // SIGKILL (std's kill on Unix); an error only means it already exited.
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.code().is_none() {
            killed_mid_run += 1;
        }

        // Never torn: the file on disk parses and is one of the two versions. (Read
        // here rather than with `envreg get` to keep 200 rounds fast; the loader's view
        // is checked every 20 rounds below.)
        let got = read_record(&sandbox.registry().join("services/durable.yaml"));
        let description = got["description"].as_str().unwrap_or("");
        assert!(
            description == "version-old" || description == "version-new",
            "seed {seed}, round {round}: torn record, description {description:?}"
        );
        // A completed save is the new version; a killed one left the old or the new.
        if status.success() {
            assert_eq!(description, marker, "seed {seed}, round {round}");
        } else {
            assert!(
                description == marker || description == current,
                "seed {seed}, round {round}"
            );
        }
        let labels = got["labels"].as_object().map_or(0, |m| m.len());
        assert_eq!(labels, LABELS, "seed {seed}, round {round}: partial record");
        current = if description == "version-new" {
            "version-new"
        } else {
            "version-old"
        };

        // No temp file is loaded as a record: one `durable`, nothing new in the counts.
        if round % 20 == 19 || round == KILLS - 1 {
            let (ok, got) = get_json(&sandbox, &["get", "service", "durable"]);
            assert!(ok, "seed {seed}, round {round}: {got:#}");
            assert_eq!(
                got["record"]["description"], current,
                "seed {seed}, round {round}"
            );
            let (_, value) = get_json(&sandbox, &["validate"]);
            assert_eq!(value["ok"], true, "seed {seed}, round {round}: {value:#}");
            assert_eq!(
                value["counts"]["service"], 1,
                "seed {seed}, round {round}: {value:#}"
            );
            let (_, listed) = get_json(&sandbox, &["list", "--kind", "service"]);
            let ids: Vec<&str> = listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].as_str().unwrap())
                .collect();
            assert_eq!(ids, ["durable"], "seed {seed}, round {round}");
        }
    }
    // Every leftover in the services folder is a record or a hidden temp file the
    // loader ignores; no visible stray file appeared.
    for entry in std::fs::read_dir(sandbox.registry().join("services")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            name.starts_with('.') || name.ends_with(".yaml"),
            "seed {seed}: unexpected file {name}"
        );
    }
    eprintln!(
        "crash safety: {KILLS} kills (seed {seed}), {killed_mid_run} landed while the process ran, window {window_us} µs"
    );
    assert!(
        killed_mid_run > 0,
        "seed {seed}: no kill landed during a save; the test proved nothing"
    );
}

#[test]
fn two_processes_saving_the_same_record_concurrently() {
    let sandbox = small_registry();
    let mut files = Vec::new();
    for writer in ["a", "b"] {
        let mut versions = Vec::new();
        for i in 0..CONCURRENT_SAVES {
            let marker = format!("writer-{writer}-{i:03}");
            let path = sandbox.tmp.path().join(format!("{marker}.yaml"));
            std::fs::write(
                &path,
                format!(
                    "id: contended\nschemaVersion: 1\nname: Contended\ndescription: {marker}\n"
                ),
            )
            .unwrap();
            versions.push(path);
        }
        files.push(versions);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .map(|versions| {
                let sandbox = &sandbox;
                scope.spawn(move || {
                    for path in versions {
                        let status = save_command(sandbox, path).status().unwrap();
                        assert!(status.success(), "save of {} failed", path.display());
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
    let (_, value) = get_json(&sandbox, &["validate"]);
    assert_eq!(value["ok"], true, "{value:#}");
    assert_eq!(value["counts"]["service"], 1, "{value:#}");
    let (ok, got) = get_json(&sandbox, &["get", "service", "contended"]);
    assert!(ok, "{got:#}");
    let description = got["record"]["description"].as_str().unwrap();
    let written =
        |w: &str| (0..CONCURRENT_SAVES).any(|i| description == format!("writer-{w}-{i:03}"));
    assert!(
        written("a") || written("b"),
        "final record {description:?} was never written"
    );
    // Each writer's last save is the only one that can be last overall.
    assert!(
        description == format!("writer-a-{:03}", CONCURRENT_SAVES - 1)
            || description == format!("writer-b-{:03}", CONCURRENT_SAVES - 1),
        "final record {description:?} is not a last write"
    );
}
