//! The facet scope guard's library: the seed's tables and sentences, the harness tool
//! tables, the decision, and the per-session state on disk.
//!
//! A session sees one folder of a large project — the folder it started in — and a
//! file tool call that leaves it is put to the user (mode `ask`) or refused (`deny`);
//! `facet action=add` widens it with the user's approval. The `facet` binary wraps this
//! crate as a command hook and an MCP server; this crate knows neither protocol.
//!
//! ```
//! use facet_core::{Decision, Policy, Session, Mode};
//! use serde_json::json;
//! # let dir = tempfile::tempdir().unwrap();
//! # let top = std::fs::canonicalize(dir.path()).unwrap();
//! # std::fs::create_dir_all(top.join("room")).unwrap();
//! let session = Session::new("s1", top.join("room"), true, Mode::Ask);
//! let policy = Policy::default();
//! let cwd = top.join("room");
//! let inside = policy.judge("Read", &json!({"file_path": "lib.rs"}), &cwd, &session, true);
//! assert_eq!(inside, Decision::NoOpinion);
//! let outside = policy.judge("Read", &json!({"file_path": "../x.rs"}), &cwd, &session, true);
//! assert!(matches!(outside, Decision::Ask(_)));
//! ```
//!
//! # Modules
//!
//! - [`seed`]: a faithful port of the seed's pure half (`PATH_ARGUMENTS`,
//!   `IMPLICIT_SESSION_PATHS`, the widening rule, rule text, display path, context
//!   text, outside / implicit-search / widen reasons). Sentences are byte-identical to
//!   the seed's and held by snapshot tests.
//! - [`tools`]: which arguments name locations, for DeepSeek Harness, Claude Code and
//!   configured MCP tools; glob patterns judged by their fixed prefix.
//! - [`config`]: [`Config`], read from a user-owned TOML file.
//! - [`judge`]: [`Policy::judge`] → [`Decision`] per mode and approval channel.
//! - [`session`]: the [`Session`] state and its changes (grant, revoke, reset, focus).
//! - [`project`]: project top-level detection (`.git` or configured markers).
//! - [`standing`]: standing grants per project — facet's configuration
//!   (`[projects."/root"]`) and a trusted `.facet.toml` (pinned by hash).
//! - [`store`]: [`StateStore`], one JSON file per session id, atomic writes, file lock.
//!
//! # Invariants
//!
//! - Containment is decided on canonical targets by the `containment` crate, never on
//!   strings; strings are only for display.
//! - Relative paths resolve against the host's `cwd` from the event, never this
//!   process's own working directory.
//! - Fail closed: a path that cannot be resolved is outside; judging never panics.
//! - The session directory is recorded at first sight and never moved; grants and
//!   focus are stored canonical.
//!
//! # Not done, deliberately
//!
//! - `bash` (and any tool not in the table) is not judged: a shell command cannot be
//!   judged from argv. The rule text tells the model so.
//! - Hard links, bind mounts, and a swap between the verdict and the tool's own open:
//!   a scope, not an OS sandbox.
//! - No protocol: hook envelopes, MCP and output JSON live in the `facet` binary.

pub mod config;
mod home;
pub mod judge;
pub mod project;
pub mod seed;
pub mod session;
pub mod standing;
pub mod store;
pub mod tools;

pub use config::{Config, ConfigError};
pub use judge::{Decision, Policy};
pub use seed::Mode;
pub use session::{ActionError, Change, FacetAction, GrantError, Session};
pub use store::{Listing, SessionId, StateStore, StoreError};
pub use tools::{ToolSpec, ToolTable};
