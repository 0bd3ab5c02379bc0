#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! The `command` backend on its own: how it runs a program and what it reports.

use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::command::{CommandBackend, CommandConfig, PromptMode};
use agent_exec_contract::*;
use agent_exec_runtime::{RunOptions, Runtime};
use futures::StreamExt as _;

fn backend(script: &str) -> CommandBackend {
    agent_exec_runtime::become_subreaper().expect("subreaper");
    let mut config = CommandConfig::new("cmd", vec!["sh".into(), "-c".into(), script.into()]);
    config.grace_ms = 200;
    CommandBackend::new(config)
}

fn request(ws: &tempfile::TempDir, prompt: &str) -> ContractRequest {
    ContractRequest {
        execution_id: "exec-42".into(),
        prompt: prompt.into(),
        workspace: WorkspaceHandle {
            root: ws.path().display().to_string(),
            writable: vec![],
        },
        ..Default::default()
    }
}

async fn resolved(backend: CommandBackend) -> Resolved {
    let mut registry = Registry::new();
    registry.register(Arc::new(backend)).unwrap();
    registry.resolve("cmd", &[Capability::Text]).await.unwrap()
}

#[tokio::test]
async fn prompt_on_stdin_workspace_as_cwd_and_execution_id_in_env() {
    let ws = tempfile::tempdir().unwrap();
    let b = backend("printf '%s|%s|%s' \"$(cat)\" \"$PWD\" \"$AGENT_EXEC_EXECUTION_ID\"");
    let result = b
        .execute(
            &request(&ws, "hello"),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    let canonical = ws.path().canonicalize().unwrap();
    assert_eq!(
        result.text,
        format!("hello|{}|exec-42", canonical.display())
    );
}

#[tokio::test]
async fn prompt_as_last_argument() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = CommandConfig::new(
        "cmd",
        vec![
            "sh".into(),
            "-c".into(),
            "printf '[%s]' \"$1\"; cat".into(),
            "sh".into(),
        ],
    );
    config.prompt = PromptMode::Argument;
    let result = CommandBackend::new(config)
        .execute(
            &request(&ws, "as arg"),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(
        result.text, "[as arg]",
        "stdin is empty in argument mode: {result:?}"
    );
}

#[tokio::test]
async fn stdout_streams_as_ordered_text_deltas_then_message_end() {
    let ws = tempfile::tempdir().unwrap();
    let b = backend("for i in 1 2 3 4 5; do echo line$i; sleep 0.02; done");
    let (sink, events) = EventSink::channel();
    let result = b
        .execute(&request(&ws, ""), ExecutionContext::new(sink))
        .await;
    let events: Vec<Event> = events.collect().await;
    let streamed: String = events
        .iter()
        .filter(|e| e.kind == EventKind::TextDelta)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(streamed, result.text);
    assert_eq!(result.text, "line1\nline2\nline3\nline4\nline5\n");
    assert!(
        events
            .iter()
            .filter(|e| e.kind == EventKind::TextDelta)
            .count()
            > 1
    );
    assert_eq!(
        events.last().map(|e| e.kind.clone()),
        Some(EventKind::MessageEnd)
    );
}

#[tokio::test]
async fn multibyte_text_split_across_reads_is_not_mangled() {
    let ws = tempfile::tempdir().unwrap();
    // "é" is 0xC3 0xA9: the two bytes arrive in separate writes.
    let b = backend("printf '\\303'; sleep 0.05; printf '\\251!'");
    let (sink, events) = EventSink::channel();
    let result = b
        .execute(&request(&ws, ""), ExecutionContext::new(sink))
        .await;
    assert_eq!(result.text, "é!");
    let deltas: String = events.map(|e| e.text).collect::<Vec<_>>().await.concat();
    assert_eq!(deltas, "é!");
}

#[tokio::test]
async fn non_zero_exit_is_failed_with_stderr_in_logs() {
    let ws = tempfile::tempdir().unwrap();
    let result = backend("echo partial; echo 'model refused' >&2; exit 7")
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Failed);
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderRejected);
    assert!(err.reason.contains("status 7"), "{}", err.reason);
    assert!(result.logs.contains("model refused"), "{}", result.logs);
    assert!(result.text.is_empty(), "a failed run returns no text");
}

#[tokio::test]
async fn a_crash_is_unknown() {
    let ws = tempfile::tempdir().unwrap();
    let result = backend("kill -KILL $$")
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
    assert_eq!(result.err.unwrap().side_effects, SideEffects::Possible);
}

#[tokio::test]
async fn missing_program_fails_verification_and_execution_clearly() {
    let ws = tempfile::tempdir().unwrap();
    let b = CommandBackend::new(CommandConfig::new(
        "ghost",
        vec!["no-such-agent-xyz".into()],
    ));
    let verification = b.verify().await;
    assert!(verification.verified.is_empty());
    assert!(
        verification.problems[0].contains("not found on PATH"),
        "{verification:?}"
    );
    let mut registry = Registry::new();
    registry.register(Arc::new(b.clone())).unwrap();
    let refusal = registry
        .resolve("ghost", &[Capability::Text])
        .await
        .err()
        .unwrap();
    assert!(
        refusal.to_string().contains("no-such-agent-xyz"),
        "{refusal}"
    );
    let result = b
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::ProviderUnavailable);
    assert_eq!(err.side_effects, SideEffects::None, "nothing ran");
}

#[tokio::test]
async fn empty_argv_is_a_clear_error_not_a_panic() {
    let ws = tempfile::tempdir().unwrap();
    let b = CommandBackend::new(CommandConfig::new("empty", vec![]));
    assert!(b.verify().await.problems[0].contains("argv is empty"));
    let result = b
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Failed);
}

#[tokio::test]
async fn cancel_of_a_tree_ignoring_sigterm_is_confirmed_canceled() {
    let ws = tempfile::tempdir().unwrap();
    let b = backend("trap '' TERM; sleep 1000 & sh -c 'sleep 1000' & echo started; wait");
    let ctx = ExecutionContext::new(EventSink::discard());
    let cancel = ctx.cancellation.clone();
    let run = tokio::spawn({
        let req = request(&ws, "");
        async move { b.execute(&req, ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel(CancelCause::Caller);
    let result = run.await.unwrap();
    assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::Canceled);
    assert!(err.reason.contains("SIGKILL"), "{}", err.reason);
}

#[tokio::test]
async fn background_leftovers_of_a_finished_program_are_terminated() {
    let ws = tempfile::tempdir().unwrap();
    let marker = format!("1000.{}{}", std::process::id(), line!());
    let b = backend(&format!("sleep {marker} & echo done"));
    let result = b
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    assert_eq!(result.text, "done\n");
    assert_eq!(
        test_support::procfs::with_cmdline(&marker),
        Vec::<i32>::new(),
        "the background sleep must be gone"
    );
}

#[tokio::test]
async fn deadline_through_the_runtime_is_deadline_exceeded() {
    let ws = tempfile::tempdir().unwrap();
    let backend = resolved(backend("sleep 1000 & wait")).await;
    let mut req = request(&ws, "");
    req.budget.deadline = Some(time::OffsetDateTime::now_utc() + time::Duration::milliseconds(300));
    let result = Runtime::new()
        .run(req, &backend, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Canceled, "{result:?}");
    assert_eq!(result.err.unwrap().code, ErrorCode::DeadlineExceeded);
}

#[tokio::test]
async fn files_written_make_a_failure_possible_and_are_listed_in_logs() {
    let ws = tempfile::tempdir().unwrap();
    let backend = resolved(backend("echo x > made.txt; exit 1")).await;
    let result = Runtime::new()
        .run(request(&ws, ""), &backend, RunOptions::default())
        .await;
    assert_eq!(result.err.unwrap().side_effects, SideEffects::Possible);
    assert!(result.logs.contains("made.txt"), "{}", result.logs);
}

#[tokio::test]
async fn deliverable_through_a_symlink_out_is_refused_even_when_written() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
    // The program writes through the link (not a sandbox!), but the bytes written
    // outside are never read back into the result.
    let backend = resolved(backend("echo leaked-bytes > out/reply.md")).await;
    let mut req = request(&ws, "");
    req.targets = vec!["out/reply.md".into()];
    let result = Runtime::new()
        .run(req, &backend, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed);
    assert_eq!(
        result.err.as_ref().unwrap().code,
        ErrorCode::PathOutsideWorkspace
    );
    assert!(!serde_json::to_string(&result).unwrap().contains("bGVha2Vk"));
    assert!(result.files.is_empty());
}

#[tokio::test]
async fn a_process_outside_the_tree_holding_stdout_open_is_unknown_never_succeeded() {
    // A process that is not part of the run (with a cgroup or the subreaper nothing
    // the program starts can be outside it) gets the program's stdout — here by
    // opening `/proc/<pid>/fd/1` — and keeps it; the program itself exits 0 at once.
    let ws = tempfile::tempdir().unwrap();
    let pidfile = ws.path().join("pid");
    let ready = ws.path().join("ready");
    let mut holder = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while [ ! -s {p} ]; do sleep 0.01; done; exec 3>/proc/$(cat {p})/fd/1; \
             echo > {r}; sleep 3",
            p = pidfile.display(),
            r = ready.display()
        ))
        .spawn()
        .unwrap();
    let b = backend(&format!(
        "echo the-result; echo $$ > {p}; while [ ! -e {r} ]; do sleep 0.01; done; exit 0",
        p = pidfile.display(),
        r = ready.display()
    ));
    let result = b
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(result.outcome, Outcome::Unknown, "{result:?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::UnknownOutcome);
    assert_eq!(err.side_effects, SideEffects::Possible);
    assert!(err.reason.contains("still holds"), "{}", err.reason);
    // What was read before is kept, not thrown away: the logs account for it.
    assert!(
        result.logs.contains("kept what came before"),
        "{}",
        result.logs
    );
    assert!(
        result
            .logs
            .contains("stdout (11 bytes, not returned as text):\nthe-result"),
        "{}",
        result.logs
    );
}

/// Before: a failed run's stdout was dropped (`stdout (8 bytes) not returned as
/// text`) and the reason said only the exit status. Now the end of stdout is in
/// `logs`, and the ends of stderr and stdout in the reason, credentials redacted.
#[tokio::test]
async fn a_failed_answer_reaches_the_caller_redacted() {
    let ws = tempfile::tempdir().unwrap();
    let secret = "tok-3f9a8b7c6d5e";
    let mut config = CommandConfig::new(
        "cmd",
        vec![
            "sh".into(),
            "-c".into(),
            "printf 'half an answer, token %s' \"$MY_TOKEN\"; echo \"cannot go on with $MY_TOKEN\" >&2; exit 3"
                .into(),
        ],
    );
    config.env.insert("MY_TOKEN".into(), secret.into());
    let result = CommandBackend::new(config)
        .execute(
            &request(&ws, ""),
            ExecutionContext::new(EventSink::discard()),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    assert!(result.text.is_empty());
    let err = result.err.as_ref().unwrap();
    assert!(
        err.reason
            .contains(r#"stdout ends: "half an answer, token [redacted]""#),
        "{}",
        err.reason
    );
    assert!(
        err.reason
            .contains(r#"stderr ends: "cannot go on with [redacted]""#),
        "{}",
        err.reason
    );
    assert!(
        result.logs.contains("half an answer, token [redacted]"),
        "{}",
        result.logs
    );
    let everything = format!("{result:?}");
    assert!(!everything.contains(secret), "{everything}");
}

/// A long answer: `logs` keeps its end (bounded), the reason a short end.
#[tokio::test]
async fn the_end_of_a_long_failed_answer_is_bounded() {
    let ws = tempfile::tempdir().unwrap();
    let result = backend(
        "i=0; while [ $i -lt 5000 ]; do echo \"line $i of the answer\"; i=$((i+1)); done; exit 1",
    )
    .execute(
        &request(&ws, ""),
        ExecutionContext::new(EventSink::discard()),
    )
    .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    assert!(
        result.logs.contains("line 4999 of the answer"),
        "{}",
        result.logs
    );
    assert!(
        !result.logs.contains("line 0 of"),
        "the whole answer is in logs"
    );
    assert!(
        result.logs.len() < agent_exec_backends::command::STDOUT_TAIL + 200,
        "{}",
        result.logs.len()
    );
    let reason = &result.err.as_ref().unwrap().reason;
    assert!(reason.contains("line 4999 of the answer"), "{reason}");
    assert!(
        reason.len() < agent_exec_backends::command::REASON_TAIL * 2 + 200,
        "{reason}"
    );
}

fn structured_backend(script: &str) -> CommandBackend {
    let mut config = CommandConfig::new("cmd", vec!["sh".into(), "-c".into(), script.into()]);
    config.structured_output = true;
    CommandBackend::new(config)
}

/// `structured_output = true` declares and verifies `structured-output`; the schema
/// reaches the program in `AGENT_EXEC_OUTPUT_SCHEMA`; an answer that does not match is
/// failed with what the program said in the reason (before: no such key, and the
/// runtime's rejection kept nothing of the answer).
#[tokio::test]
async fn structured_output_is_declared_by_config_and_checked_at_each_run() {
    let ws = tempfile::tempdir().unwrap();
    let plain = resolved(backend("cat")).await;
    assert!(
        !plain
            .verification
            .verified
            .contains(&Capability::StructuredOutput)
    );
    // The schema asks for an object with a `required` key: the program answers with
    // the schema it was handed, which is such an object.
    let schema = serde_json::json!({"type": "object", "required": ["required"]});
    let mut registry = Registry::new();
    registry
        .register(Arc::new(structured_backend(
            "printf '%s' \"$AGENT_EXEC_OUTPUT_SCHEMA\"",
        )))
        .unwrap();
    let echo = registry
        .resolve("cmd", &[Capability::StructuredOutput])
        .await
        .unwrap();
    let mut req = request(&ws, "");
    req.output_schema = Some(schema.clone());
    req.required = vec![Capability::StructuredOutput];
    let result = Runtime::new()
        .run(req.clone(), &echo, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:?}");
    let answered: serde_json::Value = serde_json::from_str(&result.text).unwrap();
    assert_eq!(answered, schema);

    let mut registry = Registry::new();
    registry
        .register(Arc::new(structured_backend("printf 'Sure! Here it is.'")))
        .unwrap();
    let prose = registry
        .resolve("cmd", &[Capability::StructuredOutput])
        .await
        .unwrap();
    req.execution_id = "exec-43".into();
    let result = Runtime::new().run(req, &prose, RunOptions::default()).await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let err = result.err.unwrap();
    assert_eq!(err.code, ErrorCode::MissingDeliverable);
    assert!(
        err.reason.contains("structured output rejected")
            && err.reason.contains(r#"stdout ends: "Sure! Here it is.""#),
        "{}",
        err.reason
    );
    assert!(result.logs.contains("Sure! Here it is."), "{}", result.logs);
}
