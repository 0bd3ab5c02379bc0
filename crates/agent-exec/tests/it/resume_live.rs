//! `agent-exec resume`, end to end with the pinned Codex, Claude Code, pi and codex-acp
//! against the scripted model servers (`model-script`): `agent-exec run` with an SQLite journal;
//! the *runner* is SIGKILLed right after the agent's first tool call (the scripted
//! server has seen the tool's output); `runs show` says `unknown`; `agent-exec resume`
//! stops what the dead runner left running and continues the agent's own
//! conversation — the scripted server sees the earlier turns (the tool call and its
//! output) in the resumed request — and ends `succeeded` under the same execution id,
//! with two attempts journaled, each with its session handle. Afterwards no process of
//! either runner is alive.
//!
//! Not here: the `openai` backend (no tools, no process; its probe sends real
//! completions to the same scripted server on every `run` and `resume`, which a
//! sequential script cannot tell from the execution's). Its resume is tested against
//! the scripted server at the backend level (`agent-exec-backends/tests/openai.rs`).
//!
//! The programs are found through `AGENT_EXEC_NPM_BIN` or `PEERS_DIR` (set by
//! `scripts/test.sh`); a missing one fails the test with what to run.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use model_script::{Ending, Script, ScriptedServer, Turn};
use serde_json::Value;

fn npm_program(bin: &str, package: &str) -> PathBuf {
    test_support::peers::npm_bin(bin, package)
}

/// One backend's sandbox: its config, journal, workspace and the scripted server.
struct Live {
    dir: tempfile::TempDir,
    server: ScriptedServer,
    backend: &'static str,
    /// How the run lets the agent use its shell tool.
    tool_args: Vec<&'static str>,
}

impl Live {
    fn codex(turns: Vec<Turn>) -> Live {
        let server = ScriptedServer::start(Script::new(turns));
        // Not under /tmp: codex refuses to set up its helper binaries in a CODEX_HOME
        // there.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let home = dir.path().join("codex-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("config.toml"),
            format!(
                "model = \"scripted\"\nmodel_provider = \"scripted\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}\"\n\
                 wire_api = \"responses\"\nenv_key = \"SCRIPTED_KEY\"\n",
                server.base_url
            ),
        )
        .unwrap();
        let config = format!(
            "[backends.codex]\nkind = \"codex\"\nprogram = {}\ngrace_ms = 1000\n\
             env = {{ CODEX_HOME = {h}, HOME = {h}, SCRIPTED_KEY = \"dummy-key-for-model-script\" }}\n",
            toml(&npm_program("codex", "@openai/codex").display().to_string()),
            h = toml(&home.display().to_string()),
        );
        Live::with(
            dir,
            server,
            "codex",
            config,
            vec!["--allow-tool", "exec_command"],
        )
    }

    fn claude(turns: Vec<Turn>) -> Live {
        let server = ScriptedServer::start(Script::new(turns));
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("claude-home");
        std::fs::create_dir_all(&home).unwrap();
        let h = home.display().to_string();
        let config = format!(
            "[backends.claude-code]\nkind = \"claude-code\"\nprogram = {}\ngrace_ms = 1000\n\
             model = \"claude-scripted-test\"\n\
             env = {{ ANTHROPIC_BASE_URL = {}, ANTHROPIC_API_KEY = \"dummy-key-for-tests\", \
             IS_SANDBOX = \"1\", HOME = {}, CLAUDE_CONFIG_DIR = {}, \
             CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", DISABLE_AUTOUPDATER = \"1\", \
             CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n",
            toml(
                &npm_program("claude", "@anthropic-ai/claude-code")
                    .display()
                    .to_string()
            ),
            toml(&server.origin),
            toml(&h),
            toml(&format!("{h}/.claude")),
        );
        Live::with(
            dir,
            server,
            "claude-code",
            config,
            vec!["--tool-profile", "workspace"],
        )
    }

    fn pi(turns: Vec<Turn>) -> Live {
        let server = ScriptedServer::start(Script::new(turns));
        let dir = tempfile::tempdir().unwrap();
        let agent_dir = dir.path().join("pi-home/agent");
        std::fs::create_dir_all(&agent_dir).unwrap();
        let models = serde_json::json!({"providers": {"scripted": {
            "baseUrl": server.base_url,
            "api": "openai-completions",
            "apiKey": "PI_SCRIPTED_KEY",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "scripted"}]}}});
        std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
        std::fs::write(
            agent_dir.join("settings.json"),
            serde_json::json!({"retry": {"enabled": false}}).to_string(),
        )
        .unwrap();
        let config = format!(
            "[backends.agent-native]\nkind = \"agent-native\"\nprogram = {}\ngrace_ms = 1000\n\
             model = \"scripted/scripted\"\n\
             env = {{ PI_CODING_AGENT_DIR = {}, HOME = {}, PI_SCRIPTED_KEY = \"dummy-key\" }}\n",
            toml(
                &npm_program("pi", "@mariozechner/pi-coding-agent")
                    .display()
                    .to_string()
            ),
            toml(&agent_dir.display().to_string()),
            toml(&dir.path().join("pi-home").display().to_string()),
        );
        Live::with(
            dir,
            server,
            "agent-native",
            config,
            vec!["--tool-profile", "workspace"],
        )
    }

    /// codex-acp over the Agent Client Protocol (it advertises `loadSession`).
    fn acp(turns: Vec<Turn>) -> Live {
        let server = ScriptedServer::start(Script::new(turns));
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let home = dir.path().join("codex-home");
        std::fs::create_dir_all(&home).unwrap();
        // As the backend's own live test: codex asks before every command that is not
        // read-only, so the tool policy decides; no sandbox (no bubblewrap here).
        std::fs::write(
            home.join("config.toml"),
            format!(
                "approval_policy = \"untrusted\"\nsandbox_mode = \"danger-full-access\"\n\
                 model = \"gpt-5.4-mini\"\nmodel_provider = \"scripted\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}\"\n\
                 wire_api = \"responses\"\nenv_key = \"SCRIPTED_KEY\"\n",
                server.base_url
            ),
        )
        .unwrap();
        let config = format!(
            "[backends.acp]\nkind = \"acp\"\nprogram = {}\ngrace_ms = 1000\n\
             env = {{ CODEX_HOME = {h}, HOME = {h}, SCRIPTED_KEY = \"dummy-key-for-model-script\" }}\n",
            toml(
                &npm_program("codex-acp", "@zed-industries/codex-acp")
                    .display()
                    .to_string()
            ),
            h = toml(&home.display().to_string()),
        );
        Live::with(
            dir,
            server,
            "acp",
            config,
            vec!["--tool-profile", "workspace", "--allow-tool", "execute"],
        )
    }

    fn with(
        dir: tempfile::TempDir,
        server: ScriptedServer,
        backend: &'static str,
        config: String,
        tool_args: Vec<&'static str>,
    ) -> Live {
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Live {
            dir,
            server,
            backend,
            tool_args,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"));
        cmd.env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"));
        cmd
    }

    fn agent_exec(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    fn show(&self, id: &str) -> Value {
        let out = self.agent_exec(&["runs", "show", id, "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `agent-exec run` in the background; SIGKILLed (the runner alone, as a crash
    /// or an OOM kill would) once the scripted server has received the tool's
    /// output. Returns the dead runner's pid.
    fn run_and_kill_the_runner(&self, id: &str, prompt: &str) -> u32 {
        let ws = self.path("ws");
        let mut args = vec![
            "run",
            "--backend",
            self.backend,
            "--prompt",
            prompt,
            "--workspace",
            ws.to_str().unwrap(),
            "--execution-id",
            id,
            "--json",
            "--events",
        ];
        args.extend(self.tool_args.iter().copied());
        let mut runner = self
            .command()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.path("run.stderr")).unwrap())
            .spawn()
            .unwrap();
        let pid = runner.id();
        // Generous: the run probes the backend first (its cache is empty in a fresh
        // sandbox), and CI machines are shared.
        let deadline = Instant::now() + Duration::from_secs(300);
        // The second model request carries the tool's output: the agent's conversation
        // now holds the tool call and its result, and the model "hangs" on it.
        while self.server.requests().len() < 2 {
            if let Some(status) = runner.try_wait().unwrap() {
                panic!(
                    "the runner ended ({status}) before its first tool call: {}",
                    std::fs::read_to_string(self.path("run.stderr")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no tool call within 300 s: {}",
                std::fs::read_to_string(self.path("run.stderr")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        runner.kill().unwrap(); // SIGKILL: no cleanup, no last journal write
        runner.wait().unwrap();
        pid
    }
}

fn toml(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Live processes carrying a tree marker of runner `pid` (`AGENT_EXEC_TREE=<pid>-…`,
/// which every process of every tree it spawned inherits).
fn processes_of_runner(pid: u32) -> Vec<i32> {
    test_support::procfs::with_env_prefix(format!("AGENT_EXEC_TREE={pid}-"))
}

fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.chars().enumerate().all(|(i, c)| {
            matches!(i, 8 | 13 | 18 | 23) == (c == '-') && (c == '-' || c.is_ascii_hexdigit())
        })
}

/// The scenario, for one backend whose first scripted turn is a shell call that
/// prints `marker`.
fn killed_then_resumed(live: Live, call_id: &str, marker: &str) {
    killed_then_resumed_seeing(live, &[call_id, marker]);
}

/// The scenario; the resumed model request must carry `earlier` (besides the
/// original prompt and the continuation).
fn killed_then_resumed_seeing(live: Live, earlier: &[&str]) {
    // One agent at a time: three real agents and their probes at once on a two-core
    // machine starve each other (seen: no tool call within two minutes).
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let id = format!("resume-live-{}-{}", live.backend, std::process::id());
    let dead = live.run_and_kill_the_runner(&id, "run the marker command");

    // The journal says what is known: unknown, with the handle the agent reported.
    let record = live.show(&id);
    assert_eq!(record["state"], "unknown", "{record:#}");
    assert_eq!(record["error"]["code"], "agent.unknown_outcome");
    let first = record["attempts"][0]["session_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("no session handle journaled: {record:#}"))
        .to_owned();
    assert!(
        agent_exec_contract::check_session_handle(&first).is_ok(),
        "{first}"
    );
    if matches!(live.backend, "codex" | "claude-code") {
        assert!(is_uuid(&first), "a thread / session id: {first}");
    }
    let left_before = processes_of_runner(dead).len();

    let resumed = live.agent_exec(&["resume", &id, "--prompt", "please continue", "--json"]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    eprintln!(
        "{}: {left_before} process(es) of the dead runner before resume; resume said: {stderr}",
        live.backend
    );
    assert_eq!(resumed.status.code(), Some(0), "{stderr}");
    let result: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(result["outcome"], "succeeded", "{result:#}");
    assert_eq!(result["text"], "resumed and done");
    if left_before > 0 {
        assert!(
            stderr.contains("the dead runner") && stderr.contains("left running"),
            "resume says it stopped what the dead runner left: {stderr}"
        );
    }
    assert_eq!(
        processes_of_runner(dead),
        Vec::<i32>::new(),
        "no process of the killed run outlives the resume"
    );

    // The resumed request carries the earlier turns: the agent's own conversation.
    let requests = live.server.requests();
    assert!(
        requests.len() >= 3,
        "{:#?}",
        requests.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    assert_eq!(
        live.server.requests_past_script(),
        0,
        "no turn asked for beyond the script"
    );
    let body = requests.last().unwrap().body.to_string();
    for earlier in ["run the marker command", "please continue"]
        .iter()
        .chain(earlier)
    {
        assert!(
            body.contains(earlier),
            "the resumed request lacks {earlier:?}: {body}"
        );
    }

    let record = live.show(&id);
    assert_eq!(record["state"], "succeeded", "{record:#}");
    assert_eq!(record["execution_id"], id.as_str());
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{record:#}");
    assert_eq!(attempts[0]["state"], "unknown");
    assert_eq!(attempts[1]["state"], "succeeded");
    for attempt in attempts {
        assert_eq!(attempt["backend"], live.backend);
        assert_eq!(
            attempt["session_handle"],
            first.as_str(),
            "the same conversation"
        );
    }
    let notes: Vec<&str> = record["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["note"].as_str())
        .collect();
    assert!(
        notes.contains(&"execution resumed from attempt 1's session"),
        "{notes:?}"
    );
}

#[test]
fn codex_killed_runner_is_resumed_in_its_own_thread() {
    let live = Live::codex(vec![
        Turn::tool_call(
            "call_rl1",
            "exec_command",
            serde_json::json!({"cmd": "echo TOOL-OUTPUT-5e1", "yield_time_ms": 10_000}),
        ),
        // The model never answers the tool's output: the runner is killed meanwhile.
        Turn::default().ending(Ending::Hang),
        Turn::text("resumed and done"),
    ]);
    killed_then_resumed(live, "call_rl1", "TOOL-OUTPUT-5e1");
}

#[test]
fn claude_code_killed_runner_is_resumed_in_its_own_session() {
    let live = Live::claude(vec![
        Turn::tool_call(
            "toolu_rl1",
            "Bash",
            serde_json::json!({"command": "echo TOOL-OUTPUT-c7d"}),
        ),
        Turn::default().ending(Ending::Hang),
        Turn::text("resumed and done"),
    ]);
    killed_then_resumed(live, "toolu_rl1", "TOOL-OUTPUT-c7d");
}

#[test]
fn pi_killed_runner_is_resumed_in_its_own_session() {
    let live = Live::pi(vec![
        Turn::tool_call(
            "call_pi1",
            "bash",
            serde_json::json!({"command": "echo TOOL-OUTPUT-9a2"}),
        ),
        Turn::text("thinking").ending(Ending::Hang),
        Turn::text("resumed and done"),
    ]);
    killed_then_resumed(live, "call_pi1", "TOOL-OUTPUT-9a2");
}

#[test]
fn acp_killed_runner_is_resumed_with_session_load() {
    let live = Live::acp(vec![
        Turn::tool_call(
            "call_acp1",
            "exec_command",
            serde_json::json!({"cmd": "echo TOOL-OUTPUT-a3c", "yield_time_ms": 10_000}),
        ),
        Turn::text("thinking").ending(Ending::Hang),
        Turn::text("resumed and done"),
    ]);
    killed_then_resumed(live, "call_acp1", "TOOL-OUTPUT-a3c");
}

/// A SIGKILLed runner of a real agent CLI leaves nothing once any other command has
/// opened the journal (issue 20, finding 2): before, the agent (waiting on the model)
/// and its run cgroup stayed until a `resume` of that very id, or forever.
#[test]
fn claude_code_killed_runner_leaves_nothing_after_the_next_command() {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let live = Live::claude(vec![
        Turn::tool_call(
            "toolu_lk1",
            "Bash",
            serde_json::json!({"command": "echo TOOL-OUTPUT-lk1"}),
        ),
        Turn::default().ending(Ending::Hang),
    ]);
    let id = format!("left-nothing-{}", std::process::id());
    let dead = live.run_and_kill_the_runner(&id, "run the marker command");
    let out = live.agent_exec(&["runs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        processes_of_runner(dead),
        Vec::<i32>::new(),
        "no process of the killed run outlives the next command"
    );
    if let Some(base) = &agent_exec_runtime::cgroup::availability().base {
        let prefix = format!("agent-exec-{dead}-");
        let left: Vec<_> = std::fs::read_dir(base)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect();
        assert_eq!(
            left,
            Vec::<PathBuf>::new(),
            "no run cgroup of the dead runner"
        );
    }
    let record = live.show(&id);
    assert_eq!(record["state"], "unknown", "{record:#}");
    assert_eq!(record["error"]["side_effects"], "possible", "{record:#}");
}
