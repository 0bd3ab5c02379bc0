//! The scripted server over real HTTP: turns served in order, recorded requests, the
//! exhausted-script answer, and each protocol's framing.
#![allow(clippy::unwrap_used)]
use model_script::{EXHAUSTED_TEXT, Ending, Part, Script, ScriptedServer, Turn};

fn post(url: &str, body: &str) -> String {
    // A tiny HTTP/1.1 client over a TcpStream keeps this crate free of an HTTP client.
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn responses_turns_are_served_in_order_then_exhausted() {
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call("call_1", "shell", serde_json::json!({"command": ["true"]})),
        Turn::text("all done").with_usage(7, 3),
    ]));
    let first = post(
        &format!("{}/responses", server.base_url),
        r#"{"model":"m"}"#,
    );
    assert!(first.contains("event: response.created"), "{first}");
    assert!(first.contains(r#""type":"function_call""#), "{first}");
    assert!(first.contains(r#""call_id":"call_1""#), "{first}");
    let second = post(
        &format!("{}/responses", server.base_url),
        r#"{"model":"m","n":2}"#,
    );
    assert!(second.contains("response.output_text.delta"), "{second}");
    assert!(second.contains(r#""input_tokens":7"#), "{second}");
    assert!(second.contains("event: response.completed"), "{second}");
    let third = post(&format!("{}/responses", server.base_url), "{}");
    assert!(third.contains(EXHAUSTED_TEXT), "{third}");
    assert_eq!(server.turns_served(), 2);
    assert_eq!(server.requests_past_script(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body["n"], 2);
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer k"));
}

#[test]
fn chat_completions_frames_end_with_done() {
    let server = ScriptedServer::start(Script::new(vec![Turn {
        parts: vec![
            Part::Text("héllo wörld".into()),
            Part::ToolCall {
                call_id: "c1".into(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
            },
        ],
        ..Turn::default()
    }]));
    let reply = post(&format!("{}/chat/completions", server.base_url), "{}");
    assert!(reply.contains(r#""finish_reason":"tool_calls""#), "{reply}");
    assert!(reply.contains("data: [DONE]"), "{reply}");
    assert!(reply.contains(r#""prompt_tokens":100"#), "{reply}");
}

#[test]
fn a_disconnecting_turn_sends_no_completion() {
    let server = ScriptedServer::start(Script::new(vec![
        Turn::text("partial").ending(Ending::Disconnect),
    ]));
    let reply = post(&format!("{}/responses", server.base_url), "{}");
    assert!(reply.contains("response.output_text.delta"), "{reply}");
    assert!(!reply.contains("response.completed"), "{reply}");
}

#[test]
fn a_namespaced_call_carries_its_namespace_on_responses_and_a_flat_name_elsewhere() {
    let call = || {
        Turn::namespaced_tool_call(
            "c1",
            "mcp__envreg",
            "env_resolve",
            serde_json::json!({"serviceId": "a"}),
        )
    };
    let server = ScriptedServer::start(Script::new(vec![call(), call(), call()]));
    let responses = post(
        &format!("{}/responses", server.base_url),
        r#"{"model":"m"}"#,
    );
    assert!(
        responses.contains(r#""namespace":"mcp__envreg""#),
        "{responses}"
    );
    assert!(responses.contains(r#""name":"env_resolve""#), "{responses}");
    let chat = post(
        &format!("{}/chat/completions", server.base_url),
        r#"{"model":"m"}"#,
    );
    assert!(
        chat.contains(r#""name":"mcp__envreg__env_resolve""#),
        "{chat}"
    );
    let messages = post(
        &format!("{}/messages", server.base_url),
        r#"{"model":"m","stream":true,"tools":[]}"#,
    );
    assert!(
        messages.contains(r#""name":"mcp__envreg__env_resolve""#),
        "{messages}"
    );
    assert!(!messages.contains("namespace"), "{messages}");
}

#[test]
fn gemini_streams_turns_and_answers_side_requests_without_one() {
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call("c1", "read_file", serde_json::json!({"file_path": "a.txt"})),
        Turn::text("read it").with_usage(7, 3),
    ]));
    let models = format!("{}/v1beta/models", server.origin);
    // The model router's classifier and a token count: not conversation turns.
    let side = post(
        &format!("{models}/gemini-3.5-flash-lite:generateContent"),
        "{}",
    );
    assert!(side.contains(r#""finishReason":"STOP""#), "{side}");
    assert!(!side.contains("text/event-stream"), "{side}");
    let count = post(&format!("{models}/gemini-2.5-flash:countTokens"), "{}");
    assert!(count.contains(r#""totalTokens":10"#), "{count}");
    let first = post(
        &format!("{models}/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        r#"{"contents":[]}"#,
    );
    assert!(first.contains("text/event-stream"), "{first}");
    assert!(
        first.contains(
            r#"data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"file_path":"a.txt"}}}]},"index":0}],"modelVersion":"gemini-2.5-flash"}"#
        ),
        "{first}"
    );
    let second = post(
        &format!("{models}/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        "{}",
    );
    assert!(second.contains(r#"{"text":"re"}"#), "{second}");
    assert!(second.contains(r#""promptTokenCount":7"#), "{second}");
    assert!(second.contains(r#""finishReason":"STOP""#), "{second}");
    assert_eq!(server.turns_served(), 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[2].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    );
    assert_eq!(requests[2].body["contents"], serde_json::json!([]));
}
