//! The real GitHub Copilot CLI (npm `@github/copilot` 1.0.102, installed by
//! scripts/setup.d/15-npm-peers.sh) with facet set up the way docs/hosts.md says:
//! `integrations/copilot/install.sh` (facet's hooks in Copilot's user-level hooks
//! folder, `facet serve` as its MCP server). The model is `model-script`'s Chat
//! Completions server on loopback, reached through Copilot's bring-your-own-key mode
//! (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_OFFLINE=true`: no GitHub login, no call
//! home). Copilot itself builds every hook event, runs the hook, honours its answer
//! and sends the tool results back to the "model", whose request bodies are where
//! the test reads what the model saw.
//!
//! The session starts in a sub-folder of a repository (`project/src/room`): the
//! scoping Copilot's own repository hooks cannot do (github/copilot-cli#3579).
//!
//! What this pins down about Copilot 1.0.102: hooks in `$COPILOT_HOME/hooks/*.json`
//! run in prompt mode (`-p`) without trusting the folder; a `deny` reaches the model
//! as `Denied by preToolUse hook: <reason>`; an `ask` in prompt mode is refused by
//! Copilot itself (`… (unable to ask user for confirmation): <reason>`); a resumed
//! session (`--resume=ID`) keeps its id, so a grant from the panel applies to it.
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use model_script::{Script, ScriptedServer, Turn};
use serde_json::json;
use support::Tree;

/// The npm `.bin` folder holding `copilot` (and the `node` its loader runs on).
fn npm_bin() -> PathBuf {
    test_support::peers::npm_bin("copilot", "@github/copilot")
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Where Copilot unpacks its 235 MB package on first start (`$XDG_CACHE_HOME`):
/// shared by every test run, so it is unpacked once, not per test.
fn copilot_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache")
}

/// One scratch Copilot installation: its own `HOME` and `COPILOT_HOME`, facet
/// installed into it by the integration's own script.
struct Copilot<'a> {
    tree: &'a Tree,
    work: PathBuf,
}

/// What one run left: the output stream and every request body, as text.
struct CopilotRun {
    output: String,
    requests: Vec<String>,
}

impl CopilotRun {
    fn all(&self) -> String {
        self.requests.join("\n")
    }
}

impl<'a> Copilot<'a> {
    fn install(tree: &'a Tree, name: &str) -> Copilot<'a> {
        let work = tree.path(name);
        std::fs::create_dir_all(work.join("home")).unwrap();
        let copilot = Copilot { tree, work };
        let installed = copilot
            .command(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/copilot/install.sh"),
            )
            .output()
            .unwrap();
        assert!(
            installed.status.success(),
            "install.sh failed: {}",
            String::from_utf8_lossy(&installed.stderr)
        );
        copilot
    }

    /// A command with a cleared environment: `PATH` holds the freshly built `facet`
    /// first, then Copilot and its Node; state in the tree's folder.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let facet_dir = support::facet_bin().parent().unwrap().to_path_buf();
        let path =
            std::env::join_paths([facet_dir, npm_bin(), "/usr/bin".into(), "/bin".into()]).unwrap();
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.work.join("home"))
            .env("COPILOT_HOME", self.work.join("copilot-home"))
            .env("XDG_CACHE_HOME", copilot_cache())
            .env("FACET_STATE_DIR", self.tree.state())
            .env("XDG_CONFIG_HOME", self.work.join("xdg-config"))
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null());
        command
    }

    /// `copilot -p` in the session folder against `turns`, with `args` added.
    fn run(&self, turns: Vec<Turn>, args: &[&str], env: &[(&str, &str)]) -> CopilotRun {
        let server = ScriptedServer::start(Script::new(turns));
        let mut command = self.command("timeout");
        command
            .arg("120")
            .arg(npm_bin().join("copilot"))
            .args([
                "-p",
                "do the thing",
                "--output-format",
                "json",
                "--allow-all-tools",
            ])
            .args(["--no-auto-update", "--disable-builtin-mcps"])
            .args(args)
            .current_dir(self.tree.room())
            .env("COPILOT_PROVIDER_BASE_URL", &server.base_url)
            .env("COPILOT_PROVIDER_TYPE", "openai")
            .env("COPILOT_PROVIDER_WIRE_API", "completions")
            .env("COPILOT_PROVIDER_API_KEY", "sk-scripted-model")
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_MODEL", "gpt-4.1");
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().unwrap();
        let requests = server
            .requests()
            .into_iter()
            .filter(|request| request.path == "/v1/chat/completions")
            .map(|request| request.body.to_string())
            .collect();
        CopilotRun {
            output: format!(
                "{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
            requests,
        }
    }
}

fn view(call: &str, path: &Path) -> Turn {
    Turn::tool_call(call, "view", json!({"path": path}))
}

#[test]
fn the_pinned_copilot_is_the_one_documented() {
    let tree = Tree::new();
    let copilot = Copilot {
        tree: &tree,
        work: tree.path("version"),
    };
    let output = copilot
        .command(npm_bin().join("copilot"))
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("GitHub Copilot CLI 1.0.102."), "{text}");
}

/// Headless, with `FACET_NO_APPROVAL=1` as docs/hosts.md says for `-p` runs: the
/// read outside is refused with facet's sentence naming the panel command, its
/// content reaches no request; the read inside is served; a search whose `paths`
/// leave the facet is refused. Then the person runs that panel command, the session
/// is resumed, and the same read is served: the widening.
#[test]
fn copilot_refuses_an_outside_read_serves_an_inside_one_and_widens_through_the_panel() {
    let tree = Tree::new();
    let outside = tree.path("project/shared/types.rs");
    std::fs::write(&outside, "SECRET-OUTSIDE-THE-FACET").unwrap();
    let inside = tree.room().join("inside.txt");
    std::fs::write(&inside, "INSIDE-THE-FACET").unwrap();
    let copilot = Copilot::install(&tree, "headless");
    let session = "0cb916db-26aa-40f2-86b5-1ba81b225fd2";

    let run = copilot.run(
        vec![
            view("call_out", &outside),
            view("call_in", &inside),
            Turn::tool_call(
                "call_grep",
                "grep",
                json!({"pattern": "SECRET", "paths": [tree.room(), tree.path("project/shared")]}),
            ),
            Turn::text("done"),
        ],
        &[&format!("--session-id={session}")],
        &[("FACET_NO_APPROVAL", "1")],
    );
    let all = run.all();
    assert_eq!(run.requests.len(), 4, "{}", run.output);
    assert!(
        !all.contains("SECRET-OUTSIDE-THE-FACET"),
        "the file was read"
    );
    assert!(all.contains("INSIDE-THE-FACET"), "{}", run.output);
    // The rule and the binding, from the sessionStart hook.
    assert!(all.contains("# Facet scope"), "{}", run.output);
    let refusal = format!(
        "Denied by preToolUse hook: {} is refused — this session's facet is {}, and this session \
         has no approval channel, so nobody can be asked to grant it here. Ask the user to run \
         `facet grant {} --session {session}` in a terminal, or work within the facet.",
        outside.display(),
        tree.room().display(),
        outside.display(),
    );
    assert!(
        all.contains(&refusal),
        "{refusal} not in the requests:\n{}",
        run.output
    );
    assert!(
        all.contains(&format!(
            "Denied by preToolUse hook: {} is refused",
            tree.path("project/shared").display()
        )),
        "{}",
        run.output
    );

    // The person widens the session from the panel; the resumed session reads it.
    let granted = tree.panel(&[
        "grant",
        &outside.display().to_string(),
        "--session",
        session,
    ]);
    assert_eq!(granted.code, 0, "{}", granted.stderr);
    let resumed = copilot.run(
        vec![view("call_again", &outside), Turn::text("done")],
        &[&format!("--resume={session}")],
        &[("FACET_NO_APPROVAL", "1")],
    );
    assert!(
        resumed.all().contains("SECRET-OUTSIDE-THE-FACET"),
        "the granted read was not served:\n{}",
        resumed.output
    );
}

/// Without `FACET_NO_APPROVAL`, facet asks; Copilot in prompt mode has nobody to ask
/// and refuses the call itself, passing facet's question on as the reason.
#[test]
fn copilot_in_prompt_mode_refuses_facets_question_itself() {
    let tree = Tree::new();
    let outside = tree.path("outside/file.txt");
    std::fs::write(&outside, "SECRET-OUTSIDE-THE-PROJECT").unwrap();
    let copilot = Copilot::install(&tree, "asking");
    let run = copilot.run(
        vec![view("call_out", &outside), Turn::text("done")],
        &[],
        &[],
    );
    let all = run.all();
    assert!(
        !all.contains("SECRET-OUTSIDE-THE-PROJECT"),
        "the file was read"
    );
    assert!(
        all.contains(&format!(
            "Denied by preToolUse hook (unable to ask user for confirmation): {} is outside — this session's facet is {}.",
            outside.display(),
            tree.room().display()
        )),
        "{}",
        run.output
    );
}

/// GPT-5 family models edit through `apply_patch` (a free-form tool: the patch text
/// is the hook's `toolArgs`): a patch adding a file outside is refused, one inside
/// is applied.
#[test]
fn copilot_apply_patch_outside_is_refused_inside_is_applied() {
    let tree = Tree::new();
    let copilot = Copilot::install(&tree, "patching");
    let outside = tree.path("project/shared/new.txt");
    let patch =
        |path: &str| format!("*** Begin Patch\n*** Add File: {path}\n+PATCHED\n*** End Patch\n");
    let run = copilot.run(
        vec![
            Turn::custom_tool_call(
                "call_out",
                "apply_patch",
                patch(&outside.display().to_string()),
            ),
            Turn::custom_tool_call("call_in", "apply_patch", patch("made-here.txt")),
            Turn::text("done"),
        ],
        &["--model", "gpt-5.4"],
        &[("FACET_NO_APPROVAL", "1")],
    );
    assert!(
        !outside.exists(),
        "the patch outside was applied:\n{}",
        run.output
    );
    assert!(
        run.all().contains(&format!(
            "Denied by preToolUse hook: {} is refused",
            outside.display()
        )),
        "{}",
        run.output
    );
    let made = std::fs::read_to_string(tree.room().join("made-here.txt"))
        .unwrap_or_else(|_| panic!("the patch inside was not applied:\n{}", run.output));
    assert_eq!(made.trim(), "PATCHED");
}

/// The `facet` tool as install.sh registers it (`facet serve`, which Copilot offers as
/// `facet-facet`): the model's `status` call reaches the server, its answer comes back,
/// and the hook's `postToolUse` adds the session's binding.
#[test]
fn copilot_runs_the_facet_mcp_tool_and_the_hook_states_the_binding() {
    let tree = Tree::new();
    let copilot = Copilot::install(&tree, "facet-tool");
    let run = copilot.run(
        vec![
            Turn::tool_call("call_status", "facet-facet", json!({"action": "status"})),
            Turn::text("done"),
        ],
        &[],
        &[],
    );
    let all = run.all();
    assert!(
        all.contains("\"facet-facet\""),
        "not offered: {}",
        run.output
    );
    assert!(all.contains("recordedBy"), "{}", run.output);
    assert!(
        all.contains(&format!("facet: {}", tree.room().display())),
        "{}",
        run.output
    );
}
