//! The plugins' shared JSON-lines client (`integrations/dsh-bridge-client`), tested on
//! its own under the Node 22 dsh runs on: `node --test` over its test file, against a
//! stand-in bridge (replies matched to requests, mid-call questions, errors, a child
//! that dies or is closed, lines that are not replies). The real bridges are tested
//! through it inside real dsh by envreg's and facet's `dsh_live` tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use dsh_live::Dsh;
use test_support::repo_root;

#[test]
fn the_shared_bridge_client_passes_its_node_tests() {
    let dsh = Dsh::find();
    let tests = repo_root().join("integrations/dsh-bridge-client/test/client.test.js");
    let out = Command::new(dsh.node_dir.join("node"))
        .arg("--test")
        .arg(&tests)
        .env_clear()
        .env("PATH", &dsh.node_dir)
        .env("LANG", "C.UTF-8")
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node --test failed:\n{report}");
    let count = |key: &str| -> u32 {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(&format!("# {key} ")))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `# {key}` line in:\n{report}"))
    };
    assert!(count("pass") > 0, "no test ran:\n{report}");
    assert_eq!(count("fail"), 0, "{report}");
    assert_eq!(count("cancelled"), 0, "{report}");
}
