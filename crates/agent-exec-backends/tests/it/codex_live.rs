//! The `codex` backend driving the real Codex CLI (npm `@openai/codex`) against a
//! scripted OpenAI Responses server on loopback (`model-script`): codex, its
//! `exec_command` tool, the shell it starts and the files it writes are real; only the
//! model's words are scripted. Everything goes through the public `Backend` API under
//! the `Runtime` (deliverables, events, cancellation), as a caller would use it.
//!
//! The program is found through `AGENT_EXEC_NPM_BIN` (set by `scripts/test.sh`) or
//! `<workspace>/target/peers/npm/node_modules/.bin`; a missing program fails the test
//! with what to run.
use crate::{agents, stand_in};
use agents::{DUMMY_KEY, Seen, exec_command, nothing, pid_in};

use agent_exec_backends::agent_program::AGENT_CLI_CAPABILITIES;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_exec_backends::agent_program::ProgramConfig;
use agent_exec_backends::codex::{CodexBackend, KIND};
use agent_exec_contract::{
    Backend, CancelCause, Cancellation, Capability, ContractRequest, ContractResult, ErrorCode,
    Event, EventKind, Outcome, Resolved, ToolPolicy,
};
use agent_exec_runtime::{RunOptions, Runtime};
use model_script::{Ending, Script, ScriptedServer, Turn};
use test_support::procfs::{alive, comm, parent};

/// The codex program, or a panic saying how to install it.
fn codex_program() -> PathBuf {
    test_support::peers::npm_bin("codex", "@openai/codex")
}

/// One scripted server, a `CODEX_HOME` pointing codex at it, a workspace, a backend.
struct Rig {
    server: ScriptedServer,
    workspace: tempfile::TempDir,
    _home: tempfile::TempDir,
    backend: Arc<CodexBackend>,
}

impl Rig {
    fn new(turns: Vec<Turn>) -> Rig {
        Rig::with_provider_extra(turns, "")
    }

    /// `extra` is appended to the provider table (e.g. retry limits).
    fn with_provider_extra(turns: Vec<Turn>, extra: &str) -> Rig {
        let server = ScriptedServer::start(Script::new(turns));
        Rig::for_base_url(server, None, extra)
    }

    fn for_base_url(server: ScriptedServer, base_url: Option<&str>, extra: &str) -> Rig {
        // Not under /tmp: codex refuses to set up its helper binaries in a CODEX_HOME
        // there. The target dir's tmp is ours and on the same machine.
        let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base_url = base_url.unwrap_or(&server.base_url);
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "model = \"scripted\"\nmodel_provider = \"scripted\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base_url}\"\n\
                 wire_api = \"responses\"\nenv_key = \"SCRIPTED_KEY\"\n{extra}"
            ),
        )
        .unwrap();
        let mut config = ProgramConfig::new(KIND);
        config.program = Some(codex_program().display().to_string());
        config
            .env
            .insert("CODEX_HOME".into(), home.path().display().to_string());
        // codex's shell is a login shell: keep it off this machine's profile (pyenv,
        // cargo env, ...), which is slow and not what the test is about.
        config
            .env
            .insert("HOME".into(), home.path().display().to_string());
        config.env.insert("SCRIPTED_KEY".into(), DUMMY_KEY.into());
        config.grace_ms = 1000;
        Rig {
            server,
            workspace: tempfile::tempdir().unwrap(),
            _home: home,
            backend: Arc::new(CodexBackend::new(config)),
        }
    }

    /// A request with codex's default tool set (profile `workspace`).
    fn request(&self, id: &str, prompt: &str) -> ContractRequest {
        agents::request(self.workspace.path(), id, prompt, "workspace", &[])
    }

    fn resolved(&self) -> Resolved {
        agents::resolved(self.backend.clone(), KIND, &AGENT_CLI_CAPABILITIES)
    }

    /// Runs `request` through the runtime; `during` gets the cancellation and the events
    /// seen so far while it runs.
    async fn run(
        &self,
        request: ContractRequest,
        during: impl FnOnce(Cancellation, Seen) -> tokio::task::JoinHandle<()>,
    ) -> (ContractResult, Vec<Event>) {
        let limit = Duration::from_secs(60);
        agents::run_in_runtime(&self.resolved(), request, limit, during).await
    }

    fn path(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }
}

#[tokio::test]
async fn a_tool_call_writes_the_deliverable_with_usage_and_events_in_order() {
    let rig = Rig::new(vec![
        exec_command("call_1", "printf 'hello from codex' > out.txt", 10_000).with_usage(120, 9),
        Turn::text("wrote out.txt").with_usage(130, 11),
    ]);
    let mut request = rig.request("codex-live-file", "write out.txt");
    request.targets = vec!["out.txt".into()];
    // Only the shell: every other codex tool is switched off.
    request.tool_policy = ToolPolicy {
        profile: String::new(),
        allowlist: vec!["exec_command".into()],
    };
    let (result, events) = rig.run(request, nothing).await;

    // 1. The agent's own tool call wrote the deliverable; the text is the final message.
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "wrote out.txt");
    assert_eq!(
        result.files.get("out.txt").map(Vec::as_slice),
        Some(&b"hello from codex"[..]),
        "{result:#?}"
    );
    // The tool really ran and its output went back to the model.
    let requests = rig.server.requests();
    assert_eq!(requests.len(), 2, "one request per scripted turn");
    assert!(
        requests[1].body.to_string().contains("call_1"),
        "the second request carries the tool's output: {}",
        requests[1].body
    );
    assert_eq!(rig.server.requests_past_script(), 0);

    let first = requests[0].body.to_string();
    assert!(
        first.contains("write out.txt") && first.contains("- out.txt"),
        "the prompt (from stdin) and the deliverable list reach the model: {first}"
    );
    let offered = offered_tools(&requests[0].body);
    assert!(offered.contains(&"exec_command".to_owned()), "{offered:?}");
    for off in ["view_image", "web_search", "multi_agent_v1"] {
        assert!(
            !offered.contains(&off.to_owned()),
            "{off} offered: {offered:?}"
        );
    }

    // 2. Usage as codex reports it: the sum over the turn's two model calls.
    assert_eq!(
        (result.usage.prompt_tokens, result.usage.completion_tokens),
        (120 + 130, 9 + 11)
    );

    // 5. Events in order: tool start, tool end, the message, message end.
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::ToolExecStart,
            EventKind::ToolExecEnd,
            EventKind::TextDelta,
            EventKind::MessageEnd
        ],
        "{events:#?}"
    );
    assert_eq!(events[0].tool, "shell");
    assert!(events[0].detail.contains("out.txt"), "{:?}", events[0]);
    assert_eq!(events[2].text, "wrote out.txt");
}

/// The tool names a Responses request offered the model.
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().or(t["type"].as_str()))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_default_policy_offers_no_shell_and_a_shell_call_runs_nothing() {
    let rig = Rig::new(vec![
        exec_command("call_1", "printf x > forbidden.txt", 10_000),
        Turn::text("could not"),
    ]);
    let mut request = rig.request("codex-live-reasoning", "try to write");
    request.tool_policy = ToolPolicy::default(); // empty profile = `reasoning`
    let (result, events) = rig.run(request, nothing).await;
    let requests = rig.server.requests();
    let offered = offered_tools(&requests[0].body);
    for off in ["exec_command", "write_stdin", "view_image", "web_search"] {
        assert!(
            !offered.contains(&off.to_owned()),
            "{off} offered: {offered:?}"
        );
    }
    assert!(
        !rig.path("forbidden.txt").exists(),
        "a shell call ran under the reasoning policy"
    );
    assert!(
        !events.iter().any(|e| e.kind == EventKind::ToolExecStart),
        "{events:#?}"
    );
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "could not");
}

#[tokio::test]
async fn an_unknown_tool_profile_is_refused_before_codex_starts() {
    let rig = Rig::new(vec![Turn::text("never")]);
    let mut request = rig.request("codex-live-root", "hi");
    request.tool_policy.profile = "root".into();
    let (result, _) = rig.run(request, nothing).await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ToolRejected);
    assert_eq!(err.side_effects, agent_exec_contract::SideEffects::None);
    assert!(rig.server.requests().is_empty(), "codex was started");
}

#[tokio::test]
async fn cancel_during_a_tool_call_is_canceled_and_leaves_no_process() {
    // The shell's pid becomes sleep's (exec); codex waits up to 40 s for it.
    let rig = Rig::new(vec![exec_command(
        "call_1",
        "echo $$ > sleep.pid; exec sleep 30",
        40_000,
    )]);
    let pidfile = rig.path("sleep.pid");
    let (sleep_tx, sleep_rx) = tokio::sync::oneshot::channel();
    let started = std::time::Instant::now();
    let (result, events) = rig
        .run(
            rig.request("codex-live-cancel", "sleep"),
            move |cancel, seen| {
                tokio::spawn(async move {
                    let pid = pid_in(&pidfile).await;
                    // "In the middle of a tool call": the stream said it started.
                    let start = EventKind::ToolExecStart;
                    assert!(
                        agents::wait_for_kind(&seen, start, Duration::from_secs(30)).await,
                        "no ToolExecStart event within 30 s"
                    );
                    assert!(alive(pid), "the tool's sleep is running");
                    let _ = sleep_tx.send(pid);
                    cancel.cancel(CancelCause::Caller);
                })
            },
        )
        .await;
    let sleep = sleep_rx.await.expect("the tool call started");
    agents::assert_canceled_mid_tool(&result, sleep);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the run waited for the sleep instead of canceling it"
    );
    assert_eq!(
        events.first().map(|e| e.kind.clone()),
        Some(EventKind::ToolExecStart)
    );
    assert!(
        !events.iter().any(|e| e.kind == EventKind::ToolExecEnd),
        "the tool never finished: {events:#?}"
    );
}

#[tokio::test]
async fn killing_codex_mid_run_is_unknown() {
    let rig = Rig::new(vec![exec_command(
        "call_1",
        "echo $$ > sleep.pid; exec sleep 30",
        40_000,
    )]);
    let pidfile = rig.path("sleep.pid");
    let (pids_tx, pids_rx) = tokio::sync::oneshot::channel();
    let (result, _) = rig
        .run(rig.request("codex-live-kill", "sleep"), move |_, _| {
            tokio::spawn(async move {
                let sleep = pid_in(&pidfile).await;
                // The agent is the process that started the tool's shell (codex's own
                // binary; the npm `codex` is a node launcher above it).
                let agent = parent(sleep).expect("the sleep has a parent");
                assert_eq!(comm(agent), "codex", "the sleep's parent is codex");
                agents::kill_9(agent);
                let _ = pids_tx.send((agent, sleep));
            })
        })
        .await;
    let (agent, sleep) = pids_rx.await.expect("codex was killed");
    agents::assert_killed_mid_tool(&result, agent, sleep);
}

#[tokio::test]
async fn a_stream_disconnect_is_retried_by_codex_and_the_run_still_succeeds() {
    let rig = Rig::with_provider_extra(
        vec![
            Turn::text("partial").ending(Ending::Disconnect),
            Turn::text("after the retry"),
        ],
        "stream_max_retries = 1\nrequest_max_retries = 0\n",
    );
    let (result, _) = rig
        .run(rig.request("codex-live-retry", "hi"), nothing)
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, "after the retry");
    assert_eq!(
        rig.server.turns_served(),
        2,
        "codex retried the stream once"
    );
}

#[tokio::test]
async fn instructions_reach_the_model() {
    let rig = Rig::new(vec![Turn::text("ok")]);
    let mut request = rig.request("codex-live-instructions", "hi");
    request.instructions = "Answer in \"French\".\n[not a table]".into();
    let (result, _) = rig.run(request, nothing).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    let body = rig.server.requests()[0].body.to_string();
    assert!(
        body.contains(r#"Answer in \"French\".\n[not a table]"#),
        "the instructions are not in the model request: {body}"
    );
}

#[tokio::test]
async fn a_provider_refusal_is_failed_and_never_shows_the_key() {
    let base_url = agents::leaky_provider().await;
    let rig = Rig::for_base_url(
        ScriptedServer::start(Script::default()),
        Some(&base_url),
        "request_max_retries = 0\n",
    );
    let (result, _) = rig.run(rig.request("codex-live-401", "hi"), nothing).await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::ProviderRejected);
    assert_eq!(err.side_effects, agent_exec_contract::SideEffects::None);
    assert!(err.reason.contains("401"), "{}", err.reason);
    assert!(err.reason.contains("[redacted]"), "{}", err.reason);
    let shown = format!("{result:?}");
    assert!(!shown.contains(DUMMY_KEY), "the key leaked: {shown}");
}

#[tokio::test]
async fn verify_reports_the_real_version_and_a_missing_program_says_what_to_install() {
    let rig = Rig::new(vec![]);
    let verification = rig.backend.verify().await;
    assert!(verification.problems.is_empty(), "{verification:?}");
    assert!(
        verification.adapter_version.contains("codex-cli 0."),
        "{verification:?}"
    );
    for capability in [
        Capability::Text,
        Capability::Stream,
        Capability::Tools,
        Capability::Cancel,
        Capability::StructuredOutput,
        // Proven by `exec resume` on the probe's own thread.
        Capability::Resume,
    ] {
        assert!(
            verification.verified.contains(&capability),
            "{capability:?} not verified: {verification:?}"
        );
    }
    let descriptor = rig.backend.descriptor();
    assert_eq!(descriptor.name, KIND);
    assert!(
        verification
            .verified
            .iter()
            .all(|c| descriptor.capabilities.contains(c)),
        "only declared capabilities are verified"
    );

    let mut config = ProgramConfig::new("gone");
    config.program = Some("/nonexistent/codex".into());
    let missing = CodexBackend::new(config).verify().await;
    assert!(missing.verified.is_empty());
    assert!(
        missing.problems.join(" ").contains("@openai/codex"),
        "{missing:?}"
    );
    assert_eq!(
        missing
            .problems
            .join(" ")
            .matches("npm i -g @openai/codex")
            .count(),
        1,
        "the install hint, once: {missing:?}"
    );
}

/// A stand-in program (a shell script) for what `verify` must tell apart.
fn fake_program(dir: &Path, name: &str, body: &str) -> CodexBackend {
    let path = stand_in::write_program(dir, name, &format!("#!/bin/sh\n{body}\n"));
    let mut config = ProgramConfig::new(name);
    config.program = Some(path.display().to_string());
    CodexBackend::new(config)
}

#[tokio::test]
async fn verify_tells_an_old_codex_and_another_program_apart() {
    let dir = tempfile::tempdir().unwrap();
    // A codex whose `exec` has --json but not --disable: everything but `tools`. Its
    // run starts a thread and a turn, then waits (as codex does on a refused provider):
    // the probe stops it there.
    let old = fake_program(
        dir.path(),
        "old-codex",
        r#"case " $* " in *" --disable "*) echo "error: unexpected argument '--disable' found" >&2; exit 2;; esac
case " $* " in *" --version "*) echo "codex-cli-exec 0.9.0"; exit 0;; esac
cat >/dev/null
echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"turn.started"}'
exec sleep 60"#,
    )
    .verify()
    .await;
    assert!(old.verified.contains(&Capability::Stream), "{old:?}");
    assert!(!old.verified.contains(&Capability::Tools), "{old:?}");
    assert!(old.problems.join(" ").contains("--disable"), "{old:?}");
    assert!(old.adapter_version.contains("codex-cli 0.9.0"), "{old:?}");
    // Every flag accepted, a version, but no JSON lines from the run: nothing verified.
    let mute = fake_program(
        dir.path(),
        "mute-codex",
        r#"case " $* " in *" --version "*) echo "codex-cli-exec 0.171.0"; exit 0;; esac
echo "Reading prompt from stdin..."; exit 0"#,
    )
    .verify()
    .await;
    assert!(mute.verified.is_empty(), "{mute:?}");
    assert!(
        mute.problems[0].contains("did not start a thread and a turn")
            && mute.problems[0].contains("@openai/codex"),
        "{mute:?}"
    );
    // Not codex at all: nothing verified, and the message says what it is and what to install.
    let other = fake_program(
        dir.path(),
        "other",
        r#"[ "$1" = "--version" ] && { echo "other 1.0"; exit 0; }
echo "unknown command exec" >&2; exit 2"#,
    )
    .verify()
    .await;
    assert!(other.verified.is_empty(), "{other:?}");
    let problem = other.problems.join(" ");
    assert!(
        problem.contains("other 1.0") && problem.contains("@openai/codex"),
        "{problem}"
    );
}

/// `--output-schema`: codex sends the schema to the model as the Responses API's
/// `text.format` (json_schema), the last agent message is the JSON, and the runtime
/// checks it itself: a scripted answer that matches succeeds with the JSON as text;
/// one that does not is failed with the validator's reason.
#[tokio::test]
async fn structured_output_goes_through_output_schema_and_is_checked_by_the_runtime() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": false
    });
    let mut verified = AGENT_CLI_CAPABILITIES.to_vec();
    verified.push(Capability::StructuredOutput);

    let rig = Rig::new(vec![Turn::text(r#"{"n":7}"#)]);
    let mut request = rig.request("so-ok", "give me n");
    request.output_schema = Some(schema.clone());
    let resolved = agents::resolved(rig.backend.clone(), KIND, &verified);
    let result = Runtime::new()
        .run(request, &resolved, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{result:#?}");
    assert_eq!(result.text, r#"{"n":7}"#, "the JSON is the text");
    let sent = rig.server.requests().into_iter().next().unwrap();
    let format = &sent.body["text"]["format"];
    assert_eq!(format["type"], "json_schema", "{}", sent.body["text"]);
    assert_eq!(format["schema"]["required"][0], "n", "{format}");
    assert!(
        !rig.workspace.path().read_dir().unwrap().any(|_| true),
        "the schema file is not written into the workspace"
    );

    let rig = Rig::new(vec![Turn::text(r#"{"n":"seven"}"#)]);
    let mut request = rig.request("so-bad", "give me n");
    request.output_schema = Some(schema);
    let resolved = agents::resolved(rig.backend.clone(), KIND, &verified);
    let result = Runtime::new()
        .run(request, &resolved, RunOptions::default())
        .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.code, ErrorCode::MissingDeliverable);
    assert!(
        err.reason.contains("/n") && err.reason.contains("integer"),
        "{}",
        err.reason
    );
    assert!(result.text.is_empty());
}

/// Resume, end to end on the real codex: attempt 1 runs a tool call, then codex is
/// SIGKILLed while its next model request is in flight; the thread id it reported
/// from `thread.started` goes back in as `ctx.resume`, and attempt 2 (`codex exec
/// resume`) continues that thread: the model request it makes carries the earlier
/// tool call and its output, under the same tool set.
#[tokio::test]
async fn a_killed_run_resumes_in_its_own_thread_and_the_model_sees_the_earlier_turns() {
    let rig = Rig::new(vec![
        exec_command("call_r1", "echo TOOL-OUTPUT-7f3", 10_000),
        // The model never answers the tool's output: codex is killed while it waits.
        Turn::default().ending(Ending::Hang),
        Turn::text("resumed and done").with_usage(140, 12),
    ]);
    let mut request = rig.request("codex-live-resume", "run the marker command");
    request.tool_policy = ToolPolicy {
        profile: String::new(),
        allowlist: vec!["exec_command".into()],
    };
    let server = &rig.server;
    let thread = agents::kill_then_resume(rig.backend.clone(), &request, "codex", || {
        // The second request carries the tool's output: the thread has both turns.
        server.requests().len() >= 2
    })
    .await;
    assert!(
        agent_exec_backends::agent_program::is_uuid(&thread),
        "{thread}"
    );

    let requests = rig.server.requests();
    assert_eq!(
        requests.len(),
        3,
        "{:#?}",
        requests.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let resumed = requests[2].body.to_string();
    agents::assert_carries_the_earlier_turns(
        &resumed,
        &["run the marker command", "call_r1", "TOOL-OUTPUT-7f3"],
    );
    assert_eq!(
        offered_tools(&requests[2].body),
        offered_tools(&requests[0].body),
        "the resumed turn is held to the same tool set"
    );
    assert_eq!(rig.server.requests_past_script(), 0);
}

/// A resume whose thread codex does not have (a well-formed UUID, but no session
/// file in this `CODEX_HOME`): codex refuses it before any model request, and the run
/// is `failed` with nothing done — a clear error, not a fresh thread.
#[tokio::test]
async fn resuming_a_thread_codex_does_not_have_fails_with_nothing_done() {
    let rig = Rig::new(vec![Turn::text("never")]);
    let backend: Arc<dyn Backend> = rig.backend.clone();
    let (result, reported) = agents::run_resumed(
        backend,
        rig.request("codex-live-resume-missing", "go on"),
        agent_exec_contract::ResumeFrom {
            session: "0199a213-81c0-7800-8aa1-bbab2a035a53".into(),
            attempt: 1,
            original_prompt: "start".into(),
        },
    )
    .await;
    assert_eq!(result.outcome, Outcome::Failed, "{result:#?}");
    let err = result.err.as_ref().unwrap();
    assert_eq!(err.side_effects, agent_exec_contract::SideEffects::None);
    assert!(result.logs.contains("no rollout found"), "{}", result.logs);
    assert!(reported.is_empty(), "{reported:?}");
    assert_eq!(rig.server.requests().len(), 0, "no model request");
}

/// `verify` proves `resume` by doing it (`exec resume` on the format probe's own
/// thread, in its throw-away `CODEX_HOME`; the real codex verifies it in
/// `verify_reports_the_real_version…`): with `--ephemeral` in `args` no session is
/// kept, and the probe shows it — `--help` would not.
#[tokio::test]
async fn an_ephemeral_codex_does_not_verify_resume() {
    let mut config = ProgramConfig::new(KIND);
    config.program = Some(codex_program().display().to_string());
    config.args = vec!["--ephemeral".into()];
    let verification = CodexBackend::new(config).verify().await;
    assert!(
        !verification.verified.contains(&Capability::Resume),
        "{verification:#?}"
    );
    assert!(
        verification.verified.contains(&Capability::Text),
        "only resume is lost: {verification:#?}"
    );
    assert!(
        verification
            .problems
            .iter()
            .any(|p| p.starts_with("resume:")),
        "{verification:#?}"
    );
}

/// Figures, not a check (ignored; issue 12 §5): the same scripted task — one
/// `exec_command` call, then a final message — run fresh, and run as attempt 1 killed
/// with the second model request in flight plus a resumed attempt 2. Prints wall time
/// (fresh run vs the resumed attempt alone) and the JSON bytes the scripted server was
/// sent (model-script counts no tokens; bytes/4 is the usual rough token estimate).
/// `cargo test -p agent-exec-backends --test it -- --ignored --nocapture codex_live::resume_figures`
#[tokio::test]
#[ignore = "prints figures; run by hand"]
async fn resume_figures() {
    let script = |hang: bool| {
        let mut turns = vec![exec_command("call_f1", "echo TOOL-OUTPUT-f1", 10_000)];
        if hang {
            turns.push(Turn::default().ending(Ending::Hang));
        }
        turns.push(Turn::text("done"));
        turns
    };
    for round in 1..=3 {
        let fresh = Rig::new(script(false));
        let killed = Rig::new(script(true));
        let mut request = fresh.request("codex-figures-fresh", "run the marker command");
        request.tool_policy.allowlist = vec!["exec_command".into()];
        let line = agents::resume_figure_round(
            &format!("codex round {round}"),
            "codex",
            agents::FigureRig {
                backend: fresh.backend.clone(),
                server: &fresh.server,
                request: request.clone(),
            },
            agents::FigureRig {
                backend: killed.backend.clone(),
                server: &killed.server,
                request,
            },
        )
        .await;
        println!("{line}");
    }
}
