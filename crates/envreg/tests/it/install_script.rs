//! `scripts/install.sh` without a release build: its argument handling, its errors,
//! and the install step itself, with a stand-in `cargo` (the `CARGO` variable the
//! script honours) that records its arguments and a target folder holding stand-in
//! release binaries. The real build is `cargo build --release --locked`, run by hand
//! (see README "Install"); CI only proves the script around it.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    test_support::repo_path("scripts/install.sh")
}

fn executable(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

struct Scratch {
    tmp: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let scratch = Scratch {
            tmp: tempfile::tempdir().unwrap(),
        };
        // A cargo that records how it was called and builds nothing.
        executable(
            &scratch.path("cargo"),
            &format!(
                "#!/bin/sh\necho \"$@\" >> '{}'\nexit \"${{FAKE_CARGO_EXIT:-0}}\"\n",
                scratch.path("cargo-calls").display()
            ),
        );
        scratch
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Stand-in release binaries where the script looks for them.
    fn with_built_binaries(self) -> Scratch {
        for name in ["envreg", "facet", "agent-exec"] {
            executable(
                &self.path(&format!("target/release/{name}")),
                &format!("#!/bin/sh\necho '{name} 9.9.9 (commit test)'\n"),
            );
        }
        self
    }

    fn run(&self, args: &[&str], path_var: &str) -> Output {
        Command::new("bash")
            .arg(script())
            .args(args)
            .current_dir(self.tmp.path())
            .env("CARGO", self.path("cargo"))
            .env("CARGO_TARGET_DIR", self.path("target"))
            .env("HOME", self.path("home"))
            .env("PATH", path_var)
            .output()
            .unwrap()
    }

    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.path("cargo-calls")).unwrap_or_default()
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

#[test]
fn usage_errors_exit_2_and_build_nothing() {
    let scratch = Scratch::new();
    for (args, message) in [
        (&["--bogus"][..], "unknown argument: --bogus"),
        (&["--prefix"][..], "--prefix needs a folder"),
        (&["--prefix="][..], "--prefix is empty"),
        (&["--prefix", ""][..], "--prefix is empty"),
        (&["extra"][..], "unknown argument: extra"),
    ] {
        let output = scratch.run(args, SYSTEM_PATH);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(
            text(&output).contains(message),
            "{args:?}: {}",
            text(&output)
        );
    }
    assert_eq!(
        scratch.cargo_calls(),
        "",
        "no build may start on a usage error"
    );
}

#[test]
fn help_says_what_it_does() {
    let output = Scratch::new().run(&["--help"], SYSTEM_PATH);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output);
    assert!(
        help.starts_with("usage: scripts/install.sh [--prefix DIR]"),
        "{help}"
    );
    assert!(help.contains("~/.local/bin"), "{help}");
}

#[test]
fn an_unusable_destination_fails_before_the_build() {
    let scratch = Scratch::new();
    std::fs::write(scratch.path("a-file"), "").unwrap();
    let output = scratch.run(&["--prefix", "a-file"], SYSTEM_PATH);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("cannot create"), "{}", text(&output));
    assert_eq!(scratch.cargo_calls(), "");
}

#[test]
fn a_failed_build_installs_nothing() {
    let scratch = Scratch::new().with_built_binaries();
    let output = Command::new("bash")
        .arg(script())
        .args(["--prefix", "dest"])
        .current_dir(scratch.tmp.path())
        .env("CARGO", scratch.path("cargo"))
        .env("CARGO_TARGET_DIR", scratch.path("target"))
        .env("FAKE_CARGO_EXIT", "101")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("nothing was installed"),
        "{}",
        text(&output)
    );
    let left: Vec<_> = std::fs::read_dir(scratch.path("dest/bin"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn installs_the_three_binaries_and_says_whether_the_folder_is_on_path() {
    let scratch = Scratch::new().with_built_binaries();
    // Default prefix: ~/.local, relative to the HOME given.
    let output = scratch.run(&[], SYSTEM_PATH);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        scratch.cargo_calls(),
        "build --release --locked -p envreg -p facet -p agent-exec\n"
    );
    let bin = scratch.path("home/.local/bin");
    let out = text(&output);
    for name in ["envreg", "facet", "agent-exec"] {
        let installed = bin.join(name);
        let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "{name}");
        assert!(
            out.contains(&format!(
                "installed {} ({name} 9.9.9 (commit test))",
                installed.display()
            )),
            "{out}"
        );
    }
    assert!(
        out.contains(&format!("{} is NOT on PATH", bin.display())),
        "{out}"
    );
    // No temporary copies left behind.
    assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 3);

    // A relative --prefix, with its bin folder on PATH: replaced in place.
    let dest = scratch.path("dest/bin");
    let path_var = format!("{SYSTEM_PATH}:{}", dest.display());
    let output = scratch.run(&["--prefix=dest"], &path_var);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains(&format!("{} is on PATH", dest.display())),
        "{}",
        text(&output)
    );
    assert!(dest.join("agent-exec").is_file());
}
