//! The resolver: backend names (canonical and aliases) to backends whose *verified*
//! capabilities cover what the request requires.
//!
//! Invariants: an unknown name is an error, never a fallback to a stub; a required
//! capability counts only if the backend's probe verified it; a deprecated alias
//! resolves but comes back with a warning for the caller to show.
//!
//! Verification cache: probing an agent program costs a process start (hundreds of
//! milliseconds for a Node launcher or an ACP handshake), paid by every short-lived
//! process before its first run. A [`VerificationCache`] port lets a past *clean*
//! probe stand in while the backend's [`Backend::verification_key`] is unchanged.
//! Invariants: only a verification without problems is stored (a failure is always
//! re-probed, so a fix shows at once); the key is taken *before* the probe, so a
//! program replaced mid-probe leaves its result under the old key, which the next
//! lookup misses; a cached answer is still cut down to the declared capabilities.
//! Expiry and storage are the port's business (the CLI keeps one JSON file per
//! backend for 24 h).

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::backend::{Backend, Verification};
use crate::error::{Error, ErrorCode, SideEffects};
use crate::types::{BackendDescriptor, Capability};

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

/// Where past clean verifications are kept across processes. Implementations never
/// fail: an unreadable or corrupt entry is a miss, a failed write is dropped.
pub trait VerificationCache: Send + Sync {
    /// The verification stored for `backend` under exactly `key`, if still fresh.
    fn get(&self, backend: &str, key: &str) -> Option<Verification>;
    /// Stores `verification` for `backend` under `key`, replacing any older entry.
    fn put(&self, backend: &str, key: &str, verification: &Verification);
}

/// How a [`Registry`] uses its [`VerificationCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Take a cached verification when the key matches; probe and store otherwise.
    Use,
    /// Always probe, and store a clean result (`agent-exec backends --verify`).
    Refresh,
}

struct Entry {
    backend: Arc<dyn Backend>,
    verification: OnceCell<Verification>,
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
                verification: OnceCell::new(),
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

    /// The probe result of `name`, running the probe (or taking it from the
    /// verification cache) once per registry.
    pub async fn verification(&self, name: &str) -> Result<Verification, ResolveError> {
        let (canonical, _) = self.canonical(name)?;
        let entry = self
            .entries
            .get(&canonical)
            .ok_or_else(|| ResolveError::UnknownBackend {
                name: name.to_owned(),
                known: self.names(),
            })?;
        let verification = entry
            .verification
            .get_or_init(|| self.probe_or_cached(&canonical, entry.backend.as_ref()))
            .await;
        Ok(verification.clone())
    }

    /// Resolves `name` to a backend whose verified capabilities include all of
    /// `required` (Go `Resolver.Resolve`).
    pub async fn resolve(
        &self,
        name: &str,
        required: &[Capability],
    ) -> Result<Resolved, ResolveError> {
        let (canonical, deprecation_warning) = self.canonical(name)?;
        let verification = self.verification(&canonical).await?;
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
    async fn probe_or_cached(&self, canonical: &str, backend: &dyn Backend) -> Verification {
        // The key before the probe: see the module doc.
        let cache = self
            .cache
            .as_ref()
            .and_then(|(cache, mode)| Some((cache, *mode, backend.verification_key()?)));
        if let Some((cache, CacheMode::Use, key)) = &cache
            && let Some(mut cached) = cache.get(canonical, key)
            && cached.problems.is_empty()
        {
            let declared = backend.descriptor().capabilities;
            cached.verified.retain(|c| declared.contains(c));
            return cached;
        }
        let verification = verified_subset(backend).await;
        if let Some((cache, _, key)) = &cache
            && verification.problems.is_empty()
        {
            cache.put(canonical, key, &verification);
        }
        verification
    }
}

/// Runs the probe and keeps only capabilities that are also declared: a probe
/// cannot grant what the adapter does not claim to implement.
async fn verified_subset(backend: &dyn Backend) -> Verification {
    let declared = backend.descriptor().capabilities;
    let mut verification = backend.verify().await;
    verification.verified.retain(|c| declared.contains(c));
    verification
}
