//! The verification cache through the binary, with the real codex CLI behind a wrapper
//! that logs every start: `run` probes once, later `run`s take the cached probe, a
//! touched program is probed again, `backends --verify` always probes.
//!
//! The runs ask for a tool profile codex cannot enforce, so each stops right after
//! resolution, before codex starts (`agent.tool_rejected`) — verification is all they
//! do, and no model is called. (They asked for `resume` while codex lacked it; codex
//! declares every capability now.)
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

/// The installed codex, or a panic saying how to install it.
fn codex_program() -> PathBuf {
    test_support::peers::npm_bin("codex", "@openai/codex")
}

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        let wrapper = root.join("codex-wrapper");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                root.join("starts.log").display(),
                codex_program().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(
            root.join("config.toml"),
            format!(
                "[backends.codex]\nkind = \"codex\"\nprogram = \"{}\"\nenv = {{ CODEX_HOME = \"{}\" }}\n",
                wrapper.display(),
                root.join("home").display()
            ),
        )
        .unwrap();
        Sandbox { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn agent_exec(&self, args: &[&str]) -> std::process::Output {
        Command::new(assert_cmd::cargo::cargo_bin!("agent-exec"))
            .env_remove("AGENT_EXEC_CONFIG")
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--journal")
            .arg(self.path("journal.sqlite3"))
            .args(args)
            .output()
            .unwrap()
    }

    /// A run that verifies codex (requiring `tools`, so a failed probe refuses it)
    /// and stops before codex starts: the tool profile is one codex cannot enforce.
    fn run(&self) {
        let ws = self.path("ws");
        let out = self.agent_exec(&[
            "run",
            "--backend",
            "codex",
            "--prompt",
            "x",
            "--json",
            "--require",
            "tools",
            "--tool-profile",
            "telepathy",
            "--workspace",
            ws.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stdout} {stderr}");
        assert!(
            stdout.contains("agent.tool_rejected"),
            "not refused for the tool profile alone (did the probe fail?): {stdout} {stderr}"
        );
    }

    /// How many times the program was started.
    fn starts(&self) -> usize {
        std::fs::read_to_string(self.path("starts.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}

#[test]
fn the_second_run_takes_the_cached_probe_until_the_program_changes() {
    let sandbox = Sandbox::new();
    sandbox.run();
    let per_probe = sandbox.starts();
    assert!(per_probe >= 1, "the first run did not probe");
    let cached = sandbox.path("xdg-state/agent-exec/verified/codex.json");
    let text = std::fs::read_to_string(&cached).unwrap();
    assert!(
        !text.contains(&*sandbox.path("home").to_string_lossy()),
        "env value in clear: {text}"
    );

    sandbox.run();
    sandbox.run();
    assert_eq!(sandbox.starts(), per_probe, "a later run probed again");

    // An upgrade in place: the program's mtime moves, the key changes, the run probes.
    let wrapper = std::fs::File::options()
        .append(true)
        .open(sandbox.path("codex-wrapper"))
        .unwrap();
    wrapper
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(2))
        .unwrap();
    drop(wrapper);
    sandbox.run();
    assert_eq!(
        sandbox.starts(),
        2 * per_probe,
        "a touched program was not probed"
    );

    // `backends --verify` always probes (and refreshes the entry). It lists the
    // built-in claude-code and agent-native too, whose programs may not be on this
    // PATH (then it exits 1, naming them): what matters here is codex's entry.
    let out = sandbox.agent_exec(&["backends", "--verify", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let codex = listed
        .as_array()
        .and_then(|all| all.iter().find(|b| b["name"] == "codex"))
        .unwrap_or_else(|| panic!("no codex in {listed}"));
    assert!(codex.get("problems").is_none(), "{codex}");
    assert!(
        codex["verified"].as_array().is_some_and(|v| !v.is_empty()),
        "{codex}"
    );
    assert_eq!(sandbox.starts(), 3 * per_probe);
    sandbox.run();
    assert_eq!(sandbox.starts(), 3 * per_probe);

    // A corrupt entry is a miss, not an error.
    std::fs::write(&cached, b"{\"key\": ").unwrap();
    sandbox.run();
    assert_eq!(sandbox.starts(), 4 * per_probe);
}

/// `--tool-profile` and `--allow-tool` reach the backend as the request's ToolPolicy:
/// a profile or a tool codex cannot enforce is refused before codex runs (only the
/// verification probe starts it).
#[test]
fn tool_policy_flags_reach_the_backend_and_unknown_ones_are_refused_before_start() {
    let sandbox = Sandbox::new();
    sandbox.run();
    let probes = sandbox.starts();
    let ws = sandbox.path("ws");
    for policy in [
        ["--tool-profile", "telepathy"],
        ["--allow-tool", "exec_command,teleport"],
    ] {
        let mut args = vec![
            "run",
            "--backend",
            "codex",
            "--prompt",
            "x",
            "--json",
            "--workspace",
            ws.to_str().unwrap(),
        ];
        args.extend(policy);
        let out = sandbox.agent_exec(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["outcome"], "failed", "{result}");
        assert_eq!(result["err"]["code"], "agent.tool_rejected", "{result}");
        let bad = policy[1].rsplit(',').next().unwrap();
        assert!(
            result["err"]["reason"].as_str().unwrap().contains(bad),
            "{result}"
        );
    }
    assert_eq!(
        sandbox.starts(),
        probes,
        "codex was started for a refused policy"
    );
}
