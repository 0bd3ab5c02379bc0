//! `session/update` notifications → contract events: pure, in order, never panics.
//!
//! | ACP update                                  | contract event                          |
//! |---------------------------------------------|-----------------------------------------|
//! | `agent_message_chunk` (text)                | `text_delta` (and kept for the result)  |
//! | `agent_thought_chunk` (text)                | `reasoning_delta`                       |
//! | `tool_call`                                 | `tool_execution_start` (tool, title)    |
//! | `tool_call_update` to `completed`/`failed`  | `tool_execution_end` (once per call)    |
//! | `usage_update`                              | none; the context size is remembered    |
//! | `plan`, modes, commands, user chunks, …     | none (counted)                          |
//!
//! A tool is named by its programmatic `name` when the agent gives one, else by its
//! ACP `kind` (`execute`, `edit`, `read`, …) — the same identity the permission policy
//! judges ([`super::policy`]). A `tool_call` that already arrives finished gets its end
//! at once; an update for a call never announced gets a start first, so every end has
//! a start before it. Non-text content (images, resources) is not turned into text.
//!
//! Decision: the mapper works on the SDK's typed [`SessionUpdate`] (what the live
//! connection hands over), and [`UpdateMapper::notification_line`] adds the decoding of
//! one raw JSON-RPC line for the fuzz target, the recorded-stream test and the bench.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionNotification, SessionUpdate, ToolCallStatus, ToolKind,
};
use agent_exec_contract::{Event, EventKind};

/// How long a tool detail (title, failure) may grow in an event.
const MAX_DETAIL: usize = 512;

/// Accumulates what a session's updates said; see the module doc for the mapping.
#[derive(Debug, Default, Clone)]
pub struct UpdateMapper {
    /// The agent's message text, concatenated over the turn.
    text: String,
    /// Tool calls announced, by id: (tool identity, ended).
    tools: HashMap<String, ToolState>,
    /// Whether any tool call was announced (side effects are then possible).
    tool_seen: bool,
    /// The last `usage_update`: tokens in context and the window size.
    context: Option<(u64, u64)>,
    /// Updates that map to no event (plans, modes, commands, …).
    ignored: usize,
}

#[derive(Debug, Clone)]
struct ToolState {
    tool: String,
    ended: bool,
}

/// What one raw line was, for [`UpdateMapper::notification_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A `session/update` notification, mapped.
    Update,
    /// Valid JSON-RPC that is not a `session/update` (requests, responses, …).
    Other,
    /// Not JSON, or a `session/update` whose params do not decode.
    Unrecognised,
}

impl UpdateMapper {
    /// A mapper for one prompt turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps one update, pushing its events in order.
    pub fn update(&mut self, update: &SessionUpdate, events: &mut Vec<Event>) {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(text) = &chunk.content
                    && !text.text.is_empty()
                {
                    self.text.push_str(&text.text);
                    events.push(Event::text_delta(text.text.clone()));
                }
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if let ContentBlock::Text(text) = &chunk.content
                    && !text.text.is_empty()
                {
                    events.push(Event {
                        kind: EventKind::ReasoningDelta,
                        text: text.text.clone(),
                        tool: String::new(),
                        detail: String::new(),
                    });
                }
            }
            SessionUpdate::ToolCall(call) => {
                let tool = tool_identity(call.name.as_deref(), call.kind);
                self.start(
                    call.tool_call_id.0.to_string(),
                    tool,
                    &call.title,
                    call.status,
                    events,
                );
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let id = update.tool_call_id.0.to_string();
                let status = update.fields.status;
                let title = update.fields.title.as_deref().unwrap_or_default();
                if !self.tools.contains_key(&id) {
                    let tool = tool_identity(
                        update.fields.name.as_deref(),
                        update.fields.kind.unwrap_or_default(),
                    );
                    self.start(
                        id,
                        tool,
                        title,
                        status.unwrap_or(ToolCallStatus::InProgress),
                        events,
                    );
                } else if let Some(status) = status {
                    self.finish(&id, title, status, events);
                }
            }
            SessionUpdate::UsageUpdate(usage) => self.context = Some((usage.used, usage.size)),
            _ => self.ignored += 1,
        }
    }

    /// Decodes one raw JSON-RPC line and maps it when it is a `session/update`.
    pub fn notification_line(&mut self, line: &[u8], events: &mut Vec<Event>) -> LineKind {
        #[derive(serde::Deserialize)]
        struct Envelope {
            #[serde(default)]
            method: Option<String>,
            #[serde(default)]
            params: Option<serde_json::Value>,
        }
        let Ok(envelope) = serde_json::from_slice::<Envelope>(line) else {
            return LineKind::Unrecognised;
        };
        if envelope.method.as_deref() != Some("session/update") {
            return LineKind::Other;
        }
        let Some(params) = envelope.params else {
            return LineKind::Unrecognised;
        };
        match serde_json::from_value::<SessionNotification>(params) {
            Ok(notification) => {
                self.update(&notification.update, events);
                LineKind::Update
            }
            Err(_) => LineKind::Unrecognised,
        }
    }

    /// The agent's text so far (concatenated message chunks).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether any tool call was announced.
    pub fn tool_seen(&self) -> bool {
        self.tool_seen
    }

    /// Tool calls announced and not finished (by identity), for logs.
    pub fn open_tools(&self) -> Vec<String> {
        let mut open: Vec<String> = self
            .tools
            .values()
            .filter(|state| !state.ended)
            .map(|state| state.tool.clone())
            .collect();
        open.sort();
        open
    }

    /// The last context report (`used`, `size` tokens), when the agent sent one. Not
    /// token usage: the contract's usage counts tokens sent and received.
    pub fn context(&self) -> Option<(u64, u64)> {
        self.context
    }

    /// Updates that produced no event.
    pub fn ignored(&self) -> usize {
        self.ignored
    }

    fn start(
        &mut self,
        id: String,
        tool: String,
        title: &str,
        status: ToolCallStatus,
        events: &mut Vec<Event>,
    ) {
        self.tool_seen = true;
        events.push(Event {
            kind: EventKind::ToolExecStart,
            text: String::new(),
            tool: tool.clone(),
            detail: bounded(title),
        });
        self.tools
            .insert(id.clone(), ToolState { tool, ended: false });
        self.finish(&id, "", status, events);
    }

    fn finish(&mut self, id: &str, title: &str, status: ToolCallStatus, events: &mut Vec<Event>) {
        let failed = match status {
            ToolCallStatus::Completed => false,
            ToolCallStatus::Failed => true,
            _ => return,
        };
        let Some(state) = self.tools.get_mut(id) else {
            return;
        };
        if state.ended {
            return;
        }
        state.ended = true;
        let detail = match (failed, title.is_empty()) {
            (true, true) => "failed".to_owned(),
            (true, false) => bounded(&format!("failed: {title}")),
            (false, _) => bounded(title),
        };
        events.push(Event {
            kind: EventKind::ToolExecEnd,
            text: String::new(),
            tool: state.tool.clone(),
            detail,
        });
    }
}

/// The name a tool goes by in events and in the permission policy: its programmatic
/// name when given, else its ACP kind.
pub fn tool_identity(name: Option<&str>, kind: ToolKind) -> String {
    match name {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => kind_name(kind).to_owned(),
    }
}

/// The wire name of an ACP tool kind.
pub fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch_mode",
        _ => "other",
    }
}

fn bounded(text: &str) -> String {
    crate::output::bounded(text, MAX_DETAIL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn line(update: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": update}
        }))
        .unwrap()
    }

    fn map(lines: &[Vec<u8>]) -> (UpdateMapper, Vec<Event>) {
        let mut mapper = UpdateMapper::new();
        let mut events = Vec::new();
        for l in lines {
            mapper.notification_line(l, &mut events);
        }
        (mapper, events)
    }

    fn kinds(events: &[Event]) -> Vec<(EventKind, &str)> {
        events
            .iter()
            .map(|e| (e.kind.clone(), e.tool.as_str()))
            .collect()
    }

    #[test]
    fn chunks_tools_and_text_map_in_order() {
        let (mapper, events) = map(&[
            line(
                serde_json::json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            ),
            line(
                serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "I will "}}),
            ),
            line(
                serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run echo", "kind": "execute", "status": "pending"}),
            ),
            line(
                serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}),
            ),
            line(
                serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ),
            line(
                serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ),
            line(serde_json::json!({"sessionUpdate": "plan", "entries": []})),
            line(
                serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
            ),
        ]);
        assert_eq!(
            kinds(&events),
            [
                (EventKind::ReasoningDelta, ""),
                (EventKind::TextDelta, ""),
                (EventKind::ToolExecStart, "execute"),
                (EventKind::ToolExecEnd, "execute"),
                (EventKind::TextDelta, ""),
            ]
        );
        assert_eq!(mapper.text(), "I will done");
        assert!(mapper.tool_seen());
        assert!(mapper.open_tools().is_empty());
        assert_eq!(mapper.ignored(), 1);
    }

    #[test]
    fn a_named_tool_is_named_and_a_failure_says_so() {
        let (_, events) = map(&[
            line(
                serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "name": "exec_command", "kind": "execute"}),
            ),
            line(
                serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "failed", "title": "denied"}),
            ),
        ]);
        assert_eq!(events[0].tool, "exec_command");
        assert_eq!(events[1].kind, EventKind::ToolExecEnd);
        assert_eq!(events[1].detail, "failed: denied");
    }

    #[test]
    fn an_update_for_an_unannounced_call_starts_it_first() {
        let (_, events) = map(&[line(
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "completed", "kind": "edit"}),
        )]);
        assert_eq!(
            kinds(&events),
            [
                (EventKind::ToolExecStart, "edit"),
                (EventKind::ToolExecEnd, "edit")
            ]
        );
    }

    #[test]
    fn usage_update_is_context_not_tokens() {
        let (mapper, events) = map(&[line(
            serde_json::json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000}),
        )]);
        assert!(events.is_empty());
        assert_eq!(mapper.context(), Some((1200, 200000)));
    }

    #[test]
    fn other_lines_are_classified_not_mapped() {
        let mut mapper = UpdateMapper::new();
        let mut events = Vec::new();
        assert_eq!(
            mapper.notification_line(b"not json", &mut events),
            LineKind::Unrecognised
        );
        assert_eq!(
            mapper.notification_line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, &mut events),
            LineKind::Other
        );
        assert_eq!(
            mapper.notification_line(
                br#"{"jsonrpc":"2.0","method":"session/update","params":{"update":3}}"#,
                &mut events
            ),
            LineKind::Unrecognised
        );
        assert!(events.is_empty());
    }

    #[test]
    fn long_titles_are_bounded_on_a_char_boundary() {
        let title = "é".repeat(MAX_DETAIL);
        let detail = bounded(&title);
        assert!(detail.len() <= MAX_DETAIL + '…'.len_utf8());
    }

    /// Streams recorded from the real codex-acp 0.16.0 (agent → client lines) against a
    /// scripted Responses server: an `exec_command` call that wrote a file, and an
    /// `apply_patch` edit.
    #[test]
    fn recorded_codex_acp_streams_map_in_order() {
        let exec = include_bytes!("../../tests/data/acp-codex-exec.jsonl");
        let (mapper, events) = map(&exec
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect::<Vec<_>>());
        assert_eq!(
            kinds(&events),
            [
                (EventKind::ToolExecStart, "execute"),
                (EventKind::ToolExecEnd, "execute"),
                (EventKind::TextDelta, ""),
                (EventKind::TextDelta, ""),
                (EventKind::TextDelta, ""),
            ]
        );
        assert!(events[0].detail.contains("out.txt"), "{:?}", events[0]);
        assert_eq!(mapper.text(), "wrote out.txt");
        assert_eq!(mapper.context(), Some((141, 258_400)));

        let patch = include_bytes!("../../tests/data/acp-codex-patch.jsonl");
        let mut mapper = UpdateMapper::new();
        let mut events = Vec::new();
        let mut lines = (0, 0, 0);
        for line in patch.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            match mapper.notification_line(line, &mut events) {
                LineKind::Update => lines.0 += 1,
                LineKind::Other => lines.1 += 1,
                LineKind::Unrecognised => lines.2 += 1,
            }
        }
        // Responses and the permission request are `Other`; nothing is unrecognised.
        assert_eq!(lines, (7, 4, 0));
        assert_eq!(events[0].tool, "edit");
        assert_eq!(events[1].kind, EventKind::ToolExecEnd);
        assert_eq!(mapper.text(), "patched");
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_lines(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut mapper = UpdateMapper::new();
            let mut events = Vec::new();
            mapper.notification_line(&bytes, &mut events);
        }

        #[test]
        fn never_panics_on_update_shaped_json(
            kind in prop::sample::select(vec![
                "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
                "plan", "usage_update", "user_message_chunk", "nonsense",
            ]),
            id in "[a-z]{0,3}",
            status in prop::sample::select(vec!["pending", "in_progress", "completed", "failed", "bogus"]),
            text in ".{0,40}",
        ) {
            let mut mapper = UpdateMapper::new();
            let mut events = Vec::new();
            let value = serde_json::json!({
                "sessionUpdate": kind, "toolCallId": id, "status": status, "title": text,
                "content": {"type": "text", "text": text}, "used": 1, "size": 2, "entries": []
            });
            mapper.notification_line(&line(value), &mut events);
            // Every end has its start before it.
            let mut open = 0i32;
            for event in &events {
                match event.kind {
                    EventKind::ToolExecStart => open += 1,
                    EventKind::ToolExecEnd => { open -= 1; prop_assert!(open >= 0); }
                    _ => {}
                }
            }
        }
    }
}
