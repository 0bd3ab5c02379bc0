//! # agent-exec-backends
//!
//! The backends behind the execution contract, and the configuration that declares them.
//!
//! * [`command`]: any program from config (argv, prompt on stdin or as an argument, own
//!   process group, stdout is the text).
//! * [`openai`]: any OpenAI-compatible streaming chat-completions API; its stream decoder
//!   is [`sse`].
//! * [`agent_cli`]: the one backend of every agent CLI ([`agent_cli::AgentCliBackend`]:
//!   verify, environment, drive, redaction, retryability, resume handles); `codex`,
//!   `claude_code`, `pi`, `gemini`, `copilot` and `opencode` are each an
//!   [`agent_cli::AgentCli`]: argv, a
//!   [`agent_program::StreamParser`] and a probe plan.
//! * [`agent_program`]: the process side of agent programs run headless with a
//!   JSON-lines stdout (spawn, stream → parser → events, honest settling) and the probe
//!   helpers.
//! * [`codex`]: the Codex CLI (`codex exec --json`), prompt on stdin, tool policy held
//!   with codex's `--disable` feature switches.
//! * [`claude_code`]: Claude Code (`claude -p --output-format stream-json --verbose`),
//!   prompt on stdin, tool policy enforced through `--tools`.
//! * [`pi`]: the pi coding agent (`pi --mode json --session-dir DIR`), kind `agent-native`
//!   (deprecated alias `pi-native`), prompt on stdin, tool policy through `--tools`;
//!   resumes with `--session FILE`.
//! * [`gemini`]: Gemini CLI (`gemini --output-format=stream-json`), prompt on stdin,
//!   tool policy through a `--policy` file; resumes with `--resume=ID`.
//! * [`opencode`]: OpenCode (`opencode run --format json`), prompt on stdin, tool policy
//!   and instructions through `OPENCODE_CONFIG_CONTENT`; resumes with `--session ID`.
//! * [`session_store`]: one folder per execution under agent-exec's state directory
//!   where a program keeps the sessions a later process resumes (named by a hash of
//!   the execution id, `0700`, never through a link).
//! * [`acp`]: any Agent Client Protocol agent over stdio, with the ACP SDK as the client;
//!   serves `fs/*` only inside the workspace root and answers permission requests from
//!   the tool policy.
//! * `output`, [`redact`], `locate`, [`execution`]: what every process-running backend
//!   shares — output reader tasks and their bounded join, credential redaction (whole
//!   texts and streamed pieces), finding a program on `PATH`, the execution's identity
//!   variables and the cancel check. They import no backend, so the
//!   backends depend on them and never on each other's internals.
//! * [`config`]: the TOML file (`[backends.NAME] kind = "…"`) → a [`agent_exec_contract::Registry`].
//!
//! ## Invariants
//! * Every backend implements [`agent_exec_contract::Backend`] and keeps its rules: a result
//!   always comes back; `canceled` only when confirmed; a stream or process that ends
//!   without a final result is `unknown`, never `succeeded`; no credential value in any
//!   output.
//! * Parsers of outside input ([`sse`], [`config`]) never panic; each has a fuzz target and
//!   a property test.
//!
//! ## Not here
//! Attempts, deadlines, process-tree termination and deliverables belong to
//! `agent-exec-runtime`; the CLI (`agent-exec`) only wires these together.

pub mod acp;
pub mod agent_cli;
pub mod agent_program;
pub mod claude_code;
pub mod codex;
pub mod command;
pub mod config;
pub mod copilot;
pub mod execution;
pub mod gemini;
pub(crate) mod locate;
pub mod openai;
pub mod opencode;
pub(crate) mod output;
pub mod pi;
pub mod redact;
pub mod session_store;
pub mod sse;
