//! The decision on real trees in temp folders: every path-carrying tool of both tables,
//! per mode and approval channel; implicit searches; glob prefixes; widening; grants.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use facet_core::seed::{
    implicit_search_reason, implicit_search_reason_no_channel, outside_reason,
    outside_reason_no_channel, panel_grant_command, widen_reason, widen_refused_no_channel,
};
use facet_core::{Config, Decision, FacetAction, Mode, Policy, Session};
use serde_json::{Value, json};

/// `<top>/w/proj` (a git top level) holding `room` (the session), `room2` (a prefix
/// collision), `shared/types.rs`; `<top>/outside/secret`.
struct Tree {
    _dir: tempfile::TempDir,
    top: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let top = fs::canonicalize(dir.path()).unwrap();
        for folder in [
            "w/proj/.git",
            "w/proj/room/src",
            "w/proj/room2",
            "w/proj/shared",
            "outside",
        ] {
            fs::create_dir_all(top.join(folder)).unwrap();
        }
        fs::write(top.join("w/proj/room/src/lib.rs"), "").unwrap();
        fs::write(top.join("w/proj/shared/types.rs"), "").unwrap();
        fs::write(top.join("outside/secret"), "").unwrap();
        Tree { _dir: dir, top }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.top.join(rel)
    }

    fn room(&self) -> PathBuf {
        self.p("w/proj/room")
    }

    fn session(&self, mode: Mode) -> Session {
        Session::new("s", self.room(), true, mode)
    }
}

fn s(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Every (tool, path argument) of the built-in tables.
fn path_carrying_tools(policy: &Policy) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in policy.tools().names() {
        for arg in &policy.tools().get(name).unwrap().path_args {
            out.push((name.to_string(), arg.clone()));
        }
    }
    out
}

#[test]
fn both_tables_are_complete() {
    let policy = Policy::default();
    let tools: BTreeMap<String, Vec<String>> = policy
        .tools()
        .names()
        .map(|n| {
            (
                n.to_string(),
                policy.tools().get(n).unwrap().path_args.clone(),
            )
        })
        .collect();
    for (tool, arg) in [
        ("read", "file_path"),
        ("write", "file_path"),
        ("edit", "file_path"),
        ("read_image", "file_path"),
        ("grep", "path"),
        ("glob", "path"),
        ("str_replace_editor", "path"),
        ("lsp", "file_path"),
        ("recall", "path"),
        ("recall", "focus"),
        ("Read", "file_path"),
        ("Write", "file_path"),
        ("Edit", "file_path"),
        ("MultiEdit", "file_path"),
        ("NotebookEdit", "notebook_path"),
        ("Grep", "path"),
        ("Glob", "path"),
        ("LS", "path"),
    ] {
        assert!(tools[tool].contains(&arg.to_string()), "{tool} {arg}");
    }
}

#[test]
fn every_path_tool_inside_outside_per_mode_and_channel() {
    let t = Tree::new();
    let policy = Policy::default();
    let cwd = t.room();
    let root = s(&t.room());
    let cwd_text = s(&cwd);
    for (tool, arg) in path_carrying_tools(&policy) {
        let inside = json!({ arg.clone(): "src/lib.rs" });
        let outside = json!({ arg.clone(): "../shared/types.rs" });
        let collision = json!({ arg.clone(): "../room2/x" });
        let absolute_out = json!({ arg.clone(): s(&t.p("outside/secret")) });
        let ask = t.session(Mode::Ask);
        let deny = t.session(Mode::Deny);
        let off = t.session(Mode::Off);

        assert_eq!(
            policy.judge(&tool, &inside, &cwd, &ask, true),
            Decision::NoOpinion,
            "{tool}"
        );
        assert_eq!(
            policy.judge(&tool, &inside, &cwd, &deny, false),
            Decision::NoOpinion,
            "{tool}"
        );
        assert_eq!(
            policy.judge(&tool, &outside, &cwd, &ask, true),
            Decision::Ask(outside_reason(
                &cwd_text,
                "../shared/types.rs",
                &root,
                Mode::Ask
            )),
            "{tool}"
        );
        assert_eq!(
            policy.judge(&tool, &outside, &cwd, &deny, true),
            Decision::Deny(outside_reason(
                &cwd_text,
                "../shared/types.rs",
                &root,
                Mode::Deny
            )),
            "{tool}"
        );
        // No approval channel: refused whatever the mode, and the way forward is the
        // panel command, not `facet action=add` (refused there too).
        let grant = panel_grant_command(&[s(&t.p("w/proj/shared/types.rs"))], &ask.id, false);
        assert_eq!(
            policy.judge(&tool, &outside, &cwd, &ask, false),
            Decision::Deny(outside_reason_no_channel(
                &cwd_text,
                "../shared/types.rs",
                &root,
                Some(&grant)
            )),
            "{tool}"
        );
        assert!(
            matches!(
                policy.judge(&tool, &collision, &cwd, &ask, true),
                Decision::Ask(_)
            ),
            "{tool}"
        );
        assert!(
            matches!(
                policy.judge(&tool, &absolute_out, &cwd, &ask, true),
                Decision::Ask(_)
            ),
            "{tool}"
        );
        assert_eq!(
            policy.judge(&tool, &outside, &cwd, &off, true),
            Decision::NoOpinion,
            "{tool}"
        );
        // Unscoped (started at the project top): no opinion at all.
        let unscoped = Session::new("u", t.room(), false, Mode::Ask);
        assert_eq!(
            policy.judge(&tool, &outside, &cwd, &unscoped, true),
            Decision::NoOpinion,
            "{tool}"
        );
    }
}

#[test]
fn symlinks_are_judged_by_their_target() {
    let t = Tree::new();
    symlink(t.p("outside"), t.room().join("out")).unwrap();
    symlink(t.p("outside/missing"), t.room().join("dangling")).unwrap();
    symlink("src", t.room().join("alias")).unwrap();
    symlink("loop", t.room().join("loop")).unwrap();
    let policy = Policy::default();
    let session = t.session(Mode::Ask);
    let judge = |tool: &str, path: &str| {
        policy.judge(tool, &json!({"file_path": path}), &t.room(), &session, true)
    };
    assert!(matches!(judge("Read", "out/secret"), Decision::Ask(_)));
    assert!(matches!(
        judge("Write", "out/new/file.txt"),
        Decision::Ask(_)
    ));
    assert!(matches!(judge("Write", "dangling"), Decision::Ask(_)));
    assert!(matches!(judge("Read", "alias/lib.rs"), Decision::NoOpinion));
    // Fail closed: a loop, a NUL byte are outside, never inside.
    assert!(matches!(judge("Read", "loop/x"), Decision::Ask(_)));
    assert!(matches!(judge("Read", "src/\0../../x"), Decision::Ask(_)));
    // `~` is the user's home, not a folder named `~` in the session.
    assert!(matches!(judge("Read", "~/.ssh/id_rsa"), Decision::Ask(_)));
    assert!(matches!(
        judge("Read", "~root/.ssh/id_rsa"),
        Decision::Ask(_)
    ));
    // Blank and non-string arguments name nothing.
    assert_eq!(judge("Read", "   "), Decision::NoOpinion);
    assert_eq!(
        policy.judge("Read", &json!({"file_path": 7}), &t.room(), &session, true),
        Decision::NoOpinion
    );
}

#[test]
fn relative_paths_use_the_event_cwd() {
    let t = Tree::new();
    let policy = Policy::default();
    let session = t.session(Mode::Ask);
    // The same relative path, judged from another cwd (the model `cd`-ed), is outside.
    let elsewhere = t.p("outside");
    assert!(matches!(
        policy.judge(
            "Read",
            &json!({"file_path": "secret"}),
            &elsewhere,
            &session,
            true
        ),
        Decision::Ask(_)
    ));
    // A relative cwd cannot be placed: fail closed.
    assert!(matches!(
        policy.judge(
            "Read",
            &json!({"file_path": "src/lib.rs"}),
            Path::new("relative"),
            &session,
            true
        ),
        Decision::Ask(_)
    ));
}

#[test]
fn implicit_searches_are_judged_against_the_session_directory() {
    let t = Tree::new();
    let policy = Policy::default();
    // Facet == directory: a bare search stays inside.
    let plain = t.session(Mode::Ask);
    // Focus narrower than the directory: a bare search covers more than the facet.
    let mut focused = t.session(Mode::Ask);
    focused.set_focus("src", &t.room()).unwrap();
    let reason = implicit_search_reason(&s(&t.room()), &s(&t.room().join("src")));
    for tool in ["grep", "glob", "recall", "Grep", "Glob", "LS"] {
        let bare = json!({"pattern": "fn main"});
        assert_eq!(
            policy.judge(tool, &bare, &t.room(), &plain, true),
            Decision::NoOpinion,
            "{tool}"
        );
        assert_eq!(
            policy.judge(tool, &bare, &t.room(), &focused, true),
            Decision::Ask(reason.clone()),
            "{tool}"
        );
        assert_eq!(
            policy.judge(tool, &json!(null), &t.room(), &focused, false),
            Decision::Deny(implicit_search_reason_no_channel(
                &s(&t.room()),
                &s(&t.room().join("src")),
                &focused.id
            )),
            "{tool}"
        );
        assert_eq!(
            policy.judge(tool, &json!({"path": "src"}), &t.room(), &focused, true),
            Decision::NoOpinion,
            "{tool}"
        );
    }
    // Tools with no default directory name nothing when given no path.
    assert_eq!(
        policy.judge("Read", &json!({}), &t.room(), &focused, true),
        Decision::NoOpinion
    );
    assert_eq!(
        policy.judge(
            "bash",
            &json!({"command": "cat /etc/passwd"}),
            &t.room(),
            &focused,
            true
        ),
        Decision::NoOpinion
    );
}

#[test]
fn glob_patterns_are_judged_by_their_fixed_prefix() {
    let t = Tree::new();
    let policy = Policy::default();
    let session = t.session(Mode::Ask);
    let judge = |tool: &str, args: Value| policy.judge(tool, &args, &t.room(), &session, true);
    for tool in ["Glob", "glob"] {
        assert_eq!(
            judge(tool, json!({"pattern": "src/**/*.rs"})),
            Decision::NoOpinion
        );
        let absolute = format!("{}/*", s(&t.p("outside")));
        assert_eq!(
            judge(tool, json!({"pattern": absolute})),
            Decision::Ask(outside_reason(
                &s(&t.room()),
                &s(&t.p("outside")),
                &s(&t.room()),
                Mode::Ask
            ))
        );
        assert!(matches!(
            judge(tool, json!({"pattern": "../shared/*.rs"})),
            Decision::Ask(_)
        ));
        assert!(matches!(
            judge(tool, json!({"pattern": "**/../../*"})),
            Decision::Ask(_)
        ));
        assert!(matches!(
            judge(tool, json!({"pattern": "src/*/../../../x"})),
            Decision::Ask(_)
        ));
        // Relative to the given path: `src/../*` stays inside, `src/../../*` does not.
        assert_eq!(
            judge(tool, json!({"path": "src", "pattern": "../*.toml"})),
            Decision::NoOpinion
        );
        assert!(matches!(
            judge(tool, json!({"path": "src", "pattern": "../../*"})),
            Decision::Ask(_)
        ));
        assert!(matches!(
            judge(tool, json!({"pattern": "/etc/**"})),
            Decision::Ask(_)
        ));
    }
    assert!(matches!(
        judge("Grep", json!({"pattern": "x", "glob": "../../**/*.rs"})),
        Decision::Ask(_)
    ));
    assert_eq!(
        judge("Grep", json!({"pattern": "../../etc", "glob": "*.rs"})),
        Decision::NoOpinion
    );
}

#[test]
fn widening_needs_the_user() {
    let t = Tree::new();
    let policy = Policy::default();
    let session = t.session(Mode::Ask);
    let add = json!({"action": "add", "paths": ["../shared", 3, " "]});
    for tool in ["facet", "mcp__facet__facet"] {
        assert_eq!(
            policy.judge(tool, &add, &t.room(), &session, true),
            Decision::Ask(widen_reason(&["../shared".to_string()]))
        );
        assert_eq!(
            policy.judge(tool, &add, &t.room(), &t.session(Mode::Deny), true),
            Decision::Ask(widen_reason(&["../shared".to_string()]))
        );
        let grant = panel_grant_command(&[s(&t.p("w/proj/shared"))], &session.id, false);
        assert_eq!(
            policy.judge(tool, &add, &t.room(), &session, false),
            Decision::Deny(widen_refused_no_channel(Some(&grant)))
        );
        for action in ["status", "remove", "reset"] {
            let args = json!({"action": action, "paths": ["../shared"]});
            assert_eq!(
                policy.judge(tool, &args, &t.room(), &session, false),
                Decision::NoOpinion
            );
        }
    }
    // Another server's tool called `facet` under a different qualified name is not ours.
    assert_eq!(
        policy.judge("mcp__other__facet", &add, &t.room(), &session, true),
        Decision::NoOpinion
    );
    // The name is configurable.
    let custom = Policy::new(&Config {
        facet_tool_names: vec!["mcp__scope__facet".to_string()],
        ..Config::default()
    });
    assert!(matches!(
        custom.judge("mcp__scope__facet", &add, &t.room(), &session, true),
        Decision::Ask(_)
    ));
    assert!(custom.is_facet_tool("mcp__scope__facet"));
    assert!(!custom.is_facet_tool("facet"));
}

#[test]
fn grants_are_canonical_and_open_the_path() {
    let t = Tree::new();
    symlink(t.p("w/proj/shared"), t.p("shared_alias")).unwrap();
    let policy = Policy::default();
    let mut session = t.session(Mode::Ask);
    let read = |session: &Session, path: &str| {
        policy.judge(
            "Read",
            &json!({"file_path": path}),
            &t.room(),
            session,
            true,
        )
    };
    assert!(matches!(
        read(&session, "../shared/types.rs"),
        Decision::Ask(_)
    ));
    let action =
        FacetAction::parse(&json!({"action": "add", "paths": [s(&t.p("shared_alias"))]})).unwrap();
    session.apply(&action, &t.room()).unwrap();
    assert_eq!(session.extras, vec![t.p("w/proj/shared")]);
    assert_eq!(read(&session, "../shared/types.rs"), Decision::NoOpinion);
    assert!(matches!(read(&session, "../room2/x"), Decision::Ask(_)));
    // Granting a path already covered stores nothing new.
    session
        .grant(
            &["../shared/types.rs".to_string(), "src".to_string()],
            &t.room(),
        )
        .unwrap();
    assert_eq!(session.extras.len(), 1);
    // The context text lists it.
    assert!(
        session
            .context_text(true)
            .contains(&format!("granted outside it: {}", s(&t.p("w/proj/shared"))))
    );
    // Revoke through the other spelling removes it.
    session
        .revoke(&["../shared".to_string()], &t.room())
        .unwrap();
    assert!(session.extras.is_empty());
    assert!(matches!(
        read(&session, "../shared/types.rs"),
        Decision::Ask(_)
    ));
    // The agent's reset (the `facet` tool) drops grants but keeps the user's focus:
    // it must never show the agent more than it saw.
    session
        .grant(&["../shared".to_string()], &t.room())
        .unwrap();
    session.set_focus("src", &t.room()).unwrap();
    session.apply(&FacetAction::Reset, &t.room()).unwrap();
    assert!(session.extras.is_empty());
    assert_eq!(session.facet_root(), Some(t.p("w/proj/room/src").as_path()));
    assert!(matches!(read(&session, "other.rs"), Decision::Ask(_)));
    // The user's reset (the panel) clears grants and focus.
    session
        .grant(&["../shared".to_string()], &t.room())
        .unwrap();
    session.reset();
    assert_eq!(session.facet_root(), Some(t.room().as_path()));
    assert!(session.extras.is_empty());
    // A focus narrows: a folder outside the session's own is refused, nothing changes.
    let error = session.set_focus("../shared", &t.room()).unwrap_err();
    assert!(
        error.to_string().contains("inside the session's folder"),
        "{error}"
    );
    assert_eq!(session.focus, None);
    // A grant that cannot be resolved records nothing.
    assert!(
        session
            .grant(&["../shared".to_string(), "a\0b".to_string()], &t.room())
            .is_err()
    );
    assert!(session.extras.is_empty());
}

#[test]
fn configured_mcp_tools_and_codex_paths() {
    let t = Tree::new();
    let mut tools = BTreeMap::new();
    tools.insert("mcp__fs__read_file".to_string(), vec!["path".to_string()]);
    let policy = Policy::new(&Config {
        tools,
        ..Config::default()
    });
    let session = t.session(Mode::Deny);
    assert!(matches!(
        policy.judge(
            "mcp__fs__read_file",
            &json!({"path": "../../../outside/secret"}),
            &t.room(),
            &session,
            true
        ),
        Decision::Deny(_)
    ));
    assert_eq!(
        policy.judge(
            "mcp__fs__read_file",
            &json!({"path": "src/lib.rs"}),
            &t.room(),
            &session,
            true
        ),
        Decision::NoOpinion
    );
    // Built-ins stay.
    assert!(matches!(
        policy.judge(
            "Read",
            &json!({"file_path": "../x"}),
            &t.room(),
            &session,
            true
        ),
        Decision::Deny(_)
    ));
    let paths = vec!["src/new.rs".to_string(), "../room2/evil.rs".to_string()];
    assert_eq!(
        policy.judge_paths(&paths, &t.room(), &session, true),
        Decision::Deny(outside_reason(
            &s(&t.room()),
            "../room2/evil.rs",
            &s(&t.room()),
            Mode::Deny
        ))
    );
    assert_eq!(
        policy.judge_paths(&paths[..1], &t.room(), &session, true),
        Decision::NoOpinion
    );
}

#[test]
fn facet_action_parsing() {
    assert_eq!(
        FacetAction::parse(&json!({"action": "status"})),
        Ok(FacetAction::Status)
    );
    assert_eq!(
        FacetAction::parse(&json!({"action": "reset"})),
        Ok(FacetAction::Reset)
    );
    assert_eq!(
        FacetAction::parse(&json!({"action": "add", "paths": "../x"})),
        Ok(FacetAction::Add(vec!["../x".to_string()]))
    );
    assert_eq!(
        FacetAction::parse(&json!({"action": "remove", "paths": ["a", null, " b "]})),
        Ok(FacetAction::Remove(vec!["a".to_string(), "b".to_string()]))
    );
    insta::assert_snapshot!(
        "action_errors",
        [
            FacetAction::parse(&json!({})),
            FacetAction::parse(&json!({"action": "grant"})),
            FacetAction::parse(&json!({"action": "add", "paths": []})),
        ]
        .iter()
        .map(|r| r.as_ref().unwrap_err().to_string())
        .collect::<Vec<_>>()
        .join("\n")
    );
}

#[test]
fn project_top_detection() {
    let t = Tree::new();
    use facet_core::project::is_project_top;
    assert!(is_project_top(&t.p("w/proj"), &[]));
    assert!(!is_project_top(&t.room(), &[]));
    assert!(!is_project_top(&t.p("outside"), &[]));
    // A configured marker makes a nearer top level.
    fs::write(t.room().join(".facet-top"), "").unwrap();
    let markers = vec![".facet-top".to_string()];
    assert!(is_project_top(&t.room(), &markers));
    assert!(!is_project_top(&t.room().join("src"), &markers));
    // A marker that is a path, not a name, is ignored.
    assert!(!is_project_top(
        &t.p("outside"),
        &["../w/proj/.git".to_string()]
    ));
}

#[test]
fn configuration_files() {
    use facet_core::ConfigError;
    let origin = Path::new("/home/u/.config/facet/config.toml");
    let config = Config::from_toml(
        r#"
default_mode = "deny"
project_markers = [".facet-top"]
[tools]
"mcp__fs__read_file" = ["path"]
"#,
        origin,
    )
    .unwrap();
    assert_eq!(config.default_mode, Mode::Deny);
    assert_eq!(config.facet_tool_names, Config::default().facet_tool_names);
    assert_eq!(config.tools["mcp__fs__read_file"], vec!["path".to_string()]);
    let errors: Vec<String> = [
        "default_mode = \"maybe\"",
        "unknown_key = 1",
        "[tools]\n\"mcp__x\" = []",
        "project_markers = [\"../x\"]",
        "facet_tool_names = [\"\"]",
        "not toml at all",
    ]
    .iter()
    .map(|text| Config::from_toml(text, origin).unwrap_err().to_string())
    .collect();
    insta::assert_snapshot!("config_errors", errors.join("\n"));
    // A missing file is the default; an unreadable one is an error.
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        Config::load(&dir.path().join("none.toml")).unwrap(),
        Config::default()
    );
    assert!(matches!(Config::load(dir.path()), Err(ConfigError { .. })));
}

/// `grep`'s `include` (dsh) and `Grep`'s `glob` (Claude Code) are ripgrep `--glob`
/// filters: judged by an escaping prefix, but never in place of the search root. On
/// the old table `include` was not read at all and `Grep`'s `glob` counted as the
/// root, so `{<facet>/x,*}` — whose `*` filters nothing out — let a bare search of the
/// whole session directory through a focused facet (no opinion; now asked).
#[test]
fn search_filters_are_judged_but_never_replace_the_search_root() {
    let t = Tree::new();
    let policy = Policy::default();
    let plain = t.session(Mode::Ask);
    let mut focused = t.session(Mode::Ask);
    focused.set_focus("src", &t.room()).unwrap();
    let facet = t.room().join("src");
    let implicit = implicit_search_reason(&s(&t.room()), &s(&facet));
    for (tool, filter) in [("grep", "include"), ("Grep", "glob")] {
        // A climbing filter is judged by its prefix, in an unfocused session too.
        let climbing = json!({"pattern": "fn", filter: "../../**/*.rs"});
        assert_eq!(
            policy.judge(tool, &climbing, &t.room(), &plain, true),
            Decision::Ask(outside_reason(
                &s(&t.room()),
                "../..",
                &s(&t.room()),
                Mode::Ask
            )),
            "{tool}"
        );
        // A filter whose only escaping alternative lies in the facet does not stand in
        // for the root: the bare search still covers the session directory.
        let braced = format!("{{{}/x,*}}", s(&facet));
        let sneaky = json!({"pattern": "fn", filter: braced});
        assert_eq!(
            policy.judge(tool, &sneaky, &t.room(), &focused, true),
            Decision::Ask(implicit.clone()),
            "{tool}"
        );
        // Inside the facet, with a path: no opinion.
        let inside = json!({"pattern": "fn", "path": "src", filter: "*.rs"});
        assert_eq!(
            policy.judge(tool, &inside, &t.room(), &focused, true),
            Decision::NoOpinion,
            "{tool}"
        );
        // The regular expression is not a path.
        let regex = json!({"pattern": "../../etc/passwd", "path": "src"});
        assert_eq!(
            policy.judge(tool, &regex, &t.room(), &focused, true),
            Decision::NoOpinion,
            "{tool}"
        );
    }
}
