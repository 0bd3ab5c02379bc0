//! The codex parser over a stream recorded from the real `codex exec --json` (codex-cli
//! 0.171.0) driven by a scripted Responses server: one `exec_command` tool call that
//! wrote `out.txt`, then a final message, then usage.
use agent_exec_backends::codex::{Line, parse_line};
use agent_exec_contract::EventKind;

#[test]
fn recorded_codex_stream_maps_in_order() {
    let data = include_bytes!("data/codex-exec.jsonl");
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
