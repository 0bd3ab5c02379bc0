//! facet inside the real DeepSeek Harness (dsh 0.1.0-rc.8, headless), its model
//! scripted on loopback: the `dsh-facet` plugin installed by
//! `scripts/install-dsh-plugins.sh`, `facet dsh-bridge` behind it, dsh's own file
//! tools judged, and the generic route (the Claude Code hooks bridge) once.
//!
//! What the model saw is read from what the scripted server received: the system
//! prompt, the runtime-context snapshot (a user message) and each tool result.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use dsh_live::{Dsh, DshHome, system_text, tool_def, tool_results, turn_requests, user_text};
use facet_core::Mode;
use facet_core::seed::{NO_CHANNEL_REACH, facet_rule_text, outside_reason, widen_reason};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};

fn facet_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_facet"))
}

fn answerer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dsh/answerer.mjs")
}

/// A git project `proj` with the session folder `sub` (holding `room/`), a
/// `shared/` folder and a `secret.txt` outside `sub`. Paths are canonical.
struct Project {
    top: PathBuf,
    sub: PathBuf,
    state: PathBuf,
}

impl Project {
    fn new(home: &DshHome) -> Project {
        let top = fs::canonicalize(home.scratch("proj")).unwrap();
        for dir in [".git", "sub/room", "shared"] {
            fs::create_dir_all(top.join(dir)).unwrap();
        }
        fs::write(top.join("secret.txt"), "the secret outside\n").unwrap();
        fs::write(top.join("shared/types.rs"), "pub struct Shared;\n").unwrap();
        fs::write(top.join("sub/in.txt"), "inside the facet\n").unwrap();
        fs::write(top.join("sub/room/a.rs"), "fn room() {}\n").unwrap();
        let state = fs::canonicalize(home.scratch("facet-state")).unwrap();
        Project {
            sub: top.join("sub"),
            top,
            state,
        }
    }

    fn text(path: &Path) -> String {
        path.to_string_lossy().into_owned()
    }

    /// The panel's view of a session, through the real `facet status --json`.
    fn status(&self, home: &DshHome, session: Option<&str>) -> Value {
        let mut command = Command::new(facet_bin());
        command
            .env_clear()
            .env("HOME", &home.home)
            .env("FACET_STATE_DIR", &self.state)
            .args(["status", "--json"]);
        if let Some(session) = session {
            command.args(["--session", session]);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// The text dsh returned to the model for `call_id`, from the request after it.
fn result_of(turns: &[Value], call_id: &str) -> String {
    turns
        .iter()
        .flat_map(tool_results)
        .find(|(id, _)| id == call_id)
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no tool result for {call_id}"))
}

fn installed_home(dsh: &Dsh) -> DshHome {
    let home = DshHome::new(dsh);
    home.install_plugins(&["dsh-facet"]);
    home
}

/// Headless dsh has an approval service but no answerer: the first question comes
/// back `unavailable`, so facet refuses with the seed's "refused" sentence and from
/// then on treats the session as having no approval channel.
#[test]
fn dsh_file_tools_are_judged_in_a_subfolder_session() {
    let dsh = Dsh::find();
    let home = installed_home(&dsh);
    let project = Project::new(&home);
    let sub = Project::text(&project.sub);
    let room = Project::text(&project.sub.join("room"));
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call("c1", "read", json!({"file_path": "../secret.txt"})),
        Turn::tool_call("c2", "read", json!({"file_path": "in.txt"})),
        // `bash` is not judged; here it also narrows the facet from the panel.
        Turn::tool_call(
            "c3",
            "bash",
            json!({"command": "cat ../secret.txt && facet focus room", "description": "look"}),
        ),
        Turn::tool_call("c4", "grep", json!({"pattern": "fn"})),
        Turn::tool_call(
            "c5",
            "facet",
            json!({"action": "add", "paths": ["../shared"]}),
        ),
        Turn::text("done"),
    ]));
    let facet_dir = facet_bin().parent().unwrap().to_path_buf();
    let run = home
        .session(&server)
        .cwd(&project.sub)
        .row("facet", "dsh-facet", json!({"mode": "ask"}))
        .path(&facet_dir)
        .env("FACET_STATE_DIR", &project.state)
        .run("look around");
    run.assert_ok();
    assert!(!run.survivors, "a process outlived dsh");
    let turns = turn_requests(&server);
    assert_eq!(turns.len(), 6, "one request per scripted turn");

    // The rule in the system prompt; the binding in the runtime context.
    assert!(system_text(&turns[0]).contains(&facet_rule_text()));
    let binding = format!("facet: {sub}\noutside the facet: put to the user as a question");
    assert!(
        user_text(&turns[0]).contains(&binding),
        "{}",
        user_text(&turns[0])
    );

    // Nobody can answer, so the way forward named is the panel command.
    let refused = format!(
        "Error: ../secret.txt is refused — this session's facet is {sub}, and this session has \
         no approval channel, so nobody can be asked to grant it here. Ask the user to run \
         `facet grant "
    );
    let c1 = result_of(&turns, "c1");
    assert!(c1.starts_with(&refused), "{c1}");
    // Nobody answered, so from the next request the binding says there is no channel.
    let no_channel = format!("facet: {sub}\noutside the facet: {NO_CHANNEL_REACH}");
    assert!(
        user_text(&turns[1]).contains(&no_channel),
        "{}",
        user_text(&turns[1])
    );
    assert!(result_of(&turns, "c2").contains("inside the facet"));
    let bash = result_of(&turns, "c3");
    assert!(
        bash.contains("the secret outside"),
        "bash is not judged: {bash}"
    );
    // The focus set from the panel shows on the next request's binding.
    assert!(user_text(&turns[3]).contains(&format!("facet: {room}\n")));
    let implicit = format!(
        "Error: This search names no `path`, so it would cover this session's directory {sub} \
         — and this session's facet is {room}. Name a folder inside the facet; this session has \
         no approval channel, so only the user can grant another one, with `facet grant PATH \
         --session "
    );
    let c4 = result_of(&turns, "c4");
    assert!(c4.starts_with(&implicit), "{c4}");
    let c5 = result_of(&turns, "c5");
    assert!(
        c5.starts_with(
            "Error: `facet action=add` cannot be granted here — this session has no \
             approval channel, so nobody can approve it. Ask the user to run `facet grant "
        ),
        "{c5}"
    );

    let status = project.status(&home, None);
    let binding = &status["binding"];
    assert_eq!(binding["facet"], json!(room), "{status}");
    assert_eq!(binding["granted"], json!([]), "{status}");
    assert_eq!(binding["directory"], json!(sub), "{status}");
}

/// With an answerer (what a UI composes), `facet action=add` is put to the user with
/// the seed's sentence; the grant lands in the session's state, opens the path, and
/// shows in the next binding. A read the user rejects is refused.
#[test]
fn facet_add_asks_and_the_grant_opens_the_path() {
    let dsh = Dsh::find();
    let home = installed_home(&dsh);
    let project = Project::new(&home);
    let sub = Project::text(&project.sub);
    let shared = Project::text(&project.top.join("shared"));
    let log = home.scratch("answers").join("approvals.jsonl");
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "c1",
            "facet",
            json!({"action": "add", "paths": ["../shared"]}),
        ),
        Turn::tool_call("c2", "read", json!({"file_path": "../shared/types.rs"})),
        Turn::tool_call("c3", "read", json!({"file_path": "../secret.txt"})),
        Turn::text("done"),
    ]));
    let run = home
        .session(&server)
        .cwd(&project.sub)
        .row(
            "facet",
            "dsh-facet",
            json!({"mode": "ask", "binary": facet_bin()}),
        )
        .row(
            "answerer",
            &Project::text(&answerer()),
            json!({"log": log, "answers": ["allowed-once", "rejected"]}),
        )
        .env("FACET_STATE_DIR", &project.state)
        .run("widen the facet");
    run.assert_ok();
    let turns = turn_requests(&server);

    let asked: Vec<Value> = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["toolName"], "facet");
    assert_eq!(asked[0]["callId"], "c1");
    assert_eq!(
        asked[0]["reason"],
        json!(widen_reason(&["../shared".to_owned()]))
    );
    let outside = outside_reason(&sub, "../secret.txt", &sub, Mode::Ask);
    assert_eq!(asked[1]["toolName"], "read");
    assert_eq!(asked[1]["reason"], json!(outside));

    let granted = result_of(&turns, "c1");
    assert!(
        granted.starts_with(&format!("Granted {shared} for the rest of this session.")),
        "{granted}"
    );
    assert!(user_text(&turns[1]).contains(&format!("granted outside it: {shared}")));
    assert!(result_of(&turns, "c2").contains("pub struct Shared;"));
    assert_eq!(
        result_of(&turns, "c3"),
        format!("Error: the user rejected tool \"read\": {outside}")
    );

    // The same state the panel reads.
    let session = asked[0]["session"].as_str().unwrap();
    let status = project.status(&home, Some(session));
    assert_eq!(status["binding"]["granted"], json!([shared]), "{status}");

    // The tool as the model was shown it: the bridge's schema through dsh's DSL.
    let tool = tool_def(&turns[0], "facet").expect("the facet tool is offered");
    let parameters = &tool["function"]["parameters"];
    let description = tool["function"]["description"].as_str().unwrap();
    assert!(
        description.starts_with(facet::facet_tool::PURPOSE),
        "{description}"
    );
    assert_eq!(
        parameters["properties"]["action"]["enum"],
        json!(["status", "add", "remove", "reset"])
    );
    assert_eq!(parameters["required"], json!(["action"]));
}

/// The generic route: facet as a Claude Code hook through dsh's hooks bridge.
#[test]
fn facet_hook_through_the_dsh_hooks_bridge_refuses_a_read_outside() {
    let dsh = Dsh::find();
    let home = DshHome::new(&dsh);
    let project = Project::new(&home);
    let sub = Project::text(&project.sub);
    let hooks = home.scratch("hooks").join("facet-hooks.json");
    let command = format!("{} hook --no-approval", facet_bin().display());
    let config = json!({"hooks": {"PreToolUse": [{
        "matcher": "^(read|write|edit|read_image|grep|glob|str_replace_editor|lsp|recall)$",
        "hooks": [{"type": "command", "command": command, "timeout": 10}],
    }]}});
    fs::write(&hooks, config.to_string()).unwrap();
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call("c1", "read", json!({"file_path": "../secret.txt"})),
        Turn::text("done"),
    ]));
    // The bridge is installed beside dsh, not linked into profiles: named by its
    // entry file, it resolves its imports from dsh's own modules.
    let packages = dsh.bin.parent().and_then(Path::parent).unwrap();
    let bridge = packages.join("@deepseek-ai/dsh-hooks-claude-code/lib/index.js");
    assert!(
        bridge.exists(),
        "missing peer: the dsh hooks bridge at {}",
        bridge.display()
    );
    let run = home
        .session(&server)
        .cwd(&project.sub)
        .row(
            "hooks",
            &Project::text(&bridge),
            json!({"configPath": hooks}),
        )
        .env("FACET_STATE_DIR", &project.state)
        .run("read the secret");
    run.assert_ok();
    let turns = turn_requests(&server);
    // `facet hook --no-approval`: the way forward named is the panel command.
    let refused = format!(
        "Error: ../secret.txt is refused — this session's facet is {sub}, and this session has \
         no approval channel, so nobody can be asked to grant it here. Ask the user to run \
         `facet grant "
    );
    let c1 = result_of(&turns, "c1");
    assert!(c1.starts_with(&refused), "{c1}");
}

/// A row dsh cannot use fails when dsh applies the plugin, naming what to fix; the
/// model is never asked anything.
#[test]
fn bad_rows_fail_when_dsh_applies_the_plugin() {
    let dsh = Dsh::find();
    let home = installed_home(&dsh);
    let project = Project::new(&home);
    let other = home.scratch("other-facet").join("facet");
    fs::write(
        &other,
        "#!/bin/sh\nread line\necho '{\"id\":1,\"result\":{\"name\":\"facet\",\"version\":\"0.0.9\",\"protocol\":1}}'\ncat >/dev/null\n",
    )
    .unwrap();
    fs::set_permissions(&other, fs::Permissions::from_mode(0o755)).unwrap();
    let cases = [
        (
            json!({"mode": "sometimes", "binary": facet_bin()}),
            "dsh-facet: config `mode` must be one of ask, deny, off, not \"sometimes\"".to_owned(),
        ),
        (
            json!({"mode": "ask", "binary": "/nonexistent/facet"}),
            "cannot start the facet program `/nonexistent/facet` (not found)".to_owned(),
        ),
        (
            json!({"mode": "ask"}),
            "cannot start the facet program `facet` (not found); install facet on PATH or set the \
             row's config key `binary`"
                .to_owned(),
        ),
        (
            json!({"binary": other}),
            format!(
                "dsh-facet 0.1.0 needs facet 0.1.0, but {} is facet 0.0.9",
                other.display()
            ),
        ),
    ];
    for (config, expected) in cases {
        let server = ScriptedServer::start(Script::new(vec![Turn::text("never reached")]));
        let run = home
            .session(&server)
            .cwd(&project.sub)
            .row("facet", "dsh-facet", config.clone())
            .env("FACET_STATE_DIR", &project.state)
            .run("anything");
        assert_eq!(run.code, Some(1), "{config}: {}", run.stderr);
        assert!(
            run.stderr.contains("failed to apply loader entry facet"),
            "{config}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(&expected), "{config}: {}", run.stderr);
        assert!(
            turn_requests(&server).is_empty(),
            "{config}: the model was asked"
        );
        assert!(!run.survivors, "{config}: a process outlived dsh");
    }
}
