//! The `opencode` backend driving the real OpenCode (npm `opencode-ai` 1.18.33)
//! against model-script's Chat Completions server on loopback, reached through
//! OpenCode's custom OpenAI-compatible provider: OpenCode, its tools, the shell it
//! starts and the files it writes are real; only the model's words are scripted.
//! Everything goes through the public `Backend` API under the `Runtime`, as a caller
//! would use it. Each OpenCode start costs a few seconds, so the tests are few.
//!
//! The program is found through `AGENT_EXEC_NPM_BIN` (set by `scripts/test.sh`) or
//! `<workspace>/target/peers/npm/node_modules/.bin`; a missing program fails the test
//! with what to run.
use crate::agents;
use agents::{DUMMY_KEY, Seen, nothing, pid_in};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::agent_program::{AGENT_CLI_CAPABILITIES, ProgramConfig};
use agent_exec_backends::opencode::{KIND, OpenCodeBackend};
use agent_exec_contract::{
    Backend, CancelCause, Cancellation, Capability, ContractRequest, ContractResult, ErrorCode,
    Event, EventKind, EventSink, Outcome, Resolved, SideEffects,
};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::json;
use test_support::procfs::alive;

fn opencode_program() -> PathBuf {
    test_support::peers::npm_bin("opencode", "opencode-ai")
}

/// One scripted server, an OpenCode home whose global config points at it, a
/// workspace, a backend.
struct Rig {
    server: ScriptedServer,
    workspace: tempfile::TempDir,
    _home: tempfile::TempDir,
    backend: Arc<OpenCodeBackend>,
}

impl Rig {
    fn new(turns: Vec<Turn>) -> Rig {
        let server = ScriptedServer::start(Script::new(turns));
        let base_url = server.base_url.clone();
        Rig::for_base_url(server, &base_url)
    }

    fn for_base_url(server: ScriptedServer, base_url: &str) -> Rig {
        let home = tempfile::tempdir().unwrap();
        let config_dir = home.path().join(".config/opencode");
        std::fs::create_dir_all(config_dir.join("node_modules")).unwrap();
        // OpenCode installs its plugin SDK from npm into its config folder at start
        // unless the folder's lockfile lists it (opencode-ai 1.18.33, `Npm.install`):
        // marked installed, the run stays offline.
        std::fs::write(
            config_dir.join("package.json"),
            r#"{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}"#,
        )
        .unwrap();
        std::fs::write(
            config_dir.join("package-lock.json"),
            r#"{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}"#,
        )
        .unwrap();
        let provider = json!({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "model-script",
                "options": {"baseURL": base_url, "apiKey": "{env:SCRIPTED_KEY}"},
                "models": {"scripted": {"name": "scripted"}},
            }},
            "model": "scripted/scripted",
        });
        std::fs::write(config_dir.join("opencode.json"), provider.to_string()).unwrap();
        let mut config = ProgramConfig::new(KIND);
        config.program = Some(opencode_program().display().to_string());
        let at = |relative: &str| home.path().join(relative).display().to_string();
        config.env.insert("HOME".into(), at(""));
        config.env.insert("XDG_CONFIG_HOME".into(), at(".config"));
        config
            .env
            .insert("XDG_DATA_HOME".into(), at(".local/share"));
        config
            .env
            .insert("XDG_STATE_HOME".into(), at(".local/state"));
        config.env.insert("XDG_CACHE_HOME".into(), at(".cache"));
        config
            .env
            .insert("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into());
        config
            .env
            .insert("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into());
        config.env.insert("SCRIPTED_KEY".into(), DUMMY_KEY.into());
        config.grace_ms = 1000;
        Rig {
            server,
            workspace: tempfile::tempdir().unwrap(),
            _home: home,
            backend: Arc::new(OpenCodeBackend::new(config)),
        }
    }

    fn request(&self, id: &str, prompt: &str, allow: &[&str]) -> ContractRequest {
        agents::request(self.workspace.path(), id, prompt, "", allow)
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
        let limit = Duration::from_secs(90);
        agents::run_in_runtime(&self.resolved(), request, limit, during).await
    }

    fn path(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }
}

/// The tool names a Chat Completions request offered the model.
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A scripted `bash` call that records the shell's pid, then becomes a 30 s sleep.
fn sleeping_shell() -> Turn {
    Turn::tool_call(
        "call_sleep",
        "bash",
        json!({"command": "echo $$ > sleep.pid; exec sleep 30", "description": "sleep"}),
    )
}

#[tokio::test]
async fn a_tool_call_writes_the_deliverable_with_usage_and_events_in_order() {
    let rig = Rig::new(vec![
        Turn::tool_call(
            "call_write",
            "write",
            json!({"filePath": "out.txt", "content": "hello from opencode"}),
        )
        .with_usage(120, 9),
        Turn::text("wrote out.txt").with_usage(130, 11),
    ]);
    let mut request = rig.request("opencode-live-file", "write out.txt", &["edit"]);
    request.targets = vec!["out.txt".into()];
    let (result, events) = rig.run(request, nothing).await;

    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "wrote out.txt");
    assert_eq!(
        result.files.get("out.txt").map(Vec::as_slice),
        Some(&b"hello from opencode"[..]),
        "{result:#?}"
    );
    let requests = rig.server.requests();
    assert_eq!(
        requests.len(),
        2,
        "one request per scripted turn, and no title request (`--title`)"
    );
    assert_eq!(rig.server.requests_past_script(), 0);
    let first = requests[0].body.to_string();
    assert!(
        first.contains("write out.txt") && first.contains("- out.txt"),
        "the prompt (from stdin) and the deliverable list reach the model: {first}"
    );
    // The allowlist `edit` leaves exactly OpenCode's editing tools.
    let mut offered = offered_tools(&requests[0].body);
    offered.sort();
    assert_eq!(offered, ["edit", "write"], "{offered:?}");
    assert!(requests[1].body.to_string().contains("call_write"));
    // Usage: the sum over the turn's two model calls.
    assert_eq!(
        (result.usage.prompt_tokens, result.usage.completion_tokens),
        (120 + 130, 9 + 11)
    );
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::ToolExecStart,
            EventKind::ToolExecEnd,
            EventKind::TextDelta,
            EventKind::MessageEnd
        ],
        "{events:#?}"
    );
    assert_eq!(events[0].tool, "write");
    assert!(events[0].detail.contains("out.txt"), "{:?}", events[0]);
}

#[tokio::test]
async fn the_default_policy_offers_no_tool() {
    let rig = Rig::new(vec![Turn::text("no tools here")]);
    let mut request = rig.request("opencode-live-reasoning", "think", &[]);
    request.instructions = "Answer in \"French\".".into();
    let (result, _) = rig.run(request, nothing).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "no tools here");
    let body = &rig.server.requests()[0].body;
    assert!(offered_tools(body).is_empty(), "{body}");
    assert!(
        body.to_string().contains(r#"Answer in \"French\"."#),
        "the instructions reach the model: {body}"
    );
}

#[tokio::test]
async fn a_provider_refusal_is_failed_rejected_and_never_shows_the_key() {
    let base_url = agents::leaky_provider().await;
    let rig = Rig::for_base_url(ScriptedServer::start(Script::default()), &base_url);
    let (result, _) = rig
        .run(rig.request("opencode-live-401", "hi", &[]), nothing)
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ProviderRejected);
    assert_eq!(err.side_effects, SideEffects::None);
    assert!(err.reason.contains("[redacted]"), "{}", err.reason);
    let shown = format!("{result:?}");
    assert!(!shown.contains(DUMMY_KEY), "the key leaked: {shown}");
}

#[tokio::test]
async fn cancel_during_a_tool_call_is_canceled_and_leaves_no_process() {
    let rig = Rig::new(vec![sleeping_shell()]);
    let pidfile = rig.path("sleep.pid");
    let (sleep_tx, sleep_rx) = tokio::sync::oneshot::channel();
    let (result, _) = rig
        .run(
            rig.request("opencode-live-cancel", "sleep", &["bash"]),
            move |cancel, _| {
                tokio::spawn(async move {
                    let pid = pid_in(&pidfile).await;
                    assert!(alive(pid), "the tool's sleep is running");
                    let _ = sleep_tx.send(pid);
                    cancel.cancel(CancelCause::Caller);
                })
            },
        )
        .await;
    let sleep = sleep_rx.await.expect("the tool call started");
    // Had the run waited for the sleep, OpenCode would have finished the tool and
    // asked the (exhausted) model again: `succeeded`, not `canceled`.
    agents::assert_canceled_mid_tool(&result, sleep);
    assert_eq!(
        agents::processes_of("opencode-live-cancel"),
        Vec::<i32>::new(),
        "processes left"
    );
    assert_eq!(rig.server.requests_past_script(), 0);
}

#[tokio::test]
async fn killing_opencode_mid_turn_is_unknown() {
    let rig = Rig::new(vec![sleeping_shell()]);
    let pidfile = rig.path("sleep.pid");
    let workspace = rig.workspace.path().to_path_buf();
    let (pids_tx, pids_rx) = tokio::sync::oneshot::channel();
    let (result, _) = rig
        .run(
            rig.request("opencode-live-kill", "sleep", &["bash"]),
            move |_, _| {
                tokio::spawn(async move {
                    let sleep = pid_in(&pidfile).await;
                    let agent = agents::agent_pid_in(&workspace, "opencode")
                        .expect("opencode runs in the workspace");
                    agents::kill_9(agent);
                    let _ = pids_tx.send((agent, sleep));
                })
            },
        )
        .await;
    let (agent, sleep) = pids_rx.await.expect("opencode was killed");
    agents::assert_killed_mid_tool(&result, agent, sleep);
    assert_eq!(
        agents::processes_of("opencode-live-kill"),
        Vec::<i32>::new(),
        "processes left"
    );
}

#[tokio::test]
async fn verify_proves_what_it_declares_and_a_missing_program_says_what_to_install() {
    let rig = Rig::new(vec![]);
    let verification = rig.backend.verify().await;
    assert!(verification.problems.is_empty(), "{verification:?}");
    assert!(
        verification.adapter_version.contains("(opencode 1.18.33)"),
        "{verification:?}"
    );
    let descriptor = rig.backend.descriptor();
    for capability in &descriptor.capabilities {
        assert!(
            verification.verified.contains(capability),
            "{capability:?} declared, not verified: {verification:?}"
        );
    }
    // Resume is declared and proven (by continuing the probe's own session);
    // structured output is neither.
    assert!(verification.verified.contains(&Capability::Resume));
    assert!(
        !descriptor
            .capabilities
            .contains(&Capability::StructuredOutput)
    );
    assert!(
        rig.server.requests().is_empty(),
        "the probes never reach the configured model"
    );

    let mut config = ProgramConfig::new("gone");
    config.program = Some("/nonexistent/opencode".into());
    let missing = OpenCodeBackend::new(config).verify().await;
    assert!(missing.verified.is_empty());
    assert_eq!(
        missing
            .problems
            .join(" ")
            .matches("npm i -g opencode-ai")
            .count(),
        1,
        "the install hint, once: {missing:?}"
    );
}

#[tokio::test]
async fn an_unknown_tool_profile_is_refused_before_opencode_starts() {
    let rig = Rig::new(vec![Turn::text("never")]);
    let mut request = rig.request("opencode-live-root", "hi", &[]);
    request.tool_policy.profile = "root".into();
    let backend: Arc<dyn Backend> = rig.backend.clone();
    let (sink, _events) = EventSink::channel();
    let result = backend
        .execute(&request, agent_exec_contract::ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    assert_eq!(result.err.as_ref().unwrap().code, ErrorCode::ToolRejected);
    assert!(rig.server.requests().is_empty(), "opencode was started");
}

/// A run killed while the model was about to answer the tool's output resumes in its
/// own OpenCode session (`--session`), and the model sees the earlier turns.
#[tokio::test]
async fn a_killed_run_resumes_in_its_own_session_and_the_model_sees_the_earlier_turns() {
    let rig = Rig::new(vec![
        Turn::tool_call(
            "call_r1",
            "bash",
            json!({"command": "echo TOOL-OUTPUT-7f3", "description": "marker"}),
        ),
        // The model never answers the tool's output: OpenCode is killed while it waits.
        Turn::default().ending(model_script::Ending::Hang),
        Turn::text("resumed and done").with_usage(140, 12),
    ]);
    let request = rig.request("opencode-live-resume", "run the marker command", &["bash"]);
    let server = &rig.server;
    let session = agents::kill_then_resume(rig.backend.clone(), &request, "opencode", || {
        // The second request carries the tool's output: the session holds both.
        server.requests().len() >= 2
    })
    .await;
    assert!(
        agent_exec_backends::opencode::is_session_id(&session),
        "{session}"
    );
    let requests = rig.server.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let resumed = requests[2].body.to_string();
    agents::assert_carries_the_earlier_turns(
        &resumed,
        &["run the marker command", "call_r1", "TOOL-OUTPUT-7f3"],
    );
    assert_eq!(
        offered_tools(&requests[2].body),
        offered_tools(&requests[0].body),
        "the resumed turn is held to the same tool set"
    );
}
