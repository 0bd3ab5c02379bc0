//! `resume` against a fresh run of the same scripted task, with the real codex against
//! `model-script` (run by `scripts/bench-agent-exec-resume.sh`).
//!
//! The task: one shell tool call (`echo`), then a final answer. Both sides start from
//! the same situation — a run of the task whose runner was SIGKILLed right after the
//! tool call (the scripted server had received the tool's output) — and finish the task:
//!
//! * **resume**: `agent-exec resume ID` continues codex's own thread: one model request
//!   carrying the earlier turns and the continuation;
//! * **fresh**: `agent-exec run` of the same task under a new id, from the start: the
//!   tool call again, then the answer (two model requests).
//!
//! Measured per side, in the same run: wall time of the `agent-exec` command, model
//! requests, and the bytes of request bodies the scripted server received. The server
//! does not tokenize; `~tokens` is bytes / 4, an estimate only. The verification cache
//! is warm for both (one `backends --verify` first).
//!
//! Env: `AGENT_EXEC_BIN` (the binary), `AGENT_EXEC_NPM_BIN` or `PEERS_DIR` (codex),
//! `BENCH_DIR` (a scratch folder not under /tmp: codex refuses a CODEX_HOME there).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model_script::{Ending, Script, ScriptedServer, Turn};

fn codex() -> PathBuf {
    test_support::peers::npm_bin("codex", "@openai/codex")
}

struct Side {
    dir: PathBuf,
    server: ScriptedServer,
}

fn tool_turn() -> Turn {
    Turn::tool_call(
        "call_b1",
        "exec_command",
        serde_json::json!({"cmd": "echo BENCH-TOOL-OUTPUT", "yield_time_ms": 10_000}),
    )
}

fn side(root: &Path, name: &str, turns: Vec<Turn>) -> Side {
    let server = ScriptedServer::start(Script::new(turns));
    let dir = root.join(name);
    let home = dir.join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
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
    let q = |s: &str| serde_json::to_string(s).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[backends.codex]\nkind = \"codex\"\nprogram = {}\ngrace_ms = 1000\n\
             env = {{ CODEX_HOME = {h}, HOME = {h}, SCRIPTED_KEY = \"dummy-key-for-model-script\" }}\n",
            q(&codex().display().to_string()),
            h = q(&home.display().to_string()),
        ),
    )
    .unwrap();
    Side { dir, server }
}

fn agent_exec(side: &Side, state: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("AGENT_EXEC_BIN").expect("set AGENT_EXEC_BIN"));
    cmd.env_remove("AGENT_EXEC_CONFIG")
        .env("XDG_STATE_HOME", state)
        .arg("--config")
        .arg(side.dir.join("config.toml"))
        .arg("--journal")
        .arg(side.dir.join("journal.sqlite3"));
    cmd
}

fn run_args<'a>(side: &'a Side, ws: &'a str, id: &'a str) -> Vec<&'a str> {
    let _ = side;
    vec![
        "run",
        "--backend",
        "codex",
        "--prompt",
        "run the marker command, then say done",
        "--workspace",
        ws,
        "--execution-id",
        id,
        "--allow-tool",
        "exec_command",
        "--json",
    ]
}

fn bytes(side: &Side, from: usize) -> (usize, usize) {
    let requests = side.server.requests();
    let sent: usize = requests
        .iter()
        .skip(from)
        .map(|r| r.body.to_string().len())
        .sum();
    (requests.len().saturating_sub(from), sent)
}

fn main() {
    let root = PathBuf::from(std::env::var_os("BENCH_DIR").expect("set BENCH_DIR"));
    let state = root.join("state");

    // The interrupted run, then resume.
    let interrupted = side(
        &root,
        "resume",
        vec![
            tool_turn(),
            Turn::default().ending(Ending::Hang),
            Turn::text("done"),
        ],
    );
    // Probes every backend and caches codex's verification (the built-in others may
    // fail to verify here: only codex is used).
    let warm = agent_exec(&interrupted, &state)
        .args(["backends", "--verify", "--json"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&warm.stdout).contains("\"resume\""),
        "codex did not verify resume: {}",
        String::from_utf8_lossy(&warm.stdout)
    );
    let ws = interrupted.dir.join("ws").display().to_string();
    let mut runner = agent_exec(&interrupted, &state)
        .args(run_args(&interrupted, &ws, "bench-resume"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(120);
    while interrupted.server.requests().len() < 2 {
        assert!(Instant::now() < until, "no tool call within 120 s");
        assert!(
            runner.try_wait().unwrap().is_none(),
            "the runner ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    runner.kill().unwrap();
    runner.wait().unwrap();
    let before = interrupted.server.requests().len();
    let started = Instant::now();
    let out = agent_exec(&interrupted, &state)
        .args(["resume", "bench-resume", "--json"])
        .output()
        .unwrap();
    let resume_time = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (resume_requests, resume_bytes) = bytes(&interrupted, before);

    // A fresh run of the same task from the start.
    let fresh = side(&root, "fresh", vec![tool_turn(), Turn::text("done")]);
    let ws = fresh.dir.join("ws").display().to_string();
    let started = Instant::now();
    let out = agent_exec(&fresh, &state)
        .args(run_args(&fresh, &ws, "bench-fresh"))
        .output()
        .unwrap();
    let fresh_time = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (fresh_requests, fresh_bytes) = bytes(&fresh, 0);

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| | wall time | model requests | bytes sent to the model | ~tokens (bytes/4) |");
    println!("|---|---|---|---|---|");
    println!(
        "| fresh run of the task (baseline) | {:.0} ms | {fresh_requests} | {fresh_bytes} | {} |",
        ms(fresh_time),
        fresh_bytes / 4
    );
    println!(
        "| `agent-exec resume` after the kill | {:.0} ms | {resume_requests} | {resume_bytes} | {} |",
        ms(resume_time),
        resume_bytes / 4
    );
    println!(
        "resume / fresh: wall time {:.2}, bytes {:.2}",
        ms(resume_time) / ms(fresh_time),
        resume_bytes as f64 / fresh_bytes as f64
    );
}
