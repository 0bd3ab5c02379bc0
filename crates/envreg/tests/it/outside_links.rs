//! The canary check of issue 14 §1 through the CLI: a registry whose files link to
//! outside files holding a canary string; no command (get, list, find, resolve,
//! resolve-operation, context, validate; human text and `--json`) prints any of it.
//! On the old code `get service evil --json` printed the outside file whole, and
//! `validate` quoted a line of a linked text file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::symlink;

use common::Sandbox;

const CANARY: &str = "canary-7f3a9c-outside";

fn sandbox_with_links() -> Sandbox {
    let sandbox = Sandbox::with_example();
    let outside = sandbox.tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("sessions")).unwrap();
    let registry = sandbox.registry();
    let secret = outside.join("secret.yaml");
    std::fs::write(
        &secret,
        format!(
            "id: evil\nschemaVersion: 1\nname: {CANARY}\naliases: [{CANARY}]\nvariables: {{ token: {CANARY} }}\n"
        ),
    )
    .unwrap();
    symlink(&secret, registry.join("services/evil.yaml")).unwrap();
    let notes = outside.join("notes.txt");
    std::fs::write(&notes, format!("{CANARY}: [a line of some text file\n")).unwrap();
    symlink(&notes, registry.join("environments/leak.yaml")).unwrap();
    let skill = outside.join("skill.md");
    std::fs::write(
        &skill,
        format!("---\nname: helm-deploy-evil\ndescription: {CANARY}\n---\n"),
    )
    .unwrap();
    symlink(&skill, registry.join("skills/helm-deploy-evil.md")).unwrap();
    std::fs::write(
        outside.join("sessions/s1.json"),
        format!("{{\"sessionId\": \"s1\", \"defaultEnvironmentId\": \"{CANARY}\"}}"),
    )
    .unwrap();
    symlink(outside.join("sessions"), registry.join("sessions")).unwrap();
    sandbox
}

#[test]
fn no_command_prints_anything_of_an_outside_file() {
    let sandbox = sandbox_with_links();
    let commands: &[&[&str]] = &[
        &["list"],
        &["list", "--kind", "service"],
        &["list", "--query", "canary"],
        &["get", "service", "evil"],
        &["get", "environment", "leak"],
        &["find", "canary"],
        &["find", "evil"],
        &["resolve", "checkout-api", "--env", "prod"],
        &["resolve", "evil", "--env", "prod"],
        &[
            "resolve-operation",
            "redeploy",
            "--service",
            "checkout-api",
            "--env",
            "staging",
        ],
        &["context", "--session", "s1"],
        &["validate"],
    ];
    let mut validate_text = String::new();
    for args in commands {
        for json in [false, true] {
            let mut cmd = sandbox.configured();
            if json {
                cmd.arg("--json");
            }
            let output = cmd.args(*args).output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(
                !text.to_lowercase().contains(CANARY),
                "`envreg {}{}` printed outside content:\n{text}",
                if json { "--json " } else { "" },
                args.join(" ")
            );
            if args == &["validate"] && !json {
                validate_text = text;
            }
        }
    }
    // The report names each file and says why, without the content.
    for file in ["services/evil.yaml", "environments/leak.yaml"] {
        assert!(validate_text.contains(file), "{validate_text}");
    }
    assert!(validate_text.contains("symbolic link"), "{validate_text}");
}

#[test]
fn the_context_of_a_session_behind_a_link_out_is_not_read_or_written() {
    let sandbox = sandbox_with_links();
    let output = sandbox
        .configured()
        .args(["--json", "context", "--session", "s2", "--set", "dev"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("\"persisted\": false") || text.contains("\"persisted\":false"),
        "{text}"
    );
    let outside = sandbox.tmp.path().join("outside/sessions");
    let names: Vec<_> = std::fs::read_dir(outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["s1.json"], "nothing new written outside");
}
