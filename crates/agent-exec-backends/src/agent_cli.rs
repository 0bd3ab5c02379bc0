//! One backend for every agent CLI: what an agent program *is* to agent-exec is an
//! [`AgentCli`] — its argv (fresh and resumed), its stream parser, its probe plan and
//! its failure classification (inside the parser's verdict) — and [`AgentCliBackend`]
//! does the rest once: `verify` (the probe ladder), the environment (the execution's
//! identity), spawn and drive ([`crate::agent_program::drive`]), redaction,
//! retryability and resume handles.
//!
//! ## Verify
//! The ladder [`AgentCliBackend`] runs from an [`AgentCli::PROBES`] plan:
//!
//! 1. the version ([`AgentCli::version`]), before the format probes or beside them
//!    ([`VersionOrder`]); a program without one verifies nothing;
//! 2. format probes ([`AgentCli::probe`]): a real run of the program pointed at a
//!    refused loopback provider, with the run's own flags — with the structured-output
//!    flag first when the plan has it, then without it (to tell a program that speaks
//!    the stream but not structured output from one that speaks neither), then, when
//!    the plan proves the tool flags this way, without them; each fallback says what
//!    it could not prove, and a program whose stream is never proven verifies nothing;
//! 3. resume, proven by doing it: a probe that continues the session the format probe
//!    started, in the same throw-away folder;
//! 4. cancel ([`crate::execution::verify_cancel`]).
//!
//! Every problem is redacted of credential values before it is reported.
//!
//! ## Execute
//! The workspace root must be set; a resumed attempt's handle is checked again
//! ([`crate::agent_program::resume_session`]) before the program's
//! [`AgentCli::attempt`] sees it; the execution's identity goes into the environment
//! ([`crate::execution::identity_env`]); files the program reads at start are kept
//! until it exited; the program's notes go to `logs`; reasons and logs are redacted;
//! a failure the parser classified `agent.provider_unavailable` is retryable when the
//! program says so ([`AgentCli::RETRY_UNAVAILABLE`]).
//!
//! Not here: ACP (JSON-RPC both ways, its own session driver in [`crate::acp`]).

use agent_exec_contract::{
    Backend, BackendDescriptor, Capability, ContractRequest, ContractResult, Error, ErrorCode,
    ExecutionContext, Outcome, SideEffects, Verification,
};

use crate::agent_program::{
    self, AgentRun, ProbeError, ProbeFolder, ProgramConfig, StreamParser, Verdict,
};

/// An agent program run headless with a JSON-lines stdout: the table a new agent CLI
/// fills in. Everything else is [`AgentCliBackend`]'s.
#[async_trait::async_trait]
pub trait AgentCli: Send + Sync + 'static {
    /// The kind in config; also the adapter's name in `adapter_version` and in the
    /// verification key.
    const KIND: &'static str;
    /// The program run when the config names none (looked up on `PATH`).
    const DEFAULT_PROGRAM: &'static str;
    /// What to install when the program is missing.
    const INSTALL_HINT: &'static str;
    /// How `verify` proves what the program can do.
    const PROBES: ProbePlan;
    /// What the program's session ids are, as a refusal names them (`a codex thread
    /// id (a UUID)`): see [`AgentCli::is_session_handle`].
    const SESSION_HANDLE: &'static str;
    /// Whether a failure the parser classified `agent.provider_unavailable` is
    /// retryable: `true` when the program's own retries are spent and what is left is
    /// transient trouble the caller may retry later; `false` when the program retries
    /// for as long as retrying helps.
    const RETRY_UNAVAILABLE: bool;

    /// The program's stream parser; one per attempt.
    type Parser: StreamParser + 'static;

    /// The backend's configuration.
    fn config(&self) -> &ProgramConfig;

    /// How one attempt of `request` runs — fresh, or continuing `resume` (a handle
    /// already checked by [`agent_exec_contract::check_session_handle`]) — and the
    /// parser of its stream. A policy, a handle or a request the program cannot honour
    /// is refused here, before anything starts. The execution's identity is added to
    /// the environment by the backend.
    fn attempt(
        &self,
        request: &ContractRequest,
        ctx: &ExecutionContext,
        resume: Option<&str>,
    ) -> Result<Attempt<Self::Parser>, Error>;

    /// After the program exited: what the program adds to the run's `notes` (the
    /// logs), and its own clean-up. Nothing by default.
    fn after_run(
        &self,
        _request: &ContractRequest,
        _ctx: &ExecutionContext,
        _parser: &Self::Parser,
        _result: &ContractResult,
        _notes: &mut Vec<String>,
    ) {
    }

    /// The program's version as it names itself (`codex-cli 0.171.0`); with
    /// [`ToolsProof::VersionProbe`], also whether its tool flags were accepted.
    async fn version(&self) -> Result<ProgramVersion, ProbeError>;

    /// One format probe in `folder` (see [`Probe`]): `Ok` once the stream proved the
    /// format, with the session the stream showed.
    async fn probe(
        &self,
        folder: &ProbeFolder,
        probe: Probe<'_>,
    ) -> Result<SessionSeen, ProbeError>;

    /// After the program exited, before [`Attempt::keep`] and [`Attempt::keep_dirs`]
    /// are removed: the usage the program reported outside its stream (Copilot writes
    /// it to a file), which replaces the stream's. `None` (the default) keeps the
    /// stream's; a problem worth knowing goes to `notes` (the run's logs).
    fn usage_after_exit(
        &self,
        _parser: &Self::Parser,
        _notes: &mut Vec<String>,
    ) -> Option<agent_exec_contract::Usage> {
        None
    }

    /// Why `resume` cannot be offered on this machine even though the program resumes
    /// (pi with no state directory to keep sessions in). `None` by default.
    fn resume_unavailable(&self) -> Option<&'static str> {
        None
    }

    /// Whether `handle` is one of the program's session ids (a UUID by default). A
    /// handle is data: most programs' `--resume` also takes a session *name*, so
    /// anything else is refused before it reaches an argv ([`resume_handle`]).
    fn is_session_handle(handle: &str) -> bool {
        agent_program::is_uuid(handle)
    }
}

/// `resume`, if it is one of `C`'s session ids; else the refusal, before anything
/// starts (`backend `NAME` cannot resume: …`). Every path of an agent CLI that puts a
/// handle in an argv calls it — an attempt, and a probe resuming the session its own
/// stream reported — so the check is one, whatever the path.
pub fn resume_handle<'a, C: AgentCli>(
    name: &str,
    resume: Option<&'a str>,
) -> Result<Option<&'a str>, Error> {
    let Some(handle) = resume else {
        return Ok(None);
    };
    agent_exec_contract::check_session_handle(handle)
        .and_then(|()| {
            C::is_session_handle(handle)
                .then_some(Some(handle))
                .ok_or_else(|| format!("the session handle is not {}", C::SESSION_HANDLE))
        })
        .map_err(|reason| {
            Error::new(
                ErrorCode::Internal,
                format!("backend `{name}` cannot resume: {reason}"),
                SideEffects::None,
            )
        })
}

/// A tool policy the program cannot hold: the request is refused
/// (`agent.tool_rejected`) before the program starts. The text names what is known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolPolicyRefused(pub String);

impl From<ToolPolicyRefused> for Error {
    fn from(refused: ToolPolicyRefused) -> Self {
        Error::new(ErrorCode::ToolRejected, refused.0, SideEffects::None)
    }
}

/// What one attempt runs, as [`AgentCli::attempt`] prepared it.
pub struct Attempt<P> {
    pub run: AgentRun,
    pub parser: P,
    /// Files the program reads at start (an output schema, instructions): removed once
    /// the program exited.
    pub keep: Vec<tempfile::NamedTempFile>,
    /// Folders the program writes into (Copilot's usage file): removed once the
    /// program exited and [`AgentCli::usage_after_exit`] read them.
    pub keep_dirs: Vec<tempfile::TempDir>,
    /// Notes for the run's logs (a session that will not be kept, …).
    pub notes: Vec<String>,
}

impl<P> Attempt<P> {
    /// An attempt of `run` read by `parser`, with nothing to keep and nothing to note.
    pub fn new(run: AgentRun, parser: P) -> Self {
        Attempt {
            run,
            parser,
            keep: Vec::new(),
            keep_dirs: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// The program's version, as [`AgentCli::version`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramVersion {
    /// The program's name and version as it says them (`codex-cli 0.171.0`).
    pub label: String,
    /// With [`ToolsProof::VersionProbe`]: why the tool flags were refused, or `None`
    /// when they were accepted.
    pub tools_refused: Option<String>,
}

impl ProgramVersion {
    /// A version whose probe said nothing about the tool flags.
    pub fn new(label: impl Into<String>) -> Self {
        ProgramVersion {
            label: label.into(),
            tools_refused: None,
        }
    }
}

/// One format probe: how the program is run (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe<'a> {
    /// With the tool flags of the contract's default policy (`reasoning`); without,
    /// the program runs its own tools (`workspace`).
    pub tools: bool,
    /// With the structured-output flag and a small schema.
    pub schema: bool,
    /// Continuing this session of an earlier probe in the same folder, instead of
    /// starting one; proven only when the program continues *that* session.
    pub resume: Option<&'a str>,
}

/// The session a format probe's stream showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionSeen {
    /// A handle a resume can use.
    Id(String),
    /// None usable, and why.
    Missing(String),
}

/// How `verify` proves an agent CLI's capabilities: data, read by
/// [`AgentCliBackend`]'s ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbePlan {
    pub version: VersionOrder,
    pub tools: ToolsProof,
    /// Whether structured output is probed (the first format probe runs with it).
    pub structured_output: bool,
    /// Whether resume is probed (by doing it).
    pub resume: bool,
    /// What to do about a capability that was not proven, after the problem
    /// (`upgrade @openai/codex`).
    pub upgrade: &'static str,
    /// Added to a resume problem: what in the configuration stops the program from
    /// keeping sessions (`keep --ephemeral out of args`).
    pub resume_hint: &'static str,
}

/// When the version probe runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionOrder {
    /// First: a program without a version is not probed further (and the format
    /// probes may depend on it, [`ToolsProof::VersionProbe`]).
    Before,
    /// Beside the format probes, which do not depend on it: one program start less on
    /// the way (pi's Node start-up costs about a second of CPU).
    Alongside,
}

/// Where the tool flags are proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsProof {
    /// The version probe ran with them ([`ProgramVersion::tools_refused`]); the format
    /// probes use them only when accepted. `flags` names them for the problem.
    VersionProbe { flags: &'static str },
    /// The format probes run with them; when no probe proves the stream with them,
    /// one without them tells a program that cannot hold a policy from one that does
    /// not speak the format.
    FormatProbe { flags: &'static str },
    /// The format probes run with them and there is no fallback: a program that
    /// refuses them is not verified at all.
    FormatProbeOnly,
}

/// The backend of an agent CLI `C` (see the module doc). Holds only `C`, which holds
/// only its configuration: nothing carries over between executions.
#[derive(Debug, Clone)]
pub struct AgentCliBackend<C> {
    cli: C,
}

impl<C: AgentCli> AgentCliBackend<C> {
    /// The backend of `cli`.
    pub fn of(cli: C) -> Self {
        AgentCliBackend { cli }
    }

    /// The program's side of this backend.
    pub fn cli(&self) -> &C {
        &self.cli
    }

    /// The program's side, taken out (to build another backend from it).
    pub fn into_cli(self) -> C {
        self.cli
    }

    fn name(&self) -> &str {
        &self.cli.config().name
    }

    /// The program to run: the configured one, else [`AgentCli::DEFAULT_PROGRAM`].
    pub fn program(&self) -> &str {
        self.cli.config().program_or(C::DEFAULT_PROGRAM)
    }

    /// `text` with every credential value (configured or inherited: agent programs read
    /// their keys from either) replaced by `[redacted]`
    /// ([`crate::redact::redact_credentials`]): providers do echo keys back in errors.
    pub fn redact(&self, text: &str) -> String {
        crate::redact::redact_credentials(&self.cli.config().env, text)
    }

    /// What every agent CLI declares, plus what the plan probes.
    fn declared() -> Vec<Capability> {
        let mut declared = agent_program::AGENT_CLI_CAPABILITIES.to_vec();
        if C::PROBES.structured_output {
            declared.push(Capability::StructuredOutput);
        }
        if C::PROBES.resume {
            declared.push(Capability::Resume);
        }
        declared
    }

    fn refused(&self, problem: &ProbeError) -> Verification {
        Verification::failed(format!(
            "backend `{}`: {}",
            self.name(),
            with_install_hint(&self.redact(&problem.to_string()), C::INSTALL_HINT)
        ))
    }

    /// Steps 2 and 3 of the ladder (see the module doc), starting with the tool flags
    /// when `tools`.
    async fn prove(&self, mut tools: bool) -> Result<Proven, ProbeError> {
        let plan = &C::PROBES;
        let program = self.program();
        let folder = ProbeFolder::new()?;
        let mut proven = Proven::default();
        let fresh = |tools: bool, schema: bool| Probe {
            tools,
            schema,
            resume: None,
        };
        let session = match self
            .cli
            .probe(&folder, fresh(tools, plan.structured_output))
            .await
        {
            Ok(session) => {
                if plan.structured_output {
                    proven.verified.push(Capability::StructuredOutput);
                }
                session
            }
            Err(mut last) => {
                let mut session = None;
                if plan.structured_output {
                    match self.cli.probe(&folder, fresh(tools, false)).await {
                        Ok(seen) => {
                            proven.problems.push(format!(
                                "structured-output: {}; {}",
                                self.redact(&last.to_string()),
                                plan.upgrade
                            ));
                            session = Some(seen);
                        }
                        Err(problem) => last = problem,
                    }
                }
                if let (None, true, ToolsProof::FormatProbe { flags }) =
                    (&session, tools, plan.tools)
                {
                    match self.cli.probe(&folder, fresh(false, false)).await {
                        Ok(seen) => {
                            proven.problems.push(format!(
                                "tools: `{program}` does not run with {flags}, so a tool policy cannot be held ({}); {}",
                                self.redact(&last.to_string()),
                                plan.upgrade
                            ));
                            tools = false;
                            session = Some(seen);
                        }
                        Err(problem) => last = problem,
                    }
                }
                session.ok_or(last)?
            }
        };
        if tools {
            proven.verified.push(Capability::Tools);
        }
        if plan.resume {
            let resumed = match &session {
                SessionSeen::Id(id) => {
                    let again = Probe {
                        tools,
                        schema: false,
                        resume: Some(id),
                    };
                    self.cli
                        .probe(&folder, again)
                        .await
                        .map(drop)
                        .map_err(|problem| problem.to_string())
                }
                SessionSeen::Missing(why) => Err(why.clone()),
            };
            match (resumed, self.cli.resume_unavailable()) {
                (Ok(()), None) => proven.verified.push(Capability::Resume),
                (Ok(()), Some(why)) => proven.problems.push(format!("resume: {why}")),
                (Err(problem), _) => proven.problems.push(format!(
                    "resume: {}; {}{}",
                    self.redact(&problem),
                    plan.upgrade,
                    plan.resume_hint
                )),
            }
        }
        Ok(proven)
    }
}

/// What the format and resume probes proved.
#[derive(Debug, Default)]
struct Proven {
    verified: Vec<Capability>,
    problems: Vec<String>,
}

#[async_trait::async_trait]
impl<C: AgentCli> Backend for AgentCliBackend<C> {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: self.name().to_owned(),
            capabilities: Self::declared(),
            adapter_version: agent_program::adapter_version(C::KIND, ""),
        }
    }

    fn verification_key(&self) -> Option<String> {
        agent_program::verification_key(C::KIND, self.program(), self.cli.config())
    }

    async fn verify(&self) -> Verification {
        let (version, proven) = match C::PROBES.version {
            VersionOrder::Before => {
                let version = match self.cli.version().await {
                    Ok(version) => version,
                    Err(problem) => return self.refused(&problem),
                };
                let tools = version.tools_refused.is_none();
                (version, self.prove(tools).await)
            }
            VersionOrder::Alongside => {
                let (version, proven) = tokio::join!(self.cli.version(), self.prove(true));
                match version {
                    Ok(version) => (version, proven),
                    Err(problem) => return self.refused(&problem),
                }
            }
        };
        let adapter_version = agent_program::adapter_version(C::KIND, &version.label);
        let mut proven = match proven {
            Ok(proven) => proven,
            Err(problem) => {
                return format_unproven(
                    self.name(),
                    adapter_version,
                    &self.redact(&problem.to_string()),
                    C::INSTALL_HINT,
                );
            }
        };
        let mut verified = vec![
            Capability::Text,
            Capability::Files,
            Capability::Stream,
            Capability::Usage,
        ];
        let mut problems = Vec::new();
        if let ToolsProof::VersionProbe { flags } = C::PROBES.tools {
            match &version.tools_refused {
                None => verified.push(Capability::Tools),
                Some(refused) => problems.push(format!(
                    "tools: `{}` does not accept {flags}, so the tool policy cannot be held ({}); {}",
                    self.program(),
                    self.redact(refused),
                    C::PROBES.upgrade
                )),
            }
        }
        verified.append(&mut proven.verified);
        problems.append(&mut proven.problems);
        crate::execution::verify_cancel(&mut verified, &mut problems);
        Verification {
            verified,
            adapter_version,
            problems,
        }
    }

    async fn execute(&self, request: &ContractRequest, ctx: ExecutionContext) -> ContractResult {
        if request.workspace.root.is_empty() {
            return ContractResult::failed(Error::new(
                ErrorCode::Internal,
                format!("the {} backend needs a workspace root to run in", C::KIND),
                SideEffects::None,
            ));
        }
        let attempt = agent_program::resume_session(&ctx, self.name())
            .and_then(|resume| self.cli.attempt(request, &ctx, resume));
        let Attempt {
            mut run,
            mut parser,
            keep,
            keep_dirs,
            mut notes,
        } = match attempt {
            Ok(attempt) => attempt,
            Err(error) => return ContractResult::failed(error),
        };
        run.env.extend(crate::execution::identity_env(
            &request.execution_id,
            ctx.attempt,
        ));
        let mut result = agent_program::drive(run, &mut parser, &ctx).await;
        if let Some(usage) = self.cli.usage_after_exit(&parser, &mut notes) {
            result.usage = usage;
        }
        drop(keep);
        drop(keep_dirs);
        self.cli
            .after_run(request, &ctx, &parser, &result, &mut notes);
        for note in &notes {
            crate::output::push_line(&mut result.logs, note);
        }
        let transient = matches!(
            parser.verdict(),
            Verdict::Failed {
                code: ErrorCode::ProviderUnavailable,
                ..
            }
        );
        let failed = result.outcome == Outcome::Failed;
        if let Some(err) = result.err.as_mut() {
            err.reason = self.redact(&err.reason);
            if C::RETRY_UNAVAILABLE && transient && failed {
                err.retryable = true;
            }
        }
        result.logs = self.redact(&result.logs);
        result
    }
}

/// `problem; hint`, unless the problem already ends in the hint (a program not found
/// on PATH is reported with it by [`agent_program::probe_output`] and [`agent_program::probe_stream`]).
fn with_install_hint(problem: &str, hint: &str) -> String {
    if problem.contains(hint) {
        problem.to_owned()
    } else {
        format!("{problem}; {hint}")
    }
}

/// The verification of a program whose version is known but whose format probe
/// failed: nothing verified, one problem naming the backend and what to install.
fn format_unproven(
    name: &str,
    adapter_version: String,
    problem: &str,
    install_hint: &str,
) -> Verification {
    Verification {
        verified: Vec::new(),
        adapter_version,
        problems: vec![format!(
            "backend `{name}`: {}",
            with_install_hint(problem, install_hint)
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_handle_is_checked_once_for_every_agent_cli() {
        assert_eq!(resume_handle::<Scripted>("s", None), Ok(None));
        let id = "0cb916db-26aa-40f2-86b5-1ba81b225fd2";
        assert_eq!(resume_handle::<Scripted>("s", Some(id)), Ok(Some(id)));
        let name = resume_handle::<Scripted>("s", Some("my-session")).unwrap_err();
        assert_eq!(name.code, ErrorCode::Internal);
        assert_eq!(name.side_effects, SideEffects::None);
        assert_eq!(
            name.reason,
            "backend `s` cannot resume: the session handle is not a scripted session id (a UUID)"
        );
        // Not a contract handle at all: the contract's own reason.
        let bad = resume_handle::<Scripted>("s", Some("")).unwrap_err();
        assert!(
            bad.reason.starts_with("backend `s` cannot resume: "),
            "{}",
            bad.reason
        );
        assert!(
            !bad.reason.contains("scripted session id"),
            "{}",
            bad.reason
        );
        // OpenCode's own shape.
        assert!(resume_handle::<crate::opencode::OpenCode>("o", Some("ses_abc123")).is_ok());
        assert!(resume_handle::<crate::opencode::OpenCode>("o", Some(id)).is_err());
    }
    use crate::agent_program::Verdict;
    use agent_exec_contract::{Event, Usage};

    /// A program whose probes fail for what it was told to refuse; nothing runs.
    #[derive(Debug)]
    struct Scripted {
        config: ProgramConfig,
        refuses: &'static [&'static str],
    }

    #[derive(Default)]
    struct NoStream;

    impl StreamParser for NoStream {
        fn line(&mut self, _line: &[u8], _events: &mut Vec<Event>) {}
        fn verdict(&self) -> Verdict {
            Verdict::Pending
        }
        fn usage(&self) -> Usage {
            Usage::default()
        }
    }

    #[async_trait::async_trait]
    impl AgentCli for Scripted {
        const KIND: &'static str = "scripted";
        const DEFAULT_PROGRAM: &'static str = "scripted";
        const INSTALL_HINT: &'static str = "install scripted";
        const PROBES: ProbePlan = ProbePlan {
            version: VersionOrder::Before,
            tools: ToolsProof::FormatProbe { flags: "`--tools`" },
            structured_output: true,
            resume: true,
            upgrade: "upgrade scripted",
            resume_hint: ", and keep sessions",
        };
        const SESSION_HANDLE: &'static str = "a scripted session id (a UUID)";
        const RETRY_UNAVAILABLE: bool = false;
        type Parser = NoStream;

        fn config(&self) -> &ProgramConfig {
            &self.config
        }

        fn attempt(
            &self,
            _request: &ContractRequest,
            _ctx: &ExecutionContext,
            _resume: Option<&str>,
        ) -> Result<Attempt<NoStream>, Error> {
            Err(Error::new(
                ErrorCode::Internal,
                "not run",
                SideEffects::None,
            ))
        }

        async fn version(&self) -> Result<ProgramVersion, ProbeError> {
            if self.refuses.contains(&"version") {
                return Err(ProbeError::Unproven("no version".into()));
            }
            Ok(ProgramVersion::new("scripted 1.2"))
        }

        async fn probe(
            &self,
            _folder: &ProbeFolder,
            probe: Probe<'_>,
        ) -> Result<SessionSeen, ProbeError> {
            let refused = |what: &str| self.refuses.contains(&what);
            if refused("format")
                || (probe.tools && refused("tools"))
                || (probe.schema && refused("schema"))
                || (probe.resume.is_some() && refused("resume"))
            {
                return Err(ProbeError::Unproven(format!("refused {probe:?}")));
            }
            Ok(SessionSeen::Id("s-1".into()))
        }
    }

    async fn verify(refuses: &'static [&'static str]) -> Verification {
        AgentCliBackend::of(Scripted {
            config: ProgramConfig::new("x"),
            refuses,
        })
        .verify()
        .await
    }

    fn has(verification: &Verification, capability: Capability) -> bool {
        verification.verified.contains(&capability)
    }

    #[tokio::test]
    async fn a_program_that_proves_everything_verifies_everything_it_declares() {
        let all = verify(&[]).await;
        for capability in AgentCliBackend::<Scripted>::declared() {
            assert!(has(&all, capability.clone()), "{capability:?}: {all:?}");
        }
        assert_eq!(
            all.adapter_version,
            format!("scripted/{} (scripted 1.2)", env!("CARGO_PKG_VERSION"))
        );
    }

    #[tokio::test]
    async fn each_fallback_loses_only_what_it_could_not_prove_and_says_why() {
        let no_schema = verify(&["schema"]).await;
        assert!(
            !has(&no_schema, Capability::StructuredOutput),
            "{no_schema:?}"
        );
        assert!(has(&no_schema, Capability::Tools), "{no_schema:?}");
        assert!(
            no_schema.problems[0].starts_with("structured-output: refused")
                && no_schema.problems[0].ends_with("; upgrade scripted"),
            "{no_schema:?}"
        );

        // Without the tool flags the schema probe is not tried again.
        let no_tools = verify(&["tools"]).await;
        assert!(!has(&no_tools, Capability::Tools), "{no_tools:?}");
        assert!(
            !has(&no_tools, Capability::StructuredOutput),
            "{no_tools:?}"
        );
        assert!(has(&no_tools, Capability::Stream), "{no_tools:?}");
        assert!(has(&no_tools, Capability::Resume), "{no_tools:?}");
        assert!(
            no_tools
                .problems
                .iter()
                .any(|p| p.starts_with("tools: `scripted` does not run with `--tools`")),
            "{no_tools:?}"
        );

        let no_resume = verify(&["resume"]).await;
        assert!(!has(&no_resume, Capability::Resume), "{no_resume:?}");
        assert!(has(&no_resume, Capability::Tools), "{no_resume:?}");
        assert!(
            no_resume
                .problems
                .iter()
                .any(|p| p.starts_with("resume: refused") && p.ends_with(", and keep sessions")),
            "{no_resume:?}"
        );
    }

    #[tokio::test]
    async fn no_version_or_no_format_verifies_nothing_and_names_what_to_install() {
        for refuses in [&["version"][..], &["format"][..]] {
            let none = verify(refuses).await;
            assert!(none.verified.is_empty(), "{none:?}");
            assert_eq!(none.problems.len(), 1, "{none:?}");
            assert!(
                none.problems[0].starts_with("backend `x`: ")
                    && none.problems[0].ends_with("; install scripted"),
                "{none:?}"
            );
        }
    }
}
