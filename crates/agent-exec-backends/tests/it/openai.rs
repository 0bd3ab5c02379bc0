//! The `openai` backend against a scripted OpenAI-compatible server on loopback: real
//! HTTP, real SSE framing, only the model's words scripted (see `support`).
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::openai::{OpenAiBackend, OpenAiConfig, SESSION_HANDLE};
use agent_exec_contract::{
    Backend, Capability, ContractRequest, ContractResult, ErrorCode, EventKind, EventSink,
    ExecutionContext, Outcome, ProbeRequest, Registry, ResolveError, ResumeFrom, SessionReporter,
    SideEffects,
};
use futures::StreamExt as _;
use support::ScriptedServer;

fn backend(server: &ScriptedServer, model: &str) -> OpenAiBackend {
    let mut config = OpenAiConfig::new("llm", &server.base_url, model);
    config.retry_base_ms = 1;
    OpenAiBackend::new(config)
}

fn request(id: &str, prompt: &str) -> ContractRequest {
    ContractRequest {
        execution_id: id.into(),
        prompt: prompt.into(),
        ..Default::default()
    }
}

async fn run(
    backend: &OpenAiBackend,
    request: &ContractRequest,
) -> (ContractResult, Vec<agent_exec_contract::Event>) {
    let (sink, receiver) = EventSink::channel();
    let result = backend.execute(request, ExecutionContext::new(sink)).await;
    let events = receiver.collect::<Vec<_>>().await;
    (result, events)
}

#[tokio::test]
async fn a_stream_gives_text_ordered_events_and_usage() {
    let server = ScriptedServer::start();
    let (result, events) = run(
        &backend(&server, "echo"),
        &request("s-1", "hello big world"),
    )
    .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, "echo: hello big world");
    assert_eq!(result.usage.prompt_tokens, 8);
    assert_eq!(result.usage.completion_tokens, 2);
    let deltas: String = events
        .iter()
        .filter(|e| e.kind == EventKind::TextDelta)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(deltas, result.text, "events carry the text in order");
    assert!(
        events
            .iter()
            .filter(|e| e.kind == EventKind::TextDelta)
            .count()
            >= 2
    );
    assert_eq!(events.last().unwrap().kind, EventKind::MessageEnd);

    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].execution_id.as_deref(), Some("s-1"));
    assert_eq!(sent[0].body["stream"], true);
    assert_eq!(sent[0].body["stream_options"]["include_usage"], true);
    assert_eq!(sent[0].authorization, None, "no key configured, none sent");
}

#[tokio::test]
async fn a_429_is_retried_before_the_first_token() {
    let server = ScriptedServer::start();
    let (result, events) = run(&backend(&server, "flaky"), &request("r-1", "again")).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, "echo: again");
    assert_eq!(
        server.invocations(),
        ["r-1", "r-1"],
        "one retry, same execution id"
    );
    assert!(result.logs.contains("HTTP 429"), "{}", result.logs);
    assert!(result.logs.contains("1 transport retry"), "{}", result.logs);
    let deltas: String = events.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(deltas, "echo: again", "no event from the failed try");
}

#[tokio::test]
async fn a_stream_cut_before_the_first_token_is_retried() {
    let server = ScriptedServer::start();
    let (result, _) = run(&backend(&server, "early-cut"), &request("e-1", "x")).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(server.invocations().len(), 2);
}

#[tokio::test]
async fn a_disconnect_mid_stream_is_unknown_never_succeeded() {
    let server = ScriptedServer::start();
    for model in ["cut", "garbage"] {
        let (result, events) = run(
            &backend(&server, model),
            &request(&format!("{model}-1"), "x"),
        )
        .await;
        assert_eq!(result.outcome, Outcome::Unknown, "{model}: {result:?}");
        let err = result.err.as_ref().unwrap();
        assert_eq!(err.code, ErrorCode::UnknownOutcome);
        assert_eq!(err.side_effects, SideEffects::Possible);
        assert!(result.text.is_empty(), "no partial text passes as a result");
        assert!(
            !events.is_empty(),
            "the events seen before the cut were delivered"
        );
    }
    assert_eq!(
        server.invocations(),
        ["cut-1", "garbage-1"],
        "nothing retried after a token"
    );
}

#[tokio::test]
async fn rejections_fail_without_retry_and_outages_give_up_retryable() {
    let server = ScriptedServer::start();
    let (result, _) = run(&backend(&server, "reject"), &request("x-1", "x")).await;
    assert_eq!(result.outcome, Outcome::Failed);
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderRejected);
    assert_eq!(err.side_effects, SideEffects::None);
    assert!(err.reason.contains("model refuses"), "{}", err.reason);
    assert_eq!(server.invocations(), ["x-1"]);

    let (result, _) = run(&backend(&server, "down"), &request("d-1", "x")).await;
    assert_eq!(result.outcome, Outcome::Failed);
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderUnavailable);
    assert!(err.retryable);
    assert_eq!(err.side_effects, SideEffects::None);
    assert_eq!(
        server.invocations().iter().filter(|i| *i == "d-1").count(),
        3,
        "1 + max_retries (2)"
    );
}

#[tokio::test]
async fn cancel_aborts_the_stream() {
    let server = ScriptedServer::start();
    let backend = backend(&server, "hang");
    let (sink, mut receiver) = EventSink::channel();
    let ctx = ExecutionContext::new(sink);
    let cancellation = ctx.cancellation.clone();
    let request = request("h-1", "x");
    let run = tokio::spawn(async move { backend.execute(&request, ctx).await });
    let first = tokio::time::timeout(Duration::from_secs(10), receiver.next())
        .await
        .expect("the first token arrives")
        .unwrap();
    assert_eq!(first.text, "thinking");
    cancellation.cancel(agent_exec_contract::CancelCause::Caller);
    let result = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("execute returns promptly after a cancel")
        .unwrap();
    assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
    assert_eq!(result.err.unwrap().code, ErrorCode::Canceled);
}

#[tokio::test]
async fn a_missing_key_variable_is_named_and_nothing_is_sent() {
    let server = ScriptedServer::start();
    let mut config = OpenAiConfig::new("llm", &server.base_url, "echo");
    config.api_key_env = Some("AGENT_EXEC_TEST_NEVER_SET_KEY".into());
    let backend = OpenAiBackend::new(config);
    let (result, _) = run(&backend, &request("k-1", "x")).await;
    assert_eq!(result.outcome, Outcome::Failed);
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderUnavailable);
    assert!(
        err.reason.contains("$AGENT_EXEC_TEST_NEVER_SET_KEY"),
        "{}",
        err.reason
    );
    assert!(server.requests().is_empty());
    let verification = backend.verify().await;
    assert!(verification.verified.is_empty());
}

#[tokio::test]
async fn capabilities_are_verified_by_a_real_probe() {
    let server = ScriptedServer::start();
    let mut registry = Registry::new();
    registry
        .register(Arc::new(backend(&server, "echo")))
        .unwrap();
    let resolved = registry
        .resolve(
            "llm",
            &[
                Capability::Text,
                Capability::Stream,
                Capability::Usage,
                Capability::Cancel,
            ],
        )
        .await
        .unwrap();
    assert_eq!(resolved.name, "llm");
    // A run that requires neither structured output nor resume pays for one probe: the
    // one-token completion. (Before: three, on every run.)
    let probes = server.requests();
    assert_eq!(probes.len(), 1, "{probes:?}");
    let id = probes[0].execution_id.clone().unwrap_or_default();
    assert!(id.starts_with("verify-"), "the probe's own id: {id:?}");
    let plain = &probes[0];
    assert!(plain.body.get("response_format").is_none());
    assert_eq!(plain.body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(plain.body["max_tokens"], 1);

    // Everything (`backends --verify`): the three probes at once, under one new id,
    // and what they spent.
    let probe = backend(&server, "echo")
        .probe(&ProbeRequest {
            execution_id: "verify-all".into(),
            required: None,
        })
        .await;
    assert!(probe.verification.problems.is_empty(), "{probe:?}");
    let all = server.requests();
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(
        all[1..]
            .iter()
            .all(|p| p.execution_id.as_deref() == Some("verify-all")),
        "{all:?}"
    );
    assert!(all.iter().all(|p| p.is_probe()));
    assert!(probe.usage.prompt_tokens > 0, "{probe:?}");
    // Asked for structured output alone: the base probe and that one.
    backend(&server, "echo")
        .probe(&ProbeRequest {
            execution_id: "verify-so".into(),
            required: Some(vec![Capability::StructuredOutput]),
        })
        .await;
    let so: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|p| p.execution_id.as_deref() == Some("verify-so"))
        .collect();
    assert_eq!(so.len(), 2, "{so:?}");
    assert!(
        so.iter()
            .any(|p| p.body["response_format"]["type"] == "json_schema")
    );
    assert_eq!(plain.body["max_tokens"], 1);

    let down = ScriptedServer::start();
    let mut registry = Registry::new();
    registry.register(Arc::new(backend(&down, "down"))).unwrap();
    let refused = registry.resolve("llm", &[Capability::Text]).await;
    let Err(ResolveError::MissingCapability { problems, .. }) = refused else {
        panic!(
            "a server that is down verifies nothing: {:?}",
            refused.err()
        );
    };
    assert!(problems[0].contains("503"), "{problems:?}");
    assert!(registry.resolve("llm", &[Capability::Files]).await.is_err());
}

async fn resolve_llm(
    server: &ScriptedServer,
    model: &str,
    required: &[Capability],
) -> Result<agent_exec_contract::Resolved, ResolveError> {
    let mut registry = Registry::new();
    registry.register(Arc::new(backend(server, model))).unwrap();
    registry.resolve("llm", required).await
}

fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": false
    })
}

#[tokio::test]
async fn structured_output_is_asked_with_response_format_and_checked_by_the_runtime() {
    use agent_exec_runtime::{RunOptions, Runtime};
    let server = ScriptedServer::start();
    let resolved = resolve_llm(&server, "verbatim", &[Capability::StructuredOutput])
        .await
        .unwrap();
    // The probe that verified it asked for a schema and was answered in it.
    let probe = server
        .requests()
        .into_iter()
        .find(|p| p.body.get("response_format").is_some())
        .unwrap();
    assert_eq!(probe.body["response_format"]["type"], "json_schema");

    let mut matching = request("so-1", r#"{"n": 3}"#);
    matching.output_schema = Some(schema());
    let result = Runtime::new()
        .run(matching, &resolved, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, r#"{"n": 3}"#, "the JSON is the text");
    let sent = server
        .requests()
        .into_iter()
        .find(|r| r.execution_id.as_deref() == Some("so-1"))
        .unwrap();
    assert_eq!(
        sent.body["response_format"],
        serde_json::json!({"type": "json_schema", "json_schema": {"name": "agent_exec_output", "schema": schema()}})
    );

    // The server's promise is not a proof: an answer of the wrong shape is failed.
    let mut mismatching = request("so-2", r#"{"n": "three"}"#);
    mismatching.output_schema = Some(schema());
    let result = Runtime::new()
        .run(mismatching, &resolved, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::MissingDeliverable);
    assert_eq!(
        err.side_effects,
        SideEffects::None,
        "a chat API touches nothing"
    );
    assert!(
        err.reason.contains("at /n") && err.reason.contains("integer"),
        "{}",
        err.reason
    );
    assert!(result.text.is_empty());
}

#[tokio::test]
async fn a_server_that_ignores_response_format_does_not_verify_structured_output() {
    let server = ScriptedServer::start();
    let verification = backend(&server, "no-json").verify().await;
    assert!(verification.verified.contains(&Capability::Text));
    assert!(
        !verification
            .verified
            .contains(&Capability::StructuredOutput),
        "{verification:?}"
    );
    assert!(
        verification
            .problems
            .iter()
            .any(|p| p.starts_with("structured-output:") && p.contains("did not honour")),
        "{:?}",
        verification.problems
    );
    let refused = resolve_llm(&server, "no-json", &[Capability::StructuredOutput]).await;
    assert!(
        matches!(refused, Err(ResolveError::MissingCapability { .. })),
        "{:?}",
        refused.err()
    );
}

/// Runs `request` as a resumed attempt continuing `session`; returns the result and the
/// handles the attempt reported.
async fn run_resumed(
    backend: &OpenAiBackend,
    request: &ContractRequest,
    session: &str,
    original_prompt: &str,
) -> (ContractResult, Vec<String>) {
    let (reporter, handles) = SessionReporter::channel();
    let mut ctx = ExecutionContext::new(EventSink::discard());
    ctx.attempt = 2;
    ctx.session = reporter;
    ctx.resume = Some(ResumeFrom {
        session: session.into(),
        attempt: 1,
        original_prompt: original_prompt.into(),
    });
    let result = backend.execute(request, ctx).await;
    (result, handles.collect().await)
}

fn messages(body: &serde_json::Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_attempt_reports_its_handle_before_the_answer_arrives() {
    let server = ScriptedServer::start();
    let backend = backend(&server, "hang");
    let (reporter, mut handles) = SessionReporter::channel();
    let (sink, mut events) = EventSink::channel();
    let mut ctx = ExecutionContext::new(sink);
    ctx.session = reporter;
    let cancellation = ctx.cancellation.clone();
    let request = request("sh-1", "x");
    let run = tokio::spawn(async move { backend.execute(&request, ctx).await });
    // The stream hangs after its first token: the handle is there already, which is
    // what a runner SIGKILLed at this point leaves in the journal.
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("the first token arrives");
    assert!(first.is_some());
    assert_eq!(handles.try_recv().as_deref(), Ok(SESSION_HANDLE));
    cancellation.cancel(agent_exec_contract::CancelCause::Caller);
    let result = run.await.unwrap();
    assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
}

#[tokio::test]
async fn a_resumed_attempt_resends_the_original_prompt_and_the_continuation() {
    let server = ScriptedServer::start();
    let mut continuation = request("rs-1", "You were interrupted; finish the task.");
    continuation.instructions = "be brief".into();
    let (result, handles) = run_resumed(
        &backend(&server, "echo"),
        &continuation,
        SESSION_HANDLE,
        "summarise the changelog",
    )
    .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, "echo: You were interrupted; finish the task.");
    assert!(
        result.logs.contains("resumed from attempt 1"),
        "{}",
        result.logs
    );
    assert_eq!(
        handles,
        [SESSION_HANDLE],
        "the resumed attempt reports it too"
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].execution_id.as_deref(), Some("rs-1"));
    let pair = |r: &str, t: &str| (r.to_owned(), t.to_owned());
    assert_eq!(
        messages(&sent[0].body),
        [
            pair("system", "be brief"),
            pair("user", "summarise the changelog"),
            pair("user", "You were interrupted; finish the task."),
        ]
    );

    // No continuation prompt: the original conversation is asked again, as it was.
    let (result, _) = run_resumed(
        &backend(&server, "echo"),
        &request("rs-2", ""),
        SESSION_HANDLE,
        "summarise the changelog",
    )
    .await;
    assert_eq!(result.text, "echo: summarise the changelog", "{result:?}");
    let sent = server.requests();
    assert_eq!(
        messages(&sent[1].body),
        [pair("user", "summarise the changelog")]
    );
}

#[tokio::test]
async fn a_foreign_session_handle_is_refused_and_nothing_is_sent() {
    let server = ScriptedServer::start();
    for foreign in [
        "0199a213-81c0-7800-8aa1-bbab2a035a53",
        "openai-conversation-v0",
    ] {
        let (result, handles) = run_resumed(
            &backend(&server, "echo"),
            &request("rf-1", "go on"),
            foreign,
            "the task",
        )
        .await;
        assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
        let err = result.err.unwrap();
        assert_eq!(err.code, ErrorCode::Internal);
        assert_eq!(err.side_effects, SideEffects::None);
        assert!(!err.retryable);
        assert!(
            err.reason.contains(foreign) && err.reason.contains(SESSION_HANDLE),
            "{}",
            err.reason
        );
        assert!(handles.is_empty(), "a refused attempt reports nothing");
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[tokio::test]
async fn resume_is_verified_by_a_probe_of_the_resumed_shape() {
    let server = ScriptedServer::start();
    let verification = backend(&server, "echo").verify().await;
    assert!(
        verification.verified.contains(&Capability::Resume),
        "{verification:?}"
    );
    let probe = server
        .requests()
        .into_iter()
        .find(|p| p.body["messages"].as_array().is_some_and(|m| m.len() == 2))
        .expect("a probe of two messages");
    assert!(probe.is_probe(), "the probe is not an execution");
    assert_eq!(
        messages(&probe.body)
            .iter()
            .map(|(role, _)| role.as_str())
            .collect::<Vec<_>>(),
        ["user", "user"]
    );
    assert_eq!(probe.body["max_tokens"], 1);

    // A server whose chat template insists on alternating roles refuses the resumed
    // shape: everything else verifies, resume does not, and the problem says why.
    let strict = backend(&server, "strict-roles").verify().await;
    assert!(strict.verified.contains(&Capability::Text), "{strict:?}");
    assert!(
        strict.verified.contains(&Capability::StructuredOutput),
        "{strict:?}"
    );
    assert!(!strict.verified.contains(&Capability::Resume), "{strict:?}");
    assert!(
        strict
            .problems
            .iter()
            .any(|p| p.starts_with("resume:") && p.contains("must alternate")),
        "{:?}",
        strict.problems
    );
    let refused = resolve_llm(&server, "strict-roles", &[Capability::Resume]).await;
    assert!(
        matches!(refused, Err(ResolveError::MissingCapability { .. })),
        "{:?}",
        refused.err()
    );
    assert!(
        resolve_llm(&server, "echo", &[Capability::Resume])
            .await
            .is_ok()
    );
}
