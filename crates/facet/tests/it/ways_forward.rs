//! Every sentence facet writes names a way forward that works in the state it is
//! written in (issue 21, finding 1): host × mode × approval channel.
//!
//! For each host (Claude Code's hook, Codex's hook, Gemini CLI's hook, OpenCode's
//! plugin, the dsh bridge — and in each, the `facet` tool's own `add`), each mode
//! (`ask`, `deny`) and each channel state (can
//! ask / cannot), every sentence the model and the person read — the refusal or
//! question of a call outside the facet, of a write of a new file, of a bare search,
//! of `facet action=add`, and the binding — is checked by *taking the way forward it
//! names*: a sentence that offers `facet action=add` is followed by that very call in
//! the same state, which must be put to the user (not refused); a sentence that names
//! a panel command is followed by running that command with the real `facet` binary,
//! after which the original call must go through. A sentence that offers neither
//! fails.

use crate::support;

use std::path::{Path, PathBuf};

use facet::dsh_bridge::Bridge;
use serde_json::{Value, json};
use support::{Tree, opencode_tool_call, pre_tool_use, run_facet, session_event};

const FACET_TOOL: &str = "mcp__facet__facet";
/// What Gemini CLI calls the facet tool of an MCP server named `facet`.
const GEMINI_FACET_TOOL: &str = "mcp_facet_facet";

/// Where a session runs and what its host can do.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Host {
    /// Claude Code's hook; `bypass`: `permission_mode: bypassPermissions`;
    /// `no_approval`: `facet hook --no-approval`.
    ClaudeCode { bypass: bool, no_approval: bool },
    /// Codex's hook: it never honours `ask`.
    Codex,
    /// Gemini CLI's hook (`--dialect gemini`): never asked, its own tool names and
    /// answer shape.
    Gemini,
    /// OpenCode's plugin shim (`--dialect opencode`): a plugin cannot ask.
    OpenCode,
    /// The dsh bridge; `service`: dsh's approval service is composed; `policy`: the
    /// session's approval policy.
    Dsh { service: bool, policy: &'static str },
}

impl Host {
    fn can_ask(self) -> bool {
        match self {
            Host::ClaudeCode {
                bypass,
                no_approval,
            } => !bypass && !no_approval,
            Host::Codex | Host::Gemini | Host::OpenCode => false,
            Host::Dsh { service, policy } => service && policy != "never",
        }
    }
}

/// What the guard said about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Said {
    Nothing,
    Ask(String),
    Deny(String),
}

/// The kinds of call whose sentence is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// Read an existing file outside the facet.
    ReadOutside,
    /// Write a file that does not exist yet, outside the facet.
    WriteNew,
    /// A search naming no path, in a session focused on a subfolder.
    BareSearch,
    /// `facet action=add` of a folder outside.
    Widen,
}

/// One session of one host in one mode, on a fresh tree.
struct World {
    tree: Tree,
    host: Host,
    session: &'static str,
    mode: String,
    bridge: Option<Bridge>,
    next_id: u64,
}

impl World {
    fn new(host: Host, mode: &str, focused: bool) -> World {
        let tree = Tree::new();
        std::fs::create_dir_all(tree.room().join("sub")).unwrap();
        let mut world = World {
            tree,
            host,
            session: "way",
            mode: mode.to_owned(),
            bridge: None,
            next_id: 1,
        };
        if let Host::Dsh { .. } = host {
            let mut bridge = Bridge::with_state_dir(world.tree.state());
            let specs = dsh(
                &mut bridge,
                json!({"id": 0, "method": "configure", "params": {"config": {"mode": mode}}}),
            );
            assert!(specs[0].get("result").is_some(), "{specs:?}");
            world.bridge = Some(bridge);
            world.context(); // first sight
        } else {
            let start = match host {
                Host::OpenCode => world.opencode_system_event(),
                _ => session_event(world.session, &world.tree.room(), "SessionStart"),
            };
            let run = world.tree.hook(&world.hook_flags(), &start);
            assert_eq!(run.code, 0, "{}", run.stderr);
            let set = world
                .tree
                .panel(&["mode", mode, "--session", world.session]);
            assert_eq!(set.code, 0, "{}", set.stderr);
        }
        if focused {
            let focus = world
                .tree
                .panel(&["focus", "sub", "--session", world.session]);
            assert_eq!(focus.code, 0, "{}", focus.stderr);
        }
        world
    }

    fn hook_flags(&self) -> Vec<&'static str> {
        match self.host {
            Host::ClaudeCode {
                no_approval: true, ..
            } => vec!["--no-approval"],
            Host::Codex => vec!["--dialect", "codex"],
            Host::Gemini => vec!["--dialect", "gemini", "--facet-tool", GEMINI_FACET_TOOL],
            Host::OpenCode => vec!["--dialect", "opencode", "--facet-tool", "facet_facet"],
            _ => Vec::new(),
        }
    }

    /// What the OpenCode shim sends before each model request of the session.
    fn opencode_system_event(&self) -> Value {
        json!({
            "hook": "experimental.chat.system.transform",
            "directory": self.tree.room(),
            "worktree": self.tree.path("project"),
            "input": {"sessionID": self.session},
        })
    }

    fn caller(&self) -> Value {
        let Host::Dsh { service, policy } = self.host else {
            unreachable!("only dsh has a caller")
        };
        json!({
            "session": self.session,
            "cwd": self.tree.room(),
            "approval": {"service": service, "policy": policy},
        })
    }

    /// The host's tool call for `call` (tool name, arguments).
    fn tool_call(&self, call: Call) -> (String, Value) {
        let dsh = matches!(self.host, Host::Dsh { .. });
        let name = |claude: &str, lower: &str| if dsh { lower } else { claude }.to_owned();
        match (call, self.host) {
            (Call::Widen, Host::OpenCode) => (
                "facet_facet".to_owned(),
                json!({"action": "add", "paths": ["../../shared"]}),
            ),
            (Call::ReadOutside, Host::OpenCode) => (
                "read".to_owned(),
                json!({"filePath": "../../shared/types.rs"}),
            ),
            (Call::WriteNew, Host::OpenCode) => (
                "write".to_owned(),
                json!({"filePath": "../../shared/new.rs", "content": "n"}),
            ),
            (Call::BareSearch, Host::OpenCode) => ("grep".to_owned(), json!({"pattern": "x"})),
            (Call::Widen, Host::Dsh { .. }) => (
                "facet".to_owned(),
                json!({"action": "add", "paths": ["../../shared"]}),
            ),
            (Call::Widen, Host::Gemini) => (
                GEMINI_FACET_TOOL.to_owned(),
                json!({"action": "add", "paths": ["../../shared"]}),
            ),
            (Call::ReadOutside, Host::Gemini) => (
                "read_file".to_owned(),
                json!({"file_path": "../../shared/types.rs"}),
            ),
            (Call::WriteNew, Host::Gemini) => (
                "write_file".to_owned(),
                json!({"file_path": "../../shared/new.rs", "content": "n"}),
            ),
            (Call::BareSearch, Host::Gemini) => ("grep_search".to_owned(), json!({"pattern": "x"})),
            (Call::Widen, _) => (
                FACET_TOOL.to_owned(),
                json!({"action": "add", "paths": ["../../shared"]}),
            ),
            (Call::ReadOutside, Host::Codex) => (
                "apply_patch".to_owned(),
                json!({"command": "*** Begin Patch\n*** Update File: ../../shared/types.rs\n@@\n-t\n+u\n*** End Patch\n"}),
            ),
            (Call::WriteNew, Host::Codex) => (
                "apply_patch".to_owned(),
                json!({"command": "*** Begin Patch\n*** Add File: ../../shared/new.rs\n+n\n*** End Patch\n"}),
            ),
            (Call::ReadOutside, _) => (
                name("Read", "read"),
                json!({"file_path": "../../shared/types.rs"}),
            ),
            (Call::WriteNew, _) => (
                name("Write", "write"),
                json!({"file_path": "../../shared/new.rs", "content": "n"}),
            ),
            (Call::BareSearch, _) => (name("Grep", "grep"), json!({"pattern": "x"})),
        }
    }

    /// What the guard says about `call` now.
    fn judge(&mut self, call: Call) -> Said {
        let (tool, arguments) = self.tool_call(call);
        let caller = matches!(self.host, Host::Dsh { .. }).then(|| self.caller());
        let id = self.next_id;
        self.next_id += 1;
        if let (Some(caller), Some(bridge)) = (caller, &mut self.bridge) {
            let params = merge(
                caller,
                json!({"tool": tool, "callId": format!("call-{id}"), "arguments": arguments}),
            );
            let out = dsh(
                bridge,
                json!({"id": id, "method": "judge", "params": params}),
            );
            let answer = &out[0];
            if let Some(question) = answer.get("approval") {
                // Settle it so the bridge holds nothing between checks.
                let reason = question["reason"].as_str().unwrap().to_owned();
                dsh(
                    bridge,
                    json!({"id": id, "method": "approval_answer", "params": {"decision": "cancelled"}}),
                );
                return Said::Ask(reason);
            }
            return match answer["result"]["verdict"].as_str() {
                Some("allow") => Said::Nothing,
                Some("deny") => Said::Deny(answer["result"]["reason"].as_str().unwrap().into()),
                other => panic!("unexpected dsh answer {other:?}: {answer}"),
            };
        }
        if self.host == Host::Gemini {
            let event = support::gemini_event(
                self.session,
                &self.tree.room(),
                "BeforeTool",
                &tool,
                arguments,
            );
            let run = self.tree.hook(&self.hook_flags(), &event);
            assert_eq!(run.code, 0, "{}", run.stderr);
            // A bare search pinned to the session folder goes through.
            if run.json().is_some_and(|answer| {
                answer["hookSpecificOutput"]["tool_input"]["dir_path"].is_string()
            }) {
                return Said::Nothing;
            }
            return match run.gemini_decision() {
                None => Said::Nothing,
                Some((decision, reason)) => {
                    assert_eq!(decision, "deny");
                    Said::Deny(reason)
                }
            };
        }
        if let Host::OpenCode = self.host {
            let event = opencode_tool_call(
                self.session,
                &self.tree.room(),
                &self.tree.path("project"),
                &tool,
                arguments,
            );
            let run = self.tree.hook(&self.hook_flags(), &event);
            assert_eq!(run.code, 0, "{}", run.stderr);
            return run.opencode_refusal().map_or(Said::Nothing, Said::Deny);
        }
        let mut event = pre_tool_use(self.session, &self.tree.room(), &tool, arguments);
        if let Host::ClaudeCode { bypass: true, .. } = self.host {
            event["permission_mode"] = json!("bypassPermissions");
        }
        let run = self.tree.hook(&self.hook_flags(), &event);
        assert_eq!(run.code, 0, "{}", run.stderr);
        match run.decision() {
            None => Said::Nothing,
            Some((decision, reason)) if decision == "ask" => Said::Ask(reason),
            Some((decision, reason)) => {
                assert_eq!(decision, "deny");
                Said::Deny(reason)
            }
        }
    }

    /// The binding the model is given now.
    fn context(&mut self) -> String {
        let caller = matches!(self.host, Host::Dsh { .. }).then(|| self.caller());
        if let (Some(params), Some(bridge)) = (caller, &mut self.bridge) {
            let out = dsh(
                bridge,
                json!({"id": 999_999, "method": "context", "params": params}),
            );
            return out[0]["result"]["text"].as_str().unwrap().to_owned();
        }
        if let Host::OpenCode = self.host {
            // OpenCode: the rule and the binding, before every model request.
            let run = self
                .tree
                .hook(&self.hook_flags(), &self.opencode_system_event());
            assert_eq!(run.code, 0, "{}", run.stderr);
            return run.json().map_or_else(String::new, |answer| {
                answer["system"].as_str().unwrap().to_owned()
            });
        }
        let prompt = if self.host == Host::Gemini {
            "BeforeAgent"
        } else {
            "UserPromptSubmit"
        };
        let mut event = session_event(self.session, &self.tree.room(), prompt);
        if let Host::ClaudeCode { bypass: true, .. } = self.host {
            event["permission_mode"] = json!("bypassPermissions");
        }
        // Force a restatement: the binding is said only when it changed.
        self.tree.panel(&["mode", "off", "--session", self.session]);
        self.tree.hook(&self.hook_flags(), &event);
        self.tree
            .panel(&["mode", &self.mode, "--session", self.session]);
        let run = self.tree.hook(&self.hook_flags(), &event);
        run.context().map(|(_, text)| text).unwrap_or_default()
    }
}

fn merge(mut base: Value, extra: Value) -> Value {
    if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
        base.extend(extra.clone());
    }
    base
}

fn dsh(bridge: &mut Bridge, request: Value) -> Vec<Value> {
    bridge
        .handle(request.to_string().as_bytes())
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Whether `sentence` sends the model to `facet action=add` (a mention that says it
/// cannot be granted is not an offer). The seed's bare-search sentence says "ask the
/// user to grant the one you need" without naming the mechanism; the model's way to
/// ask for a grant is `facet action=add`, so that counts as offering it.
fn offers_add(sentence: &str) -> bool {
    sentence.contains("ask the user to grant the one you need.")
        || sentence
            .match_indices("`facet action=add`")
            .any(|(at, mention)| !sentence[at + mention.len()..].starts_with(" cannot be granted"))
}

/// The panel command a sentence names, as argv after `facet`, if any.
fn panel_command(sentence: &str) -> Option<Vec<String>> {
    let start = sentence.find("`facet grant ")? + 1;
    let end = start + sentence[start..].find('`')?;
    let words: Vec<String> = sentence[start..end]
        .split_whitespace()
        .map(|word| word.trim_matches('\'').to_owned())
        .collect();
    assert_eq!(words[0], "facet");
    Some(words[1..].to_vec())
}

/// Takes every way forward `sentence` names, in `world` (fresh for each), and checks
/// it works. `call` is the call the sentence was about (`None`: the binding; a `PATH`
/// in a panel command stands for the folder it needs); `said_in` is the temp folder of
/// the world the sentence was said in, which the fresh world's replaces.
fn follow(
    said_in: &Path,
    host: Host,
    mode: &str,
    focused: bool,
    call: Option<Call>,
    sentence: &str,
) {
    let what = format!("{host:?} mode {mode} {call:?}: {sentence:?}");
    let add = offers_add(sentence);
    let panel = panel_command(sentence);
    assert!(add || panel.is_some(), "no way forward is named: {what}");
    if add {
        let mut world = World::new(host, mode, focused);
        match world.judge(Call::Widen) {
            Said::Ask(_) => {}
            other => panic!("the sentence offers `facet action=add`, which is {other:?}: {what}"),
        }
    }
    if let Some(args) = panel {
        let mut world = World::new(host, mode, focused);
        let placeholder: PathBuf = match call {
            Some(Call::BareSearch) => world.tree.room(),
            _ => world.tree.path("project/shared"),
        };
        let args: Vec<String> = args
            .into_iter()
            .map(|arg| {
                if arg == "PATH" {
                    placeholder.display().to_string()
                } else {
                    arg.replace(
                        &said_in.display().to_string(),
                        &world.tree.base.display().to_string(),
                    )
                }
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = run_facet(&args, b"", &world.tree.state(), Path::new("/"));
        assert_eq!(
            run.code, 0,
            "the panel command failed ({}): {what}",
            run.stderr
        );
        let retried = call.unwrap_or(Call::ReadOutside);
        if retried != Call::Widen {
            assert_eq!(
                world.judge(retried),
                Said::Nothing,
                "after the panel command the call still does not go through: {what}"
            );
        }
    }
}

fn hosts() -> Vec<Host> {
    vec![
        Host::ClaudeCode {
            bypass: false,
            no_approval: false,
        },
        Host::ClaudeCode {
            bypass: true,
            no_approval: false,
        },
        Host::ClaudeCode {
            bypass: false,
            no_approval: true,
        },
        Host::Codex,
        Host::Gemini,
        Host::OpenCode,
        Host::Dsh {
            service: true,
            policy: "on-request",
        },
        Host::Dsh {
            service: true,
            policy: "never",
        },
        Host::Dsh {
            service: false,
            policy: "on-request",
        },
    ]
}

#[test]
fn every_sentence_names_a_way_forward_that_works_where_it_is_said() {
    let mut checked = 0;
    for host in hosts() {
        for mode in ["ask", "deny"] {
            for call in [
                Call::ReadOutside,
                Call::WriteNew,
                Call::BareSearch,
                Call::Widen,
            ] {
                if call == Call::BareSearch && matches!(host, Host::Codex) {
                    continue; // Codex has no search tool facet judges
                }
                let focused = call == Call::BareSearch;
                let mut world = World::new(host, mode, focused);
                let said = world.judge(call);
                let sentence = match (&said, host.can_ask(), mode) {
                    (Said::Ask(sentence), true, "ask") => sentence.clone(),
                    // `facet action=add` is asked in mode deny too: only the user grants.
                    (Said::Ask(sentence), true, "deny") if call == Call::Widen => sentence.clone(),
                    (Said::Deny(sentence), _, _) => sentence.clone(),
                    other => panic!("{host:?} mode {mode} {call:?}: unexpected {other:?}"),
                };
                if call == Call::Widen && matches!(said, Said::Ask(_)) {
                    // The question itself: answering yes is the way forward.
                    assert!(sentence.starts_with("Grant "), "{sentence}");
                } else {
                    follow(&world.tree.base, host, mode, focused, Some(call), &sentence);
                }
                checked += 1;
            }
            let mut world = World::new(host, mode, false);
            let binding = world.context();
            assert!(!binding.is_empty(), "{host:?} mode {mode}: no binding");
            follow(&world.tree.base, host, mode, false, None, &binding);
            checked += 1;
        }
    }
    assert_eq!(checked, 9 * 2 * 5 - 2);
}
