//! Property: for every path-carrying tool, the decision on a random path (through
//! symbolic links in and out, `..`, missing tails) is "no opinion" exactly when the
//! containment crate places its canonical target inside the facet or a grant.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use facet_core::{Decision, Mode, Policy, Session};
use proptest::prelude::*;
use serde_json::json;

struct Tree {
    _dir: tempfile::TempDir,
    top: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap();
    for folder in ["proj/room/src", "proj/room2", "proj/shared", "out"] {
        fs::create_dir_all(top.join(folder)).unwrap();
    }
    symlink("../../out", top.join("proj/room/to_out")).unwrap();
    symlink("../shared", top.join("proj/room/to_shared")).unwrap();
    symlink("src", top.join("proj/room/to_src")).unwrap();
    symlink(top.join("proj/room"), top.join("out/back_in")).unwrap();
    symlink("missing", top.join("proj/room/dangling")).unwrap();
    symlink("loop", top.join("proj/room/loop")).unwrap();
    Tree { _dir: dir, top }
}

fn raw_path() -> impl Strategy<Value = String> {
    let part = prop::sample::select(vec![
        "src",
        "to_out",
        "to_shared",
        "to_src",
        "back_in",
        "dangling",
        "loop",
        "..",
        ".",
        "room",
        "room2",
        "shared",
        "out",
        "proj",
        "new",
    ]);
    (any::<bool>(), prop::collection::vec(part, 1..6)).prop_map(|(absolute, parts)| {
        let joined = parts.join("/");
        if absolute {
            format!("/{joined}")
        } else {
            joined
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn decision_matches_the_containment_verdict(raw in raw_path(), granted in any::<bool>()) {
        let t = tree();
        let room = t.top.join("proj/room");
        // Absolute paths are written under the temp folder, not the real `/`.
        let raw = if raw.starts_with('/') { format!("{}{raw}", t.top.display()) } else { raw };
        let mut session = Session::new("p", room.clone(), true, Mode::Ask);
        if granted {
            session.grant(&["../shared".to_string()], &room).unwrap();
        }
        let expected_inside = match containment::resolve(&raw, &room) {
            Ok(resolved) => {
                containment::is_within(resolved.path(), &room)
                    || (granted && containment::is_within(resolved.path(), &t.top.join("proj/shared")))
            }
            Err(_) => false,
        };
        let policy = Policy::default();
        for name in policy.tools().names() {
            for arg in &policy.tools().get(name).unwrap().path_args {
                let decision = policy.judge(name, &json!({ arg.clone(): raw.clone() }), &room, &session, true);
                prop_assert_eq!(decision == Decision::NoOpinion, expected_inside, "{} {} {}", name, arg, raw);
            }
        }
    }
}
