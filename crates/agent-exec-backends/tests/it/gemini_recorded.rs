//! The gemini parser and its fold over streams recorded from the real
//! `gemini --output-format=stream-json` (Gemini CLI 0.61.0) against small loopback
//! servers: `gemini-exec.jsonl` (one `write_file` call that wrote `out.txt`, then the
//! answer, usage), `gemini-400.jsonl` (the API refused the key with a 400) and
//! `gemini-cut.jsonl` (the response stream was cut after its first chunk: Gemini
//! retried, then gave up with `[API Error: terminated]`).
use agent_exec_backends::agent_program::{StreamParser as _, Verdict};
use agent_exec_backends::gemini::{GeminiStream, Line, parse_line};
use agent_exec_contract::{ErrorCode, EventKind};

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// Folds a recorded stream through `GeminiStream`, as the driver does.
fn fold(data: &[u8]) -> (GeminiStream, Vec<agent_exec_contract::Event>) {
    let mut stream = GeminiStream::new();
    let mut events = Vec::new();
    for line in lines(data) {
        stream.line(line, &mut events);
    }
    (stream, events)
}

#[test]
fn every_recorded_line_is_read() {
    for data in [
        &include_bytes!("../data/gemini-exec.jsonl")[..],
        include_bytes!("../data/gemini-400.jsonl"),
        include_bytes!("../data/gemini-cut.jsonl"),
    ] {
        for line in lines(data) {
            assert_ne!(
                parse_line(line),
                Line::Unrecognised,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

#[test]
fn recorded_success_folds_to_the_answer_usage_tool_events_and_session() {
    let (stream, events) = fold(include_bytes!("../data/gemini-exec.jsonl"));
    assert_eq!(stream.verdict(), Verdict::Completed("wrote out.txt".into()));
    assert_eq!(
        (
            stream.usage().prompt_tokens,
            stream.usage().completion_tokens
        ),
        (200, 20)
    );
    assert_eq!(
        stream.session(),
        Some("d935b2d5-780d-4be3-9dd3-89d722564ef2")
    );
    let kinds: Vec<(EventKind, &str)> = events
        .iter()
        .map(|e| (e.kind.clone(), e.tool.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (EventKind::ToolExecStart, "write_file"),
            (EventKind::ToolExecEnd, "write_file"),
            (EventKind::TextDelta, "")
        ]
    );
    assert!(events[0].detail.contains("out.txt"), "{:?}", events[0]);
    assert_eq!(events[1].detail, "success");
}

#[test]
fn recorded_refusal_is_a_rejected_provider() {
    let (stream, _) = fold(include_bytes!("../data/gemini-400.jsonl"));
    let Verdict::Failed { code, message } = stream.verdict() else {
        panic!("{:?}", stream.verdict())
    };
    assert_eq!(code, ErrorCode::ProviderRejected);
    assert!(message.contains("API key not valid"), "{message}");
}

#[test]
fn recorded_cut_stream_is_an_unavailable_provider_after_the_partial_text() {
    let data = include_bytes!("../data/gemini-cut.jsonl");
    let (stream, events) = fold(data);
    assert_eq!(events.len(), 1, "the partial text was streamed");
    let Verdict::Failed { code, .. } = stream.verdict() else {
        panic!("{:?}", stream.verdict())
    };
    assert_eq!(code, ErrorCode::ProviderUnavailable);
    // Cut before Gemini's own `result`: nothing final, which the driver settles as
    // `unknown`.
    let all = lines(data);
    let (cut, _) = fold(&all[..all.len() - 1].join(&b'\n'));
    assert_eq!(cut.verdict(), Verdict::Pending);
}
