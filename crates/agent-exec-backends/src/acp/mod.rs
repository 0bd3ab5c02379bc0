//! The `acp` backend: any [Agent Client Protocol](https://agentclientprotocol.com)
//! agent over stdio (codex-acp, claude-code-acp, gemini --acp, …), driven through
//! the execution contract with the ACP Rust SDK (`agent-client-protocol`) as the
//! *client* side.
//!
//! One execution is one agent process and one session:
//!
//! 1. spawn `program args…` in the workspace root as a [`agent_exec_runtime::process::ProcessTree`]
//!    (own process group; the whole tree is terminated at the end, as for every agent
//!    program);
//! 2. `initialize` with protocol v1, declaring `fs.readTextFile` and `fs.writeTextFile`
//!    (and no terminal); `session/new` with `cwd` = the workspace root and no MCP
//!    servers; `session/prompt` with the instructions, then the prompt as every agent
//!    program gets it (`agent_program::render_prompt`: context, prompt, targets); the
//!    agent's environment is the config's `env` plus the execution's identity;
//! 3. `session/update` notifications become contract events in order ([`updates`]);
//!    `session/request_permission` is answered from the request's tool policy
//!    ([`policy`]); `fs/read_text_file` / `fs/write_text_file` are served only inside
//!    the workspace root ([`fs`]); `terminal/*` and any other method are answered
//!    "method not found";
//! 4. on cancellation: `session/cancel`, up to the grace period for the agent's
//!    `cancelled` answer, then the tree is terminated; `canceled` only when it is
//!    confirmed gone;
//! 5. the prompt's stop reason is settled with how the tree ended (`session.rs`).
//!
//! Config (`[backends.NAME] kind = "acp"`, a [`ProgramConfig`]): `program` is required
//! (there is no default ACP agent); `args` and `env` are passed on; `model` is not sent
//! through ACP (v1 has no model field) — pass it the way the agent takes it (codex-acp:
//! `args = ["-c", "model=\"NAME\""]`).
//!
//! Usage: ACP v1 has no token counts. An agent that sends the (unstable) end-of-turn
//! `usage` in the prompt response has it reported; others — codex-acp 0.16 among them
//! — report zero, never a guess, and `usage` is not a declared capability.
//! `usage_update` (context window fill) is logged, not counted.
//!
//! Resume: the id `session/new` answered is reported as the attempt's session handle
//! at once; a resumed attempt (`ctx.resume`) sends `session/load` for it instead —
//! only to an agent whose `initialize` answer advertises `loadSession`, which is also
//! what `verify` requires before it verifies `resume`. The agent's replay of the
//! earlier conversation is not this attempt's: it is neither emitted nor counted as
//! tools run (`session.rs`). The session's storage is the agent's own (codex-acp:
//! its `CODEX_HOME`); agent-exec keeps only the id.
//!
//! Not done, deliberately: terminals (declined), MCP servers for the session, the
//! unstable `session/resume`, protocol v2 (draft).

pub mod fs;
pub mod policy;
mod session;
pub mod updates;

use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client};
use agent_exec_contract::{
    Backend, BackendDescriptor, Capability, ContractRequest, ContractResult, Error, ErrorCode,
    ExecutionContext, SideEffects, Verification,
};
use agent_exec_runtime::process::ProcessTree;
use agent_exec_runtime::spawn::{LeaderCommand, Stdio};

use crate::agent_program::ProgramConfig;

/// The kind name in config (`kind = "acp"`).
pub const KIND: &str = "acp";

/// What to install when the program is missing (the agent the tests use).
const INSTALL_HINT: &str = "install an ACP agent, e.g. `npm install -g @zed-industries/codex-acp` \
     (bin `codex-acp`), and set `program` to it";

/// The configured agent cannot be run; says what to install.
#[derive(Debug, thiserror::Error)]
enum NoProgram {
    #[error("backend `{backend}`: `program` is required for kind = \"acp\"; {hint}", hint = INSTALL_HINT)]
    Unnamed { backend: String },
    #[error("backend `{backend}`: {problem}; {hint}", hint = INSTALL_HINT)]
    NotFound {
        backend: String,
        problem: crate::locate::ProgramNotFound,
    },
}

/// Why `verify`'s `initialize` handshake proved nothing; names the program.
#[derive(Debug, thiserror::Error)]
enum HandshakeFailed {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the agent's stdio was not captured")]
    NoStdio,
    #[error("`{program}` did not answer ACP `initialize` within {timeout:?}")]
    Timeout { program: String, timeout: Duration },
    #[error(
        "`{program}` did not answer ACP `initialize` (is it an ACP agent? some need an \
         `acp` argument): {message}"
    )]
    Refused { program: String, message: String },
    #[error(transparent)]
    Version(#[from] session::VersionMismatch),
}

/// How long `verify` waits for the `initialize` answer.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(20);

/// The backend. Holds only its configuration: nothing carries over between runs.
#[derive(Debug, Clone)]
pub struct AcpBackend {
    config: ProgramConfig,
}

impl AcpBackend {
    /// A backend for `config`. Problems (no program) are reported by `verify` and
    /// `execute`, never a panic.
    pub fn new(config: ProgramConfig) -> Self {
        AcpBackend { config }
    }

    fn declared() -> Vec<Capability> {
        vec![
            Capability::Text,
            Capability::Files,
            Capability::Stream,
            Capability::Tools,
            Capability::Cancel,
            Capability::Resume,
        ]
    }

    fn program(&self) -> Result<String, NoProgram> {
        let backend = || self.config.name.clone();
        let program = self.config.program.as_deref().unwrap_or_default();
        if program.is_empty() {
            return Err(NoProgram::Unnamed { backend: backend() });
        }
        crate::locate::find_program(program)
            .map(|path| path.display().to_string())
            .map_err(|problem| NoProgram::NotFound {
                backend: backend(),
                problem,
            })
    }

    fn adapter_version() -> String {
        format!("acp/{}", env!("CARGO_PKG_VERSION"))
    }
}

#[async_trait::async_trait]
impl Backend for AcpBackend {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: self.config.name.clone(),
            capabilities: Self::declared(),
            adapter_version: Self::adapter_version(),
        }
    }

    fn verification_key(&self) -> Option<String> {
        crate::agent_program::verification_key("acp", &self.program().ok()?, &self.config)
    }

    async fn verify(&self) -> Verification {
        let program = match self.program() {
            Ok(program) => program,
            Err(problem) => return Verification::failed(problem.to_string()),
        };
        let (agent, load_session) = match handshake(&program, &self.config, VERIFY_TIMEOUT).await {
            Ok(agent) => agent,
            Err(problem) => {
                return Verification::failed(format!("backend `{}`: {problem}", self.config.name));
            }
        };
        let mut verified = vec![
            Capability::Text,
            Capability::Files,
            Capability::Stream,
            Capability::Tools,
        ];
        let mut problems = vec![
            "usage: reported only by agents that send ACP's unstable end-of-turn `usage`; \
             not verifiable without a model turn"
                .to_owned(),
        ];
        crate::execution::verify_cancel(&mut verified, &mut problems);
        // What the agent itself says in the handshake, not its name or version.
        if load_session {
            verified.push(Capability::Resume);
        } else {
            problems.push(
                "resume: the agent does not advertise `loadSession` in its `initialize` answer"
                    .to_owned(),
            );
        }
        Verification {
            verified,
            adapter_version: format!("{} {agent}", Self::adapter_version()),
            problems,
        }
    }

    async fn execute(&self, request: &ContractRequest, ctx: ExecutionContext) -> ContractResult {
        if let Some(canceled) = crate::execution::canceled_before_start(&ctx) {
            return canceled;
        }
        let internal = |message: String| {
            ContractResult::failed(Error::new(ErrorCode::Internal, message, SideEffects::None))
        };
        let program = match self.program() {
            Ok(program) => program,
            Err(problem) => {
                return ContractResult::failed(Error::new(
                    ErrorCode::ProviderUnavailable,
                    problem.to_string(),
                    SideEffects::None,
                ));
            }
        };
        if request.workspace.root.is_empty() {
            return internal("the acp backend needs a workspace root (the session's cwd)".into());
        }
        let root = match containment::Root::new(&request.workspace.root) {
            Ok(root) => root,
            Err(e) => return internal(format!("workspace root: {e}")),
        };
        let policy = match policy::Policy::new(&request.tool_policy) {
            Ok(policy) => policy,
            Err(refused) => return ContractResult::failed(refused.into()),
        };
        // A handle is data: checked again here, whatever the journal holds.
        let resume = match crate::agent_program::resume_session(&ctx, &self.config.name) {
            Ok(handle) => handle.map(str::to_owned),
            Err(err) => return ContractResult::failed(err),
        };
        let fs =
            match fs::WorkspaceFs::new(root, &request.workspace.writable, policy.allows_writes()) {
                Ok(fs) => fs,
                Err(e) => return internal(format!("workspace.writable: {e}")),
            };
        // The config's env, then the execution's identity, as for every agent program:
        // the agent's tools and hooks may tell which execution (and attempt) runs them.
        let mut env = self.config.env.clone();
        env.extend(crate::agent_program::identity_env(
            &request.execution_id,
            ctx.attempt,
        ));
        let launch = session::Launch {
            backend: self.config.name.clone(),
            program,
            args: self.config.args.clone(),
            env,
            cwd: fs.root().display().to_string(),
            prompt: prompt_text(request, resume.is_some()),
            grace: Duration::from_millis(self.config.grace_ms),
            resume,
        };
        let mut result = session::run(launch, fs, policy, &ctx).await;
        // The agent's stderr tail and error bodies may quote a key it was given.
        crate::redact::redact_result(&self.config.env, &mut result);
        result
    }
}

/// The prompt sent: instructions first (ACP v1 has no system prompt), then what every
/// agent program is given — prior `context` as a transcript, the prompt, the files to
/// write — or, resumed, the continuation and the files again (the loaded session holds
/// the context already).
fn prompt_text(request: &ContractRequest, resumed: bool) -> String {
    let prompt = if resumed {
        crate::agent_program::render_continuation(request)
    } else {
        crate::agent_program::render_prompt(request)
    };
    if request.instructions.is_empty() {
        prompt
    } else {
        format!("{}\n\n{prompt}", request.instructions)
    }
}

/// Spawns the agent, asks `initialize`, and returns "NAME VERSION" from its
/// `agentInfo` (or "protocol v1" when it gives none) and whether it advertises
/// `loadSession`. The tree is terminated after.
async fn handshake(
    program: &str,
    config: &ProgramConfig,
    timeout: Duration,
) -> Result<(String, bool), HandshakeFailed> {
    use tokio_util::compat::{TokioAsyncReadCompatExt as _, TokioAsyncWriteCompatExt as _};
    let mut command = LeaderCommand::new(program);
    command
        .args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut tree = ProcessTree::spawn(command).map_err(|source| HandshakeFailed::Spawn {
        program: program.to_owned(),
        source,
    })?;
    let (Some(stdin), Some(stdout)) = (
        tree.child_mut().stdin.take(),
        tree.child_mut().stdout.take(),
    ) else {
        let _ = tree.terminate(Duration::from_millis(config.grace_ms)).await;
        return Err(HandshakeFailed::NoStdio);
    };
    let transport = agent_client_protocol::ByteStreams::new(stdin.compat_write(), stdout.compat());
    let asked =
        Client
            .v1()
            .name("agent-exec")
            .connect_with(transport, async |cx: ConnectionTo<Agent>| {
                cx.send_request(session::initialize_request())
                    .block_task()
                    .await
            });
    let answer = tokio::time::timeout(timeout, asked).await;
    let _ = tree.terminate(Duration::from_millis(config.grace_ms)).await;
    let response = match answer {
        Err(_) => {
            return Err(HandshakeFailed::Timeout {
                program: program.to_owned(),
                timeout,
            });
        }
        Ok(Err(e)) => {
            return Err(HandshakeFailed::Refused {
                program: program.to_owned(),
                message: e.message,
            });
        }
        Ok(Ok(response)) => response,
    };
    session::check_version(&response)?;
    let name = match response.agent_info {
        Some(info) => format!("{} {}", info.name, info.version),
        None => "protocol v1".to_owned(),
    };
    Ok((name, response.agent_capabilities.load_session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_failures_keep_their_words() {
        let refused = HandshakeFailed::Refused {
            program: "codex".into(),
            message: "Method not found".into(),
        };
        assert_eq!(
            refused.to_string(),
            "`codex` did not answer ACP `initialize` (is it an ACP agent? some need an `acp` \
             argument): Method not found"
        );
        assert_eq!(
            HandshakeFailed::from(session::VersionMismatch(2)).to_string(),
            "the agent answered protocol version 2; agent-exec speaks version 1"
        );
        let missing = NoProgram::NotFound {
            backend: "a".into(),
            problem: crate::locate::ProgramNotFound::NotOnPath("nope".into()),
        };
        assert_eq!(
            missing.to_string(),
            format!(
                "backend `a`: program `nope` not found on PATH; install it or give its full \
                 path in argv; {INSTALL_HINT}"
            )
        );
    }

    #[tokio::test]
    async fn a_missing_program_is_a_clear_verify_failure() {
        let backend = AcpBackend::new(ProgramConfig::new("acp-test"));
        let verification = backend.verify().await;
        assert!(verification.verified.is_empty());
        assert!(
            verification.problems[0].contains("`program` is required"),
            "{verification:?}"
        );
        assert!(verification.problems[0].contains("@zed-industries/codex-acp"));
    }

    #[tokio::test]
    async fn a_program_that_is_not_an_acp_agent_fails_the_handshake() {
        let mut config = ProgramConfig::new("acp-test");
        config.program = Some("cat".into());
        config.args = vec!["/dev/null".into()];
        let verification = AcpBackend::new(config).verify().await;
        assert!(verification.verified.is_empty(), "{verification:?}");
        assert!(
            verification.problems[0].contains("did not answer ACP `initialize`"),
            "{verification:?}"
        );
    }

    #[tokio::test]
    async fn the_agents_stderr_tail_is_redacted() {
        let secret = "sk-acp-supersecret-12345";
        let mut config = ProgramConfig::new("acp-test");
        config.program = Some("sh".into());
        config.args = vec![
            "-c".into(),
            "echo \"auth failed for $MY_API_KEY\" >&2; exit 3".into(),
        ];
        config.env.insert("MY_API_KEY".into(), secret.into());
        let ws = tempfile::tempdir().unwrap();
        let request = ContractRequest {
            execution_id: "e".into(),
            prompt: "hi".into(),
            workspace: agent_exec_contract::WorkspaceHandle {
                root: ws.path().display().to_string(),
                writable: Vec::new(),
            },
            ..ContractRequest::default()
        };
        let result = AcpBackend::new(config)
            .execute(
                &request,
                ExecutionContext::new(agent_exec_contract::EventSink::discard()),
            )
            .await;
        let shown = format!("{result:?}");
        assert!(shown.contains("auth failed for [redacted]"), "{shown}");
        assert!(!shown.contains(secret), "{shown}");
    }

    #[test]
    fn instructions_come_before_the_prompt() {
        let request = ContractRequest {
            prompt: "do it".into(),
            instructions: "be brief".into(),
            ..ContractRequest::default()
        };
        assert_eq!(prompt_text(&request, false), "be brief\n\ndo it");
    }

    /// Found by the conformance suite: the agent was sent the bare prompt, so it never
    /// learnt the deliverables it must write, nor the conversation so far.
    #[test]
    fn the_prompt_carries_context_and_targets_and_a_resume_the_targets() {
        let request = ContractRequest {
            prompt: "fix it".into(),
            context: vec![agent_exec_contract::Message {
                role: "user".into(),
                content: "earlier words".into(),
            }],
            targets: vec!["out/a.md".into()],
            ..ContractRequest::default()
        };
        let fresh = prompt_text(&request, false);
        assert!(fresh.contains("[user] earlier words"), "{fresh}");
        assert!(
            fresh.contains("fix it") && fresh.ends_with("- out/a.md\n"),
            "{fresh}"
        );
        let resumed = prompt_text(&request, true);
        assert!(!resumed.contains("earlier words"), "{resumed}");
        assert!(resumed.starts_with("fix it") && resumed.ends_with("- out/a.md\n"));
    }

    /// Found by the conformance suite: the agent (and its tools) did not get the
    /// execution's identity that every other program backend gives.
    #[tokio::test]
    async fn the_agent_is_told_its_execution_and_attempt() {
        let mut config = ProgramConfig::new("acp-test");
        config.program = Some("sh".into());
        config.args = vec![
            "-c".into(),
            "echo \"identity $AGENT_EXEC_EXECUTION_ID/$AGENT_EXEC_ATTEMPT\" >&2; exit 3".into(),
        ];
        let ws = tempfile::tempdir().unwrap();
        let request = ContractRequest {
            execution_id: "exec-acp-7".into(),
            prompt: "hi".into(),
            workspace: agent_exec_contract::WorkspaceHandle {
                root: ws.path().display().to_string(),
                writable: Vec::new(),
            },
            ..ContractRequest::default()
        };
        let mut ctx = ExecutionContext::new(agent_exec_contract::EventSink::discard());
        ctx.attempt = 2;
        let result = AcpBackend::new(config).execute(&request, ctx).await;
        let shown = format!("{result:?}");
        assert!(shown.contains("identity exec-acp-7/2"), "{shown}");
    }
}
