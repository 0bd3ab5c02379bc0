//! The opencode parser and its fold over streams recorded from the real
//! `opencode run --format json` (opencode-ai 1.18.33) against a scripted Chat
//! Completions server: `opencode-run.jsonl` (a text, a `read` tool call, a second step
//! ending in `stop`, usage per step) and `opencode-400.jsonl` (the provider answered
//! HTTP 400). A stream cut before its last `step_finish` — the program killed — is
//! the head of the first.
use agent_exec_backends::agent_program::{StreamParser as _, Verdict};
use agent_exec_backends::opencode::{Line, OpenCodeStream, parse_line};
use agent_exec_contract::{ErrorCode, EventKind};

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// Folds recorded lines through `OpenCodeStream`, as the driver does.
fn fold(lines: &[&[u8]]) -> (OpenCodeStream, Vec<agent_exec_contract::Event>) {
    let mut stream = OpenCodeStream::new();
    let mut events = Vec::new();
    for line in lines {
        stream.line(line, &mut events);
    }
    (stream, events)
}

#[test]
fn recorded_run_maps_in_order_to_the_last_steps_text_and_summed_usage() {
    let data = lines(include_bytes!("../data/opencode-run.jsonl"));
    assert!(
        data.iter()
            .all(|line| parse_line(line) != Line::Unrecognised)
    );
    let (stream, events) = fold(&data);
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::TextDelta,
            EventKind::ToolExecStart,
            EventKind::ToolExecEnd,
            EventKind::TextDelta
        ]
    );
    assert_eq!(events[1].tool, "read");
    assert!(events[1].detail.contains("in.txt"), "{:?}", events[1]);
    assert_eq!(
        stream.verdict(),
        Verdict::Completed("The file says hello.".into())
    );
    assert_eq!(
        (
            stream.usage().prompt_tokens,
            stream.usage().completion_tokens
        ),
        (200, 20)
    );
    assert_eq!(stream.session(), Some("ses_db1e99ba1ffetOz1HwqTp3jL4w"));
}

#[test]
fn a_stream_cut_before_the_last_step_finish_is_pending() {
    let data = lines(include_bytes!("../data/opencode-run.jsonl"));
    // Killed after the tool ran (the step ended in `tool-calls`), and mid-step.
    for cut in [4, 5, 6] {
        let (stream, _) = fold(&data[..cut]);
        assert_eq!(stream.verdict(), Verdict::Pending, "cut after {cut} lines");
    }
}

#[test]
fn a_recorded_provider_refusal_is_failed_rejected() {
    let data = lines(include_bytes!("../data/opencode-400.jsonl"));
    let (stream, _) = fold(&data);
    match stream.verdict() {
        Verdict::Failed { code, message } => {
            assert_eq!(code, ErrorCode::ProviderRejected);
            assert_eq!(message, "opencode: APIError: scripted failure");
        }
        other => panic!("{other:?}"),
    }
}
