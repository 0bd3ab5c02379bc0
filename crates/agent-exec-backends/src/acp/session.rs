//! One execution: spawn the agent, speak ACP to it over stdio, settle honestly.
//!
//! The agent runs as a [`ProcessTree`] (own process group, whole-tree termination),
//! exactly as `agent_program::drive` runs its programs; its stdin/stdout carry
//! newline-delimited JSON-RPC through the SDK's `Lines` transport, with our own
//! bounded line reader (a line over [`MAX_LINE`] ends the connection rather than being
//! buffered without bound). The SDK's dispatch loop hands messages to our handlers one
//! at a time, in arrival order, and a response is routed only after every message
//! before it was handled — so the events emitted by the `session/update` handler are in
//! the agent's order, and all of them are out before the prompt's answer is seen.
//!
//! Settling (what the protocol said × how the tree ended):
//!
//! | protocol                                  | tree                        | outcome                      |
//! |-------------------------------------------|-----------------------------|------------------------------|
//! | prompt answered `end_turn`                | terminated by us, all gone  | `succeeded` (agent text)     |
//! | `max_tokens` / `max_turn_requests`        | all gone                    | `failed` (budget exceeded)   |
//! | `refusal`                                 | all gone                    | `failed` (provider rejected) |
//! | `cancelled` after the policy refused a tool | all gone                  | `failed` (tool rejected)     |
//! | `cancelled` we did not ask for            | all gone                    | `unknown`                    |
//! | prompt answered with a JSON-RPC error     | all gone                    | `failed`                     |
//! | `initialize` / `session/new` refused      | all gone                    | `failed`, no side effects    |
//! | no answer: EOF, crash, leader killed      | —                           | `unknown`                    |
//! | nothing ever read, non-zero exit          | —                           | `failed` (invocation)        |
//! | canceled (`session/cancel` sent first)    | all gone                    | `canceled`                   |
//! | anything                                  | members survive SIGKILL     | `unknown` + cancel_requested |
//!
//! The last two rows are [`crate::agent_program::settle_tree`], shared with the
//! JSON-lines driver. A hang is bounded by the caller's deadline (the cancellation),
//! which is then a cancel.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, NewSessionRequest, PromptRequest,
    PromptResponse, ReadTextFileRequest, ReadTextFileResponse, RequestPermissionRequest, SessionId,
    SessionNotification, StopReason, TextContent, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, Client, Lines};
use agent_exec_contract::{
    Cancellation, ContractResult, Error, ErrorCode, Event, EventKind, EventSink, ExecutionContext,
    Outcome, SessionReporter, SideEffects, Usage,
};
use agent_exec_runtime::process::{ProcessTree, Termination};
use agent_exec_runtime::spawn::{LeaderCommand, Stdio};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use super::fs::WorkspaceFs;
use super::policy::Policy;
use super::updates::UpdateMapper;
use crate::agent_program::{MAX_LINE, settle_tree};
use crate::output::{Reader, join_bounded, push_line};

/// How often the tree is scanned while the agent runs (membership is sticky).
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How long the connection may still deliver after the leader exited on its own.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// How long `initialize` and `session/new` (or `session/load`) may each take: no turn
/// has run yet, so an agent silent for this long is a failure without side effects,
/// not a hang.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the agent may take to exit by itself once its stdin is closed, before the
/// tree gets SIGTERM. Short on purpose: codex-acp 0.16 never exits on EOF (measured:
/// still running 12 minutes later), so every run would pay this wait in full. The
/// turn is answered by then, and the agent records its conversation as it goes
/// (codex-acp: its rollout file, which the live resume test reloads after a SIGTERM),
/// so an agent cut short here loses nothing the contract or a resume needs.
const EXIT_ON_EOF: Duration = Duration::from_millis(50);

/// What one attempt needs, beyond the request.
pub(super) struct Launch {
    pub backend: String,
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    pub prompt: String,
    pub grace: Duration,
    /// The session to continue with `session/load` (a checked handle), instead of
    /// `session/new`.
    pub resume: Option<String>,
}

/// How far the protocol got (written as it goes, so an abandoned connection still
/// tells).
#[derive(Debug, Clone, Default)]
enum Progress {
    #[default]
    Starting,
    /// `initialize` was refused or not understood.
    InitRefused(String),
    /// `session/new` was refused.
    SessionRefused(String),
    /// Resume asked for, but the agent does not advertise `loadSession`.
    LoadUnsupported,
    /// `session/load` was refused.
    LoadRefused(String),
    /// The prompt was sent; no answer yet.
    Prompting,
    /// `session/cancel` was sent while the prompt ran.
    CancelSent,
    /// The prompt was answered.
    Answered(PromptResponse),
    /// The prompt was answered with a JSON-RPC error.
    PromptFailed(String),
    /// The connection ended with a request outstanding (EOF, transport error).
    Lost(String),
    /// Canceled before the prompt was sent.
    CanceledEarly,
}

/// State the handlers and the driver share.
struct Shared {
    mapper: UpdateMapper,
    progress: Progress,
    /// Something arrived from the agent (any message).
    heard: bool,
    notes: Vec<String>,
    cancel_sent: bool,
    /// Tools whose permission the policy refused, in order.
    refused: Vec<String>,
    /// Our session, once `session/new` answered (or as `session/load` was sent);
    /// updates for another are not ours.
    session: Option<SessionId>,
    /// `session/load` is replaying the earlier conversation: its updates are the
    /// earlier attempts' work, not this attempt's events (nor its tools).
    replaying: bool,
    /// How many updates the replay carried (for the logs).
    replayed: usize,
}

type SharedState = Arc<Mutex<Shared>>;

fn lock(shared: &SharedState) -> std::sync::MutexGuard<'_, Shared> {
    // A handler that panicked cannot leave the mapper half-updated in a way that
    // matters more than losing the run; keep going with what is there.
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How the process side ended, before settling.
enum Ending {
    /// The connection's main task finished (answered, refused, lost, canceled).
    Finished,
    /// The leader exited on its own while the protocol was still running.
    LeaderExited(std::io::Result<ExitStatus>),
}

/// Runs one attempt. Always returns a result.
pub(super) async fn run(
    launch: Launch,
    fs: WorkspaceFs,
    policy: Policy,
    ctx: &ExecutionContext,
) -> ContractResult {
    let mut command = LeaderCommand::new(&launch.program);
    command
        .args(&launch.args)
        .envs(&launch.env)
        .current_dir(&launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut tree = match ProcessTree::spawn(command) {
        Ok(tree) => tree,
        Err(e) => {
            return ContractResult::failed(Error::new(
                ErrorCode::ProviderUnavailable,
                format!(
                    "cannot start `{}` for backend `{}`: {e}",
                    launch.program, launch.backend
                ),
                SideEffects::None,
            ));
        }
    };
    let err_reader = Reader::tail(tree.child_mut().stderr.take());
    let (Some(stdin), Some(stdout)) = (
        tree.child_mut().stdin.take(),
        tree.child_mut().stdout.take(),
    ) else {
        let _ = tree.terminate(launch.grace).await;
        return ContractResult::failed(Error::new(
            ErrorCode::Internal,
            "the agent's stdio was not captured",
            SideEffects::None,
        ));
    };

    let shared: SharedState = Arc::new(Mutex::new(Shared {
        mapper: UpdateMapper::new(),
        progress: Progress::Starting,
        heard: false,
        notes: Vec::new(),
        cancel_sent: false,
        refused: Vec::new(),
        session: None,
        replaying: false,
        replayed: 0,
    }));
    // Boxed, not stack-pinned: it must really be dropped (closing the agent's stdin)
    // before the tree is waited for.
    let concluded = Arc::new(tokio::sync::Notify::new());
    let mut connection = Box::pin(converse(
        transport(stdin, stdout, Arc::clone(&shared)),
        Arc::clone(&shared),
        Arc::clone(&concluded),
        fs,
        policy,
        ctx.events.clone(),
        ctx.session.clone(),
        ctx.cancellation.clone(),
        Turn {
            prompt: launch.prompt.clone(),
            resume: launch.resume.clone(),
            grace: launch.grace,
        },
    ));

    let mut tick = tokio::time::interval(WATCH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ending = loop {
        tokio::select! {
            () = &mut connection => break Ending::Finished,
            // The conversation's end, without waiting for the SDK to wind the
            // connection down (measured: over 2 s with codex-acp, which keeps its
            // stdout open); nothing is owed to the agent once the turn is over.
            () = concluded.notified() => break Ending::Finished,
            status = tree.wait_leader() => {
                // Let what is already in the pipe be handled, but do not wait for a
                // member that inherited stdout and lives on.
                let drained = tokio::time::timeout(DRAIN_AFTER_EXIT, &mut connection).await;
                break match (drained, &lock(&shared).progress) {
                    (Ok(()), Progress::Answered(_)) => Ending::Finished,
                    _ => Ending::LeaderExited(status),
                };
            }
            _ = tick.tick() => { let _ = tree.live_members(); }
        }
    };
    // The connection (and with it the agent's stdin) is dropped here: EOF asks the
    // agent to exit; it gets a moment before the tree is terminated.
    drop(connection);
    let _ = tokio::time::timeout(EXIT_ON_EOF, tree.wait_leader()).await;
    let termination = tree.terminate(launch.grace).await;
    let (stderr_tail, _) = join_bounded(err_reader).await;

    let shared = lock(&shared);
    let mut logs = String::from_utf8_lossy(&stderr_tail).into_owned();
    for note in &shared.notes {
        push_line(&mut logs, note);
    }
    if let Some((used, size)) = shared.mapper.context() {
        push_line(
            &mut logs,
            &format!("context reported by the agent: {used} of {size} tokens"),
        );
    }
    let mut result = settle(&launch, &ending, &termination, &shared, &ctx.cancellation);
    if let Progress::Answered(response) = &shared.progress {
        result.usage = usage_of(response);
    }
    if result.outcome == Outcome::Succeeded {
        ctx.events.emit(Event::of_kind(EventKind::MessageEnd));
    }
    result.logs = logs;
    termination.report_leftovers(&launch.program, &mut result, &ctx.events);
    result
}

/// Token usage from the prompt response (ACP's end-of-turn `usage`, an unstable part
/// of the protocol); zero when the agent did not send it — never a guess.
fn usage_of(response: &PromptResponse) -> Usage {
    match &response.usage {
        Some(usage) => Usage {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
        },
        None => Usage::default(),
    }
}

fn settle(
    launch: &Launch,
    ending: &Ending,
    termination: &Termination,
    shared: &Shared,
    cancellation: &Cancellation,
) -> ContractResult {
    let program = &launch.program;
    let effects = if shared.mapper.tool_seen() {
        SideEffects::Possible
    } else {
        SideEffects::None
    };
    let canceled = cancellation.is_cancelled()
        && matches!(
            shared.progress,
            Progress::CanceledEarly | Progress::CancelSent | Progress::Prompting
        )
        || shared.cancel_sent;
    if let Some(result) = settle_tree(program, termination, canceled, cancellation, effects) {
        return result;
    }
    let unknown = |reason: String| {
        ContractResult::with_error(
            Outcome::Unknown,
            Error::new(ErrorCode::UnknownOutcome, reason, SideEffects::Possible),
        )
    };
    if let Ending::LeaderExited(status) = ending {
        let described = match status {
            Ok(status) => describe(*status),
            Err(e) => format!("was lost ({e})"),
        };
        let refused_at_start =
            !shared.heard && matches!(status, Ok(s) if s.code().is_some_and(|c| c != 0));
        return if refused_at_start {
            ContractResult::failed(Error::new(
                ErrorCode::ProviderRejected,
                format!("`{program}` {described} before answering `initialize` (see logs)"),
                SideEffects::None,
            ))
        } else {
            unknown(format!(
                "`{program}` {described} before answering the prompt{}",
                open_tools(&shared.mapper)
            ))
        };
    }
    match &shared.progress {
        Progress::Answered(response) => match response.stop_reason {
            StopReason::EndTurn => ContractResult::succeeded(shared.mapper.text()),
            StopReason::MaxTokens | StopReason::MaxTurnRequests => {
                ContractResult::failed(Error::new(
                    ErrorCode::BudgetExceeded,
                    format!(
                        "the agent stopped: {}",
                        stop_reason_name(response.stop_reason)
                    ),
                    effects,
                ))
            }
            StopReason::Refusal => ContractResult::failed(Error::new(
                ErrorCode::ProviderRejected,
                "the agent refused to continue (stop reason `refusal`)",
                effects,
            )),
            // Agents stop the turn when a permission is refused (codex-acp's reject
            // option is "abort"): that is the policy at work, not an unknown end.
            StopReason::Cancelled if !shared.refused.is_empty() => {
                ContractResult::failed(Error::new(
                    ErrorCode::ToolRejected,
                    format!(
                        "the agent stopped its turn after the tool policy refused {}",
                        shared
                            .refused
                            .iter()
                            .map(|tool| format!("`{tool}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    effects,
                ))
            }
            _ => unknown(format!(
                "the agent ended the turn with stop reason `{}`, which was not asked for",
                stop_reason_name(response.stop_reason)
            )),
        },
        Progress::PromptFailed(message) => ContractResult::failed(Error::new(
            ErrorCode::ProviderRejected,
            format!("the agent answered the prompt with an error: {message}"),
            effects,
        )),
        Progress::InitRefused(message) => ContractResult::failed(Error::new(
            ErrorCode::ProviderRejected,
            format!("`{program}` did not complete the ACP handshake: {message}"),
            SideEffects::None,
        )),
        Progress::SessionRefused(message) => ContractResult::failed(Error::new(
            ErrorCode::ProviderRejected,
            format!("`{program}` refused `session/new`: {message}"),
            SideEffects::None,
        )),
        Progress::LoadUnsupported => ContractResult::failed(Error::new(
            ErrorCode::MissingCapability,
            format!(
                "cannot resume: `{program}` does not advertise `loadSession` in its `initialize` answer"
            ),
            SideEffects::None,
        )),
        Progress::LoadRefused(message) => ContractResult::failed(Error::new(
            ErrorCode::ProviderRejected,
            format!("`{program}` refused `session/load`: {message}"),
            SideEffects::None,
        )),
        Progress::Lost(reason) if !shared.heard => ContractResult::failed(Error::new(
            ErrorCode::ProviderRejected,
            format!("`{program}` closed the connection before answering anything: {reason}"),
            SideEffects::None,
        )),
        Progress::Lost(reason) => unknown(format!(
            "the connection to `{program}` ended before the prompt was answered: {reason}{}",
            open_tools(&shared.mapper)
        )),
        Progress::Starting
        | Progress::Prompting
        | Progress::CancelSent
        | Progress::CanceledEarly => unknown(format!(
            "the connection to `{program}` ended without an answer to the prompt{}",
            open_tools(&shared.mapper)
        )),
    }
}

fn open_tools(mapper: &UpdateMapper) -> String {
    let open = mapper.open_tools();
    if open.is_empty() {
        String::new()
    } else {
        format!(" (tool calls still open: {})", open.join(", "))
    }
}

fn stop_reason_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::MaxTurnRequests => "max_turn_requests",
        StopReason::Refusal => "refusal",
        StopReason::Cancelled => "cancelled",
        _ => "unrecognised",
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

/// The JSON-RPC line transport over the agent's stdio.
fn transport(
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    shared: SharedState,
) -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let outgoing = Box::pin(futures::sink::unfold(
        stdin,
        |mut stdin, line: String| async move {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>(stdin)
        },
    ));
    let reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let incoming = futures::stream::unfold(
        (reader, shared, false),
        |(mut reader, shared, failed)| async move {
            if failed {
                return None;
            }
            let mut line = Vec::new();
            match read_bounded_line(&mut reader, &mut line).await {
                Ok(true) => {
                    lock(&shared).heard = true;
                    let text = String::from_utf8_lossy(trim_newline(&line)).into_owned();
                    Some((Ok(text), (reader, shared, false)))
                }
                Ok(false) => None,
                Err(e) => Some((Err(e), (reader, shared, true))),
            }
        },
    );
    Lines::new(outgoing, Box::pin(incoming))
}

/// Reads one line (up to `\n`) into `line`; `Ok(false)` at EOF. A line longer than
/// [`MAX_LINE`] is an error: a JSON-RPC message cut short cannot be answered.
async fn read_bounded_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(!line.is_empty());
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE + 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the agent wrote a line longer than {MAX_LINE} bytes"),
            ));
        }
        line.extend_from_slice(available.get(..take).unwrap_or_default());
        reader.consume(take);
        if done {
            return Ok(true);
        }
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The client side of the conversation. Records its progress in `shared`; never
/// returns an error (a protocol failure is a [`Progress`]).
#[allow(clippy::too_many_arguments)]
async fn converse(
    transport: impl agent_client_protocol::ConnectTo<Client> + 'static,
    shared: SharedState,
    concluded: Arc<tokio::sync::Notify>,
    fs: WorkspaceFs,
    policy: Policy,
    events: EventSink,
    reporter: SessionReporter,
    cancellation: Cancellation,
    turn: Turn,
) {
    let fs = Arc::new(fs);
    let policy = Arc::new(policy);
    let on_update = {
        let shared = Arc::clone(&shared);
        let events = events.clone();
        async move |notification: SessionNotification, _cx: ConnectionTo<Agent>| {
            let mut batch = Vec::new();
            {
                let mut shared = lock(&shared);
                // Updates for another session are not this execution's (SessionScope
                // isolation); before `session/new` answered, ours is the only one.
                if shared
                    .session
                    .as_ref()
                    .is_some_and(|ours| *ours != notification.session_id)
                {
                    shared.notes.push(format!(
                        "an update for another session ({}) was ignored",
                        notification.session_id.0
                    ));
                    return Ok(());
                }
                if shared.replaying {
                    shared.replayed += 1;
                    return Ok(());
                }
                shared.mapper.update(&notification.update, &mut batch);
            }
            // Emitted inside the dispatch loop: the next message is not handled
            // before these are out, so order holds across updates and responses.
            for event in batch {
                events.emit(event);
            }
            Ok(())
        }
    };
    let on_permission = {
        let shared = Arc::clone(&shared);
        let policy = Arc::clone(&policy);
        async move |request: RequestPermissionRequest,
                    responder: agent_client_protocol::v1::Responder<_>,
                    _cx: ConnectionTo<Agent>| {
            let decision = policy.decide(&request);
            let mut shared = lock(&shared);
            if !decision.allowed {
                shared.refused.push(decision.tool.clone());
            }
            shared.notes.push(format!(
                "permission for tool `{}` {} by the tool policy",
                decision.tool,
                if decision.allowed {
                    "granted once"
                } else {
                    "refused"
                }
            ));
            drop(shared);
            responder.respond(decision.response)
        }
    };
    let on_read = {
        let shared = Arc::clone(&shared);
        let fs = Arc::clone(&fs);
        async move |request: ReadTextFileRequest,
                    responder: agent_client_protocol::v1::Responder<_>,
                    _cx: ConnectionTo<Agent>| {
            match fs.read_text(&request.path, request.line, request.limit) {
                Ok(content) => responder.respond(ReadTextFileResponse::new(content)),
                Err(refusal) => {
                    lock(&shared)
                        .notes
                        .push(format!("fs/read_text_file refused: {refusal}"));
                    responder.respond_with_error(refusal.to_rpc_error())
                }
            }
        }
    };
    let on_write = {
        let shared = Arc::clone(&shared);
        let fs = Arc::clone(&fs);
        async move |request: WriteTextFileRequest,
                    responder: agent_client_protocol::v1::Responder<_>,
                    _cx: ConnectionTo<Agent>| {
            match fs.write_text(&request.path, &request.content) {
                Ok(()) => responder.respond(WriteTextFileResponse::new()),
                Err(refusal) => {
                    lock(&shared)
                        .notes
                        .push(format!("fs/write_text_file refused: {refusal}"));
                    responder.respond_with_error(refusal.to_rpc_error())
                }
            }
        }
    };

    let main = {
        let shared = Arc::clone(&shared);
        let root = fs.root().to_path_buf();
        async move |cx: ConnectionTo<Agent>| {
            let progress = conversation(&cx, &shared, root, turn, &reporter, &cancellation).await;
            lock(&shared).progress = progress;
            // `notify_one` keeps the permit if the driver is not waiting yet.
            concluded.notify_one();
            Ok(())
        }
    };
    let served = Client
        .v1()
        .name("agent-exec")
        .on_receive_notification(on_update, agent_client_protocol::on_receive_notification!())
        .on_receive_request(on_permission, agent_client_protocol::on_receive_request!())
        .on_receive_request(on_read, agent_client_protocol::on_receive_request!())
        .on_receive_request(on_write, agent_client_protocol::on_receive_request!())
        .connect_with(transport, main)
        .await;
    if let Err(e) = served {
        let mut shared = lock(&shared);
        shared.notes.push(format!("ACP connection: {}", e.message));
        if matches!(
            shared.progress,
            Progress::Starting | Progress::Prompting | Progress::CancelSent
        ) {
            shared.progress = Progress::Lost(e.message.clone());
        }
    }
}

/// What the conversation sends: the prompt, the session to resume (if any), the
/// cancel grace.
struct Turn {
    prompt: String,
    resume: Option<String>,
    grace: Duration,
}

/// initialize → session/new (or session/load) → session/prompt, each raced with the
/// cancellation.
async fn conversation(
    cx: &ConnectionTo<Agent>,
    shared: &SharedState,
    root: std::path::PathBuf,
    turn: Turn,
    reporter: &SessionReporter,
    cancellation: &Cancellation,
) -> Progress {
    let Turn {
        prompt,
        resume,
        grace,
    } = turn;
    let initialize = cx.send_request(initialize_request()).block_task();
    let initialized = tokio::select! {
        biased;
        () = cancellation.cancelled() => return Progress::CanceledEarly,
        () = cx.incoming_closed() => return Progress::Lost("the agent closed its stdout".into()),
        () = tokio::time::sleep(HANDSHAKE_TIMEOUT) => {
            return Progress::InitRefused(format!("no answer to `initialize` within {HANDSHAKE_TIMEOUT:?}"));
        }
        answer = initialize => answer,
    };
    let can_load = match initialized {
        Ok(response) => {
            if let Err(problem) = check_version(&response) {
                return Progress::InitRefused(problem.to_string());
            }
            response.agent_capabilities.load_session
        }
        Err(e) => return Progress::InitRefused(rpc_error_text(&e)),
    };

    let session_id = match resume {
        None => match new_session(cx, root, cancellation).await {
            Ok(id) => id,
            Err(progress) => return progress,
        },
        Some(_) if !can_load => return Progress::LoadUnsupported,
        Some(id) => {
            let id = SessionId::new(id);
            if let Err(progress) = load_session(cx, shared, root, id.clone(), cancellation).await {
                return progress;
            }
            id
        }
    };
    // Journaled at once: a runner killed from here on leaves the handle behind.
    if let Err(problem) = reporter.report(&session_id.0) {
        lock(shared).notes.push(format!(
            "the agent's session id was not reported, so this attempt cannot be resumed: {problem}"
        ));
    }

    {
        let mut shared = lock(shared);
        shared.session = Some(session_id.clone());
        shared.progress = Progress::Prompting;
    }
    let answer = cx
        .send_request(PromptRequest::new(
            session_id.clone(),
            vec![ContentBlock::Text(TextContent::new(prompt))],
        ))
        .block_task();
    tokio::pin!(answer);
    let answered = tokio::select! {
        biased;
        answer = &mut answer => answer,
        () = cx.incoming_closed() => return Progress::Lost("the agent closed its stdout".into()),
        () = cancellation.cancelled() => {
            {
                let mut shared = lock(shared);
                shared.cancel_sent = true;
                shared.progress = Progress::CancelSent;
            }
            if let Err(e) = cx.send_notification(CancelNotification::new(session_id)) {
                return Progress::Lost(format!("session/cancel could not be sent: {}", e.message));
            }
            // The agent should answer `cancelled` promptly; the tree is terminated
            // either way, and only a gone tree makes the outcome `canceled`.
            match tokio::time::timeout(grace, &mut answer).await {
                Ok(answer) => answer,
                Err(_) => return Progress::CancelSent,
            }
        }
    };
    match answered {
        Ok(response) => Progress::Answered(response),
        Err(e) if cx.is_incoming_closed() => Progress::Lost(e.message),
        Err(e) => Progress::PromptFailed(rpc_error_text(&e)),
    }
}

/// `session/new` in `root`: the new session's id, or how it failed.
async fn new_session(
    cx: &ConnectionTo<Agent>,
    root: std::path::PathBuf,
    cancellation: &Cancellation,
) -> Result<SessionId, Progress> {
    let new_session = cx.send_request(NewSessionRequest::new(root)).block_task();
    tokio::select! {
        biased;
        () = cancellation.cancelled() => Err(Progress::CanceledEarly),
        () = cx.incoming_closed() => Err(Progress::Lost("the agent closed its stdout".into())),
        () = tokio::time::sleep(HANDSHAKE_TIMEOUT) => Err(Progress::SessionRefused(format!(
            "no answer to `session/new` within {HANDSHAKE_TIMEOUT:?}"
        ))),
        answer = new_session => match answer {
            Ok(session) => Ok(session.session_id),
            Err(e) => Err(Progress::SessionRefused(rpc_error_text(&e))),
        },
    }
}

/// `session/load` of `id` in `root`. The agent replays the earlier conversation as
/// `session/update`s before it answers (ACP: "When all the conversation entries have
/// been streamed to the Client, the Agent MUST respond"), and the SDK handles every
/// message before the answer is routed — so everything between sending the request
/// and its answer is replay, which `replaying` keeps out of this attempt's events and
/// its side effects (the earlier attempt's tools are not this one's). Decision: not
/// the unstable `session/resume` (no replay to filter, but not in protocol v1).
async fn load_session(
    cx: &ConnectionTo<Agent>,
    shared: &SharedState,
    root: std::path::PathBuf,
    id: SessionId,
    cancellation: &Cancellation,
) -> Result<(), Progress> {
    {
        let mut shared = lock(shared);
        shared.session = Some(id.clone());
        shared.replaying = true;
    }
    let load = cx
        .send_request(LoadSessionRequest::new(id, root))
        .block_task();
    let answered = tokio::select! {
        biased;
        () = cancellation.cancelled() => Err(Progress::CanceledEarly),
        () = cx.incoming_closed() => Err(Progress::Lost("the agent closed its stdout".into())),
        () = tokio::time::sleep(HANDSHAKE_TIMEOUT) => Err(Progress::LoadRefused(format!(
            "no answer to `session/load` within {HANDSHAKE_TIMEOUT:?}"
        ))),
        answer = load => answer.map(|_| ()).map_err(|e| Progress::LoadRefused(rpc_error_text(&e))),
    };
    let mut shared = lock(shared);
    shared.replaying = false;
    let replayed = shared.replayed;
    shared.notes.push(format!(
        "session/load replayed {replayed} update(s) of the earlier conversation; not emitted as this attempt's events"
    ));
    answered
}

/// A JSON-RPC error as text: its message, and its data when there is some (the SDK
/// puts the reason for a refused handshake there).
fn rpc_error_text(error: &agent_client_protocol::Error) -> String {
    match &error.data {
        Some(data) => format!("{} ({data})", error.message),
        None => error.message.clone(),
    }
}

/// The `initialize` request: protocol v1, fs read/write served, no terminal.
pub(super) fn initialize_request() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new().fs(FileSystemCapabilities::new()
                .read_text_file(true)
                .write_text_file(true)),
        )
        .client_info(Implementation::new("agent-exec", env!("CARGO_PKG_VERSION")))
}

/// We speak ACP v1 only.
pub(super) fn check_version(response: &InitializeResponse) -> Result<(), VersionMismatch> {
    if response.protocol_version == ProtocolVersion::V1 {
        Ok(())
    } else {
        Err(VersionMismatch(response.protocol_version.as_u16()))
    }
}

/// The agent speaks another ACP version than ours (1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the agent answered protocol version {0}; agent-exec speaks version 1")]
pub(super) struct VersionMismatch(pub(super) u16);

#[cfg(test)]
mod tests {
    //! Settling, driven by scripted peers: `sh` speaking just enough JSON-RPC (the live
    //! tests in `tests/acp_live.rs` use the real codex-acp).
    use super::super::AcpBackend;
    use crate::agent_program::ProgramConfig;
    use agent_exec_contract::{
        Backend, CancelCause, ContractRequest, ContractResult, ErrorCode, Event, EventKind,
        EventSink, ExecutionContext, Outcome, SideEffects, ToolPolicy, WorkspaceHandle,
    };

    /// Shell helpers: `answer RESULT` reads one request and answers it; `request_id`
    /// holds the last request's id.
    const PEER: &str = r#"
answer() {
  IFS= read -r line || exit 0
  request_id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$request_id" "$1"
}
update() {
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":%s}}\n' "$1"
}
handshake() {
  answer '{"protocolVersion":1,"agentInfo":{"name":"fake","version":"1"}}'
  answer '{"sessionId":"s"}'
  IFS= read -r line
  prompt_id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
  printf '%s\n' "$line" > prompt.json
}
end_turn() {
  printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"%s"}}\n' "$prompt_id" "$1"
}
"#;

    async fn run_peer(
        script: &str,
        workspace: &std::path::Path,
        cancel_on_tool_start: bool,
    ) -> (ContractResult, Vec<Event>) {
        let (result, events, _) =
            run_peer_resuming(script, workspace, cancel_on_tool_start, None).await;
        (result, events)
    }

    /// [`run_peer`], resuming `resume` when given; also returns the handles reported.
    async fn run_peer_resuming(
        script: &str,
        workspace: &std::path::Path,
        cancel_on_tool_start: bool,
        resume: Option<&str>,
    ) -> (ContractResult, Vec<Event>, Vec<String>) {
        let mut config = ProgramConfig::new("acp-test");
        config.program = Some("sh".into());
        config.args = vec!["-c".into(), format!("{PEER}\n{script}")];
        config.grace_ms = 500;
        let request = ContractRequest {
            prompt: "go".into(),
            workspace: WorkspaceHandle {
                root: workspace.display().to_string(),
                ..WorkspaceHandle::default()
            },
            tool_policy: ToolPolicy {
                profile: "workspace".into(),
                allowlist: Vec::new(),
            },
            ..ContractRequest::default()
        };
        let (sink, mut rx) = EventSink::channel();
        let mut ctx = ExecutionContext::new(sink);
        let (reporter, mut handles) = agent_exec_contract::SessionReporter::channel();
        ctx.session = reporter;
        ctx.resume = resume.map(|session| agent_exec_contract::ResumeFrom {
            session: session.to_owned(),
            attempt: 1,
            original_prompt: "first".into(),
        });
        // Events are collected as they come; the cancel (if asked) fires once the
        // agent's tool call was seen, not after a guessed delay.
        let cancellation = ctx.cancellation.clone();
        let collector = tokio::spawn(async move {
            use futures::StreamExt as _;
            let mut events: Vec<Event> = Vec::new();
            while let Some(event) = rx.next().await {
                if cancel_on_tool_start && event.kind == EventKind::ToolExecStart {
                    cancellation.cancel(CancelCause::Caller);
                }
                events.push(event);
            }
            events
        });
        let result = AcpBackend::new(config).execute(&request, ctx).await;
        let events = collector.await.unwrap();
        let mut reported = Vec::new();
        while let Ok(handle) = handles.try_recv() {
            reported.push(handle);
        }
        (result, events, reported)
    }

    #[tokio::test]
    async fn the_new_sessions_id_is_reported_as_the_handle() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _, handles) = run_peer_resuming(
            "handshake; end_turn end_turn; cat >/dev/null",
            dir.path(),
            false,
            None,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
        assert_eq!(handles, ["s"]);
    }

    #[tokio::test]
    async fn session_load_replay_is_not_this_attempts_events_or_tools() {
        let dir = tempfile::tempdir().unwrap();
        // The agent replays the old turn (its tool call included) before it answers
        // `session/load`, then runs the new prompt.
        let (result, events, handles) = run_peer_resuming(
            r#"cd "$0" 2>/dev/null
answer '{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}'
IFS= read -r line; printf '%s\n' "$line" > load.json
load_id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
update '{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"first"}}'
update '{"sessionUpdate":"tool_call","toolCallId":"old","title":"rm -rf build","kind":"execute","status":"in_progress"}'
update '{"sessionUpdate":"tool_call_update","toolCallId":"old","status":"completed"}'
update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"old answer"}}'
printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$load_id"
IFS= read -r line; prompt_id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
printf '%s\n' "$line" > prompt.json
update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"new answer"}}'
end_turn end_turn
cat >/dev/null"#,
            dir.path(),
            false,
            Some("s"),
        )
        .await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
        assert_eq!(result.text, "new answer");
        let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(kinds, [EventKind::TextDelta, EventKind::MessageEnd]);
        assert!(
            result.logs.contains("session/load replayed 4 update(s)"),
            "{}",
            result.logs
        );
        let load = std::fs::read_to_string(dir.path().join("load.json")).unwrap();
        assert!(load.contains(r#""method":"session/load""#), "{load}");
        assert!(load.contains(r#""sessionId":"s""#), "{load}");
        let prompt = std::fs::read_to_string(dir.path().join("prompt.json")).unwrap();
        assert!(prompt.contains(r#""method":"session/prompt""#), "{prompt}");
        assert_eq!(handles, ["s"], "the resumed session is reported again");

        // The replayed tool is not this attempt's side effect: a failure after the
        // replay says `none`.
        let (result, _, _) = run_peer_resuming(
            r#"answer '{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}'
IFS= read -r line; load_id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
update '{"sessionUpdate":"tool_call","toolCallId":"old","title":"rm","kind":"delete","status":"completed"}'
printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$load_id"
IFS= read -r line; prompt_id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
end_turn max_tokens
cat >/dev/null"#,
            dir.path(),
            false,
            Some("s"),
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        assert_eq!(err(&result).1, SideEffects::None);
    }

    #[tokio::test]
    async fn resume_without_load_session_or_with_a_bad_handle_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _, handles) = run_peer_resuming(
            r#"cd "$0" 2>/dev/null
answer '{"protocolVersion":1,"agentCapabilities":{"loadSession":false}}'
IFS= read -r line && printf '%s\n' "$line" > next.json
cat >/dev/null"#,
            dir.path(),
            false,
            Some("s"),
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        let (code, effects, reason) = err(&result);
        assert_eq!(
            (code, effects),
            (ErrorCode::MissingCapability, SideEffects::None)
        );
        assert!(reason.contains("loadSession"), "{reason}");
        assert!(handles.is_empty());
        // Nothing was asked after the handshake: no session/new passed off as a resume.
        assert!(!dir.path().join("next.json").exists());

        // A handle that is not an id never reaches the agent (which is not started).
        let (result, _, _) = run_peer_resuming(
            r#"cd "$0" 2>/dev/null; echo started > started.txt; cat >/dev/null"#,
            dir.path(),
            false,
            Some("--config=evil"),
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        let (code, effects, reason) = err(&result);
        assert_eq!((code, effects), (ErrorCode::Internal, SideEffects::None));
        assert!(reason.contains("cannot resume: "), "{reason}");
        assert!(!dir.path().join("started.txt").exists());
    }

    fn err(result: &ContractResult) -> (ErrorCode, SideEffects, String) {
        let err = result.err.clone().unwrap();
        (err.code, err.side_effects, err.reason)
    }

    #[tokio::test]
    async fn end_turn_is_success_with_the_text_and_events_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (result, events) = run_peer(
            r#"cd "$0" 2>/dev/null; handshake
update '{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}'
update '{"sessionUpdate":"tool_call","toolCallId":"t","title":"ls","kind":"read","status":"in_progress"}'
update '{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}'
printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"intruder"}}}}\n'
update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"all "}}'
update '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}'
end_turn end_turn
cat >/dev/null"#,
            dir.path(),
            false,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
        assert_eq!(
            result.text, "all done",
            "another session's update was mixed in"
        );
        assert!(
            result.logs.contains("another session (other)"),
            "{}",
            result.logs
        );
        let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                EventKind::ReasoningDelta,
                EventKind::ToolExecStart,
                EventKind::ToolExecEnd,
                EventKind::TextDelta,
                EventKind::TextDelta,
                EventKind::MessageEnd
            ]
        );
        // The prompt went out as one text block in the session we were given.
        let prompt = std::fs::read_to_string(dir.path().join("prompt.json")).unwrap();
        assert!(prompt.contains(r#""sessionId":"s""#) && prompt.contains(r#""text":"go""#));
    }

    #[tokio::test]
    async fn a_program_that_exits_at_once_is_a_rejected_invocation() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _) = run_peer("echo 'bad flag' >&2; exit 3", dir.path(), false).await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        let (code, effects, _) = err(&result);
        assert_eq!(code, ErrorCode::ProviderRejected);
        assert_eq!(effects, SideEffects::None);
        assert!(result.logs.contains("bad flag"), "{}", result.logs);
    }

    #[tokio::test]
    async fn a_refused_handshake_or_another_protocol_version_is_failed() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _) = run_peer(
            r#"IFS= read -r line; id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\).*/\1/p')
printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"Authentication required"}}\n' "$id"
cat >/dev/null"#,
            dir.path(),
            false,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        let (code, effects, reason) = err(&result);
        assert_eq!(
            (code, effects),
            (ErrorCode::ProviderRejected, SideEffects::None)
        );
        assert!(reason.contains("Authentication required"), "{reason}");

        let (result, _) = run_peer(
            r#"answer '{"protocolVersion":2}'; cat >/dev/null"#,
            dir.path(),
            false,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        assert!(err(&result).2.contains("ACP handshake"), "{result:#?}");
    }

    #[tokio::test]
    async fn an_agent_that_ends_without_answering_the_prompt_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _) = run_peer(
            r#"handshake
update '{"sessionUpdate":"tool_call","toolCallId":"t","title":"rm","kind":"delete"}'
exit 0"#,
            dir.path(),
            false,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:#?}");
        let (code, effects, reason) = err(&result);
        assert_eq!(
            (code, effects),
            (ErrorCode::UnknownOutcome, SideEffects::Possible)
        );
        assert!(reason.contains("tool calls still open: delete"), "{reason}");
    }

    #[tokio::test]
    async fn a_cancelled_turn_nobody_asked_for_is_unknown_and_max_tokens_is_failed() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _) = run_peer(
            "handshake; end_turn cancelled; cat >/dev/null",
            dir.path(),
            false,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Unknown, "{result:#?}");
        let (result, _) = run_peer(
            "handshake; end_turn max_tokens; cat >/dev/null",
            dir.path(),
            false,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
        assert_eq!(err(&result).0, ErrorCode::BudgetExceeded);
    }

    #[tokio::test]
    async fn cancel_sends_session_cancel_and_is_canceled_once_the_tree_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (result, _) = run_peer(
            r#"handshake
update '{"sessionUpdate":"tool_call","toolCallId":"t","title":"sleep","kind":"execute","status":"in_progress"}'
IFS= read -r line; printf '%s\n' "$line" > cancel.json
end_turn cancelled
cat >/dev/null"#,
            dir.path(),
            true,
        )
        .await;
        assert_eq!(result.outcome, Outcome::Canceled, "{result:#?}");
        let (code, effects, _) = err(&result);
        assert_eq!(
            (code, effects),
            (ErrorCode::Canceled, SideEffects::Possible)
        );
        let cancel = std::fs::read_to_string(dir.path().join("cancel.json")).unwrap();
        assert!(cancel.contains(r#""method":"session/cancel""#), "{cancel}");
    }

    #[tokio::test]
    async fn an_fs_read_outside_the_root_is_an_error_reply_never_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "TOP-SECRET").unwrap();
        std::os::unix::fs::symlink(dir.path(), workspace.join("up")).unwrap();
        std::fs::write(workspace.join("in.txt"), "inside").unwrap();
        let root = std::fs::canonicalize(&workspace).unwrap();
        let script = format!(
            r#"handshake
printf '{{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{{"sessionId":"s","path":"{root}/up/secret.txt"}}}}\n'
IFS= read -r reply; printf '%s\n' "$reply" > outside.json
printf '{{"jsonrpc":"2.0","id":"r2","method":"fs/read_text_file","params":{{"sessionId":"s","path":"{root}/in.txt"}}}}\n'
IFS= read -r reply; printf '%s\n' "$reply" > inside.json
printf '{{"jsonrpc":"2.0","id":"r3","method":"terminal/create","params":{{"sessionId":"s","command":"ls"}}}}\n'
IFS= read -r reply; printf '%s\n' "$reply" > terminal.json
end_turn end_turn
cat >/dev/null"#,
            root = root.display()
        );
        let (result, _) = run_peer(&script, &workspace, false).await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
        let outside = std::fs::read_to_string(workspace.join("outside.json")).unwrap();
        assert!(outside.contains(r#""error""#), "{outside}");
        assert!(outside.contains("outside the workspace root"), "{outside}");
        assert!(!outside.contains("TOP-SECRET"), "{outside}");
        let inside = std::fs::read_to_string(workspace.join("inside.json")).unwrap();
        assert!(inside.contains(r#""content":"inside""#), "{inside}");
        let terminal = std::fs::read_to_string(workspace.join("terminal.json")).unwrap();
        assert!(
            terminal.contains("-32601"),
            "terminals are declined: {terminal}"
        );
        assert!(
            result.logs.contains("fs/read_text_file refused"),
            "{}",
            result.logs
        );
    }
}
