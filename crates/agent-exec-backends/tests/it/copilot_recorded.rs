//! The copilot parser and its fold over streams recorded from the real GitHub Copilot
//! CLI 1.0.102 (`copilot --output-format json`, prompt on stdin, bring-your-own-key
//! against a scripted Chat Completions server on loopback; paths rewritten to `/w`,
//! the long `session.skills_loaded` line dropped): `copilot-tool.jsonl` (one `view`
//! tool call, then a streamed final message) and `copilot-401.jsonl` (the provider
//! refused the key: Copilot retried twice, then `session.error` and `result` with
//! exit code 1).
use agent_exec_backends::agent_program::{StreamParser as _, Verdict};
use agent_exec_backends::copilot::{CopilotStream, Line, parse_line};
use agent_exec_contract::{ErrorCode, EventKind};

fn fold(data: &[u8]) -> (CopilotStream, Vec<agent_exec_contract::Event>) {
    let mut stream = CopilotStream::new(None);
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        stream.line(line, &mut events);
    }
    (stream, events)
}

#[test]
fn every_recorded_line_is_read() {
    for data in [
        &include_bytes!("../data/copilot-tool.jsonl")[..],
        &include_bytes!("../data/copilot-401.jsonl")[..],
    ] {
        for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
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
fn recorded_tool_run_maps_in_order_and_ends_with_the_last_message() {
    let (stream, events) = fold(include_bytes!("../data/copilot-tool.jsonl"));
    let kinds: Vec<(EventKind, &str)> = events
        .iter()
        .map(|event| (event.kind.clone(), event.tool.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::ToolExecStart, "view"),
            (EventKind::ToolExecEnd, "view"),
            (EventKind::TextDelta, ""),
        ]
    );
    assert_eq!(events[0].detail, r#"{"path":"/w/in.txt"}"#);
    assert_eq!(events[1].detail, "inside\n");
    assert_eq!(events[2].text, "The file says: inside");
    assert_eq!(
        stream.verdict(),
        Verdict::Completed("The file says: inside".into())
    );
    // The stream has no token counts (they are in the usage file).
    assert_eq!(stream.usage(), Default::default());
    assert_eq!(
        stream.session(),
        Some("0cb916db-26aa-40f2-86b5-1ba81b225fd2")
    );
}

#[test]
fn recorded_401_is_a_rejected_provider() {
    let (stream, events) = fold(include_bytes!("../data/copilot-401.jsonl"));
    assert!(events.is_empty(), "{events:?}");
    match stream.verdict() {
        Verdict::Failed { code, message } => {
            assert_eq!(code, ErrorCode::ProviderRejected);
            assert!(
                message.starts_with("copilot: Authentication failed with provider"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_recorded_stream_cut_before_its_result_is_not_final() {
    let data = include_bytes!("../data/copilot-tool.jsonl");
    let cut = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(br#"{"type":"result""#))
        .collect::<Vec<_>>()
        .join(&b'\n');
    let (stream, _) = fold(&cut);
    assert_eq!(stream.verdict(), Verdict::Pending);
}
