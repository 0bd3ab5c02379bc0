//! The codex parser and its fold over streams recorded from the real `codex exec --json`
//! (codex-cli 0.171.0): `codex-exec.jsonl` (scripted Responses server; one
//! `exec_command` tool call that wrote `out.txt`, a final message, usage), and three
//! recorded against small loopback servers that misbehave on purpose: a stream cut then
//! retried (`-retry`), a cut without retries (`-disconnect`), a 401 (`-401`).
use agent_exec_backends::agent_program::{StreamParser as _, Verdict};
use agent_exec_backends::codex::{CodexStream, Line, parse_line};
use agent_exec_contract::{ErrorCode, EventKind};

#[test]
fn recorded_codex_stream_maps_in_order() {
    let data = include_bytes!("../data/codex-exec.jsonl");
    let lines: Vec<Line> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(parse_line)
        .collect();
    let kinds: Vec<EventKind> = lines
        .iter()
        .flat_map(|l| match l {
            Line::Events(events) => events.iter().map(|e| e.kind.clone()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![EventKind::ToolExecStart, EventKind::ToolExecEnd]
    );
    assert!(lines.contains(&Line::AgentMessage("wrote out.txt".into())));
    let Some(Line::TurnCompleted(usage)) = lines.last() else {
        panic!("the stream must end with turn.completed: {lines:?}")
    };
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (240, 18));
    assert!(!lines.contains(&Line::Unrecognised));
}

/// Folds a recorded stream through `CodexStream`, as the driver does.
fn fold(data: &[u8]) -> (CodexStream, Vec<agent_exec_contract::Event>) {
    let mut stream = CodexStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        stream.line(line, &mut events);
    }
    (stream, events)
}

#[test]
fn recorded_success_folds_to_the_last_message_and_usage() {
    let (stream, events) = fold(include_bytes!("../data/codex-exec.jsonl"));
    assert_eq!(stream.verdict(), Verdict::Completed("wrote out.txt".into()));
    assert_eq!(stream.usage().prompt_tokens, 240);
    assert_eq!(
        events.len(),
        3,
        "tool start, tool end, the message: {events:?}"
    );
}

/// codex 0.171.0, `stream_max_retries = 2`: the first stream was cut before
/// `response.completed`; codex said `Reconnecting... 1/2` as a top-level `error` line,
/// retried, and completed. The `error` line must not end the run.
#[test]
fn recorded_stream_retry_is_not_a_failure() {
    let data = include_bytes!("../data/codex-exec-retry.jsonl");
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let reconnect = lines
        .iter()
        .position(|l| l.starts_with(br#"{"type":"error""#))
        .expect("the recording has the reconnect notice");
    let (before, _) = fold(&lines[..=reconnect].join(&b'\n'));
    assert_eq!(
        before.verdict(),
        Verdict::Pending,
        "a notice is not the end"
    );
    let (stream, _) = fold(data);
    assert_eq!(
        stream.verdict(),
        Verdict::Completed("half and whole".into())
    );
    assert_eq!(
        (
            stream.usage().prompt_tokens,
            stream.usage().completion_tokens
        ),
        (80, 6)
    );
}

/// codex 0.171.0, `stream_max_retries = 0`, the stream cut: `turn.failed`.
#[test]
fn recorded_disconnect_without_retries_is_provider_unavailable() {
    let (stream, _) = fold(include_bytes!("../data/codex-exec-disconnect.jsonl"));
    let Verdict::Failed { code, message } = stream.verdict() else {
        panic!("expected a failure: {:?}", stream.verdict())
    };
    assert_eq!(code, ErrorCode::ProviderUnavailable);
    assert!(message.contains("stream disconnected"), "{message}");
}

/// codex 0.171.0 against a provider answering 401 with the key echoed in its body
/// (the recorded key is a dummy): `turn.failed` quoting the provider verbatim.
#[test]
fn recorded_401_is_provider_rejected() {
    let (stream, _) = fold(include_bytes!("../data/codex-exec-401.jsonl"));
    let Verdict::Failed { code, message } = stream.verdict() else {
        panic!("expected a failure: {:?}", stream.verdict())
    };
    assert_eq!(code, ErrorCode::ProviderRejected);
    assert!(message.contains("401"), "{message}");
}
