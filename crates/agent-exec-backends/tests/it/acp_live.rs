//! The `acp` backend driving a real ACP agent — npm `@zed-industries/codex-acp`, which
//! wraps codex — against a scripted OpenAI Responses server on loopback
//! (`model-script`): the agent, its tools, the shell it starts and the files it writes
//! are real; only the model's words are scripted. Everything goes through the public
//! `Backend` API under the `Runtime` (deliverables, events, cancellation).
//!
//! The program is found through `AGENT_EXEC_NPM_BIN` (set by `scripts/test.sh`) or
//! `<workspace>/target/peers/npm/node_modules/.bin`; a missing program fails the test
//! with what to run.
use crate::agents;
use agents::{DUMMY_KEY, Seen, exec_command, nothing, pid_in};

use agent_exec_backends::agent_program::AGENT_CLI_CAPABILITIES;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::acp::{AcpBackend, KIND};
use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_contract::{
    Backend, CancelCause, Cancellation, Capability, ContractRequest, ContractResult, ErrorCode,
    Event, EventKind, Outcome, Resolved, ResumeFrom, SideEffects,
};
use model_script::{Script, ScriptedServer, Turn};
use test_support::procfs::{alive, comm, parent};

/// The codex-acp program, or a panic saying how to install it.
fn codex_acp_program() -> PathBuf {
    test_support::peers::npm_bin("codex-acp", "@zed-industries/codex-acp")
}

/// One scripted server, a `CODEX_HOME` pointing codex at it, a workspace, a backend.
struct Rig {
    server: ScriptedServer,
    workspace: tempfile::TempDir,
    _home: tempfile::TempDir,
    backend: Arc<AcpBackend>,
}

impl Rig {
    fn new(turns: Vec<Turn>) -> Rig {
        let server = ScriptedServer::start(Script::new(turns));
        // Not under /tmp: codex refuses to set up its helper binaries in a CODEX_HOME
        // there. `approval_policy = "untrusted"`: codex asks (over ACP) before every
        // command that is not known read-only, so the tool policy decides; no sandbox,
        // because codex's Linux sandbox needs bubblewrap, which this machine lacks. A
        // model name codex knows (the server serves any), or codex warns about missing
        // model metadata *as agent message text*.
        let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "approval_policy = \"untrusted\"\nsandbox_mode = \"danger-full-access\"\n\
                 model = \"gpt-5.4-mini\"\nmodel_provider = \"scripted\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}\"\n\
                 wire_api = \"responses\"\nenv_key = \"SCRIPTED_KEY\"\n",
                server.base_url,
            ),
        )
        .unwrap();
        let mut config = ProgramConfig::new(KIND);
        config.program = Some(codex_acp_program().display().to_string());
        config
            .env
            .insert("CODEX_HOME".into(), home.path().display().to_string());
        // codex runs commands in a login shell (`bash -lc`): with the machine's HOME
        // that sources the user's profile (here `pyenv init`, seconds under load), and
        // a command still starting when its `yield_time_ms` ran out was never run
        // before the scripted turn ended. A HOME of its own keeps the shell plain.
        config
            .env
            .insert("HOME".into(), home.path().display().to_string());
        config.env.insert("SCRIPTED_KEY".into(), DUMMY_KEY.into());
        config.grace_ms = 1000;
        Rig {
            server,
            workspace: tempfile::tempdir().unwrap(),
            _home: home,
            backend: Arc::new(AcpBackend::new(config)),
        }
    }

    fn request(&self, id: &str, prompt: &str, allow: &[&str]) -> ContractRequest {
        agents::request(self.workspace.path(), id, prompt, "workspace", allow)
    }

    fn resolved(&self) -> Resolved {
        agents::resolved(self.backend.clone(), KIND, &AGENT_CLI_CAPABILITIES)
    }

    /// Runs `request` through the runtime; `during` gets the cancellation and the events
    /// seen so far while it runs.
    async fn run(
        &self,
        request: ContractRequest,
        during: impl FnOnce(Cancellation, Seen) -> tokio::task::JoinHandle<()>,
    ) -> (ContractResult, Vec<Event>) {
        let limit = Duration::from_secs(60);
        agents::run_in_runtime(&self.resolved(), request, limit, during).await
    }

    fn path(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }
}

fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| e.kind == EventKind::TextDelta)
        .map(|e| e.text.as_str())
        .collect()
}

#[tokio::test]
async fn a_shell_tool_call_writes_the_deliverable_with_events_in_order() {
    let rig = Rig::new(vec![
        exec_command("call_1", "printf 'hello from codex-acp' > out.txt", 10_000)
            .with_usage(120, 9),
        Turn::text("wrote out.txt").with_usage(130, 11),
    ]);
    let mut request = rig.request("acp-live-file", "write out.txt", &["execute"]);
    request.targets = vec!["out.txt".into()];
    let (result, events) = rig.run(request, nothing).await;

    // 1. The agent's own tool call wrote the deliverable; the text is the final message.
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "wrote out.txt");
    assert_eq!(
        result.files.get("out.txt").map(Vec::as_slice),
        Some(&b"hello from codex-acp"[..]),
        "{result:#?}"
    );
    // The permission request was answered from the policy, and the tool's output went
    // back to the model.
    assert!(
        result
            .logs
            .contains("permission for tool `execute` granted once"),
        "{}",
        result.logs
    );
    let requests = rig.server.requests();
    assert_eq!(requests.len(), 2, "one request per scripted turn");
    assert!(requests[1].body.to_string().contains("call_1"));
    assert!(requests[0].body.to_string().contains("write out.txt"));
    assert_eq!(rig.server.requests_past_script(), 0);

    // 2. Usage as the protocol gives it: codex-acp 0.16 sends no end-of-turn `usage`
    // (only `usage_update`, the context fill, which is logged), so zero — not a guess.
    assert_eq!(result.usage, agent_exec_contract::Usage::default());
    assert!(
        result.logs.contains("context reported by the agent:"),
        "{}",
        result.logs
    );

    // 5. Events in order: tool start first, message end last, a tool end (when there
    // is one) between them, once. Where the end falls among the message's text deltas
    // — and, rarely, whether it comes before the turn's answer at all — is codex-acp's
    // doing: it sends the exec's completion before or after the next message (seen on
    // the raw stream), and in one of ~15 runs here no end arrived before `end_turn` —
    // updates after the turn's answer are not read. The events keep the agent's order.
    let position = |kind: EventKind| events.iter().position(|e| e.kind == kind);
    let start = position(EventKind::ToolExecStart).expect("a tool start");
    let message_end = position(EventKind::MessageEnd).expect("a message end");
    assert_eq!(start, 0, "{events:#?}");
    assert_eq!(message_end, events.len() - 1, "{events:#?}");
    if let Some(end) = position(EventKind::ToolExecEnd) {
        assert!(start < end && end < message_end, "{events:#?}");
    }
    assert!(
        events
            .iter()
            .filter(|e| e.kind == EventKind::ToolExecEnd)
            .count()
            <= 1,
        "one end per tool call: {events:#?}"
    );
    assert_eq!(events[0].tool, "execute");
    assert!(events[0].detail.contains("out.txt"), "{:?}", events[0]);
    assert_eq!(text_of(&events), "wrote out.txt");
}

#[tokio::test]
async fn a_patch_tool_call_edits_under_the_workspace_profile() {
    let rig = Rig::new(vec![
        Turn::custom_tool_call(
            "call_1",
            "apply_patch",
            "*** Begin Patch\n*** Add File: notes/out.md\n+patched by codex-acp\n*** End Patch\n",
        ),
        Turn::text("patched"),
    ]);
    // `workspace` allows edits, not the shell.
    let mut request = rig.request("acp-live-patch", "add notes/out.md", &[]);
    request.targets = vec!["notes/out.md".into()];
    let (result, events) = rig.run(request, nothing).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "patched");
    assert_eq!(
        result.files.get("notes/out.md").map(Vec::as_slice),
        Some(&b"patched by codex-acp\n"[..])
    );
    assert_eq!(events[0].kind, EventKind::ToolExecStart);
    assert_eq!(events[0].tool, "edit");
}

#[tokio::test]
async fn a_tool_outside_the_policy_is_refused_and_nothing_runs() {
    let rig = Rig::new(vec![
        exec_command("call_1", "printf x > forbidden.txt", 10_000),
        Turn::text("could not"),
    ]);
    // `workspace` without an allowlist: no `execute`.
    let (result, _events) = rig
        .run(
            rig.request("acp-live-refuse", "try the shell", &[]),
            nothing,
        )
        .await;
    assert!(
        !rig.path("forbidden.txt").exists(),
        "a refused shell command ran"
    );
    assert!(
        result
            .logs
            .contains("permission for tool `execute` refused by the tool policy"),
        "{}",
        result.logs
    );
    // codex-acp's reject option aborts the turn (`cancelled`): the policy's refusal.
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ToolRejected);
    assert!(err.reason.contains("`execute`"), "{}", err.reason);
    assert_eq!(
        rig.server.requests().len(),
        1,
        "the tool's output never went back"
    );
}

#[tokio::test]
async fn an_unknown_tool_profile_is_refused_before_the_agent_starts() {
    let rig = Rig::new(vec![Turn::text("never")]);
    let mut request = rig.request("acp-live-root", "hi", &[]);
    request.tool_policy.profile = "root".into();
    let (result, _) = rig.run(request, nothing).await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ToolRejected);
    assert_eq!(err.side_effects, SideEffects::None);
    assert!(rig.server.requests().is_empty(), "the agent was started");
}

#[tokio::test]
async fn cancel_during_a_tool_call_is_canceled_and_leaves_no_process() {
    // The shell's pid becomes sleep's (exec); codex waits up to 40 s for it. A 600 s
    // sleep: a run that waited for it instead of canceling fails the 60 s limit.
    let rig = Rig::new(vec![exec_command(
        "call_1",
        "echo $$ > sleep.pid; exec sleep 600",
        40_000,
    )]);
    let pidfile = rig.path("sleep.pid");
    let (sleep_tx, sleep_rx) = tokio::sync::oneshot::channel();
    let (result, events) = rig
        .run(
            rig.request("acp-live-cancel", "sleep", &["execute"]),
            move |cancel, seen| {
                tokio::spawn(async move {
                    let pid = pid_in(&pidfile).await;
                    // "In the middle of a tool call": the sleep runs *and* the stream
                    // said the tool started. codex-acp's `tool_call` update can reach us
                    // after the sleep has written its pid; a cancel before it would end
                    // the run with no tool event at all. (Canceled either way if the
                    // update never comes: the events below then say so.)
                    agents::wait_for_kind(&seen, EventKind::ToolExecStart, Duration::from_secs(30))
                        .await;
                    assert!(alive(pid), "the tool's sleep is running");
                    let _ = sleep_tx.send(pid);
                    cancel.cancel(CancelCause::Caller);
                })
            },
        )
        .await;
    let sleep = sleep_rx.await.expect("the tool call started");
    agents::assert_canceled_mid_tool(&result, sleep);
    // The tool's start first; its end (codex-acp may report the canceled call) only
    // after it; no message end.
    let position = |kind: EventKind| events.iter().position(|e| e.kind == kind);
    assert_eq!(position(EventKind::ToolExecStart), Some(0), "{events:#?}");
    assert!(
        position(EventKind::ToolExecEnd).is_none_or(|end| end > 0),
        "{events:#?}"
    );
    assert!(
        !events.iter().any(|e| e.kind == EventKind::MessageEnd),
        "{events:#?}"
    );
}

#[tokio::test]
async fn killing_the_agent_mid_run_is_unknown() {
    let rig = Rig::new(vec![exec_command(
        "call_1",
        "echo $$ > sleep.pid; exec sleep 600",
        40_000,
    )]);
    let pidfile = rig.path("sleep.pid");
    let (pids_tx, pids_rx) = tokio::sync::oneshot::channel();
    let (result, _) = rig
        .run(
            rig.request("acp-live-kill", "sleep", &["execute"]),
            move |_, _| {
                tokio::spawn(async move {
                    let sleep = pid_in(&pidfile).await;
                    // The agent is the process that started the tool's shell (the
                    // codex-acp binary; the npm `codex-acp` is a node launcher above it).
                    let agent = parent(sleep).expect("the sleep has a parent");
                    assert_eq!(comm(agent), "codex-acp", "the sleep's parent is codex-acp");
                    agents::kill_9(agent);
                    let _ = pids_tx.send((agent, sleep));
                })
            },
        )
        .await;
    let (agent, sleep) = pids_rx.await.expect("the agent was killed");
    agents::assert_killed_mid_tool(&result, agent, sleep);
}

#[tokio::test]
async fn verify_is_a_real_acp_handshake() {
    let rig = Rig::new(Vec::new());
    let verification = rig.backend.verify().await;
    for capability in [
        Capability::Text,
        Capability::Files,
        Capability::Stream,
        Capability::Tools,
        Capability::Cancel,
    ] {
        assert!(
            verification.verified.contains(&capability),
            "{capability:?} not verified: {verification:?}"
        );
    }
    assert!(!verification.verified.contains(&Capability::Usage));
    // codex-acp 0.16.0 advertises `loadSession`: resume is verified from that answer.
    assert!(
        verification.verified.contains(&Capability::Resume),
        "{verification:?}"
    );
    assert!(
        verification.adapter_version.contains("codex-acp 0."),
        "agentInfo from initialize: {verification:?}"
    );
    // No model was asked.
    assert!(rig.server.requests().is_empty());
}

#[tokio::test]
async fn a_canceled_session_is_resumed_with_session_load_and_its_replay_is_not_emitted() {
    let rig = Rig::new(vec![
        exec_command(
            "call_1",
            "printf 'step one' > one.txt; echo tool-output-one",
            10_000,
        ),
        // The model's next answer never comes: attempt 1 is canceled while it waits.
        Turn::text("thinking").ending(model_script::Ending::Hang),
        Turn::text("resumed and done"),
    ]);
    let mut request = rig.request("acp-live-resume", "do step one, then finish", &["execute"]);
    let original_prompt = request.prompt.clone();
    let second_request = agents::requests_reach(&rig.server, 2);
    let (first, events, handles) =
        agents::execute_until(&*rig.backend, &request, None, second_request).await;
    agents::assert_resumable_after_cancel(&first);
    assert!(events.iter().any(|e| e.kind == EventKind::ToolExecStart));
    assert_eq!(
        std::fs::read_to_string(rig.path("one.txt")).unwrap(),
        "step one"
    );
    assert_eq!(handles.len(), 1, "{handles:?}");
    let handle = handles[0].clone();
    agent_exec_contract::check_session_handle(&handle).unwrap();

    request.prompt = "continue where you stopped".into();
    let resume = ResumeFrom {
        session: handle.clone(),
        attempt: 1,
        original_prompt: original_prompt.clone(),
    };
    let (second, events, handles) = agents::execute_until(
        &*rig.backend,
        &request,
        Some(resume),
        std::future::pending(),
    )
    .await;
    assert_eq!(second.outcome, Outcome::Succeeded, "{second:#?}");
    assert_eq!(second.text, "resumed and done");
    assert_eq!(handles, std::slice::from_ref(&handle));
    // The replay of attempt 1 (its prompt, its tool call) is not this attempt's.
    assert!(
        events
            .iter()
            .all(|e| !matches!(e.kind, EventKind::ToolExecStart | EventKind::ToolExecEnd)),
        "{events:#?}"
    );
    assert_eq!(text_of(&events), "resumed and done");
    assert!(
        second.logs.contains("session/load replayed"),
        "{}",
        second.logs
    );
    // The model was sent the earlier turns — the tool call and its output — and the
    // continuation prompt.
    let requests = rig.server.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let input = requests[2].body["input"].as_array().unwrap().clone();
    let shown = serde_json::Value::Array(input.clone()).to_string();
    assert!(shown.contains(&original_prompt), "{shown}");
    assert!(
        input
            .iter()
            .any(|item| item["type"] == "function_call" && item["call_id"] == "call_1"),
        "no earlier tool call in {shown}"
    );
    assert!(
        input
            .iter()
            .any(|item| item["type"] == "function_call_output"
                && item["call_id"] == "call_1"
                && item["output"].to_string().contains("tool-output-one")),
        "no earlier tool output in {shown}"
    );
    assert!(shown.contains("continue where you stopped"), "{shown}");
}
