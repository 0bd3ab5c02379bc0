#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! The registry's verification cache: a hit skips the probe, a changed key misses, a
//! capability that failed is probed again while the ones that passed are kept, a
//! probe that verified nothing drops the entry, `Refresh` always probes, and a
//! lookup asks the backend to prove only what it requires.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_exec_contract::*;
use async_trait::async_trait;

/// A backend that counts its probes and records what each was asked for; its key and
/// its probe's problems are set by the test (a problem fails `files`; the problem
/// `down` fails everything). It never executes anything.
struct Counting {
    key: Arc<Mutex<Option<String>>>,
    problems: Arc<Mutex<Vec<String>>>,
    probes: Arc<AtomicUsize>,
    asked: Arc<Mutex<Vec<ProbeRequest>>>,
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
        let problems = self.problems.lock().unwrap().clone();
        let verified = if problems.iter().any(|p| p == "down") {
            vec![]
        } else if problems.is_empty() {
            vec![Capability::Text, Capability::Files]
        } else {
            vec![Capability::Text]
        };
        Verification {
            verified,
            adapter_version: "counting 1.0".into(),
            problems,
        }
    }
    async fn probe(&self, request: &ProbeRequest) -> Probe {
        self.asked.lock().unwrap().push(request.clone());
        Probe {
            verification: self.verify().await,
            usage: Usage {
                prompt_tokens: 3,
                completion_tokens: 1,
            },
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
    fn remove(&self, backend: &str) {
        self.entries
            .lock()
            .unwrap()
            .retain(|(b, _), _| b != backend);
    }
}

struct Setup {
    cache: Arc<Memory>,
    key: Arc<Mutex<Option<String>>>,
    probes: Arc<AtomicUsize>,
    problems: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<ProbeRequest>>>,
}

impl Setup {
    fn new(key: Option<&str>, problems: &[&str]) -> Setup {
        Setup {
            cache: Arc::default(),
            key: Arc::new(Mutex::new(key.map(str::to_owned))),
            probes: Arc::default(),
            problems: Arc::new(Mutex::new(problems.iter().map(|p| p.to_string()).collect())),
            asked: Arc::default(),
        }
    }

    /// A fresh registry, as a new process would build it.
    fn registry(&self, mode: CacheMode) -> Registry {
        let mut registry = Registry::new();
        registry
            .register(Arc::new(Counting {
                key: Arc::clone(&self.key),
                problems: Arc::clone(&self.problems),
                probes: Arc::clone(&self.probes),
                asked: Arc::clone(&self.asked),
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

/// Before: a verification with any problem was never stored, so a backend with one
/// failing capability was probed before every run, even runs that did not need it.
#[tokio::test]
async fn what_passed_is_kept_and_what_failed_is_probed_again() {
    let setup = Setup::new(Some("k1"), &["files: the probe found no file"]);
    for _ in 0..3 {
        let resolved = setup
            .registry(CacheMode::Use)
            .resolve("counting", &[Capability::Text])
            .await
            .unwrap();
        assert_eq!(resolved.verification.verified, vec![Capability::Text]);
    }
    assert_eq!(setup.probes(), 1, "a run needing only `text` probed again");
    // A run that needs the failed capability probes (a fix shows at once) ...
    let err = setup
        .registry(CacheMode::Use)
        .resolve("counting", &[Capability::Files])
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, ResolveError::MissingCapability { problems, .. } if problems.len() == 1),
        "{err}"
    );
    assert_eq!(setup.probes(), 2);
    // ... and once fixed, passes and is kept.
    setup.problems.lock().unwrap().clear();
    for _ in 0..2 {
        setup
            .registry(CacheMode::Use)
            .resolve("counting", &[Capability::Files])
            .await
            .unwrap();
    }
    assert_eq!(setup.probes(), 3);
}

#[tokio::test]
async fn a_probe_that_verifies_nothing_drops_the_entry_and_forget_does_too() {
    let setup = Setup::new(Some("k1"), &[]);
    setup
        .registry(CacheMode::Use)
        .verification("counting")
        .await
        .unwrap();
    assert_eq!(setup.cache.entries.lock().unwrap().len(), 1);
    // `backends --verify` while the program is gone: the entry goes with it.
    *setup.problems.lock().unwrap() = vec!["down".into()];
    let v = setup
        .registry(CacheMode::Refresh)
        .verification("counting")
        .await
        .unwrap();
    assert!(v.verified.is_empty());
    assert!(setup.cache.entries.lock().unwrap().is_empty());
    // A run's failure that says the backend changed: `forget`, and the next run probes.
    setup.problems.lock().unwrap().clear();
    let registry = setup.registry(CacheMode::Use);
    registry.resolve("counting", &[]).await.unwrap();
    assert_eq!(setup.probes(), 3);
    registry.forget("counting").await;
    assert!(setup.cache.entries.lock().unwrap().is_empty());
    registry.resolve("counting", &[]).await.unwrap();
    assert_eq!(setup.probes(), 4, "forget left the in-process answer");
}

/// A lookup asks the backend to prove what the run requires, under a probe id of its
/// own; a wider need later asks again for that *and* what was proven before.
#[tokio::test]
async fn a_probe_is_asked_only_for_what_is_required_under_its_own_id() {
    let setup = Setup::new(Some("k1"), &[]);
    let registry = setup.registry(CacheMode::Use);
    assert_eq!(registry.probe_run("counting").await, None);
    registry.resolve("counting", &[]).await.unwrap();
    let run = registry.probe_run("counting").await.unwrap();
    assert!(run.execution_id.starts_with("verify-"), "{run:?}");
    assert_eq!(run.usage.prompt_tokens, 3);
    // In the same process, within what was asked: no second probe.
    registry.resolve("counting", &[]).await.unwrap();
    assert_eq!(setup.probes(), 1);
    // Not asked about yet in this process, but the cache has it verified.
    registry
        .resolve("counting", &[Capability::Files])
        .await
        .unwrap();
    assert_eq!(setup.probes(), 1);
    // Everything declared (the `backends --verify` view) is asked for as a whole.
    setup
        .registry(CacheMode::Refresh)
        .verification("counting")
        .await
        .unwrap();
    let asked = setup.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].required, Some(vec![]));
    assert_eq!(asked[1].required, None);
    assert_ne!(asked[0].execution_id, asked[1].execution_id);
    assert!(asked.iter().all(|a| a.execution_id.starts_with("verify-")));
    // A cache hit ran no probe: nothing to report.
    let hit = setup.registry(CacheMode::Use);
    hit.resolve("counting", &[Capability::Files]).await.unwrap();
    assert_eq!(hit.probe_run("counting").await, None);
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
