//! `facet dsh-bridge`'s protocol on real folder trees: what the plugin registers
//! (snapshot), the guard's verdicts and questions, every approval outcome, the
//! `facet` tool's body (an `add` only for the call the user allowed), the binding,
//! and the process's own lifetime (stdin EOF ends it).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use facet::dsh_bridge::{Bridge, serve};
use facet_core::Mode;
use facet_core::seed::{
    NO_CHANNEL_REACH, outside_reason, outside_reason_no_channel, panel_grant_command, panel_line,
    widen_reason, widen_refused_no_channel,
};
use serde_json::{Value, json};

/// `<top>/proj` (git) with the session folder `sub`, plus `shared/`, and a state folder.
struct Tree {
    _dir: tempfile::TempDir,
    top: PathBuf,
    state: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let top = fs::canonicalize(dir.path()).unwrap();
        for folder in ["proj/.git", "proj/sub/room", "proj/shared", "state"] {
            fs::create_dir_all(top.join(folder)).unwrap();
        }
        let state = top.join("state");
        Tree {
            _dir: dir,
            top,
            state,
        }
    }

    fn sub(&self) -> String {
        self.top.join("proj/sub").display().to_string()
    }

    fn bridge(&self, mode: &str) -> Bridge {
        let mut bridge = Bridge::with_state_dir(self.state.clone());
        let specs = call(
            &mut bridge,
            json!({"id": 0, "method": "configure", "params": {"config": {"mode": mode}}}),
        );
        assert!(specs[0].get("result").is_some(), "{specs:?}");
        bridge
    }
}

/// The refusal of a `read` of `../x` (missing) from `sub` where nobody can be asked:
/// the way forward is the panel command for that session.
fn refused_without_channel(tree: &Tree, session: &str) -> String {
    let sub = tree.sub();
    let target = tree.top.join("proj/x").display().to_string();
    let grant = panel_grant_command(&[target], session, true);
    outside_reason_no_channel(&sub, "../x", &sub, Some(&grant))
}

fn call(bridge: &mut Bridge, request: Value) -> Vec<Value> {
    bridge
        .handle(request.to_string().as_bytes())
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The caller fields the plugin sends for an agent in `cwd`.
fn caller(session: &str, cwd: &str, policy: &str) -> Value {
    json!({"session": session, "cwd": cwd, "approval": {"service": true, "policy": policy}})
}

fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
        base.extend(extra.clone());
    }
    base
}

fn judge(
    bridge: &mut Bridge,
    id: u64,
    caller: &Value,
    tool: &str,
    call_id: &str,
    arguments: Value,
) -> Vec<Value> {
    let params = with(
        caller.clone(),
        json!({"tool": tool, "callId": call_id, "arguments": arguments}),
    );
    call(
        bridge,
        json!({"id": id, "method": "judge", "params": params}),
    )
}

fn answer(bridge: &mut Bridge, id: u64, decision: &str) -> Value {
    let out = call(
        bridge,
        json!({"id": id, "method": "approval_answer", "params": {"decision": decision}}),
    );
    assert_eq!(out.len(), 1, "{out:?}");
    out[0]["result"].clone()
}

fn facet(bridge: &mut Bridge, id: u64, caller: &Value, call_id: &str, arguments: Value) -> Value {
    let params = with(
        caller.clone(),
        json!({"callId": call_id, "arguments": arguments}),
    );
    let out = call(
        bridge,
        json!({"id": id, "method": "facet", "params": params}),
    );
    assert_eq!(out.len(), 1, "{out:?}");
    out[0].clone()
}

#[test]
fn the_registrations_are_the_bridges() {
    let tree = Tree::new();
    let mut bridge = Bridge::with_state_dir(tree.state.clone());
    let hello = call(
        &mut bridge,
        json!({"id": 1, "method": "hello", "protocol": 1}),
    );
    assert_eq!(hello[0]["result"]["version"], env!("CARGO_PKG_VERSION"));
    let specs = call(
        &mut bridge,
        json!({"id": 2, "method": "configure", "params": {"config": {"mode": "deny"}}}),
    );
    insta::assert_json_snapshot!("dsh_bridge_specs", specs[0]["result"]);
    assert_eq!(
        specs[0]["result"]["rule"]["text"],
        json!(facet_core::seed::facet_rule_text())
    );
}

#[test]
fn protocol_faults_are_named() {
    let tree = Tree::new();
    let mut bridge = Bridge::with_state_dir(tree.state.clone());
    let wrong = call(
        &mut bridge,
        json!({"id": 1, "method": "hello", "protocol": 2}),
    );
    assert_eq!(wrong[0]["error"]["code"], "PROTOCOL_MISMATCH");
    let early = call(
        &mut bridge,
        json!({"id": 2, "method": "judge", "params": {}}),
    );
    assert_eq!(early[0]["error"]["code"], "NOT_CONFIGURED");
    let bad = call(
        &mut bridge,
        json!({"id": 3, "method": "configure", "params": {"config": {"mode": "loud"}}}),
    );
    assert_eq!(bad[0]["error"]["code"], "CONFIG_INVALID");
    assert_eq!(
        bad[0]["error"]["message"],
        "dsh-facet: config `mode` must be one of ask, deny, off, not \"loud\""
    );
    let unknown = call(&mut bridge, json!({"id": 4, "method": "grant"}));
    assert_eq!(unknown[0]["error"]["code"], "UNKNOWN_METHOD");
    let answers = bridge.handle(b"{not json");
    let garbage: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!(garbage["id"], Value::Null);
    assert_eq!(garbage["error"]["code"], "BAD_REQUEST");
    let stray = call(
        &mut bridge,
        json!({"id": 9, "method": "approval_answer", "params": {"decision": "allowed-once"}}),
    );
    assert_eq!(stray[0]["error"]["code"], "UNKNOWN_CALL");
}

#[test]
fn every_approval_outcome_settles_the_question() {
    let tree = Tree::new();
    let sub = tree.sub();
    let mut bridge = tree.bridge("ask");
    let asked = outside_reason(&sub, "../x", &sub, Mode::Ask);
    for (id, decision, verdict) in [
        (10, "allowed-once", json!({"verdict": "allow"})),
        (
            11,
            "rejected",
            json!({"verdict": "deny", "reason": format!("the user rejected tool \"read\": {asked}")}),
        ),
        (
            12,
            "cancelled",
            json!({"verdict": "deny", "reason": format!("approval for tool \"read\" was cancelled: {asked}")}),
        ),
        (
            13,
            "unavailable",
            json!({"verdict": "deny", "reason": refused_without_channel(&tree, "s13")}),
        ),
        (
            14,
            "something new",
            json!({"verdict": "deny", "reason": refused_without_channel(&tree, "s14")}),
        ),
    ] {
        // A session of its own each: an unanswered one is not asked again.
        let who = caller(&format!("s{id}"), &sub, "ask");
        let question = judge(
            &mut bridge,
            id,
            &who,
            "read",
            "c",
            json!({"file_path": "../x"}),
        );
        assert_eq!(
            question,
            vec![json!({"id": id, "approval": {"toolName": "read", "reason": asked}})]
        );
        assert_eq!(answer(&mut bridge, id, decision), verdict, "{decision}");
    }
    // After `unavailable` the session has no channel: refused at once, and its
    // binding says why; a session that was answered is still asked.
    let unanswered = caller("s13", &sub, "ask");
    let again = judge(
        &mut bridge,
        15,
        &unanswered,
        "read",
        "c",
        json!({"file_path": "../x"}),
    );
    assert_eq!(
        again[0]["result"],
        json!({"verdict": "deny", "reason": refused_without_channel(&tree, "s13")})
    );
    let context = call(
        &mut bridge,
        json!({"id": 16, "method": "context", "params": unanswered}),
    );
    let text = context[0]["result"]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "outside the facet: {NO_CHANNEL_REACH}\n{}",
            panel_line("s13")
        )),
        "{text}"
    );
    let answered = judge(
        &mut bridge,
        17,
        &caller("s11", &sub, "ask"),
        "read",
        "c",
        json!({"file_path": "../x"}),
    );
    assert!(answered[0].get("approval").is_some(), "{answered:?}");
    let who = caller("s1", &sub, "ask");
    // Inside: no question; `bash` and other unjudged tools: allowed without state.
    let inside = judge(
        &mut bridge,
        20,
        &who,
        "read",
        "c",
        json!({"file_path": "room/a.rs"}),
    );
    assert_eq!(inside[0]["result"], json!({"verdict": "allow"}));
    let bash = judge(
        &mut bridge,
        21,
        &caller("s2", &sub, "ask"),
        "bash",
        "c",
        json!({"command": "cat ../x"}),
    );
    assert_eq!(bash[0]["result"], json!({"verdict": "allow"}));
    let recorded: Vec<_> = fs::read_dir(&tree.state)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        !recorded
            .iter()
            .any(|name| name.to_string_lossy().starts_with("s2")),
        "{recorded:?}"
    );
}

#[test]
fn without_a_channel_or_a_session_nothing_is_asked() {
    let tree = Tree::new();
    let sub = tree.sub();
    let mut bridge = tree.bridge("ask");
    // The approval policy `never`: refused at once, widening included.
    let never = caller("s1", &sub, "never");
    let read = judge(
        &mut bridge,
        1,
        &never,
        "read",
        "c",
        json!({"file_path": "../x"}),
    );
    assert_eq!(
        read[0]["result"]["reason"],
        json!(refused_without_channel(&tree, "s1"))
    );
    let add = judge(
        &mut bridge,
        2,
        &never,
        "facet",
        "c",
        json!({"action": "add", "paths": [".."]}),
    );
    assert_eq!(
        add[0]["result"]["reason"],
        json!(widen_refused_no_channel(Some(&panel_grant_command(
            &[tree.top.join("proj").display().to_string()],
            "s1",
            false
        ))))
    );
    // No approval service composed at all: the same.
    let none = json!({"session": "s1", "cwd": sub, "approval": {"service": false, "policy": null}});
    let read = judge(
        &mut bridge,
        3,
        &none,
        "grep",
        "c",
        json!({"pattern": "x", "path": "/"}),
    );
    assert_eq!(read[0]["result"]["verdict"], "deny");
    // No agent (no session, no recorded directory): a judged call is refused.
    let orphan =
        json!({"session": null, "cwd": null, "approval": {"service": true, "policy": "ask"}});
    let refused = judge(
        &mut bridge,
        4,
        &orphan,
        "read",
        "c",
        json!({"file_path": "/etc/hosts"}),
    );
    assert_eq!(refused[0]["result"]["verdict"], "deny");
    let reason = refused[0]["result"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("facet could not tell this session's facet"),
        "{reason}"
    );
    let context = call(
        &mut bridge,
        json!({"id": 5, "method": "context", "params": orphan}),
    );
    assert_eq!(context[0]["result"]["text"], "");
}

#[test]
fn an_add_is_recorded_only_for_the_call_the_user_allowed() {
    let tree = Tree::new();
    let sub = tree.sub();
    let shared = tree.top.join("proj/shared").display().to_string();
    let mut bridge = tree.bridge("ask");
    let who = caller("s1", &sub, "ask");
    let add = json!({"action": "add", "paths": ["../shared"]});
    // Straight to the body, never asked: refused, nothing recorded.
    let direct = facet(&mut bridge, 1, &who, "c1", add.clone());
    assert_eq!(direct["error"]["code"], "NOT_APPROVED", "{direct}");
    // Asked, allowed — but the body runs under another call id: refused.
    let question = judge(&mut bridge, 2, &who, "facet", "c2", add.clone());
    assert_eq!(
        question[0]["approval"]["reason"],
        json!(widen_reason(&["../shared".to_owned()]))
    );
    assert_eq!(
        answer(&mut bridge, 2, "allowed-once"),
        json!({"verdict": "allow"})
    );
    let other = facet(&mut bridge, 3, &who, "c9", add.clone());
    assert_eq!(other["error"]["code"], "NOT_APPROVED");
    // The allowed call: recorded, and the approval is used up.
    let granted = facet(&mut bridge, 4, &who, "c2", add.clone());
    let value = &granted["result"];
    assert_eq!(value["changed"], json!([shared]), "{granted}");
    assert_eq!(value["granted"], json!([shared]));
    assert_eq!(value["facet"], json!(sub));
    let summary = value["summary"].as_str().unwrap();
    assert!(summary.starts_with(&format!("Granted {shared} for the rest of this session.\nfacet: {sub}\ngranted outside it: {shared}")), "{summary}");
    let again = facet(&mut bridge, 5, &who, "c2", add);
    assert_eq!(again["error"]["code"], "NOT_APPROVED");
    // The grant opens the path for the guard, and shows in the binding.
    let read = judge(
        &mut bridge,
        6,
        &who,
        "read",
        "c",
        json!({"file_path": "../shared/x.rs"}),
    );
    assert_eq!(read[0]["result"], json!({"verdict": "allow"}));
    let context = call(
        &mut bridge,
        json!({"id": 7, "method": "context", "params": who}),
    );
    assert!(
        context[0]["result"]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("granted outside it: {shared}"))
    );
    // remove and reset need nobody.
    let removed = facet(
        &mut bridge,
        8,
        &who,
        "c3",
        json!({"action": "remove", "paths": ["../shared"]}),
    );
    assert_eq!(removed["result"]["changed"], json!([shared]));
    assert_eq!(removed["result"]["granted"], json!([]));
    let reset = facet(&mut bridge, 9, &who, "c4", json!({"action": "reset"}));
    assert_eq!(reset["result"]["action"], "reset");
    // Bad arguments name each field.
    let bad = facet(
        &mut bridge,
        10,
        &who,
        "c5",
        json!({"action": "grow", "extra": 1}),
    );
    assert_eq!(bad["error"]["code"], "INVALID_ARGUMENT");
    let issues: Vec<&str> = bad["error"]["details"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(issues, vec!["extra", "action"]);
}

#[test]
fn where_nobody_is_asked_an_add_records_nothing() {
    let tree = Tree::new();
    let sub = tree.sub();
    let top = tree.top.join("proj").display().to_string();
    // Mode off (from the row), and a session at the project's top level (unscoped).
    for (mode, cwd) in [("off", sub.as_str()), ("ask", top.as_str())] {
        let mut bridge = tree.bridge(mode);
        let who = caller(&format!("s-{mode}"), cwd, "ask");
        let add = json!({"action": "add", "paths": ["/tmp"]});
        let verdict = judge(&mut bridge, 1, &who, "facet", "c1", add.clone());
        assert_eq!(verdict[0]["result"], json!({"verdict": "allow"}), "{mode}");
        let out = facet(&mut bridge, 2, &who, "c1", add);
        assert_eq!(out["result"]["granted"], json!([]), "{out}");
        assert!(
            out["result"]["summary"]
                .as_str()
                .unwrap()
                .starts_with("Nothing was recorded"),
            "{out}"
        );
        let status = facet(&mut bridge, 3, &who, "c2", json!({"action": "status"}));
        assert_eq!(status["result"]["mode"], mode);
    }
}

#[test]
fn the_loop_skips_an_overlong_line_and_ends_at_eof() {
    let tree = Tree::new();
    let mut input = vec![b'x'; facet::dsh_bridge::wire::MAX_LINE_BYTES + 10];
    input.extend_from_slice(b"\n");
    // An overlong request keeps its id, so the plugin's call is answered.
    input.extend_from_slice(br#"{"id":7,"method":"judge","params":{"arguments":""#);
    input.extend(std::iter::repeat_n(
        b'a',
        facet::dsh_bridge::wire::MAX_LINE_BYTES,
    ));
    input.extend_from_slice(b"\"}}\n\n{\"id\":1,\"method\":\"hello\",\"protocol\":1}\n");
    let mut output = Vec::new();
    serve(
        input.as_slice(),
        &mut output,
        Bridge::with_state_dir(tree.state.clone()),
    )
    .unwrap();
    let lines: Vec<Value> = output
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["error"]["code"], "TOO_LARGE");
    assert_eq!(lines[0]["id"], Value::Null);
    assert_eq!(lines[1]["error"]["code"], "TOO_LARGE");
    assert_eq!(lines[1]["id"], 7);
    assert_eq!(lines[2]["result"]["name"], "facet");
}

#[test]
fn the_process_answers_and_exits_when_stdin_closes() {
    let tree = Tree::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_facet"))
        .arg("dsh-bridge")
        .env("FACET_STATE_DIR", &tree.state)
        .env("HOME", &tree.top)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":1,\"method\":\"hello\",\"protocol\":1}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let hello: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    assert_eq!(hello["result"]["protocol"], 1);
    assert!(Path::new(&tree.state).exists());
}
