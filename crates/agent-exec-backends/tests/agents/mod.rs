//! What the live tests of the agent-CLI backends share: resolving a backend with a
//! given verification without running its probe again, requests, runs under the
//! runtime with a helper acting mid-run, pid files, finding and killing an agent
//! process, the cancel and kill verdicts, and resumed runs. (The real programs:
//! `test_support::peers::npm_bin`.)
#![allow(clippy::unwrap_used, dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_exec_contract::{
    Backend, CancelCause, Cancellation, Capability, ContractRequest, ContractResult, ErrorCode,
    Event, EventKind, EventSink, ExecutionContext, Outcome, Resolved, ResumeFrom, SessionReporter,
    SideEffects, ToolPolicy, Verification, WorkspaceHandle,
};
use agent_exec_runtime::{RunOptions, Runtime};
use test_support::procfs::gone;

/// The dummy credential the scripted agents send their model server (one value, so a
/// test that looks for a leaked key knows what to look for).
pub const DUMMY_KEY: &str = "dummy-key-for-model-script";

/// The prompt of every resumed attempt here (the model must see it after the earlier
/// turns).
pub const CONTINUE_PROMPT: &str = "please continue";

/// `backend` resolved under `name` as if its probe had verified `verified`.
pub fn resolved(backend: Arc<dyn Backend>, name: &str, verified: &[Capability]) -> Resolved {
    Resolved {
        backend,
        name: name.into(),
        deprecation_warning: None,
        verification: Verification {
            verified: verified.to_vec(),
            ..Default::default()
        },
    }
}

/// The live process whose executable path contains `exe_contains` and whose working
/// directory is `workspace`: the agent program of a run there (each test has its own
/// workspace, so parallel tests do not see each other's agents; a tool's shell or the
/// npm launcher is `bash`/`node`, not the agent).
pub fn agent_pid_in(workspace: &Path, exe_contains: &str) -> Option<i32> {
    let workspace = std::fs::canonicalize(workspace).ok()?;
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let exe = std::fs::read_link(entry.path().join("exe")).ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            let alive = test_support::procfs::alive(pid);
            (alive && cwd == workspace && exe.to_string_lossy().contains(exe_contains))
                .then_some(pid)
        })
}

/// Attempt 1 of `request` on `backend`, straight through `Backend::execute` with a
/// session channel: once `ready()` holds (polled), the agent process (see
/// [`agent_pid_in`]) is SIGKILLed, as a dying machine would. Returns the result and
/// every session handle the backend reported.
pub async fn run_until_killed(
    backend: Arc<dyn Backend>,
    request: ContractRequest,
    agent_exe: &str,
    ready: impl Fn() -> bool,
) -> (ContractResult, Vec<String>) {
    let workspace = PathBuf::from(&request.workspace.root);
    let (sink, _events) = EventSink::channel();
    let mut ctx = ExecutionContext::new(sink);
    let (reporter, mut handles) = SessionReporter::channel();
    ctx.session = reporter;
    let mut run = tokio::spawn(async move { backend.execute(&request, ctx).await });
    let mut killed = false;
    for _ in 0..1200 {
        if run.is_finished() {
            break;
        }
        if ready()
            && let Some(pid) = agent_pid_in(&workspace, agent_exe)
        {
            kill_9(pid);
            killed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(killed, "the run ended or stalled before it could be killed");
    let result = tokio::time::timeout(Duration::from_secs(30), &mut run)
        .await
        .expect("a killed agent must not hang the run")
        .unwrap();
    (result, drain_handles(&mut handles))
}

/// One side of a `resume_figures` round: a backend and the scripted server it talks to.
pub struct FigureRig<'a> {
    pub backend: Arc<dyn Backend>,
    pub server: &'a model_script::ScriptedServer,
    pub request: ContractRequest,
}

/// One round of the ignored `resume_figures` tests (issue 12 §5): `fresh` runs the
/// scripted task whole; `killed` runs it as attempt 1, SIGKILLed (agent `agent_exe`)
/// with its second model request in flight, then as a resumed attempt 2, which must
/// succeed. Returns the line to print: wall time of the fresh run against the resumed
/// attempt alone, and the JSON bytes each sent to its scripted server.
pub async fn resume_figure_round(
    label: &str,
    agent_exe: &str,
    fresh: FigureRig<'_>,
    killed: FigureRig<'_>,
) -> String {
    let bytes = |server: &model_script::ScriptedServer, from: usize| -> usize {
        server.requests()[from..]
            .iter()
            .map(|r| r.body.to_string().len())
            .sum()
    };
    let started = std::time::Instant::now();
    let _ = run_resumed_or_fresh(fresh.backend, fresh.request, None).await;
    let fresh_wall = started.elapsed();

    let server = killed.server;
    let request = killed.request;
    let (_, reported) =
        run_until_killed(killed.backend.clone(), request.clone(), agent_exe, || {
            server.requests().len() >= 2
        })
        .await;
    let before = server.requests().len();
    let mut continuation = request.clone();
    continuation.prompt = CONTINUE_PROMPT.into();
    let started = std::time::Instant::now();
    let (result, _) = run_resumed(
        killed.backend,
        continuation,
        ResumeFrom {
            session: reported[0].clone(),
            attempt: 1,
            original_prompt: request.prompt.clone(),
        },
    )
    .await;
    let resumed_wall = started.elapsed();
    assert_eq!(
        result.outcome,
        agent_exec_contract::Outcome::Succeeded,
        "{result:#?}"
    );
    format!(
        "{label}: fresh run {fresh_wall:?}, {} requests, {} bytes sent | resumed attempt {resumed_wall:?}, {} request(s), {} bytes sent (attempt 1 sent {} bytes)",
        fresh.server.requests().len(),
        bytes(fresh.server, 0),
        server.requests().len() - before,
        bytes(server, before),
        bytes(server, 0) - bytes(server, before),
    )
}

/// Attempt `from.attempt + 1` of `request`, resuming `from` on `backend`. Returns the
/// result and the session handles this attempt reported.
pub async fn run_resumed(
    backend: Arc<dyn Backend>,
    request: ContractRequest,
    from: ResumeFrom,
) -> (ContractResult, Vec<String>) {
    run_resumed_or_fresh(backend, request, Some(from)).await
}

/// [`run_resumed`], or with `None` a fresh attempt 1 (with a session channel too).
pub async fn run_resumed_or_fresh(
    backend: Arc<dyn Backend>,
    request: ContractRequest,
    from: Option<ResumeFrom>,
) -> (ContractResult, Vec<String>) {
    let (sink, _events) = EventSink::channel();
    let mut ctx = ExecutionContext::new(sink);
    let (reporter, mut handles) = SessionReporter::channel();
    ctx.session = reporter;
    ctx.attempt = from.as_ref().map_or(1, |from| from.attempt + 1);
    ctx.resume = from;
    let result = tokio::time::timeout(Duration::from_secs(60), backend.execute(&request, ctx))
        .await
        .expect("the resumed run did not end within 60 s");
    (result, drain_handles(&mut handles))
}

fn drain_handles(handles: &mut futures::channel::mpsc::UnboundedReceiver<String>) -> Vec<String> {
    let mut got = Vec::new();
    while let Ok(handle) = handles.try_recv() {
        got.push(handle);
    }
    got
}

/// Every event the sink has received so far, in order.
pub fn drain(
    rx: &mut futures::channel::mpsc::UnboundedReceiver<agent_exec_contract::Event>,
) -> Vec<agent_exec_contract::Event> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

/// Waits for the pid a scripted shell command wrote to `pidfile` (with its newline:
/// the shell creates the file before it writes), or panics with the run's result if
/// the run ended first.
pub async fn wait_for_pid(
    pidfile: &Path,
    run: &mut tokio::task::JoinHandle<ContractResult>,
) -> i32 {
    // Generous: an agent starts in about half a second, far slower on a loaded CI machine.
    for _ in 0..1200 {
        if let Some(pid) = read_pid(pidfile) {
            return pid;
        }
        if run.is_finished() {
            panic!("the run ended before the tool started: {:#?}", run.await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the scripted shell command never wrote {}",
        pidfile.display()
    );
}

/// The pid a shell wrote to `path` with `echo $$ > path`, once whole: the shell creates
/// the file before it writes, so only a line ending in its newline is read.
fn read_pid(path: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(path).ok()?;
    text.ends_with('\n')
        .then(|| text.trim().parse().ok())
        .flatten()
}

/// Waits (polling, up to 60 s) for the pid a scripted tool's shell wrote to `path`: the
/// one way every live test learns that its tool has started.
pub async fn pid_in(path: &Path) -> i32 {
    for _ in 0..1200 {
        if let Some(pid) = read_pid(path) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never held a pid", path.display());
}

/// SIGKILLs `pid`, as a dying machine would: the live tests' way to kill an agent.
pub fn kill_9(pid: i32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -KILL {pid} failed");
}

/// Live processes carrying `execution_id` in their environment: every process of a run
/// inherits it, however far it wandered from the tree, so this is what a run left.
pub fn processes_of(execution_id: &str) -> Vec<i32> {
    use agent_exec_backends::command::EXECUTION_ID_VAR;
    test_support::procfs::with_env(format!("{EXECUTION_ID_VAR}={execution_id}"))
}

/// A request for `workspace` under the tool policy `profile` + `allowlist`: the shape
/// of every live test's request (only ids, prompts and policies differ).
pub fn request(
    workspace: &Path,
    execution_id: &str,
    prompt: &str,
    profile: &str,
    allowlist: &[&str],
) -> ContractRequest {
    ContractRequest {
        execution_id: execution_id.into(),
        prompt: prompt.into(),
        workspace: WorkspaceHandle {
            root: workspace.display().to_string(),
            ..WorkspaceHandle::default()
        },
        tool_policy: ToolPolicy {
            profile: profile.into(),
            allowlist: allowlist.iter().map(|name| (*name).to_owned()).collect(),
        },
        ..ContractRequest::default()
    }
}

/// The events of a run so far, as a `during` helper of [`run_in_runtime`] sees them.
pub type Seen = Arc<std::sync::Mutex<Vec<Event>>>;

/// Runs `request` through the runtime, failing past `limit`; `during` gets the
/// cancellation and the events seen so far while it runs (the live tests' cancels and
/// kills act mid-run, on what the stream shows). Returns the result and every event:
/// the event stream must end with the run.
pub async fn run_in_runtime(
    resolved: &Resolved,
    request: ContractRequest,
    limit: Duration,
    during: impl FnOnce(Cancellation, Seen) -> tokio::task::JoinHandle<()>,
) -> (ContractResult, Vec<Event>) {
    use futures::StreamExt as _;
    let (sink, mut rx) = EventSink::channel();
    let seen: Seen = Arc::default();
    let collector = tokio::spawn({
        let seen = seen.clone();
        async move {
            while let Some(event) = rx.next().await {
                seen.lock().unwrap().push(event);
            }
        }
    });
    let cancellation = Cancellation::new();
    let helper = during(cancellation.clone(), seen.clone());
    let options = RunOptions {
        events: sink,
        cancellation,
        ..RunOptions::default()
    };
    let result = tokio::time::timeout(limit, Runtime::new().run(request, resolved, options))
        .await
        .unwrap_or_else(|_| panic!("the run did not end within {limit:?}"));
    helper.abort();
    // The runtime has dropped the sink: the collector ends.
    tokio::time::timeout(Duration::from_secs(5), collector)
        .await
        .expect("the event stream did not end with the run")
        .unwrap();
    let events = seen.lock().unwrap().clone();
    (result, events)
}

/// A `during` for [`run_in_runtime`] that does nothing.
pub fn nothing(_: Cancellation, _: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async {})
}

/// Waits (polling, up to `within`) until an event of `kind` was seen; whether it was.
pub async fn wait_for_kind(seen: &Seen, kind: EventKind, within: Duration) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < within {
        if seen.lock().unwrap().iter().any(|e| e.kind == kind) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Resolves once `server` has received `n` requests (a scripted turn is in flight).
pub async fn requests_reach(server: &model_script::ScriptedServer, n: usize) {
    while server.requests().len() < n {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The verdict on a run canceled while its tool (a `sleep`, pid `sleep`) ran, the same
/// for every backend: `canceled`, side effects possible, and the tool's process gone.
pub fn assert_canceled_mid_tool(result: &ContractResult, sleep: i32) {
    assert_eq!(result.outcome, Outcome::Canceled, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::Canceled, "{result:#?}");
    assert_eq!(
        err.side_effects,
        SideEffects::Possible,
        "a tool had started"
    );
    assert!(gone(sleep), "the tool's sleep {sleep} survived the cancel");
}

/// The verdict on a run whose agent (`agent`) was SIGKILLed while its tool (`sleep`)
/// ran, the same for every backend: `unknown`, side effects possible, and the agent and
/// its orphaned tool gone.
pub fn assert_killed_mid_tool(result: &ContractResult, agent: i32, sleep: i32) {
    assert_eq!(result.outcome, Outcome::Unknown, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::UnknownOutcome, "{result:#?}");
    assert_eq!(
        err.side_effects,
        SideEffects::Possible,
        "a tool had started"
    );
    assert!(gone(agent), "the killed agent {agent} is still alive");
    assert!(gone(sleep), "the orphaned tool {sleep} was not cleaned up");
}

/// Runs `request` on `backend` itself (no runtime) with a session channel, as attempt 1
/// or, with `resume`, the attempt after it, canceling once `until` resolves (the
/// cancel-then-resume tests). Returns the result, the events and the session handles.
pub async fn execute_until(
    backend: &dyn Backend,
    request: &ContractRequest,
    resume: Option<ResumeFrom>,
    until: impl std::future::Future<Output = ()>,
) -> (ContractResult, Vec<Event>, Vec<String>) {
    let (sink, mut rx) = EventSink::channel();
    let (reporter, mut handles) = SessionReporter::channel();
    let mut ctx = ExecutionContext::new(sink);
    ctx.session = reporter;
    ctx.attempt = resume.as_ref().map_or(1, |from| from.attempt + 1);
    ctx.resume = resume;
    let cancellation = ctx.cancellation.clone();
    let run = backend.execute(request, ctx);
    tokio::pin!(run);
    let result = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::select! {
            result = &mut run => result,
            () = until => {
                cancellation.cancel(CancelCause::Caller);
                run.await
            }
        }
    })
    .await
    .expect("the attempt did not end within 60 s");
    (result, drain(&mut rx), drain_handles(&mut handles))
}

/// The verdict on an attempt canceled after its tool ran, before it is resumed:
/// canceled — or, on a loaded machine, `unknown` when the leader's exit status is not
/// collected in time (`cancel_requested`): either may be resumed.
pub fn assert_resumable_after_cancel(first: &ContractResult) {
    assert!(
        matches!(first.outcome, Outcome::Canceled | Outcome::Unknown),
        "{first:?}"
    );
    assert_eq!(
        first.err.as_ref().unwrap().side_effects,
        SideEffects::Possible
    );
}

/// The kill-and-resume scenario of the resumable agent CLIs: attempt 1 of `request` is
/// SIGKILLed (agent `agent_exe`) once `ready()` holds and is `unknown`, having reported
/// one session; attempt 2 resumes it with [`CONTINUE_PROMPT`] and must finish the
/// script's "resumed and done" in the same session. Returns that session.
pub async fn kill_then_resume(
    backend: Arc<dyn Backend>,
    request: &ContractRequest,
    agent_exe: &str,
    ready: impl Fn() -> bool,
) -> String {
    let (first, reported) =
        run_until_killed(backend.clone(), request.clone(), agent_exe, ready).await;
    assert_eq!(first.outcome, Outcome::Unknown, "{first:#?}");
    assert_eq!(
        reported.len(),
        1,
        "one session, reported once: {reported:?}"
    );
    let session = reported[0].clone();
    let mut continuation = request.clone();
    continuation.prompt = CONTINUE_PROMPT.into();
    let (second, again) = run_resumed(
        backend,
        continuation,
        ResumeFrom {
            session: session.clone(),
            attempt: 1,
            original_prompt: request.prompt.clone(),
        },
    )
    .await;
    assert_eq!(second.outcome, Outcome::Succeeded, "{second:#?}");
    assert_eq!(second.text, "resumed and done");
    assert_eq!(
        again,
        std::slice::from_ref(&session),
        "{agent_exe} continued the same session"
    );
    session
}

/// That the model request of a resumed attempt (`resumed`, as sent) carries each of
/// the `earlier` turns' marks, and the [`CONTINUE_PROMPT`].
pub fn assert_carries_the_earlier_turns(resumed: &str, earlier: &[&str]) {
    for earlier in earlier {
        assert!(
            resumed.contains(earlier),
            "the resumed request lacks {earlier:?}: {resumed}"
        );
    }
    assert!(resumed.contains(CONTINUE_PROMPT), "{resumed}");
}

/// A provider (base URL with `/v1`) that refuses with 401 and, carelessly, echoes the
/// bearer credential back: codex's and OpenCode's tests that the key never shows.
pub async fn leaky_provider() -> String {
    use axum::http::HeaderMap;
    let app = axum::Router::new().fallback(|headers: HeaderMap| async move {
        let seen = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        (
            axum::http::StatusCode::UNAUTHORIZED,
            axum::Json(serde_json::json!({"error": {"message": format!("invalid key {seen}")}})),
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// A run of `request` straight on `backend`, spawned so that the test can act while it
/// runs (once its tool wrote a pid: [`wait_for_pid`]): the run, its cancellation and
/// its events.
pub fn spawn_execute(
    backend: Arc<dyn Backend>,
    request: ContractRequest,
) -> (
    tokio::task::JoinHandle<ContractResult>,
    Cancellation,
    futures::channel::mpsc::UnboundedReceiver<Event>,
) {
    let (sink, events) = EventSink::channel();
    let ctx = ExecutionContext::new(sink);
    let cancellation = ctx.cancellation.clone();
    let run = tokio::spawn(async move { backend.execute(&request, ctx).await });
    (run, cancellation, events)
}

/// A scripted call of codex's `exec_command` tool running `cmd` in the agent's shell,
/// waiting up to `yield_ms` for it (codex's default would hand a long command back to
/// the model): shared by the two suites that drive codex, `codex` and `acp` (codex-acp).
pub fn exec_command(call_id: &str, cmd: &str, yield_ms: u64) -> model_script::Turn {
    model_script::Turn::tool_call(
        call_id,
        "exec_command",
        serde_json::json!({"cmd": cmd, "yield_time_ms": yield_ms}),
    )
}
