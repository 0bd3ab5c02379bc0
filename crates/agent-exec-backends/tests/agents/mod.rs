//! What the live tests of the agent-CLI backends share: resolving a backend with a
//! given verification without running its probe again, finding and killing its agent
//! process, and resumed runs. (The real programs: `test_support::peers::npm_bin`.)
#![allow(clippy::unwrap_used, dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_exec_contract::{
    Backend, Capability, ContractRequest, ContractResult, EventSink, ExecutionContext, Resolved,
    ResumeFrom, SessionReporter, Verification,
};

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
            let status = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill -KILL {pid}");
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
    continuation.prompt = "please continue".into();
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
        let text = std::fs::read_to_string(pidfile).unwrap_or_default();
        if let (true, Ok(pid)) = (text.ends_with('\n'), text.trim().parse()) {
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
