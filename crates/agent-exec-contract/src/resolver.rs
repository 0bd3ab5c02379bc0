//! The resolver: backend names (canonical and aliases) to backends whose *verified*
//! capabilities cover what the request requires.
//!
//! Invariants: an unknown name is an error, never a fallback to a stub; a required
//! capability counts only if the backend's probe verified it; a deprecated alias
//! resolves but comes back with a warning for the caller to show.
//!
//! What a lookup probes: [`Registry::resolve`] asks the backend to prove only what the
//! run requires ([`Backend::probe`] with `required`), since a probe may cost (an
//! `openai` backend pays a model request per capability it proves);
//! [`Registry::verification`] asks for every declared capability. Each probe has its
//! own execution id (`verify-…`); [`Registry::probe_run`] says which, and what it cost.
//!
//! Verification cache: probing costs a process start (hundreds of milliseconds for a
//! Node launcher or an ACP handshake) or a paid request, paid by every short-lived
//! process before its first run. A [`VerificationCache`] port lets a past probe stand
//! in while the backend's [`Backend::verification_key`] is unchanged. Invariants:
//! * a stored entry answers a lookup only if it verified every declared capability
//!   the lookup needs — a capability that failed (or was never asked about) is always
//!   probed again, so a fix shows at once and a wider need widens the entry (the new
//!   probe is asked for what the entry had too);
//! * a probe that verified something is stored (its verified set; problems are not
//!   kept), one that verified nothing removes the entry, and so does
//!   [`Registry::forget`] — what a caller does when a run fails in a way that says the
//!   program or endpoint changed;
//! * the key is taken *before* the probe, so a program replaced mid-probe leaves its
//!   result under the old key, which the next lookup misses;
//! * a cached answer is still cut down to the declared capabilities.
//!
//! Expiry and storage are the port's business (the CLI keeps one JSON file per
//! backend for 24 h).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::backend::{Backend, ProbeRequest, Verification, probe_execution_id};
use crate::error::{Error, ErrorCode, SideEffects};
use crate::types::{BackendDescriptor, Capability, Usage};

/// The canonical name of the pi coding agent backend.
pub const AGENT_NATIVE: &str = "agent-native";
/// Its deprecated alias, kept for a deprecation period.
pub const PI_NATIVE_ALIAS: &str = "pi-native";

/// An alias of a canonical backend name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    pub canonical: String,
    pub deprecated: bool,
}

/// Where past verifications are kept across processes. Implementations never
/// fail: an unreadable or corrupt entry is a miss, a failed write is dropped.
pub trait VerificationCache: Send + Sync {
    /// The verification stored for `backend` under exactly `key`, if still fresh.
    fn get(&self, backend: &str, key: &str) -> Option<Verification>;
    /// Stores `verification` for `backend` under `key`, replacing any older entry.
    fn put(&self, backend: &str, key: &str, verification: &Verification);
    /// Drops whatever is stored for `backend`.
    fn remove(&self, backend: &str);
}

/// How a [`Registry`] uses its [`VerificationCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Take a cached verification when the key matches; probe and store otherwise.
    Use,
    /// Always probe, and store the result (`agent-exec backends --verify`).
    Refresh,
}

struct Entry {
    backend: Arc<dyn Backend>,
    /// What this registry has learnt of the backend. The lock also keeps two lookups
    /// of one backend from probing it at once.
    known: tokio::sync::Mutex<Option<Known>>,
}

struct Known {
    verification: Verification,
    /// Declared capabilities the answer speaks for, verified or not: a later lookup
    /// within them is answered without another probe in this process.
    asked: Vec<Capability>,
    /// The probe this registry ran for it; `None` when the cache answered.
    probe: Option<ProbeRun>,
}

/// A probe a [`Registry`] ran: its own execution id and what it spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRun {
    pub execution_id: String,
    pub usage: Usage,
}

/// The set of backends a program can dispatch to.
pub struct Registry {
    entries: BTreeMap<String, Entry>,
    aliases: BTreeMap<String, Alias>,
    cache: Option<(Arc<dyn VerificationCache>, CacheMode)>,
}

/// A backend picked by [`Registry::resolve`].
#[derive(Clone)]
pub struct Resolved {
    pub backend: Arc<dyn Backend>,
    /// The canonical name (an alias has been replaced).
    pub name: String,
    /// Set when the name asked for was a deprecated alias; show it to the user.
    pub deprecation_warning: Option<String>,
    /// The probe's result the decision was taken on.
    pub verification: Verification,
}

/// Why a name did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown backend `{name}`; known backends: {}", known.join(", "))]
    UnknownBackend { name: String, known: Vec<String> },
    #[error(
        "backend `{backend}` lacks verified capabilities: {}{}",
        missing.iter().map(Capability::as_str).collect::<Vec<_>>().join(", "),
        if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) }
    )]
    MissingCapability {
        backend: String,
        missing: Vec<Capability>,
        problems: Vec<String>,
    },
    #[error("backend name `{0}` is registered twice")]
    Duplicate(String),
}

impl ResolveError {
    /// The contract error for this refusal. Nothing has run, so no side effects.
    pub fn to_contract_error(&self) -> Error {
        let code = match self {
            ResolveError::MissingCapability { .. } => ErrorCode::MissingCapability,
            ResolveError::UnknownBackend { .. } | ResolveError::Duplicate(_) => {
                ErrorCode::ProviderUnavailable
            }
        };
        Error::new(code, self.to_string(), SideEffects::None)
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry that already knows the standard aliases
    /// (`pi-native` → `agent-native`, deprecated).
    pub fn new() -> Self {
        let mut aliases = BTreeMap::new();
        aliases.insert(
            PI_NATIVE_ALIAS.to_owned(),
            Alias {
                canonical: AGENT_NATIVE.to_owned(),
                deprecated: true,
            },
        );
        Registry {
            entries: BTreeMap::new(),
            aliases,
            cache: None,
        }
    }

    /// Registers `backend` under its descriptor's name.
    pub fn register(&mut self, backend: Arc<dyn Backend>) -> Result<(), ResolveError> {
        let name = backend.descriptor().name;
        if self.entries.contains_key(&name) || self.aliases.contains_key(&name) {
            return Err(ResolveError::Duplicate(name));
        }
        self.entries.insert(
            name,
            Entry {
                backend,
                known: tokio::sync::Mutex::new(None),
            },
        );
        Ok(())
    }

    /// Consults `cache` before probing a backend that has a
    /// [`Backend::verification_key`], as `mode` says.
    pub fn set_verification_cache(&mut self, cache: Arc<dyn VerificationCache>, mode: CacheMode) {
        self.cache = Some((cache, mode));
    }

    /// Adds an alias. A later registration of a backend with the alias's name is
    /// refused as a duplicate.
    pub fn alias(&mut self, alias: &str, canonical: &str, deprecated: bool) {
        self.aliases.insert(
            alias.to_owned(),
            Alias {
                canonical: canonical.to_owned(),
                deprecated,
            },
        );
    }

    /// Canonical names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// Aliases pointing at `canonical`.
    pub fn aliases_of(&self, canonical: &str) -> Vec<(String, Alias)> {
        self.aliases
            .iter()
            .filter(|(_, a)| a.canonical == canonical)
            .map(|(n, a)| (n.clone(), a.clone()))
            .collect()
    }

    /// The declared descriptor of a canonical name.
    pub fn descriptor(&self, canonical: &str) -> Option<BackendDescriptor> {
        self.entries.get(canonical).map(|e| e.backend.descriptor())
    }

    /// Maps `name` (canonical or alias) to its canonical name and an optional
    /// deprecation warning.
    pub fn canonical(&self, name: &str) -> Result<(String, Option<String>), ResolveError> {
        let (canonical, warning) = match self.aliases.get(name) {
            Some(alias) => {
                let warning = alias.deprecated.then(|| {
                    format!(
                        "backend name `{name}` is deprecated; use `{}` instead",
                        alias.canonical
                    )
                });
                (alias.canonical.clone(), warning)
            }
            None => (name.to_owned(), None),
        };
        if !self.entries.contains_key(&canonical) {
            return Err(ResolveError::UnknownBackend {
                name: name.to_owned(),
                known: self.names(),
            });
        }
        Ok((canonical, warning))
    }

    /// The probe result of `name` for every declared capability, running the probe
    /// (or taking it from the verification cache) at most once per registry.
    pub async fn verification(&self, name: &str) -> Result<Verification, ResolveError> {
        let (canonical, _) = self.canonical(name)?;
        self.verified_for(&canonical, None).await
    }

    /// The probe this registry ran for `name` (canonical or alias), if it ran one —
    /// `None` when nothing was probed yet or the cache answered.
    pub async fn probe_run(&self, name: &str) -> Option<ProbeRun> {
        let (canonical, _) = self.canonical(name).ok()?;
        let entry = self.entries.get(&canonical)?;
        let known = entry.known.lock().await;
        known.as_ref()?.probe.clone()
    }

    /// Drops what is known of `name`'s verification, here and in the cache: the next
    /// lookup probes. For a run whose failure says the program or endpoint changed
    /// since it was verified (it is gone, the model is unknown, the stream is not what
    /// the probe saw).
    pub async fn forget(&self, name: &str) {
        let Ok((canonical, _)) = self.canonical(name) else {
            return;
        };
        if let Some(entry) = self.entries.get(&canonical) {
            *entry.known.lock().await = None;
        }
        if let Some((cache, _)) = &self.cache {
            cache.remove(&canonical);
        }
    }

    /// Resolves `name` to a backend whose verified capabilities include all of
    /// `required` (Go `Resolver.Resolve`), probing only what `required` needs.
    pub async fn resolve(
        &self,
        name: &str,
        required: &[Capability],
    ) -> Result<Resolved, ResolveError> {
        let (canonical, deprecation_warning) = self.canonical(name)?;
        let verification = self.verified_for(&canonical, Some(required)).await?;
        let missing: Vec<Capability> = required
            .iter()
            .filter(|c| !verification.verified.contains(c))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(ResolveError::MissingCapability {
                backend: canonical,
                missing,
                problems: verification.problems.clone(),
            });
        }
        let backend = self
            .entries
            .get(&canonical)
            .map(|e| Arc::clone(&e.backend))
            .ok_or_else(|| ResolveError::UnknownBackend {
                name: name.to_owned(),
                known: self.names(),
            })?;
        Ok(Resolved {
            backend,
            name: canonical,
            deprecation_warning,
            verification,
        })
    }
}

impl Registry {
    /// The verification of `canonical` covering `required` (`None`: every declared
    /// capability): known in this process, else cached, else probed. See the module
    /// doc for when each answers.
    async fn verified_for(
        &self,
        canonical: &str,
        required: Option<&[Capability]>,
    ) -> Result<Verification, ResolveError> {
        let entry = self
            .entries
            .get(canonical)
            .ok_or_else(|| ResolveError::UnknownBackend {
                name: canonical.to_owned(),
                known: self.names(),
            })?;
        let backend = entry.backend.as_ref();
        let declared = backend.descriptor().capabilities;
        // An undeclared capability can never be verified: no probe asks for it.
        let wanted: Vec<Capability> = match required {
            None => declared.clone(),
            Some(required) => required
                .iter()
                .filter(|c| declared.contains(c))
                .cloned()
                .collect(),
        };
        let mut known = entry.known.lock().await;
        if let Some(k) = known.as_ref()
            && wanted.iter().all(|c| k.asked.contains(c))
        {
            return Ok(k.verification.clone());
        }
        // What is already proven stays asked for, so a wider probe never narrows what
        // the cache holds.
        let mut ask = wanted;
        if let Some(k) = known.as_ref() {
            add_all(&mut ask, &k.verification.verified);
        }
        // The key before the probe: see the module doc.
        let cache = self
            .cache
            .as_ref()
            .and_then(|(cache, mode)| Some((cache, *mode, backend.verification_key()?)));
        if let Some((cache, mode, key)) = &cache
            && let Some(mut cached) = cache.get(canonical, key)
        {
            cached.verified.retain(|c| declared.contains(c));
            if *mode == CacheMode::Use && ask.iter().all(|c| cached.verified.contains(c)) {
                *known = Some(Known {
                    asked: cached.verified.clone(),
                    verification: cached.clone(),
                    probe: None,
                });
                return Ok(cached);
            }
            add_all(&mut ask, &cached.verified);
        }
        let execution_id = probe_execution_id();
        let request = ProbeRequest {
            execution_id: execution_id.clone(),
            required: required.map(|_| ask.clone()),
        };
        let probe = backend.probe(&request).await;
        let mut verification = probe.verification;
        verification.verified.retain(|c| declared.contains(c));
        if let Some((cache, _, key)) = &cache {
            if verification.verified.is_empty() {
                // Nothing works: whatever was proven before no longer says anything.
                cache.remove(canonical);
            } else {
                let mut stored = verification.clone();
                stored.problems.clear();
                cache.put(canonical, key, &stored);
            }
        }
        let asked = if required.is_none() { declared } else { ask };
        *known = Some(Known {
            verification: verification.clone(),
            asked,
            probe: Some(ProbeRun {
                execution_id,
                usage: probe.usage,
            }),
        });
        Ok(verification)
    }
}

/// Appends to `into` each of `more` it lacks.
fn add_all(into: &mut Vec<Capability>, more: &[Capability]) {
    for c in more {
        if !into.contains(c) {
            into.push(c.clone());
        }
    }
}
