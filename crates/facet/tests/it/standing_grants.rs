//! Standing grants (issue 21, finding 5): a project's shared folder granted once, by
//! the person — in facet's configuration (`[projects."/root"] grants = [...]`) or in a
//! `.facet.toml` the person trusted (pinned by hash) — judged live, shown in `status`
//! and in the binding, out of every tool call's reach; and old sessions forgotten.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::{Tree, facet_bin, pre_tool_use, session_event};

/// The configuration file the support's runs read (`XDG_CONFIG_HOME` next to state).
fn write_config(tree: &Tree, text: &str) {
    let dir = tree.path("xdg-config/facet");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn project_grant(tree: &Tree) -> String {
    format!(
        "[projects.{:?}]\ngrants = [\"shared\"]\n",
        tree.path("project").display().to_string()
    )
}

fn read_shared(tree: &Tree, session: &str) -> Option<(String, String)> {
    let run = tree.hook(
        &[],
        &pre_tool_use(
            session,
            &tree.room(),
            "Read",
            json!({"file_path": "../../shared/types.rs"}),
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.decision()
}

#[test]
fn a_configured_standing_grant_counts_live_and_is_shown() {
    let tree = Tree::new();
    let (decision, _) = read_shared(&tree, "s").unwrap();
    assert_eq!(decision, "ask");
    // The person adds the project's standing grant: the next call passes, no restart.
    write_config(&tree, &project_grant(&tree));
    assert_eq!(read_shared(&tree, "s"), None);
    // Only the granted folder: the rest of the project is still outside.
    let run = tree.hook(
        &[],
        &pre_tool_use(
            "s",
            &tree.room(),
            "Read",
            json!({"file_path": "../other/secret.txt"}),
        ),
    );
    assert_eq!(run.decision().unwrap().0, "ask");

    let shared = tree.path("project/shared");
    let status = tree.panel(&["status", "--session", "s"]);
    assert!(
        status.stdout.contains(&format!(
            "standing  {} (from [projects.{:?}] in facet's configuration)",
            shared.display(),
            tree.path("project").display().to_string()
        )),
        "{}",
        status.stdout
    );
    let json: Value =
        serde_json::from_str(&tree.panel(&["status", "--session", "s", "--json"]).stdout).unwrap();
    assert_eq!(json["binding"]["standing"], json!([shared]));
    assert_eq!(json["standingGrants"][0]["source"], "config");
    // The binding the model reads names it.
    let told = tree.hook(&[], &session_event("s", &tree.room(), "UserPromptSubmit"));
    let (_, context) = told.context().unwrap();
    assert!(
        context.contains(&format!("granted outside it: {}", shared.display())),
        "{context}"
    );

    // A typo in the configuration is an error, never a silent default: fail closed.
    write_config(
        &tree,
        &format!(
            "[projects.{:?}]\ngrant = [\"shared\"]\n",
            tree.path("project").display().to_string()
        ),
    );
    let (decision, reason) = read_shared(&tree, "s").unwrap();
    assert_eq!(decision, "deny");
    assert!(reason.contains("unknown field `grant`"), "{reason}");
    write_config(
        &tree,
        "[projects.\"relative/root\"]\ngrants = [\"shared\"]\n",
    );
    let (decision, reason) = read_shared(&tree, "s").unwrap();
    assert_eq!(decision, "deny");
    assert!(reason.contains("must be an absolute path"), "{reason}");
}

#[test]
fn a_project_file_counts_only_once_trusted_and_until_it_changes() {
    let tree = Tree::new();
    let file = tree.path("project/.facet.toml");
    std::fs::write(&file, "grants = [\"shared\"]\n").unwrap();
    assert_eq!(read_shared(&tree, "p").unwrap().0, "ask");
    let status = tree.panel(&["status", "--session", "p"]);
    assert!(
        status.stdout.contains(&format!(
            "project   {} — not trusted: its grants do not count until you review it and run `facet trust {}`",
            file.display(),
            file.display()
        )),
        "{}",
        status.stdout
    );

    // Trusted from a folder of the project: its top level's file is the one.
    let trust = tree.panel(&["trust", tree.room().to_str().unwrap()]);
    assert_eq!(trust.code, 0, "{}", trust.stderr);
    assert!(
        trust
            .stdout
            .starts_with(&format!("Trusted {} as it is now", file.display())),
        "{}",
        trust.stdout
    );
    assert_eq!(read_shared(&tree, "p"), None);

    // Changed (by anyone): untrusted again until the person trusts it again.
    std::fs::write(&file, "grants = [\"shared\", \"src\"]\n").unwrap();
    assert_eq!(read_shared(&tree, "p").unwrap().0, "ask");
    assert_eq!(tree.panel(&["trust", file.to_str().unwrap()]).code, 0);
    assert_eq!(read_shared(&tree, "p"), None);

    // Unknown keys: nothing is trusted.
    std::fs::write(&file, "grants = [\"shared\"]\nmode = \"off\"\n").unwrap();
    let bad = tree.panel(&["trust", file.to_str().unwrap()]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("unknown field `mode`"),
        "{}",
        bad.stderr
    );
    assert_eq!(read_shared(&tree, "p").unwrap().0, "ask");
}

#[test]
fn no_tool_call_touches_a_project_file() {
    let tree = Tree::new();
    // Scoped, from below…
    let write = tree.hook(
        &[],
        &pre_tool_use(
            "w",
            &tree.room(),
            "Write",
            json!({"file_path": "../../.facet.toml", "content": "grants = [\"/\"]"}),
        ),
    );
    let (decision, reason) = write.decision().unwrap();
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("project's facet file (.facet.toml)"),
        "{reason}"
    );
    // …unscoped, at the project's top level, granted or not…
    let top = tree.path("project");
    let edit = tree.hook(
        &[],
        &pre_tool_use("t", &top, "Edit", json!({"file_path": ".facet.toml"})),
    );
    assert_eq!(edit.decision().unwrap().0, "deny");
    // …and through a link whose target is one.
    std::fs::write(tree.path("project/.facet.toml"), "grants = []\n").unwrap();
    tree.symlink(
        tree.path("project/.facet.toml"),
        "project/src/room/settings",
    );
    let linked = tree.hook(
        &[],
        &pre_tool_use("w", &tree.room(), "Edit", json!({"file_path": "settings"})),
    );
    assert_eq!(linked.decision().unwrap().0, "deny");
    // Codex's patch form too.
    let mut patch = pre_tool_use(
        "c",
        &tree.room(),
        "apply_patch",
        json!({"command": "*** Begin Patch\n*** Add File: .facet.toml\n+grants = [\"/\"]\n*** End Patch\n"}),
    );
    patch["permission_mode"] = json!("default");
    let codex = tree.hook(&["--dialect", "codex"], &patch);
    assert_eq!(codex.decision().unwrap().0, "deny");
}

#[test]
fn the_dsh_bridge_sees_a_new_standing_grant_without_a_restart() {
    let tree = Tree::new();
    let mut child = Command::new(facet_bin())
        .arg("dsh-bridge")
        .env("FACET_STATE_DIR", tree.state())
        .env("XDG_CONFIG_HOME", tree.path("xdg-config"))
        .env_remove("FACET_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |request: Value| -> Value {
        writeln!(input, "{request}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let configured = ask(json!({"id": 1, "method": "configure", "params": {"config": {}}}));
    assert!(configured.get("result").is_some(), "{configured}");
    let caller = json!({"session": "d", "cwd": tree.room(), "approval": {"service": false, "policy": "never"}});
    let judge = |id: u64| {
        let mut params = caller.clone();
        params["tool"] = json!("read");
        params["callId"] = json!(format!("c{id}"));
        params["arguments"] = json!({"file_path": "../../shared/types.rs"});
        json!({"id": id, "method": "judge", "params": params})
    };
    assert_eq!(ask(judge(2))["result"]["verdict"], "deny");
    write_config(&tree, &project_grant(&tree));
    assert_eq!(ask(judge(3))["result"]["verdict"], "allow");
    let context = ask(json!({"id": 4, "method": "context", "params": caller.clone()}));
    assert!(
        context["result"]["text"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "granted outside it: {}",
                tree.path("project/shared").display()
            )),
        "{context}"
    );
    drop(input);
    assert!(child.wait().unwrap().success());
}

#[test]
fn sessions_not_seen_for_the_configured_age_are_forgotten() {
    let tree = Tree::new();
    for id in ["old", "new"] {
        tree.hook(&[], &session_event(id, &tree.room(), "SessionStart"));
    }
    let file = std::fs::File::options()
        .write(true)
        .open(tree.state().join("old.json"))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(31 * 86_400))
        .unwrap();
    // Kept when the person says so.
    write_config(&tree, "prune_after_days = 0\n");
    let kept = tree.panel(&["sessions"]);
    assert!(kept.stdout.contains("old  "), "{}", kept.stdout);
    assert!(
        kept.stdout.contains("Sessions are kept for ever"),
        "{}",
        kept.stdout
    );
    // The default, 30 days.
    write_config(&tree, "");
    let listed = tree.panel(&["sessions"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed
            .stdout
            .starts_with("Forgot 1 session not seen for 30 days: old.\n"),
        "{}",
        listed.stdout
    );
    assert!(!listed.stdout.contains("old  "), "{}", listed.stdout);
    assert!(listed.stdout.contains("new  "), "{}", listed.stdout);
    assert!(!tree.state().join("old.json").exists());
    assert!(!tree.state().join("old.lock").exists());
}
