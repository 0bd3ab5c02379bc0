//! # envreg-core: the environment registry, without a transport
//!
//! An environment registry is a folder of small YAML files that says where things run
//! (environments), what runs (services), which service is placed where (deployments),
//! the layout rules of a kind of service (rule profiles) and which Agent Skill performs
//! an operation for what (operation bindings). This crate loads, validates, reads,
//! resolves and writes that folder. The `envreg` CLI and the MCP server are thin shells
//! over it; it knows nothing of MCP, JSON-RPC, terminals or HTTP.
//!
//! ## Design
//!
//! - **Data flows one way.** Files → [`load`] (never fails: a broken file becomes a
//!   [`Diagnostic`], the rest loads) → typed [`model`] → an immutable [`Snapshot`] →
//!   reads ([`read`]), resolution ([`resolve`], [`operation`]) → output types that
//!   serialize to the tool contract's JSON shapes.
//! - **One typed model.** Loading deserializes YAML straight into the structs of
//!   [`model`]; validation reads them; [`schema`] derives the JSON Schema an editor
//!   uses from them. Unknown fields survive because the on-disk text, not the typed
//!   view, is what `get` returns and `save` round-trips.
//! - **Fresh reads without re-parsing.** [`Registry`] keeps the current snapshot and,
//!   on Linux, an inotify watch on the record folders. Every call drains pending events
//!   (one non-blocking `read`); only files named in events are re-read and re-parsed.
//!   No call stats every file. Without inotify it falls back to a directory rescan.
//! - **Writes are plan + commit.** [`Registry::plan_save`] / [`Registry::plan_delete`]
//!   validate and say whether approval is needed ([`SavePlan::approval`]); the edge asks
//!   (elicitation, terminal, `--yes`); `commit_*` then writes under a cross-process lock:
//!   backup, temp file, fsync, rename, directory fsync, reload.
//!
//! ## Module map
//!
//! | module | job |
//! |---|---|
//! | [`error`], [`diagnostic`], [`kind`], [`id`] | the vocabulary: error codes, findings, kinds, id rules |
//! | [`model`], [`config`] | the typed records and `envreg.yaml` (one definition each) |
//! | [`files`] | registry files opened only inside the registry (canonical targets, `containment`) |
//! | [`load`] | file rules, safe YAML options, per-file parse into the model |
//! | [`locate`](mod@locate) | where a diagnostic's field path is in a record's text (CLI carets, the UI) |
//! | `watch` | inotify drained at call time; rescan fallback |
//! | [`registry`], [`snapshot`] | the handle, its file table, immutable snapshots and their indexes |
//! | `record_checks`, [`validate`] | per-record checks (run by the loader) and cross-record checks of a snapshot (data model §4) |
//! | `prove` | `env_validate`'s proof that every deployment's Service Context and picked binding resolve |
//! | [`read`], [`session`], [`write`](mod@write) | `env_list/get/find`, session defaults, `env_save/delete` |
//! | [`approval`], [`host_gate`] | contract §1.3's table, and the verdict a host's PreToolUse hook gives |
//! | [`served`] | which registry the server a host started serves, for that host's hook |
//! | [`schema`] | JSON Schema of each kind, derived from [`model`] |
//! | [`synth`] | deterministic synthetic registries for benches and load tests |
//! | [`template`], [`resolve`], [`operation`], [`skills`] | resolution (core-resolve) |
//! | [`tools`] | the ten tools, transport-free (tools+mcp) |
//!
//! ## Invariants
//!
//! - Ids are data, not paths: every id argument is checked by [`id::check_id`] before
//!   any I/O, and file names are only ever built from checked ids.
//! - No credential value is read: a credential's status is presence only
//!   ([`model::CredentialRef::is_configured`]). Error messages hold ids, registry
//!   relative paths and counts — never a file body or a secret.
//! - A crash at any instant leaves each record file either old or new, never torn; temp
//!   files are dot-files, which the loader ignores.
//! - Reads never write (session reads included).
//! - Nothing is read, written or unlinked through a symbolic link that leaves the
//!   registry ([`files`]).
//! - No `unsafe`, no panics on input: every parser of outside input is fuzzed.
//!
//! ## Deliberately not done
//!
//! - No sweep of temp files left by a process killed mid-save: they are dot-files,
//!   never loaded; record writes (under the lock) use one fixed temp name per record,
//!   so at most one leftover per record exists and the next save consumes it.
//! - Session defaults are cached per process: a session is owned by one connection, so
//!   another process changing the same session's file is not watched for.
//! - No comment-preserving edits: `save` writes the record it is given (as YAML,
//!   keys in the given order), not a patch of the old file.
//! - No execution: nothing here runs a Skill, a shell command or a network request.
//! - No transport and no async runtime; approval is a plain trait ([`Approver`]).

pub mod approval;
pub mod config;
pub mod diagnostic;
pub mod error;
pub mod files;
pub mod host_gate;
pub mod id;
pub mod kind;
pub mod load;
pub mod locate;
pub mod model;
pub mod read;
mod record_checks;
pub mod registry;
pub mod schema;
pub mod served;
pub mod session;
pub mod snapshot;
pub mod synth;
pub mod validate;
mod watch;
pub mod write;

// Owned by core-resolve.
pub mod operation;
mod prove;
pub mod resolve;
pub mod skills;
pub mod template;
// Owned by tools+mcp.
pub mod tools;

pub use approval::{ApprovalDecision, ApprovalRequest, Approver};
pub use config::Config;
pub use diagnostic::{Diagnostic, Severity};
pub use error::{EnvError, ErrorCode};
pub use kind::RecordKind;
pub use model::Record;
pub use read::{FindHit, FindOutput, GetOutput, ListOutput, MatchField, RecordSummary};
pub use registry::Registry;
pub use session::{ContextOutput, SessionId};
pub use snapshot::Snapshot;
pub use validate::{Counts, ValidateOutput};
pub use write::{Blocker, DeleteOutput, DeletePlan, SaveOutput, SavePlan};
