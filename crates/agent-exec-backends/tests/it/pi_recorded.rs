//! The pi parser over streams recorded from the real `pi --mode json` (pi 0.73.1)
//! driven by a scripted Chat Completions server (re-record with
//! `cargo test -p agent-exec-backends --test it pi_live::record_streams -- --ignored`):
//!
//! * `pi-write.jsonl`: one `write` tool call that wrote `out.txt`, then a final
//!   message; usage 120/7 and 200/11 over the two model calls;
//! * `pi-error.jsonl`: the model's stream is cut mid-answer (pi exits 0 all the same).
use agent_exec_backends::agent_program::{StreamParser, Verdict};
use agent_exec_backends::pi::{Line, PiStream, parse_line};
use agent_exec_contract::{ErrorCode, Event, EventKind, Usage};

fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| b == b'\n').filter(|l| !l.is_empty())
}

fn fold(data: &[u8]) -> (PiStream, Vec<Event>) {
    let mut stream = PiStream::new();
    let mut events = Vec::new();
    for line in lines(data) {
        stream.line(line, &mut events);
    }
    (stream, events)
}

#[test]
fn recorded_write_stream_maps_in_order() {
    let data = include_bytes!("../data/pi-write.jsonl");
    assert!(
        lines(data).all(|l| parse_line(l) != Line::Unrecognised),
        "every recorded line is recognised"
    );
    let (stream, events) = fold(data);
    assert!(stream.saw_session());
    assert_eq!(stream.session_version(), Some(3));
    assert_eq!(stream.verdict(), Verdict::Completed("wrote out.txt".into()));
    assert_eq!(
        stream.usage(),
        Usage {
            prompt_tokens: 320,
            completion_tokens: 18
        }
    );
    let mut kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
    kinds.dedup();
    assert_eq!(
        kinds,
        vec![
            EventKind::ToolCallDelta,
            EventKind::ToolExecStart,
            EventKind::ToolExecEnd,
            EventKind::TextDelta,
        ]
    );
    let start = events
        .iter()
        .find(|e| e.kind == EventKind::ToolExecStart)
        .map(|e| (e.tool.as_str(), e.detail.as_str()));
    assert_eq!(start, Some(("write", "out.txt")));
    let text: String = events
        .iter()
        .filter(|e| e.kind == EventKind::TextDelta)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(text, "wrote out.txt");
}

#[test]
fn recorded_cut_stream_is_a_transport_failure() {
    let (stream, _) = fold(include_bytes!("../data/pi-error.jsonl"));
    assert!(stream.ended());
    let Verdict::Failed { code, message } = stream.verdict() else {
        panic!("expected a failure, got {:?}", stream.verdict())
    };
    assert_eq!(code, ErrorCode::ProviderUnavailable);
    assert!(message.starts_with("pi: "), "{message}");
}
