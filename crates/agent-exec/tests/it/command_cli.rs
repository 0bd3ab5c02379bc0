//! The `command` backend through the binary in human mode (no `--json`): the
//! program's stdout and stderr reach the terminal as they come, and a Ctrl-C'd run
//! has shown what it had. Before: everything was printed at the end, and a canceled
//! run printed nothing of its output.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(script: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            format!(
                "[backends.talk]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {}]\ngrace_ms = 300\n",
                serde_json::to_string(script).unwrap()
            ),
        )
        .unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `agent-exec run --backend talk` in human mode, stdout and stderr piped.
    fn spawn(&self) -> Child {
        Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
            .env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"))
            .args(["run", "--backend", "talk", "--prompt", "go", "--workspace"])
            .arg(self.path("ws"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Lines of `stream`, as they come, on a channel.
fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for the line `want` (blocking on the pipe; the program's own bounded wait
/// keeps this from hanging if it never comes).
fn wait_for(rx: &mpsc::Receiver<String>, want: &str, seen: &mut Vec<String>) {
    for line in rx.iter() {
        seen.push(line.clone());
        if line == want {
            return;
        }
    }
    panic!("{want:?} never came: {seen:?}");
}

#[test]
fn human_mode_streams_stdout_and_stderr_as_they_come() {
    // The program says something on each stream, then waits for the test to have
    // seen both before it goes on (at most 30 s: printed only at the end, they would
    // come after that, and the program would say it gave up).
    let sandbox = Sandbox::new(
        "echo first; echo 'note on stderr' >&2; i=0; \
         while [ ! -e ../gate ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; \
         if [ -e ../gate ]; then echo second; else echo 'gave up waiting'; fi",
    );
    let mut child = sandbox.spawn();
    let stdout = lines(child.stdout.take().unwrap());
    let stderr = lines(child.stderr.take().unwrap());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    wait_for(&stdout, "first", &mut out);
    wait_for(&stderr, "note on stderr", &mut err);
    std::fs::write(sandbox.path("gate"), "").unwrap();
    let status = child.wait().unwrap();
    out.extend(stdout.iter());
    err.extend(stderr.iter());
    assert_eq!(status.code(), Some(0), "{out:?} {err:?}");
    assert_eq!(out, ["first", "second"], "stderr: {err:?}");
    assert!(
        err.iter().any(|l| l.starts_with("agent-exec: succeeded")),
        "{err:?}"
    );
}

#[test]
fn a_ctrl_c_run_has_shown_what_it_had() {
    let sandbox = Sandbox::new("echo 'partial answer'; exec sleep 1000");
    let mut child = sandbox.spawn();
    let stdout = lines(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let mut out = Vec::new();
    wait_for(&stdout, "partial answer", &mut out);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    out.extend(stdout.iter());
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(4), "canceled: {out:?} {err}");
    assert_eq!(out, ["partial answer"], "{err}");
    assert!(err.contains("agent-exec: canceled"), "{err}");
}

/// `structured_output = true` in the `[backends.NAME]` table: the backend declares and
/// verifies `structured-output`, and `--output-schema` runs on it (before: an unknown
/// key, and a run with a schema was refused for the missing capability).
#[test]
fn structured_output_is_a_config_key() {
    let sandbox = Sandbox::new("printf '{\"n\": 1}'");
    let config = std::fs::read_to_string(sandbox.path("config.toml")).unwrap();
    std::fs::write(
        sandbox.path("config.toml"),
        format!("{config}structured_output = true\n"),
    )
    .unwrap();
    std::fs::write(
        sandbox.path("schema.json"),
        r#"{"type": "object", "required": ["n"]}"#,
    )
    .unwrap();
    let mut run = sandbox.spawn();
    assert!(run.wait().unwrap().success());
    let out = Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
        .env_remove("AGENT_EXEC_CONFIG")
        .env("XDG_STATE_HOME", sandbox.path("xdg-state"))
        .arg("--config")
        .arg(sandbox.path("config.toml"))
        .arg("--journal")
        .arg(sandbox.path("journal.sqlite3"))
        .args(["run", "--backend", "talk", "--prompt", "go", "--json"])
        .arg("--workspace")
        .arg(sandbox.path("ws"))
        .arg("--output-schema")
        .arg(sandbox.path("schema.json"))
        .output()
        .unwrap();
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["outcome"], "succeeded", "{result}");
    assert_eq!(result["text"], r#"{"n": 1}"#);
}
