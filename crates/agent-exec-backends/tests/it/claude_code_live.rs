//! The `claude-code` backend driving the real Claude Code (npm
//! `@anthropic-ai/claude-code`, installed by scripts/test.sh) against a scripted
//! Anthropic Messages server on loopback: the agent, its tools and its process tree
//! are real; only the model's words are scripted.
use crate::{agents, stand_in};
use agents::{drain, wait_for_pid};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::agent_program::{StreamParser as _, Verdict};
use agent_exec_backends::claude_code::{ClaudeCodeBackend, ClaudeCodeStream};
use agent_exec_contract::{
    Backend, CancelCause, Capability, ContractRequest, ErrorCode, Event, EventKind, EventSink,
    ExecutionContext, Outcome, Registry, SideEffects,
};
use agent_exec_runtime::{RunOptions, Runtime};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::json;
use test_support::procfs::gone;

/// The `claude` program installed by scripts/setup.d/15-npm-peers.sh.
fn claude_program() -> PathBuf {
    test_support::peers::npm_bin("claude", "@anthropic-ai/claude-code")
}

/// A run's surroundings: a workspace, a private HOME, a scripted server.
struct Setup {
    workspace: tempfile::TempDir,
    _home: tempfile::TempDir,
    server: ScriptedServer,
    backend: Arc<ClaudeCodeBackend>,
}

/// `script` gets the workspace root (Claude Code's file tools take absolute paths).
fn setup(script: impl FnOnce(&Path) -> Vec<Turn>) -> Setup {
    setup_with(script, |_| {})
}

/// [`setup`], with a last word on the backend's config.
fn setup_with(
    script: impl FnOnce(&Path) -> Vec<Turn>,
    adjust: impl FnOnce(&mut ProgramConfig),
) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Script::new(script(workspace.path())));
    let mut config = ProgramConfig::new("claude-test");
    config.program = Some(claude_program().display().to_string());
    config.grace_ms = 1000;
    // Passed as `--model=…`: the scripted server records what reached it.
    config.model = Some("claude-scripted-test".into());
    let home_dir = home.path().display().to_string();
    for (key, value) in [
        ("ANTHROPIC_BASE_URL", server.origin.as_str()),
        ("ANTHROPIC_API_KEY", "dummy-key-for-tests"),
        // bypassPermissions refuses to run as root outside a sandbox.
        ("IS_SANDBOX", "1"),
        ("HOME", home_dir.as_str()),
        ("CLAUDE_CONFIG_DIR", &format!("{home_dir}/.claude")),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("CLAUDE_CODE_MAX_RETRIES", "0"),
    ] {
        config.env.insert(key.to_owned(), value.to_owned());
    }
    adjust(&mut config);
    Setup {
        workspace,
        _home: home,
        server,
        backend: Arc::new(ClaudeCodeBackend::new(config)),
    }
}

impl Setup {
    fn path(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }

    fn request(&self, prompt: &str, profile: &str) -> ContractRequest {
        let id = format!("cc-{}", std::process::id());
        agents::request(self.workspace.path(), &id, prompt, profile, &[])
    }
}

fn position(events: &[Event], what: impl Fn(&Event) -> bool) -> usize {
    events
        .iter()
        .position(what)
        .unwrap_or_else(|| panic!("event missing from {events:#?}"))
}

#[tokio::test]
async fn writes_a_deliverable_with_its_own_write_tool_reports_usage_and_orders_events() {
    let s = setup(|root| {
        vec![
            Turn::tool_call(
                "toolu_w1",
                "Write",
                json!({"file_path": root.join("out.txt"), "content": "hello from claude\n"}),
            )
            .with_usage(120, 7),
            Turn::text("wrote out.txt").with_usage(200, 11),
        ]
    });
    let file = s.path("out.txt");

    let mut registry = Registry::new();
    registry.register(s.backend.clone()).unwrap();
    let resolved = registry
        .resolve(
            "claude-test",
            &[
                Capability::Files,
                Capability::Stream,
                Capability::Usage,
                Capability::Tools,
            ],
        )
        .await
        .unwrap_or_else(|e| panic!("verify/resolve failed: {e}"));
    let mut request = s.request("write hello to out.txt", "workspace");
    request.targets = vec!["out.txt".into()];
    request.instructions = "-Answer in one line.".into();
    let (sink, mut rx) = EventSink::channel();
    let result = Runtime::new()
        .run(
            request,
            &resolved,
            RunOptions {
                events: sink,
                ..RunOptions::default()
            },
        )
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "wrote out.txt");
    assert_eq!(
        result.files.get("out.txt").map(Vec::as_slice),
        Some(b"hello from claude\n".as_slice()),
        "the deliverable comes from the agent's own Write tool"
    );
    // Claude Code sums both requests' usage in its result line.
    assert_eq!(
        (result.usage.prompt_tokens, result.usage.completion_tokens),
        (320, 18)
    );
    assert_eq!(s.server.turns_served(), 2);
    assert_eq!(s.server.requests_past_script(), 0);
    // What the real program sent: our model, our instructions in its system prompt,
    // the prompt and the targets from stdin, and the dummy key never in the logs.
    let first = s.server.requests().into_iter().next().unwrap();
    assert_eq!(first.body["model"], "claude-scripted-test");
    let system = first.body["system"].to_string();
    assert!(system.contains("-Answer in one line."), "{system}");
    let messages = first.body["messages"].to_string();
    assert!(messages.contains("write hello to out.txt"), "{messages}");
    assert!(messages.contains("- out.txt"), "the targets: {messages}");
    assert!(!result.logs.contains("dummy-key-for-tests"));

    let events = drain(&mut rx);
    let start = position(&events, |e| {
        e.kind == EventKind::ToolExecStart && e.tool == "Write"
    });
    let end = position(&events, |e| {
        e.kind == EventKind::ToolExecEnd && e.tool == "Write"
    });
    let text = position(&events, |e| {
        e.kind == EventKind::TextDelta && e.text == "wrote out.txt"
    });
    let message_end = position(&events, |e| e.kind == EventKind::MessageEnd);
    assert!(
        start < end && end < text && text < message_end,
        "out of order: {events:#?}"
    );
    assert_eq!(events[start].detail, file.display().to_string());
    assert_eq!(message_end, events.len() - 1, "message_end is last");
}

#[tokio::test]
async fn the_default_reasoning_policy_gives_claude_no_tools_at_all() {
    // The model asks for Bash anyway; Claude Code must not have it to run.
    let s = setup(|root| {
        vec![
            Turn::tool_call(
                "toolu_b1",
                "Bash",
                json!({"command": format!("touch {}", root.join("pwned").display())}),
            ),
            Turn::text("no tools here"),
        ]
    });
    let (sink, _rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&s.request("try a tool", ""), ExecutionContext::new(sink))
        .await;
    assert!(
        !s.path("pwned").exists(),
        "a tool ran under the reasoning policy"
    );
    let first = s.server.requests().into_iter().next().unwrap();
    assert_eq!(
        first.body.get("tools"),
        Some(&json!([])),
        "Claude Code offered tools to the model"
    );
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "no tools here");
}

/// A script whose Bash call writes its pid and sleeps in Claude Code's shell.
fn sleeping_script(root: &Path) -> Vec<Turn> {
    vec![
        Turn::tool_call(
            "toolu_s1",
            "Bash",
            json!({
                "command": format!(
                    "sh -c 'echo $AGENT_EXEC_EXECUTION_ID > {}; echo $$ > {}; exec sleep 30'",
                    root.join("id").display(),
                    root.join("pid").display()
                ),
                "description": "sleep"
            }),
        ),
        Turn::text("slept"),
    ]
}

#[tokio::test]
async fn cancel_in_the_middle_of_a_bash_tool_is_canceled_and_leaves_no_process() {
    let s = setup(sleeping_script);
    let (mut run, cancel, mut rx) =
        agents::spawn_execute(s.backend.clone(), s.request("sleep", "workspace"));
    let sleeper = wait_for_pid(&s.path("pid"), &mut run).await;
    assert!(!gone(sleeper), "the sleep should be running");
    assert_eq!(
        std::fs::read_to_string(s.path("id")).unwrap().trim(),
        format!("cc-{}", std::process::id()),
        "the agent's tools see the execution id"
    );
    cancel.cancel(CancelCause::Caller);
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("cancel must return promptly")
        .unwrap();
    agents::assert_canceled_mid_tool(&result, sleeper);
    let events = drain(&mut rx);
    let start = position(&events, |e| {
        e.kind == EventKind::ToolExecStart && e.tool == "Bash"
    });
    assert!(
        events[start].detail.contains("sleep 30"),
        "{:?}",
        events[start]
    );
    assert!(
        !events.iter().any(|e| e.kind == EventKind::MessageEnd),
        "a canceled run has no message end"
    );
}

/// The `claude` process among `pid`'s ancestors.
fn claude_ancestor(pid: i32) -> i32 {
    let mut current = pid;
    for _ in 0..32 {
        let stat = agent_exec_runtime::procfs::stat(current)
            .unwrap_or_else(|| panic!("process {current} vanished while walking up from {pid}"));
        let exe = std::fs::read_link(format!("/proc/{current}/exe")).unwrap_or_default();
        if exe.to_string_lossy().contains("claude") {
            return current;
        }
        current = stat.ppid;
    }
    panic!("no claude process above {pid}");
}

#[tokio::test]
async fn killing_claude_mid_run_is_unknown_and_its_tree_is_cleaned_up() {
    let s = setup(sleeping_script);
    let (mut run, _, _rx) =
        agents::spawn_execute(s.backend.clone(), s.request("sleep", "workspace"));
    let sleeper = wait_for_pid(&s.path("pid"), &mut run).await;
    let claude = claude_ancestor(sleeper);
    agents::kill_9(claude);
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("a killed agent must not hang the run")
        .unwrap();
    agents::assert_killed_mid_tool(&result, claude, sleeper);
    let reason = &result.err.as_ref().unwrap().reason;
    assert!(reason.contains("signal 9"), "{reason}");
}

/// Feeds a recorded stream to a fresh parser, as the driver does (line by line).
fn replay(data: &[u8]) -> (Vec<Event>, ClaudeCodeStream) {
    let mut parser = ClaudeCodeStream::new();
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        parser.line(line, &mut events);
    }
    (events, parser)
}

fn summary(events: &[Event]) -> Vec<(EventKind, &str, &str)> {
    events
        .iter()
        .map(|e| (e.kind.clone(), e.tool.as_str(), e.text.as_str()))
        .collect()
}

#[test]
fn recorded_write_stream_maps_in_order() {
    // Claude Code 2.1.332, Write tool, then a final message (see record_streams).
    let (events, parser) = replay(include_bytes!("../data/claude-code-write.jsonl"));
    assert_eq!(
        summary(&events),
        [
            (EventKind::ToolExecStart, "Write", ""),
            (EventKind::ToolExecEnd, "Write", ""),
            (EventKind::TextDelta, "", "wrote out.txt"),
        ]
    );
    assert!(events[0].detail.ends_with("/out.txt"), "{:?}", events[0]);
    assert_eq!(parser.verdict(), Verdict::Completed("wrote out.txt".into()));
    assert_eq!(
        (
            parser.usage().prompt_tokens,
            parser.usage().completion_tokens
        ),
        (320, 18)
    );
    assert_eq!(parser.model, "claude-opus-5-5");
    assert!(!parser.session_id.is_empty());
}

#[test]
fn recorded_partial_stream_sends_each_text_once_and_marks_the_failed_tool() {
    // With --include-partial-messages: token deltas, then the same text again in an
    // assistant message, which must not be sent twice; tool input streams as
    // tool_call_delta before the tool starts; the second Bash call exits 3.
    let (events, parser) = replay(include_bytes!("../data/claude-code-bash-partial.jsonl"));
    assert_eq!(
        summary(&events),
        [
            (EventKind::TextDelta, "", "Let me r"),
            (EventKind::TextDelta, "", "un two c"),
            (EventKind::TextDelta, "", "ommands."),
            (
                EventKind::ToolCallDelta,
                "Bash",
                r#"{"command":"echo hi > out.txt","description":"write"}"#
            ),
            (EventKind::ToolExecStart, "Bash", ""),
            (EventKind::ToolExecEnd, "Bash", ""),
            (
                EventKind::ToolCallDelta,
                "Bash",
                r#"{"command":"exit 3","description":"fail"}"#
            ),
            (EventKind::ToolExecStart, "Bash", ""),
            (EventKind::ToolExecEnd, "Bash", ""),
            (EventKind::TextDelta, "", "one wor"),
            (EventKind::TextDelta, "", "ked, on"),
            (EventKind::TextDelta, "", "e failed"),
        ]
    );
    assert_eq!(events[4].detail, "echo hi > out.txt");
    assert_eq!(events[5].detail, "echo hi > out.txt");
    assert_eq!(events[8].detail, "failed: Exit code 3");
    assert_eq!(
        parser.verdict(),
        Verdict::Completed("one worked, one failed".into())
    );
    assert_eq!(
        (
            parser.usage().prompt_tokens,
            parser.usage().completion_tokens
        ),
        (540, 27)
    );
}

#[test]
fn recorded_api_error_is_an_honest_failure() {
    // The API unreachable (connection refused), no retry: is_error with no status.
    let (events, parser) = replay(include_bytes!("../data/claude-code-api-error.jsonl"));
    let Verdict::Failed { code, message } = parser.verdict() else {
        panic!("expected a failure, got {:?}", parser.verdict())
    };
    assert_eq!(code, ErrorCode::ProviderUnavailable);
    assert!(message.contains("Connection refused"), "{message}");
    // The error text also arrives as the assistant's (synthetic) message.
    assert!(
        events.iter().all(|e| e.kind == EventKind::TextDelta),
        "{events:?}"
    );
    assert_eq!(parser.usage(), agent_exec_contract::Usage::default());
}

/// Re-records `tests/data/claude-code-*.jsonl` from the real program with this
/// backend's own argv: `cargo test -p agent-exec-backends --test it --
/// --ignored claude_code_live::record_streams`.
#[tokio::test]
#[ignore = "re-records the committed streams"]
async fn record_streams() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let write = setup(|root| {
        vec![
            Turn::tool_call(
                "toolu_w1",
                "Write",
                json!({"file_path": root.join("out.txt"), "content": "hello from claude\n"}),
            )
            .with_usage(120, 7),
            Turn::text("wrote out.txt").with_usage(200, 11),
        ]
    });
    record(&write, &[], &data.join("claude-code-write.jsonl"));

    let partial = setup(|_| {
        vec![
            Turn {
                parts: vec![
                    model_script::Part::Text("Let me run two commands.".into()),
                    model_script::Part::ToolCall {
                        call_id: "toolu_b1".into(),
                        name: "Bash".into(),
                        arguments: json!({"command": "echo hi > out.txt", "description": "write"}),
                    },
                ],
                ..Turn::default()
            }
            .with_usage(150, 12),
            Turn::tool_call(
                "toolu_b2",
                "Bash",
                json!({"command": "exit 3", "description": "fail"}),
            )
            .with_usage(180, 6),
            Turn::text("one worked, one failed").with_usage(210, 9),
        ]
    });
    record(
        &partial,
        &["--include-partial-messages"],
        &data.join("claude-code-bash-partial.jsonl"),
    );

    // Nothing listens on port 9 (discard): the API error path, without a retry.
    let refused = setup(|_| Vec::new());
    let mut run = refused
        .backend
        .agent_run(&refused.request("hi", "workspace"))
        .unwrap();
    run.env
        .insert("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9".into());
    record_run(run, &data.join("claude-code-api-error.jsonl"));
}

fn record(s: &Setup, extra: &[&str], out: &Path) {
    let mut run = s
        .backend
        .agent_run(&s.request("do it", "workspace"))
        .unwrap();
    run.args.extend(extra.iter().map(|a| a.to_string()));
    record_run(run, out);
}

fn record_run(run: agent_exec_backends::agent_program::AgentRun, out: &Path) {
    use std::io::Write as _;
    let mut child = std::process::Command::new(&run.program)
        .args(&run.args)
        .envs(&run.env)
        .current_dir(&run.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(run.stdin.as_deref().unwrap_or_default())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    std::fs::write(out, &output.stdout).unwrap();
}

#[tokio::test]
async fn verify_probes_the_real_program_and_names_the_package_when_missing() {
    let s = setup(|_| Vec::new());
    let verification = s.backend.verify().await;
    assert!(verification.problems.is_empty(), "{verification:?}");
    for capability in [
        Capability::Text,
        Capability::Files,
        Capability::Stream,
        Capability::Tools,
        Capability::Cancel,
        Capability::Usage,
        // Proven by `--resume` on the probe's own saved session.
        Capability::Resume,
    ] {
        assert!(
            verification.verified.contains(&capability),
            "{capability:?}: {verification:?}"
        );
    }
    // `claude-code/<adapter> (Claude Code <program>)`, the format of every agent CLI.
    let version = verification
        .adapter_version
        .strip_prefix(&format!(
            "claude-code/{} (Claude Code ",
            env!("CARGO_PKG_VERSION")
        ))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap();
    assert!(
        version.split('.').count() >= 2 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "{version}"
    );
    assert_eq!(
        s.server.requests().len(),
        0,
        "verify must not call the model"
    );

    let mut missing = ProgramConfig::new("absent");
    missing.program = Some("/nonexistent/claude".into());
    let verification = ClaudeCodeBackend::new(missing).verify().await;
    assert!(verification.verified.is_empty());
    assert!(
        verification.problems[0].contains("@anthropic-ai/claude-code"),
        "{verification:?}"
    );

    // A program that answers, but is not Claude Code, verifies nothing.
    let mut impostor = ProgramConfig::new("impostor");
    impostor.program = Some("/bin/echo".into());
    let verification = ClaudeCodeBackend::new(impostor).verify().await;
    assert!(verification.verified.is_empty(), "{verification:?}");
    assert!(
        verification.problems[0].contains("not a Claude Code version"),
        "{verification:?}"
    );
}

/// A program that answers `--version` and `--help` as Claude Code does, and whose
/// `-p` run does what `$IMPOSTOR_MODE` says: `text` (plain words, no stream-json),
/// `no-tools` (stream-json, but `--tools=` is an unknown option), or `stream-json`.
fn impostor(dir: &Path) -> PathBuf {
    stand_in::write_program(
        dir,
        "claude-impostor",
        r#"#!/bin/sh
case "$1" in
  --version) echo "2.1.332 (Claude Code)"; exit 0 ;;
  --help) echo "--output-format stream-json --permission-mode --no-session-persistence --tools --strict-mcp-config"; exit 0 ;;
esac
cat >/dev/null
if [ "$IMPOSTOR_MODE" = no-tools ]; then
  for arg in "$@"; do
    case "$arg" in --tools=*) echo "error: unknown option '--tools'" >&2; exit 1 ;; esac
  done
fi
if [ "$IMPOSTOR_MODE" = text ]; then echo "I am not Claude Code"; exit 0; fi
echo '{"type":"system","subtype":"init","session_id":"s1","model":"m"}'
echo '{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","result":"API Error: Connection refused"}'
exit 1
"#,
    )
}

#[tokio::test]
async fn verify_needs_the_stream_itself_not_only_the_flags_in_help() {
    let dir = tempfile::tempdir().unwrap();
    let program = impostor(dir.path());
    let verify = |mode: &str| {
        let mut config = ProgramConfig::new("impostor");
        config.program = Some(program.display().to_string());
        config.env.insert("IMPOSTOR_MODE".into(), mode.into());
        async move { ClaudeCodeBackend::new(config).verify().await }
    };

    // Every flag in --help, a version, but no stream-json: nothing is verified.
    let verification = verify("text").await;
    assert!(verification.verified.is_empty(), "{verification:?}");
    assert!(
        verification.problems[0].contains("did not answer with stream-json"),
        "{verification:?}"
    );
    assert!(
        verification.problems[0].contains("@anthropic-ai/claude-code"),
        "{verification:?}"
    );

    // Speaks stream-json, refuses the tool flags: everything but `tools`.
    let verification = verify("no-tools").await;
    assert!(
        verification.verified.contains(&Capability::Stream),
        "{verification:?}"
    );
    assert!(
        !verification.verified.contains(&Capability::Tools),
        "{verification:?}"
    );
    assert!(
        verification
            .problems
            .iter()
            .any(|p| p.starts_with("tools:")),
        "{verification:?}"
    );

    // An init line and a result, with every flag of the run: all of it.
    let verification = verify("stream-json").await;
    assert!(
        verification.verified.contains(&Capability::Tools),
        "{verification:?}"
    );
    assert!(
        verification.verified.contains(&Capability::Text),
        "{verification:?}"
    );
}

#[tokio::test]
async fn a_model_stream_cut_mid_reply_is_claudes_own_failure_not_success() {
    // Claude Code retries a cut stream; cut every try. It may also fall back to one
    // non-streamed request, which model-script answers as a side request ("ok",
    // without a turn): that fallback is turned off so every try meets a cut.
    let s = setup_with(
        |_| vec![Turn::text("half a sent").ending(model_script::Ending::Disconnect); 6],
        |config| {
            config.env.insert(
                "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK".into(),
                "1".into(),
            );
        },
    );
    let (sink, _rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&s.request("hi", "workspace"), ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderUnavailable, "{}", err.reason);
    assert_eq!(err.side_effects, SideEffects::None, "no tool ran");
    assert!(
        err.reason.starts_with("claude-code reported an error"),
        "{}",
        err.reason
    );
}

#[tokio::test]
async fn an_allowlist_gives_claude_exactly_those_tools() {
    // The model asks for Bash, which the allowlist leaves out.
    let s = setup(|root| {
        vec![
            Turn::tool_call(
                "toolu_b1",
                "Bash",
                json!({"command": format!("touch {}", root.join("pwned").display())}),
            ),
            Turn::text("listed"),
        ]
    });
    let mut request = s.request("which tools?", "workspace");
    request.tool_policy.allowlist = vec!["Read".into(), "Grep".into()];
    let (sink, _rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&request, ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert!(
        !s.path("pwned").exists(),
        "a tool outside the allowlist ran"
    );
    let first = s.server.requests().into_iter().next().unwrap();
    let tools = first.body["tools"].as_array().unwrap().clone();
    // Claude Code 2.1 also sends an inert `DeferredToolPlaceholder` ("never call this
    // tool", `defer_loading: true`, no parameters); every callable tool is listed.
    let (deferred, callable): (Vec<_>, Vec<_>) = tools
        .iter()
        .partition(|tool| tool["defer_loading"] == json!(true));
    let mut offered: Vec<&str> = callable
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    offered.sort();
    assert_eq!(offered, ["Grep", "Read"]);
    for tool in deferred {
        assert_eq!(tool["name"], "DeferredToolPlaceholder", "{tool}");
        assert_eq!(tool["input_schema"]["properties"], json!({}), "{tool}");
    }
}

#[tokio::test]
async fn a_program_that_hangs_after_its_result_is_unknown_not_success() {
    // A wrapper that runs the real claude, then does not exit (a child holds on).
    let wrapper_dir = tempfile::tempdir().unwrap();
    let pidfile = wrapper_dir.path().join("pid");
    let wrapper = stand_in::write_program(
        wrapper_dir.path(),
        "claude-then-hang",
        &format!(
            "#!/bin/sh\n\"{}\" \"$@\"\nsleep 30 &\necho $! > {}\nwait\n",
            claude_program().display(),
            pidfile.display()
        ),
    );
    let s = setup_with(
        |_| vec![Turn::text("all done")],
        |config| {
            config.program = Some(wrapper.display().to_string());
            config.exit_after_result_ms = 500;
        },
    );
    let (sink, _rx) = EventSink::channel();
    let result = s
        .backend
        .execute(&s.request("hi", "workspace"), ExecutionContext::new(sink))
        .await;
    assert_eq!(result.outcome, Outcome::Unknown, "{result:#?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::UnknownOutcome);
    assert!(err.reason.contains("did not exit"), "{}", err.reason);
    // On a slow machine the deadline may pass before claude itself exits (still a
    // hang as far as the contract goes); the wrapper's child exists only after that.
    if let Ok(text) = std::fs::read_to_string(&pidfile)
        && let Ok(pid) = text.trim().parse::<i32>()
    {
        assert!(gone(pid), "the hanging child {pid} was left running");
    }
}

/// `--json-schema`: the scripted model answers through Claude Code's own
/// `StructuredOutput` tool; the answer (`structured_output`) is the run's text, and the
/// runtime checks it against the schema itself. A scripted answer Claude Code lets
/// through that does not match (plain prose, no tool call: Claude Code 2.1.332 returns
/// it as a success) is failed by the runtime with the validator's reason.
#[tokio::test]
async fn structured_output_goes_through_json_schema_and_is_checked_by_the_runtime() {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    });
    let s = setup(|_| {
        vec![
            Turn::tool_call("toolu_so1", "StructuredOutput", json!({"n": 7})),
            Turn::text("done"),
        ]
    });
    let mut registry = Registry::new();
    registry.register(s.backend.clone()).unwrap();
    let resolved = registry
        .resolve("claude-test", &[Capability::StructuredOutput])
        .await
        .unwrap_or_else(|e| panic!("structured-output not verified: {e}"));
    let mut request = s.request("give me n", "reasoning");
    request.output_schema = Some(schema.clone());
    let result = Runtime::new()
        .run(request, &resolved, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    let answer: serde_json::Value = serde_json::from_str(&result.text).unwrap();
    assert_eq!(answer, json!({"n": 7}), "the JSON is the text");
    let first = s.server.requests().into_iter().next().unwrap();
    let tools = first.body["tools"].to_string();
    assert!(
        tools.contains("StructuredOutput"),
        "the schema reached the model: {tools}"
    );

    // The model answers in prose; whatever Claude Code makes of it, the runtime does
    // not take it for the structured answer.
    let s = setup(|_| {
        vec![
            Turn::text("n is seven"),
            Turn::text("n is seven"),
            Turn::text("n is seven"),
        ]
    });
    let mut registry = Registry::new();
    registry.register(s.backend.clone()).unwrap();
    let resolved = registry
        .resolve("claude-test", &[Capability::StructuredOutput])
        .await
        .unwrap();
    let mut request = s.request("give me n", "reasoning");
    request.output_schema = Some(schema);
    let result = Runtime::new()
        .run(request, &resolved, RunOptions::default())
        .await;
    // Claude Code 2.1.332 lets the prose through as a `success` without
    // `structured_output`: only the runtime's own check stops it.
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::MissingDeliverable, "{result:#?}");
    assert!(err.reason.contains("not JSON"), "{}", err.reason);
    assert_eq!(err.side_effects, SideEffects::None, "no tool ran");
    assert!(result.text.is_empty(), "{result:#?}");
}

/// Resume, end to end on the real Claude Code: attempt 1 runs a Bash tool, then
/// `claude` is SIGKILLed while its next model request is in flight; the session id it
/// reported from the `init` line goes back in as `ctx.resume`, and attempt 2
/// (`--resume=ID`) continues that session: its model request carries the earlier tool
/// call and its output.
#[tokio::test]
async fn a_killed_run_resumes_its_own_session_and_the_model_sees_the_earlier_turns() {
    let s = setup(|_| {
        vec![
            Turn::tool_call(
                "toolu_r1",
                "Bash",
                json!({"command": "echo TOOL-OUTPUT-c41"}),
            ),
            // The model never answers the tool's output: claude is killed while it waits.
            Turn::default().ending(model_script::Ending::Hang),
            Turn::text("resumed and done"),
        ]
    });
    let request = s.request("run the marker command", "workspace");
    let server = &s.server;
    let session = agents::kill_then_resume(s.backend.clone(), &request, "claude", || {
        // The second request carries the tool's output: the session holds both turns.
        server.requests().len() >= 2
    })
    .await;
    assert!(
        agent_exec_backends::agent_program::is_uuid(&session),
        "{session}"
    );

    let requests = s.server.requests();
    assert_eq!(
        requests.len(),
        3,
        "{:#?}",
        requests.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let resumed = requests[2].body["messages"].to_string();
    agents::assert_carries_the_earlier_turns(
        &resumed,
        &["run the marker command", "toolu_r1", "TOOL-OUTPUT-c41"],
    );
    assert_eq!(s.server.requests_past_script(), 0);
}

/// A resume of a session Claude Code has not saved (a well-formed UUID): Claude Code
/// refuses it before any model request ("No conversation found"), and the run is
/// `failed` with nothing done — a clear error, not a fresh session.
#[tokio::test]
async fn resuming_a_session_claude_does_not_have_fails_with_nothing_done() {
    let s = setup(|_| vec![Turn::text("never")]);
    let backend: Arc<dyn Backend> = s.backend.clone();
    let (result, reported) = agents::run_resumed(
        backend,
        s.request("go on", "workspace"),
        agent_exec_contract::ResumeFrom {
            session: "1ca84c62-883d-4acf-bba8-e40c215865c6".into(),
            attempt: 1,
            original_prompt: "start".into(),
        },
    )
    .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.side_effects, SideEffects::None);
    assert!(
        err.reason.contains("No conversation found"),
        "{}",
        err.reason
    );
    assert!(reported.is_empty(), "{reported:?}");
    assert_eq!(s.server.requests().len(), 0, "no model request");
}

/// `--no-session-persistence` in `args` keeps no conversation, and `verify` shows it:
/// the `--resume` probe finds no session, so `resume` is not verified (the rest is).
#[tokio::test]
async fn without_saved_sessions_resume_is_not_verified() {
    let s = setup_with(
        |_| Vec::new(),
        |config| config.args = vec!["--no-session-persistence".into()],
    );
    let verification = s.backend.verify().await;
    assert!(
        !verification.verified.contains(&Capability::Resume),
        "{verification:?}"
    );
    assert!(
        verification.verified.contains(&Capability::Tools),
        "only resume is lost: {verification:?}"
    );
    assert!(
        verification
            .problems
            .iter()
            .any(|p| p.starts_with("resume:")),
        "{verification:?}"
    );
}

/// Figures, not a check (ignored; issue 12 §5): the same scripted task — one `Bash`
/// call, then a final message — run fresh, and run as attempt 1 killed with the second
/// model request in flight plus a resumed attempt 2. Prints wall time (fresh run vs the
/// resumed attempt alone) and the JSON bytes the scripted server was sent.
/// `cargo test -p agent-exec-backends --test it -- --ignored --nocapture claude_code_live::resume_figures`
#[tokio::test]
#[ignore = "prints figures; run by hand"]
async fn resume_figures() {
    let script = |hang: bool| {
        let mut turns = vec![Turn::tool_call(
            "toolu_f1",
            "Bash",
            json!({"command": "echo TOOL-OUTPUT-f1"}),
        )];
        if hang {
            turns.push(Turn::default().ending(model_script::Ending::Hang));
        }
        turns.push(Turn::text("done"));
        turns
    };
    for round in 1..=3 {
        let fresh = setup(|_| script(false));
        let killed = setup(|_| script(true));
        let line = agents::resume_figure_round(
            &format!("claude-code round {round}"),
            "claude",
            agents::FigureRig {
                backend: fresh.backend.clone(),
                server: &fresh.server,
                request: fresh.request("run the marker command", "workspace"),
            },
            agents::FigureRig {
                backend: killed.backend.clone(),
                server: &killed.server,
                request: killed.request("run the marker command", "workspace"),
            },
        )
        .await;
        println!("{line}");
    }
}
