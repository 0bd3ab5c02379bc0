//! Routing a job to a worker that verified what it needs, as queue flags.
//!
//! Decision: the queue's own eligibility filter does the routing, so a worker never
//! *claims* a job it cannot run (claiming and handing back would be a retry layer).
//! A job carries one flag for its backend and one per required capability, each
//! scoped by the backend (`backend:NAME`, `NAME:cap:CAP`); a worker claims with an
//! allowlist of exactly the flags its verifications cover. The queue admits a job
//! only when *every* flag key is in the allowlist, which is the rule "the job's
//! backend is verified here, and every capability it requires is verified for that
//! backend". Not taken: one task identifier per backend and capability subset (2^8
//! identifiers per backend) or forbidden-flag lists (they cannot name backends that
//! no worker knows).

use agent_exec_contract::Capability;
use serde::{Deserialize, Serialize};

/// What a worker verified for one backend, as it advertises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advertised {
    /// Canonical name.
    pub name: String,
    /// Every alias that resolves to it on this worker.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Verified capabilities (the probe's, never the declared ones).
    pub verified: Vec<String>,
    /// Why a declared capability is not verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The flags a job for `backend` (canonical) requiring `required` carries.
pub fn job_flags(backend: &str, required: &[Capability]) -> Vec<String> {
    let mut flags = vec![format!("backend:{backend}")];
    for capability in required {
        let flag = format!("{backend}:cap:{}", capability.as_str());
        if !flags.contains(&flag) {
            flags.push(flag);
        }
    }
    flags
}

/// The allowlist of a worker that verified `backends`.
pub fn allowlist(backends: &[Advertised]) -> Vec<String> {
    let mut flags = Vec::new();
    for backend in backends {
        flags.push(format!("backend:{}", backend.name));
        for capability in &backend.verified {
            flags.push(format!("{}:cap:{capability}", backend.name));
        }
    }
    flags
}

/// Whether a worker with `allowlist` may claim a job with `flags` (the queue's rule,
/// restated for messages and tests).
pub fn admits(allowlist: &[String], flags: &[String]) -> bool {
    flags.iter().all(|f| allowlist.contains(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn caps() -> impl Strategy<Value = Vec<Capability>> {
        proptest::sample::subsequence(Capability::KNOWN.to_vec(), 0..=Capability::KNOWN.len())
    }

    proptest! {
        /// A worker admits a job exactly when it verified the job's backend and every
        /// capability the job requires, for that backend.
        #[test]
        fn admission_is_subset_of_verified(
            required in caps(),
            verified in caps(),
            other_verified in caps(),
            same_backend in any::<bool>(),
        ) {
            let job_backend = "review";
            let worker = vec![
                Advertised {
                    name: if same_backend { job_backend.into() } else { "other".into() },
                    aliases: vec![],
                    verified: verified.iter().map(|c| c.as_str().to_owned()).collect(),
                    problems: vec![],
                },
                Advertised {
                    name: "third".into(),
                    aliases: vec![],
                    verified: other_verified.iter().map(|c| c.as_str().to_owned()).collect(),
                    problems: vec![],
                },
            ];
            let expected = same_backend && required.iter().all(|c| verified.contains(c));
            prop_assert_eq!(admits(&allowlist(&worker), &job_flags(job_backend, &required)), expected);
        }
    }
}
