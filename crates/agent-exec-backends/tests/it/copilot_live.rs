//! The `copilot` backend driving the real GitHub Copilot CLI 1.0.102 (npm
//! `@github/copilot`, installed by scripts/test.sh) against `model-script`'s Chat
//! Completions server on loopback, through Copilot's bring-your-own-key mode
//! (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_OFFLINE=true`: no GitHub login, nothing
//! leaves the machine). The agent, its tools and its process tree are real; only the
//! model's words are scripted.
use crate::agents;
use agents::{drain, wait_for_pid};
use test_support::procfs::gone;

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::copilot::CopilotBackend;
use agent_exec_contract::{
    Backend, CancelCause, Capability, ContractRequest, ErrorCode, EventKind, EventSink,
    ExecutionContext, Outcome, SideEffects,
};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::json;

fn copilot_program() -> PathBuf {
    test_support::peers::npm_bin("copilot", "@github/copilot")
}

/// Where Copilot unpacks its package on first start (`XDG_CACHE_HOME`): shared by the
/// tests so it is unpacked once.
fn copilot_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache")
}

struct Setup {
    workspace: tempfile::TempDir,
    home: tempfile::TempDir,
    backend: Arc<CopilotBackend>,
}

/// A backend whose provider is `base_url` (`/v1` included), with a private `HOME`
/// and `COPILOT_HOME`.
fn setup_at(base_url: &str) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut config = ProgramConfig::new("copilot-test");
    config.program = Some(copilot_program().display().to_string());
    config.grace_ms = 1000;
    config.model = Some("gpt-4.1".into());
    let home_dir = home.path().display().to_string();
    for (key, value) in [
        ("HOME", home_dir.clone()),
        ("COPILOT_HOME", format!("{home_dir}/.copilot")),
        ("XDG_CACHE_HOME", copilot_cache().display().to_string()),
        ("COPILOT_PROVIDER_BASE_URL", base_url.to_owned()),
        ("COPILOT_PROVIDER_TYPE", "openai".to_owned()),
        ("COPILOT_PROVIDER_WIRE_API", "completions".to_owned()),
        (
            "COPILOT_PROVIDER_API_KEY",
            "sk-copilot-live-test-key".to_owned(),
        ),
        ("COPILOT_OFFLINE", "true".to_owned()),
    ] {
        config.env.insert(key.to_owned(), value);
    }
    Setup {
        workspace,
        home,
        backend: Arc::new(CopilotBackend::new(config)),
    }
}

impl Setup {
    /// Whether a session Copilot keeps in this `COPILOT_HOME` has `needle` in its
    /// `events.jsonl` (what `--resume` reads back; Copilot writes it behind the run).
    fn session_events_hold(&self, needle: &str) -> bool {
        let sessions = self.home.path().join(".copilot/session-state");
        std::fs::read_dir(sessions).is_ok_and(|dirs| {
            dirs.flatten().any(|dir| {
                std::fs::read_to_string(dir.path().join("events.jsonl"))
                    .is_ok_and(|text| text.contains(needle))
            })
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }

    fn request(&self, prompt: &str, profile: &str) -> ContractRequest {
        let id = format!("copilot-{}-{prompt}", std::process::id());
        agents::request(self.workspace.path(), &id, prompt, profile, &[])
    }
}

#[tokio::test]
async fn a_tool_run_succeeds_with_its_text_tool_events_and_usage_from_the_usage_file() {
    let workspace = tempfile::tempdir().unwrap();
    let file = workspace.path().join("notes.txt");
    std::fs::write(&file, "INSIDE-NOTES").unwrap();
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call("call_v1", "view", json!({"path": file})).with_usage(120, 7),
        Turn::text("the notes say INSIDE-NOTES").with_usage(150, 9),
    ]));
    let mut s = setup_at(&server.base_url);
    s.workspace = workspace;
    let (sink, mut rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&s.request("read", "workspace"), ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "the notes say INSIDE-NOTES");
    assert_eq!(
        (result.usage.prompt_tokens, result.usage.completion_tokens),
        (270, 16),
        "usage is the usage file's, summed over the two model calls"
    );
    let events = drain(&mut rx);
    let tools: Vec<(EventKind, &str)> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ToolExecStart | EventKind::ToolExecEnd))
        .map(|e| (e.kind.clone(), e.tool.as_str()))
        .collect();
    assert_eq!(
        tools,
        vec![
            (EventKind::ToolExecStart, "view"),
            (EventKind::ToolExecEnd, "view")
        ],
        "{events:#?}"
    );
    // The prompt went on stdin and reached the model; the file's content went back.
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(bodies[0].contains("read"), "{}", bodies[0]);
    assert!(bodies[1].contains("INSIDE-NOTES"), "{}", bodies[1]);
}

#[tokio::test]
async fn the_default_reasoning_policy_offers_copilot_no_tools() {
    let server = ScriptedServer::start(Script::new(vec![Turn::text("no tools here")]));
    let s = setup_at(&server.base_url);
    let (sink, _rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&s.request("think", ""), ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    let first = server.requests().into_iter().next().unwrap();
    let offered = first
        .body
        .get("tools")
        .and_then(|tools| tools.as_array())
        .map_or(0, Vec::len);
    assert_eq!(offered, 0, "Copilot offered tools: {}", first.body);
}

/// A provider that refuses every request with `status` (Copilot retries a 401 twice,
/// then gives up).
fn refusing_provider(status: u16) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 65536];
                // Enough to have the request; the answer does not depend on it.
                let _ = stream.read(&mut buffer);
                let body =
                    r#"{"error":{"message":"invalid api key","type":"invalid_request_error"}}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} Refused\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn a_refused_key_fails_as_a_rejected_provider_without_the_key() {
    let s = setup_at(&refusing_provider(401));
    let (sink, _rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&s.request("hi", ""), ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderRejected, "{}", err.reason);
    assert!(err.reason.contains("HTTP 401"), "{}", err.reason);
    assert!(!err.retryable);
    assert_eq!(err.side_effects, SideEffects::None);
    for text in [&err.reason, &result.logs] {
        assert!(!text.contains("sk-copilot-live-test-key"), "{text}");
    }
}

fn sleeping_script(root: &Path) -> Vec<Turn> {
    vec![
        Turn::tool_call(
            "call_b1",
            "bash",
            json!({
                "command": format!(
                    "echo $$ > {}; exec sleep 30",
                    root.join("pid").display()
                ),
                "description": "sleep"
            }),
        ),
        Turn::text("slept"),
    ]
}

#[tokio::test]
async fn cancel_in_the_middle_of_a_bash_tool_is_canceled_and_leaves_no_process() {
    let workspace = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Script::new(sleeping_script(workspace.path())));
    let mut s = setup_at(&server.base_url);
    s.workspace = workspace;
    let (mut run, cancel, _rx) =
        agents::spawn_execute(s.backend.clone(), s.request("sleep", "workspace"));
    let sleeper = wait_for_pid(&s.path("pid"), &mut run).await;
    let copilot = agents::agent_pid_in(s.workspace.path(), "copilot")
        .expect("the copilot process runs in the workspace");
    cancel.cancel(CancelCause::Caller);
    let result = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("cancel must return")
        .unwrap();
    agents::assert_canceled_mid_tool(&result, sleeper);
    assert!(gone(copilot), "copilot {copilot} survived");
    assert_eq!(agents::agent_pid_in(s.workspace.path(), "copilot"), None);
}

#[tokio::test]
async fn killing_copilot_mid_run_is_unknown_and_its_tree_is_cleaned_up() {
    let workspace = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Script::new(sleeping_script(workspace.path())));
    let mut s = setup_at(&server.base_url);
    s.workspace = workspace;
    let (mut run, _, _rx) =
        agents::spawn_execute(s.backend.clone(), s.request("sleep", "workspace"));
    let sleeper = wait_for_pid(&s.path("pid"), &mut run).await;
    let copilot = agents::agent_pid_in(s.workspace.path(), "copilot")
        .expect("the copilot process runs in the workspace");
    agents::kill_9(copilot);
    let result = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("a killed agent must not hang the run")
        .unwrap();
    agents::assert_killed_mid_tool(&result, copilot, sleeper);
}

#[tokio::test]
async fn verify_proves_what_the_backend_declares() {
    let s = setup_at("http://127.0.0.1:9/v1");
    let verification = s.backend.verify().await;
    assert!(verification.problems.is_empty(), "{verification:#?}");
    for capability in s.backend.descriptor().capabilities {
        assert!(
            verification.verified.contains(&capability),
            "{capability:?}: {verification:#?}"
        );
    }
    assert!(verification.verified.contains(&Capability::Resume));
    assert!(
        !verification
            .verified
            .contains(&Capability::StructuredOutput)
    );
    assert!(
        verification
            .adapter_version
            .ends_with("(GitHub Copilot CLI 1.0.102)"),
        "{}",
        verification.adapter_version
    );
}

/// Resume, end to end on the real Copilot: attempt 1 runs a `bash` tool, then
/// `copilot` is SIGKILLed while its next model request is in flight; the session id
/// the backend reported up front (`--session-id`) goes back in as `ctx.resume`, and
/// attempt 2 (`--resume=ID`) continues that session: its model request carries the
/// earlier tool call and its output.
#[tokio::test]
async fn a_killed_run_resumes_its_own_session_and_the_model_sees_the_earlier_turns() {
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "call_r1",
            "bash",
            json!({"command": "echo TOOL-OUTPUT-c41", "description": "marker"}),
        ),
        // The model never answers the tool's output: copilot is killed while it waits.
        Turn::default().ending(model_script::Ending::Hang),
        Turn::text("resumed and done"),
    ]));
    let s = setup_at(&server.base_url);
    let request = s.request("run the marker command", "workspace");
    agents::kill_then_resume(s.backend.clone(), &request, "copilot", || {
        // Killed once the model has the tool's output and Copilot has written it
        // to the session (under load the second request can come first: a kill
        // then leaves nothing to resume, a failure the test would blame on resume).
        server.requests().len() >= 2 && s.session_events_hold("TOOL-OUTPUT-c41")
    })
    .await;
    let requests = server.requests();
    let resumed = requests.last().unwrap().body["messages"].to_string();
    agents::assert_carries_the_earlier_turns(
        &resumed,
        &["run the marker command", "call_r1", "TOOL-OUTPUT-c41"],
    );
}
