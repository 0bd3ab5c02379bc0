//! Docs are tests: the shell commands a Markdown document prints are run as printed, from
//! the repository root, and what they print is checked.
//!
//! Test support only (a dev-dependency), never on a production path. Each product's crate
//! owns the test for its own documents, because only that crate's tests can name its
//! binaries (`env!("CARGO_BIN_EXE_…")`):
//!
//! ```ignore
//! doc_commands::Doc::new("docs/envreg-cli.md")
//!     .bin("envreg", env!("CARGO_BIN_EXE_envreg"))
//!     .run();
//! ```
//!
//! # What a document writes
//!
//! - A ```` ```console ```` block is a transcript: each `$ COMMAND` line (a trailing `\`
//!   continues it on the next line) is run, and the lines up to the next `$ ` line or the
//!   fence's end are what it prints — stdout and stderr interleaved, as a terminal shows
//!   them. In those lines `...` alone matches any number of lines, `[..]` matches any text
//!   within a line, `[ROOT]` is the repository root the commands ran in and `[HOME]` the
//!   home folder. A last line `[exit N]` says the command exits with status N (else 0).
//! - A ```` ```sh ```` (or `bash`, `shell`) block is a script that must exit 0; it is run
//!   whole by `sh -e`, and what it prints is not compared (write a console block where
//!   the output matters).
//! - A fence whose info string holds the word `no-run` (```` ```sh no-run ````) is shown
//!   to readers and not run: commands that install software, need a host program or a
//!   network, or run for many minutes. Everything else runs.
//!
//! # Where the commands run
//!
//! Every block of one document runs in order, in one scratch copy of the repository's
//! files (tracked and untracked-but-not-ignored, as `git ls-files` lists them), with that
//! copy's root as the working directory: relative paths mean what they mean in a
//! checkout, later blocks see what earlier ones made (`envreg init demo`, then
//! `cd demo`), and the checkout itself is never written. The environment is cleared to
//! what a fresh shell has: `PATH` (the registered binaries first, then the inherited
//! `PATH`), `HOME` and the XDG folders inside the scratch folder, `LANG=C.UTF-8`,
//! `NO_COLOR=1`, plus what the test adds with [`Doc::env`].
//!
//! One substitution, stated rather than hidden: `cargo run -q -p NAME -- ARGS` runs the
//! registered binary `NAME` with `ARGS`. Running cargo inside `cargo test` would build the
//! package again with another feature set (dev-dependencies unify differently), minutes
//! per document; the binary is the one this same `cargo test` built from the same source.
//!
//! # Updating a document
//!
//! `DOC_COMMANDS=overwrite cargo test …` writes what each console command printed back
//! into the document in place of a differing expected output (that block's wildcards are
//! lost: review the diff).

use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What one command may print before the rest is dropped (a runaway command must not
/// exhaust the test's memory).
const OUTPUT_CAP: usize = 1 << 20;

/// One Markdown document to run.
pub struct Doc {
    path: String,
    bins: Vec<(String, PathBuf)>,
    env: Vec<(String, String)>,
    timeout: Duration,
}

/// A fenced block as the document has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// 1-based line of the opening fence.
    pub line: usize,
    pub kind: BlockKind,
    pub no_run: bool,
    /// The lines between the fences.
    pub body: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Console,
    Script,
}

/// One `$ COMMAND` of a console block and what it should print.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub command: String,
    pub expected: Vec<String>,
    pub exit: i32,
    /// Index in the block's body of the first expected line, and one past the last.
    pub expected_span: (usize, usize),
}

impl Doc {
    /// `path` is relative to the repository root, as a reader would name it.
    pub fn new(path: &str) -> Self {
        Doc {
            path: path.to_owned(),
            bins: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }

    /// A binary the document's commands call by `name`.
    pub fn bin(mut self, name: &str, path: impl Into<PathBuf>) -> Self {
        self.bins.push((name.to_owned(), path.into()));
        self
    }

    /// An environment variable the commands get (a peer's address, say).
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// How long one block may run before its process group is killed (default 120 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs every block; panics with one report naming each failure (document line,
    /// command, expected and actual output).
    pub fn run(self) {
        let root = test_support::repo_root();
        let doc_path = root.join(&self.path);
        let text = std::fs::read_to_string(&doc_path)
            .unwrap_or_else(|e| panic!("doc-commands: cannot read {}: {e}", doc_path.display()));
        let blocks = parse_blocks(&text);
        let scratch = tempfile::tempdir().expect("doc-commands: scratch folder");
        let copy = scratch.path().join("repo");
        let home = scratch.path().join("home");
        let bin_dir = scratch.path().join("bin");
        for dir in [&copy, &home, &bin_dir] {
            std::fs::create_dir_all(dir).expect("doc-commands: scratch folders");
        }
        copy_repository(&root, &copy);
        for (name, target) in &self.bins {
            assert!(
                target.is_file(),
                "doc-commands: the binary {name} is not at {}",
                target.display()
            );
            std::os::unix::fs::symlink(target, bin_dir.join(name)).expect("doc-commands: bin link");
        }
        let runner = Runner {
            copy: &copy,
            home: &home,
            bin_dir: &bin_dir,
            bins: &self.bins,
            env: &self.env,
            timeout: self.timeout,
        };

        let overwrite = std::env::var("DOC_COMMANDS").as_deref() == Ok("overwrite");
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        // Replacements made in overwrite mode, applied bottom-up so line numbers hold.
        let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
        let mut failures = String::new();
        let (mut ran, mut skipped) = (0, 0);
        for block in &blocks {
            if block.no_run {
                skipped += 1;
                continue;
            }
            ran += 1;
            match block.kind {
                BlockKind::Script => {
                    let script = block.body.join("\n");
                    let out = runner.run(&format!("set -e\n{script}"));
                    if out.status != 0 {
                        let _ = write!(
                            failures,
                            "\n--- {}:{}: script exited {}\n{}\n--- it printed:\n{}\n",
                            self.path, block.line, out.status, script, out.text
                        );
                    }
                }
                BlockKind::Console => {
                    for step in console_steps(&block.body) {
                        let out = runner.run(&step.command);
                        let actual = normalize(&out.text, &copy, &home);
                        let output_ok = matches(&step.expected, &actual);
                        if output_ok && out.status == step.exit {
                            continue;
                        }
                        if overwrite {
                            let mut new = actual.clone();
                            if out.status != 0 {
                                new.push(format!("[exit {}]", out.status));
                            }
                            let first_body_line = block.line; // index of the line after the fence
                            replacements.push((
                                first_body_line + step.expected_span.0,
                                first_body_line + step.expected_span.1,
                                new,
                            ));
                            continue;
                        }
                        let _ = write!(
                            failures,
                            "\n--- {}:{}: $ {}\n--- expected (exit {}):\n{}\n--- actual (exit {}):\n{}\n",
                            self.path,
                            block.line,
                            step.command,
                            step.exit,
                            step.expected.join("\n"),
                            out.status,
                            actual.join("\n")
                        );
                    }
                }
            }
        }
        if overwrite && !replacements.is_empty() {
            replacements.sort_by_key(|r| std::cmp::Reverse(r.0));
            for (start, end, new) in replacements {
                lines.splice(start..end, new);
            }
            let mut out = lines.join("\n");
            out.push('\n');
            std::fs::write(&doc_path, out).expect("doc-commands: rewrite the document");
            eprintln!("doc-commands: rewrote {} (review the diff)", self.path);
        }
        assert!(
            ran > 0,
            "doc-commands: {} has no block to run ({skipped} marked no-run)",
            self.path
        );
        assert!(
            failures.is_empty(),
            "doc-commands: {} does not run as printed (DOC_COMMANDS=overwrite rewrites \
             console outputs):{failures}",
            self.path
        );
    }
}

struct Runner<'a> {
    copy: &'a Path,
    home: &'a Path,
    bin_dir: &'a Path,
    bins: &'a [(String, PathBuf)],
    env: &'a [(String, String)],
    timeout: Duration,
}

struct Output {
    status: i32,
    text: String,
}

impl Runner<'_> {
    fn run(&self, script: &str) -> Output {
        let script = substitute_cargo_run(script, self.bins);
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new("sh");
        command
            .arg("-c")
            // One pipe for both streams, so the order is the terminal's.
            .arg(format!("exec 2>&1\n{script}"))
            .current_dir(self.copy)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // Its own process group, so a timeout kills whatever it started.
            .process_group(0);
        for (key, value) in self.env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("doc-commands: spawn sh");
        let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
        let mut stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut stdout).take(OUTPUT_CAP as u64).read_to_end(&mut buf);
            // Drain the rest so the writer never blocks on a full pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
            let _ = tx.send(buf);
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("doc-commands: wait") {
                break status.code().unwrap_or(128);
            }
            if started.elapsed() > self.timeout {
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                return Output {
                    status: 124,
                    text: format!("doc-commands: timed out after {:?}", self.timeout),
                };
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Whatever the shell left running in the background ends with it.
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let buf = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        Output {
            status,
            text: String::from_utf8_lossy(&buf).into_owned(),
        }
    }
}

/// `cargo run -q -p NAME --` → the registered binary NAME (see the crate doc for why).
fn substitute_cargo_run(script: &str, bins: &[(String, PathBuf)]) -> String {
    let mut out = script.to_owned();
    for (name, _) in bins {
        for form in [
            format!("cargo run -q -p {name} -- "),
            format!("cargo run --quiet -p {name} -- "),
            format!("cargo run -q -p {name} --bin {name} -- "),
        ] {
            out = out.replace(&form, &format!("{name} "));
        }
    }
    out
}

/// The fenced blocks of a document that hold shell: console transcripts and scripts.
pub fn parse_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut words = info.split_whitespace();
        let kind = match words.next() {
            Some("console") => Some(BlockKind::Console),
            Some("sh" | "bash" | "shell") => Some(BlockKind::Script),
            _ => None,
        };
        let no_run = info.split_whitespace().any(|w| w == "no-run");
        let mut body = Vec::new();
        for (_, inner) in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                break;
            }
            // A fence inside a list item is indented; its lines are too.
            let strip = inner.len() - inner.trim_start().len();
            body.push(inner[strip.min(indent)..].to_owned());
        }
        if let Some(kind) = kind {
            blocks.push(Block {
                line: index + 1,
                kind,
                no_run,
                body,
            });
        }
    }
    blocks
}

/// The `$ ` commands of a console block with what each should print.
pub fn console_steps(body: &[String]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let Some(first) = body[i].strip_prefix("$ ") else {
            i += 1;
            continue;
        };
        let mut command = first.to_owned();
        while command.ends_with('\\') && i + 1 < body.len() {
            i += 1;
            command.push('\n');
            command.push_str(&body[i]);
        }
        i += 1;
        let start = i;
        while i < body.len() && !body[i].starts_with("$ ") {
            i += 1;
        }
        let mut expected: Vec<String> = body[start..i].to_vec();
        let mut exit = 0;
        if let Some(last) = expected.last()
            && let Some(code) = last
                .strip_prefix("[exit ")
                .and_then(|rest| rest.strip_suffix(']'))
            && let Ok(code) = code.parse()
        {
            exit = code;
            expected.pop();
        }
        steps.push(Step {
            command,
            expected,
            exit,
            expected_span: (start, i),
        });
    }
    steps
}

/// Actual output as lines, trailing blanks trimmed, the scratch paths named as the
/// expected output names them.
fn normalize(text: &str, root: &Path, home: &Path) -> Vec<String> {
    let root = root.display().to_string();
    let home = home.display().to_string();
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            l.replace(&root, "[ROOT]")
                .replace(&home, "[HOME]")
                .trim_end()
                .to_owned()
        })
        .collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// Whether `actual` matches `expected`'s lines, where `...` matches any number of lines
/// and `[..]` any text within a line.
pub fn matches(expected: &[String], actual: &[String]) -> bool {
    let expected: Vec<&str> = expected.iter().map(|l| l.trim_end()).collect();
    let mut end = expected.len();
    while end > 0 && expected[end - 1].is_empty() {
        end -= 1;
    }
    match_lines(&expected[..end], actual)
}

fn match_lines(expected: &[&str], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| match_lines(rest, &actual[skip..])),
        Some((line, rest)) => {
            !actual.is_empty() && line_matches(line, &actual[0]) && match_lines(rest, &actual[1..])
        }
    }
}

fn line_matches(pattern: &str, actual: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == actual;
    }
    let Some(mut rest) = actual.strip_prefix(parts[0]) else {
        return false;
    };
    let last = parts.len() - 1;
    for part in &parts[1..last] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(parts[last])
}

/// Copies the files `git ls-files` lists (tracked, and untracked but not ignored) into
/// `to`, links as links and executable bits kept.
fn copy_repository(root: &Path, to: &Path) {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .expect("doc-commands: git ls-files (git is needed to copy the repository)");
    assert!(
        out.status.success(),
        "doc-commands: git ls-files failed in {}",
        root.display()
    );
    for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name);
        let from = root.join(&*name);
        let dest = to.join(&*name);
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue; // deleted in the work tree, not yet in the index
        };
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).expect("doc-commands: copy folder");
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&from).expect("doc-commands: read link");
            std::os::unix::fs::symlink(target, &dest).expect("doc-commands: copy link");
        } else if meta.is_file() {
            std::fs::copy(&from, &dest).expect("doc-commands: copy file");
            let mode = meta.permissions().mode();
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode))
                .expect("doc-commands: copy mode");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn blocks_console_scripts_and_no_run() {
        let text = "# T\n```console\n$ echo a\na\n```\n\n```sh no-run\nrm -rf /\n```\n  ```bash\n  true\n  ```\n```json\n{}\n```\n";
        let blocks = parse_blocks(text);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].kind, BlockKind::Console);
        assert_eq!(blocks[0].line, 2);
        assert!(blocks[1].no_run);
        assert_eq!(blocks[2].body, s(&["true"]));
    }

    #[test]
    fn steps_continuations_and_exit() {
        let body = s(&["$ a \\", "  b", "out", "[exit 2]", "$ c", "x"]);
        let steps = console_steps(&body);
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].command, "a \\\n  b");
        assert_eq!(steps[0].expected, s(&["out"]));
        assert_eq!(steps[0].exit, 2);
        assert_eq!(steps[0].expected_span, (2, 4));
        assert_eq!(steps[1].exit, 0);
    }

    #[test]
    fn wildcards() {
        assert!(matches(&s(&["a", "...", "z"]), &s(&["a", "b", "c", "z"])));
        assert!(matches(&s(&["a", "..."]), &s(&["a"])));
        assert!(!matches(&s(&["a", "z"]), &s(&["a", "b", "z"])));
        assert!(matches(&s(&["x [..] y"]), &s(&["x 12 y"])));
        assert!(!matches(&s(&["x [..] y"]), &s(&["x 12 z"])));
        assert!(matches(
            &s(&["[..]/examples/[..]"]),
            &s(&["/tmp/a/examples/r"])
        ));
        assert!(matches(&s(&["a", ""]), &s(&["a"])));
    }

    #[test]
    fn cargo_run_becomes_the_registered_binary() {
        let bins = vec![("envreg".to_owned(), PathBuf::from("/x"))];
        assert_eq!(
            substitute_cargo_run("cargo run -q -p envreg -- --registry r validate", &bins),
            "envreg --registry r validate"
        );
        assert_eq!(
            substitute_cargo_run("cargo run -q -p other -- x", &bins),
            "cargo run -q -p other -- x"
        );
    }
}
