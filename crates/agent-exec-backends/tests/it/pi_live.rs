//! The `agent-native` backend driving the real pi coding agent (npm
//! `@mariozechner/pi-coding-agent`) against a scripted Chat Completions server
//! (model-script), through the registry and the runtime: the agent, its tools and its
//! process tree are real; only the model's words are scripted.
//!
//! pi reads its provider from `models.json` in a temporary `PI_CODING_AGENT_DIR`
//! (with `HOME` pointed there too), so nothing of the user's configuration is read.
//! `record_streams` (ignored) re-records `tests/data/pi-*.jsonl`.
use crate::{agents, stand_in};
use agents::pid_in;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::pi::{self, PiBackend};
use agent_exec_backends::session_store::SessionStore;
use agent_exec_contract::{
    Backend, CancelCause, Cancellation, Capability, ContractRequest, ContractResult, ErrorCode,
    Event, EventKind, EventSink, Outcome, Registry, Resolved, ResumeFrom, SideEffects, ToolPolicy,
    Usage, Verification,
};
use agent_exec_runtime::{RunOptions, Runtime};
use model_script::{Ending, Script, ScriptedServer, Turn};
use serde_json::json;

/// The installed `pi`, or a panic saying how to install it.
fn pi_program() -> PathBuf {
    test_support::peers::npm_bin("pi", "@mariozechner/pi-coding-agent")
}

/// A scripted server, pi's configuration pointing at it, and a workspace.
struct Fixture {
    server: ScriptedServer,
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Fixture {
    fn new(turns: Vec<Turn>) -> Fixture {
        let server = ScriptedServer::start(Script::new(turns));
        let home = tempfile::tempdir().unwrap();
        let agent_dir = home.path().join("agent");
        std::fs::create_dir_all(&agent_dir).unwrap();
        let models = json!({"providers": {"scripted": {
            "baseUrl": server.base_url,
            "api": "openai-completions",
            // The *name* of the variable holding the key; the value is a dummy.
            "apiKey": "PI_SCRIPTED_KEY",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "scripted"}]}}});
        std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
        // No agent-level retries: a scripted failure is final at once.
        std::fs::write(
            agent_dir.join("settings.json"),
            json!({"retry": {"enabled": false}}).to_string(),
        )
        .unwrap();
        Fixture {
            server,
            home,
            workspace: tempfile::tempdir().unwrap(),
        }
    }

    fn config(&self) -> ProgramConfig {
        let mut config = ProgramConfig::new(pi::KIND);
        config.program = Some(pi_program().display().to_string());
        config.model = Some("scripted/scripted".into());
        let agent_dir = self.home.path().join("agent");
        config.env = [
            ("PI_CODING_AGENT_DIR", agent_dir.display().to_string()),
            ("HOME", self.home.path().display().to_string()),
            ("PI_SCRIPTED_KEY", "dummy-key".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        config.grace_ms = 1000;
        config
    }

    /// Where this fixture's pi sessions are kept (not the user's state directory).
    fn sessions(&self) -> SessionStore {
        SessionStore::at(self.home.path().join("sessions"))
    }

    fn backend(&self) -> PiBackend {
        PiBackend::new(self.config()).with_session_store(self.sessions())
    }

    fn resolved(&self) -> Resolved {
        Resolved {
            backend: Arc::new(self.backend()),
            name: pi::KIND.into(),
            deprecation_warning: None,
            verification: verified().clone(),
        }
    }

    /// A request with pi's workspace tools.
    fn request(&self, execution_id: &str, prompt: &str) -> ContractRequest {
        agents::request(
            self.workspace.path(),
            execution_id,
            prompt,
            "workspace",
            &[],
        )
    }
}

/// The real probe, run once for the whole file (it starts pi twice).
fn verified() -> &'static Verification {
    static VERIFIED: OnceLock<Verification> = OnceLock::new();
    VERIFIED.get_or_init(|| {
        let fixture = Fixture::new(Vec::new());
        let backend = fixture.backend();
        // Its own thread and runtime: callers are inside a test's runtime.
        let verification = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(backend.verify())
        })
        .join()
        .unwrap();
        assert!(
            verification.problems.is_empty(),
            "pi's probe failed: {:?}",
            verification.problems
        );
        verification
    })
}

/// Runs `request` through the runtime, collecting the events.
async fn run(
    resolved: &Resolved,
    request: ContractRequest,
    cancellation: Cancellation,
) -> (ContractResult, Vec<Event>) {
    let (sink, mut rx) = EventSink::channel();
    let options = RunOptions {
        events: sink,
        cancellation,
        ..RunOptions::default()
    };
    let result = Runtime::new().run(request, resolved, options).await;
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    (result, events)
}

fn position(events: &[Event], kind: EventKind, tool: &str) -> usize {
    events
        .iter()
        .position(|e| e.kind == kind && (tool.is_empty() || e.tool == tool))
        .unwrap_or_else(|| panic!("no {kind:?} event for `{tool}` in {events:?}"))
}

#[tokio::test]
async fn the_agent_writes_a_deliverable_with_its_own_tool() {
    let fixture = Fixture::new(vec![
        Turn::tool_call(
            "call_1",
            "write",
            json!({"path": "out.txt", "content": "hello from pi\n"}),
        ),
        Turn::text("wrote out.txt"),
    ]);
    // Through the registry, by the deprecated alias: the real probe decides.
    let mut registry = Registry::new();
    registry.register(Arc::new(fixture.backend())).unwrap();
    registry.alias(pi::DEPRECATED_ALIAS, pi::KIND, true);
    let resolved = registry
        .resolve(
            pi::DEPRECATED_ALIAS,
            &[Capability::Files, Capability::Cancel],
        )
        .await
        .unwrap();
    assert_eq!(resolved.name, "agent-native");
    assert!(
        resolved
            .deprecation_warning
            .as_deref()
            .is_some_and(|w| w.contains("pi-native")),
        "{:?}",
        resolved.deprecation_warning
    );
    assert!(
        resolved.verification.adapter_version.contains("(pi "),
        "{}",
        resolved.verification.adapter_version
    );

    let mut request = fixture.request("pi-deliverable", "write hello into out.txt");
    request.targets = vec!["out.txt".into()];
    request.instructions = "Answer briefly.".into();
    let (result, _) = run(&resolved, request, Cancellation::new()).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, "wrote out.txt");
    assert_eq!(
        result.files.get("out.txt").map(Vec::as_slice),
        Some(&b"hello from pi\n"[..])
    );
    assert_eq!(fixture.server.turns_served(), 2);
    assert_eq!(fixture.server.requests_past_script(), 0);
    // What pi sent: the prompt (with the deliverable) as the user message, the
    // instructions in the system prompt, the dummy key as the bearer token.
    let first = &fixture.server.requests()[0];
    let body = first.body.to_string();
    assert!(body.contains("write hello into out.txt"), "{body}");
    assert!(body.contains("- out.txt"), "{body}");
    assert!(body.contains("Answer briefly."), "{body}");
    assert_eq!(first.authorization.as_deref(), Some("Bearer dummy-key"));
}

#[tokio::test]
async fn usage_is_summed_over_model_calls_and_events_arrive_in_order() {
    let fixture = Fixture::new(vec![
        Turn::tool_call(
            "call_1",
            "bash",
            json!({"command": "printf 'from bash' > note.txt"}),
        )
        .with_usage(120, 7),
        Turn::text("note written").with_usage(200, 11),
    ]);
    let resolved = fixture.resolved();
    let (result, events) = run(
        &resolved,
        fixture.request("pi-usage", "write a note"),
        Cancellation::new(),
    )
    .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(
        result.usage,
        Usage {
            prompt_tokens: 320,
            completion_tokens: 18
        }
    );
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.path().join("note.txt")).unwrap(),
        "from bash"
    );
    let call = position(&events, EventKind::ToolCallDelta, "bash");
    let start = position(&events, EventKind::ToolExecStart, "bash");
    let end = position(&events, EventKind::ToolExecEnd, "bash");
    let text = position(&events, EventKind::TextDelta, "");
    let done = position(&events, EventKind::MessageEnd, "");
    assert!(
        call < start && start < end && end < text && text < done,
        "{events:?}"
    );
    assert_eq!(events[start].detail, "printf 'from bash' > note.txt");
    assert_eq!(done, events.len() - 1, "message_end is the last event");
    let streamed: String = events
        .iter()
        .filter(|e| e.kind == EventKind::TextDelta)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(streamed, "note written");
}

#[tokio::test]
async fn cancel_during_a_tool_call_is_canceled_and_leaves_no_process() {
    let fixture = Fixture::new(vec![Turn::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo $$ > sleep.pid; exec sleep 30"}),
    )]);
    let resolved = fixture.resolved();
    let cancellation = Cancellation::new();
    let pid_file = fixture.workspace.path().join("sleep.pid");
    let canceler = {
        let cancellation = cancellation.clone();
        let pid_file = pid_file.clone();
        tokio::spawn(async move {
            let pid = pid_in(&pid_file).await;
            cancellation.cancel(CancelCause::Caller);
            pid
        })
    };
    let (result, events) = run(
        &resolved,
        fixture.request("pi-cancel", "sleep for a while"),
        cancellation,
    )
    .await;
    let sleep_pid = canceler.await.unwrap();
    agents::assert_canceled_mid_tool(&result, sleep_pid);
    assert_eq!(agents::processes_of("pi-cancel"), Vec::<i32>::new());
    position(&events, EventKind::ToolExecStart, "bash");
}

#[tokio::test]
async fn killing_the_agent_mid_run_is_unknown() {
    // `$PPID` of the tool's shell is pi itself.
    let fixture = Fixture::new(vec![Turn::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo $PPID > pi.pid; echo $$ > sleep.pid; exec sleep 30"}),
    )]);
    let resolved = fixture.resolved();
    let pi_file = fixture.workspace.path().join("pi.pid");
    let sleep_file = fixture.workspace.path().join("sleep.pid");
    let killer = tokio::spawn(async move {
        let pi_pid = pid_in(&pi_file).await;
        let sleep_pid = pid_in(&sleep_file).await;
        agents::kill_9(pi_pid);
        (pi_pid, sleep_pid)
    });
    let (result, _) = run(
        &resolved,
        fixture.request("pi-killed", "sleep for a while"),
        Cancellation::new(),
    )
    .await;
    let (pi_pid, sleep_pid) = killer.await.unwrap();
    // The tool's process, orphaned by the kill, is terminated with the tree.
    agents::assert_killed_mid_tool(&result, pi_pid, sleep_pid);
    let reason = &result.err.as_ref().unwrap().reason;
    assert!(reason.contains("signal 9"), "{reason}");
}

#[tokio::test]
async fn a_canceled_run_is_resumed_inside_its_own_pi_session() {
    let fixture = Fixture::new(vec![
        Turn::tool_call(
            "call_1",
            "bash",
            json!({"command": "printf 'step one' > one.txt; echo tool-output-one"}),
        ),
        // The model's next answer never comes: attempt 1 is canceled while it waits.
        Turn::text("thinking").ending(Ending::Hang),
        Turn::text("resumed and done"),
    ]);
    let backend = fixture.backend();
    let mut request = fixture.request("pi-resume", "do step one, then finish");
    let original_prompt = request.prompt.clone();

    // Attempt 1: the tool runs, then it is canceled waiting for the model.
    let second_request = agents::requests_reach(&fixture.server, 2);
    let (first, events, handles) =
        agents::execute_until(&backend, &request, None, second_request).await;
    agents::assert_resumable_after_cancel(&first);
    position(&events, EventKind::ToolExecEnd, "bash");
    assert_eq!(handles.len(), 1, "{handles:?}");
    let handle = handles[0].clone();
    pi::check_handle(&handle).unwrap();
    // The session is kept in the execution's own folder, under the file pi named.
    let file = fixture
        .sessions()
        .find("pi-resume", |name| pi::session_file_matches(name, &handle))
        .unwrap();
    assert!(file.starts_with(fixture.sessions().root()));

    // Attempt 2 continues that session with the continuation prompt.
    request.prompt = "continue where you stopped".into();
    let resume = ResumeFrom {
        session: handle.clone(),
        attempt: 1,
        original_prompt: original_prompt.clone(),
    };
    let (second, events, handles) =
        agents::execute_until(&backend, &request, Some(resume), std::future::pending()).await;
    assert_eq!(second.outcome, Outcome::Succeeded, "{second:?}");
    assert_eq!(second.text, "resumed and done");
    assert_eq!(
        handles,
        std::slice::from_ref(&handle),
        "the same session, reported again"
    );
    // Nothing of attempt 1 is replayed as this attempt's events.
    assert!(
        events.iter().all(|e| e.kind != EventKind::ToolExecStart),
        "{events:?}"
    );
    // What the model was sent on resume: the earlier turns (the prompt, the tool call
    // with its arguments, the tool's output), then the continuation prompt last.
    let requests = fixture.server.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[2].body["messages"].as_array().unwrap().clone();
    let shown = serde_json::Value::Array(messages.clone()).to_string();
    let user_texts: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(user_texts.len(), 2, "{shown}");
    assert!(user_texts[0].contains(&original_prompt), "{shown}");
    assert!(
        user_texts[1].contains("continue where you stopped"),
        "{shown}"
    );
    let call = messages
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"][0]["id"] == "call_1")
        .unwrap_or_else(|| panic!("no earlier tool call in {shown}"));
    assert!(
        call["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap()
            .contains("tool-output-one")
    );
    let output = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_1")
        .unwrap_or_else(|| panic!("no earlier tool output in {shown}"));
    assert!(
        output["content"].to_string().contains("tool-output-one"),
        "{shown}"
    );
    assert_eq!(
        messages.last().unwrap()["role"],
        "user",
        "the continuation comes last: {shown}"
    );
    // A succeeded execution is never resumed: its session folder is gone.
    assert!(!fixture.sessions().path_of("pi-resume").exists());
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.path().join("one.txt")).unwrap(),
        "step one"
    );
}

#[tokio::test]
async fn verify_proves_resume_with_a_real_session_file() {
    assert!(
        verified().verified.contains(&Capability::Resume),
        "{:?}",
        verified()
    );
}

#[tokio::test]
async fn a_failed_model_call_is_failed_and_retryable() {
    let fixture = Fixture::new(vec![Turn::text("partial").ending(Ending::Disconnect)]);
    let resolved = fixture.resolved();
    let (result, _) = run(
        &resolved,
        fixture.request("pi-failed", "say something"),
        Cancellation::new(),
    )
    .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderUnavailable);
    assert_eq!(err.side_effects, SideEffects::None);
    assert!(err.retryable);
    assert!(err.reason.starts_with("pi: "), "{}", err.reason);
}

/// The tool names pi offered the model in its first request.
fn offered_tools(server: &ScriptedServer) -> Vec<String> {
    let body = &server.requests()[0].body;
    body.get("tools")
        .and_then(|t| t.as_array())
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").and_then(|n| n.as_str()))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_tool_policy_decides_what_pi_offers_the_model() {
    // The contract's default (empty profile = reasoning): no tools at all.
    let fixture = Fixture::new(vec![Turn::text("no tools here")]);
    let mut request = fixture.request("pi-reasoning", "think");
    request.tool_policy = ToolPolicy::default();
    let (result, _) = run(&fixture.resolved(), request, Cancellation::new()).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(offered_tools(&fixture.server), Vec::<String>::new());

    // An allowlist: exactly those.
    let fixture = Fixture::new(vec![Turn::text("read only")]);
    let mut request = fixture.request("pi-allowlist", "look");
    request.tool_policy.allowlist = vec!["read".into(), "ls".into()];
    let (result, _) = run(&fixture.resolved(), request, Cancellation::new()).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    let mut offered = offered_tools(&fixture.server);
    offered.sort();
    assert_eq!(offered, ["ls", "read"]);
}

#[tokio::test]
async fn a_missing_program_says_what_to_install() {
    let mut config = ProgramConfig::new(pi::KIND);
    config.program = Some("/nonexistent/pi".into());
    let verification = PiBackend::new(config).verify().await;
    assert!(verification.verified.is_empty());
    assert!(
        verification.problems[0].contains("@mariozechner/pi-coding-agent"),
        "{:?}",
        verification.problems
    );
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    stand_in::write_program(dir, name, &format!("#!/bin/sh\n{body}\n"))
}

#[tokio::test]
async fn verify_through_a_wrapper_asks_pi_for_its_version() {
    // No npm package behind a wrapper: the version comes from `pi --version`.
    let dir = tempfile::tempdir().unwrap();
    let wrapper = script(
        dir.path(),
        "pi-wrapper",
        &format!("exec '{}' \"$@\"", pi_program().display()),
    );
    let mut config = ProgramConfig::new(pi::KIND);
    config.program = Some(wrapper.display().to_string());
    let verification = PiBackend::new(config).verify().await;
    assert!(
        verification.problems.is_empty(),
        "{:?}",
        verification.problems
    );
    assert!(verification.verified.contains(&Capability::Stream));
    assert!(
        verification.adapter_version.contains("(pi 0."),
        "{}",
        verification.adapter_version
    );
}

#[tokio::test]
async fn verify_refuses_an_impostor() {
    let dir = tempfile::tempdir().unwrap();
    // Answers --version like pi, but its JSON mode is not pi's event stream.
    let impostor = script(
        dir.path(),
        "pi",
        r#"echo 9.9.9; echo '{"type":"nonsense"}'"#,
    );
    let mut config = ProgramConfig::new(pi::KIND);
    config.program = Some(impostor.display().to_string());
    let verification = PiBackend::new(config).verify().await;
    assert!(verification.verified.is_empty(), "{verification:?}");
    assert!(
        verification.problems[0].contains("did not speak the expected event stream"),
        "{:?}",
        verification.problems
    );
}

/// Re-records `tests/data/pi-*.jsonl` from the real pi (run with `--ignored`).
#[test]
#[ignore = "re-records the test data; run by hand"]
fn record_streams() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let scenarios = [
        (
            "pi-write.jsonl",
            vec![
                Turn::tool_call(
                    "call_1",
                    "write",
                    json!({"path": "out.txt", "content": "hello from pi\n"}),
                )
                .with_usage(120, 7),
                Turn::text("wrote out.txt").with_usage(200, 11),
            ],
        ),
        (
            "pi-error.jsonl",
            vec![Turn::text("partial").ending(Ending::Disconnect)],
        ),
    ];
    for (name, turns) in scenarios {
        let fixture = Fixture::new(turns);
        let config = fixture.config();
        let mut child = std::process::Command::new(pi_program())
            .args(pi::JSON_MODE_FLAGS)
            .arg(pi::NO_SESSION_FLAG)
            .args(["--model", "scripted/scripted"])
            .envs(&config.env)
            .env("PI_OFFLINE", "1")
            .current_dir(fixture.workspace.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"write hello into out.txt")
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        std::fs::write(data.join(name), &output.stdout).unwrap();
    }
}
