#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! The registry's verification cache: a hit skips the probe, a changed key misses, a
//! verification with problems is never stored, `Refresh` always probes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_exec_contract::*;
use async_trait::async_trait;

/// A backend that counts its probes; its key and its probe's problems are set by the
/// test. It never executes anything.
struct Counting {
    key: Arc<Mutex<Option<String>>>,
    problems: Vec<String>,
    probes: Arc<AtomicUsize>,
}

#[async_trait]
impl Backend for Counting {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: "counting".into(),
            capabilities: vec![Capability::Text, Capability::Files],
            adapter_version: String::new(),
        }
    }
    async fn verify(&self) -> Verification {
        self.probes.fetch_add(1, Ordering::SeqCst);
        Verification {
            verified: vec![Capability::Text, Capability::Files],
            adapter_version: "counting 1.0".into(),
            problems: self.problems.clone(),
        }
    }
    fn verification_key(&self) -> Option<String> {
        self.key.lock().unwrap().clone()
    }
    async fn execute(&self, _: &ContractRequest, _: ExecutionContext) -> ContractResult {
        ContractResult::failed(Error::new(
            ErrorCode::Internal,
            "not executable in this test",
            SideEffects::None,
        ))
    }
}

/// An in-memory cache, shared across registries the way the file cache is shared
/// across processes.
#[derive(Default)]
struct Memory {
    entries: Mutex<BTreeMap<(String, String), Verification>>,
    puts: AtomicUsize,
}

impl VerificationCache for Memory {
    fn get(&self, backend: &str, key: &str) -> Option<Verification> {
        let entries = self.entries.lock().unwrap();
        entries.get(&(backend.into(), key.into())).cloned()
    }
    fn put(&self, backend: &str, key: &str, verification: &Verification) {
        self.puts.fetch_add(1, Ordering::SeqCst);
        let mut entries = self.entries.lock().unwrap();
        entries.insert((backend.into(), key.into()), verification.clone());
    }
}

struct Setup {
    cache: Arc<Memory>,
    key: Arc<Mutex<Option<String>>>,
    probes: Arc<AtomicUsize>,
    problems: Vec<String>,
}

impl Setup {
    fn new(key: Option<&str>, problems: &[&str]) -> Setup {
        Setup {
            cache: Arc::default(),
            key: Arc::new(Mutex::new(key.map(str::to_owned))),
            probes: Arc::default(),
            problems: problems.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// A fresh registry, as a new process would build it.
    fn registry(&self, mode: CacheMode) -> Registry {
        let mut registry = Registry::new();
        registry
            .register(Arc::new(Counting {
                key: Arc::clone(&self.key),
                problems: self.problems.clone(),
                probes: Arc::clone(&self.probes),
            }))
            .unwrap();
        registry.set_verification_cache(self.cache.clone(), mode);
        registry
    }

    fn probes(&self) -> usize {
        self.probes.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_hit_skips_the_probe_and_gives_the_same_verification() {
    let setup = Setup::new(Some("k1"), &[]);
    let first = setup
        .registry(CacheMode::Use)
        .resolve("counting", &[Capability::Files])
        .await
        .unwrap();
    assert_eq!(setup.probes(), 1);
    let second = setup
        .registry(CacheMode::Use)
        .resolve("counting", &[Capability::Files])
        .await
        .unwrap();
    assert_eq!(setup.probes(), 1, "the second registry probed again");
    assert_eq!(first.verification, second.verification);
    assert_eq!(second.verification.adapter_version, "counting 1.0");
}

#[tokio::test]
async fn a_changed_key_misses() {
    let setup = Setup::new(Some("k1"), &[]);
    setup
        .registry(CacheMode::Use)
        .verification("counting")
        .await
        .unwrap();
    *setup.key.lock().unwrap() = Some("k2".into());
    setup
        .registry(CacheMode::Use)
        .verification("counting")
        .await
        .unwrap();
    assert_eq!(setup.probes(), 2);
    // And the new key is now the one that hits.
    setup
        .registry(CacheMode::Use)
        .verification("counting")
        .await
        .unwrap();
    assert_eq!(setup.probes(), 2);
}

#[tokio::test]
async fn a_verification_with_problems_is_never_stored() {
    let setup = Setup::new(Some("k1"), &["`counting` is too old; upgrade it"]);
    for _ in 0..2 {
        let v = setup
            .registry(CacheMode::Use)
            .verification("counting")
            .await
            .unwrap();
        assert_eq!(v.problems.len(), 1);
    }
    assert_eq!(setup.probes(), 2);
    assert_eq!(setup.cache.puts.load(Ordering::SeqCst), 0);
    assert!(setup.cache.entries.lock().unwrap().is_empty());
}

#[tokio::test]
async fn no_key_means_never_cached() {
    let setup = Setup::new(None, &[]);
    for _ in 0..2 {
        setup
            .registry(CacheMode::Use)
            .verification("counting")
            .await
            .unwrap();
    }
    assert_eq!(setup.probes(), 2);
    assert_eq!(setup.cache.puts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn refresh_always_probes_and_stores() {
    let setup = Setup::new(Some("k1"), &[]);
    setup
        .registry(CacheMode::Use)
        .verification("counting")
        .await
        .unwrap();
    setup
        .registry(CacheMode::Refresh)
        .verification("counting")
        .await
        .unwrap();
    assert_eq!(setup.probes(), 2, "refresh took the cached entry");
    assert_eq!(setup.cache.puts.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_cached_entry_cannot_grant_an_undeclared_capability() {
    let setup = Setup::new(Some("k1"), &[]);
    // A cache written by some other version that verified more than is declared now.
    setup.cache.put(
        "counting",
        "k1",
        &Verification {
            verified: vec![Capability::Text, Capability::Tools],
            adapter_version: "counting 1.0".into(),
            problems: Vec::new(),
        },
    );
    let err = setup
        .registry(CacheMode::Use)
        .resolve("counting", &[Capability::Tools])
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ResolveError::MissingCapability { .. }),
        "{err}"
    );
    assert_eq!(setup.probes(), 0);
}
