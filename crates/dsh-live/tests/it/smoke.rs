//! Real dsh headless runs one turn against the scripted model: the model calls dsh's
//! own `read` tool, dsh runs it and sends the result back, and dsh prints the model's
//! last text. Proves the peer, the scripted server's dsh dialect (title side requests,
//! `[DONE]`) and the test support together.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_live::{Dsh, DshHome, tool_names, tool_results, turn_requests};
use model_script::{Script, ScriptedServer, Turn};
use serde_json::json;

#[test]
fn dsh_runs_a_tool_turn_against_the_scripted_model() {
    let dsh = Dsh::find();
    let home = DshHome::new(&dsh);
    let work = home.scratch("project");
    std::fs::write(work.join("notes.txt"), "the marker is 7f3a\n").unwrap();
    let server = ScriptedServer::start(Script::new(vec![
        Turn::tool_call(
            "call_read_1",
            "read",
            json!({"file_path": work.join("notes.txt")}),
        ),
        Turn::text("read it: done"),
    ]));

    let run = home.session(&server).cwd(&work).run("read notes.txt");
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "read it: done", "{run:#?}");
    assert!(
        !run.survivors,
        "a process of the run outlived dsh: {run:#?}"
    );

    let turns = turn_requests(&server);
    assert_eq!(turns.len(), 2, "two conversation requests: {turns:#?}");
    assert!(tool_names(&turns[0]).iter().any(|n| n == "read"));
    // What dsh sends a DeepSeek model, recorded as sent.
    assert_eq!(turns[0]["stream"], true);
    assert!(turns[0].get("thinking").is_some(), "{}", turns[0]);
    let results = tool_results(&turns[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "call_read_1");
    assert!(results[0].1.contains("the marker is 7f3a"), "{results:?}");
    // Title side requests were answered without eating a scripted turn.
    assert_eq!(server.turns_served(), 2);
    assert_eq!(server.requests_past_script(), 0);
}

#[test]
#[should_panic(expected = "missing peer: DeepSeek Harness (dsh 0.1.0-rc.8) at /nonexistent/dsh")]
fn a_missing_dsh_fails_loudly() {
    let node_dir = Dsh::find().node_dir;
    let _ = Dsh::at("/nonexistent/dsh", node_dir);
}
