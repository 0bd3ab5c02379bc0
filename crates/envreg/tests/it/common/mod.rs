//! Shared helpers for the CLI tests: a private copy of the example registry, a command
//! that cannot see the developer's own environment, and output redaction for snapshots.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// The example registry in the repository.
pub fn example_registry() -> PathBuf {
    test_support::repo_path("examples/registry")
}

/// A scratch folder holding a copy of the example registry at `<tmp>/registry`, plus
/// an empty `<tmp>/home` used as `$HOME`, so user-level skill folders of whoever runs the
/// tests never leak into results.
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

impl Sandbox {
    pub fn with_example() -> Sandbox {
        let sandbox = Sandbox::empty();
        test_support::copy_example("registry", &sandbox.registry());
        sandbox
    }

    pub fn empty() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        Sandbox { tmp }
    }

    pub fn registry(&self) -> PathBuf {
        self.tmp.path().join("registry")
    }

    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    /// `envreg --registry <copy> ARGS…`, run from the scratch folder.
    pub fn envreg(&self) -> Command {
        let mut cmd = self.bare();
        cmd.arg("--registry").arg(self.registry());
        cmd
    }

    /// `envreg` without `--registry`, run from the scratch folder.
    pub fn bare(&self) -> Command {
        let mut cmd = Command::cargo_bin("envreg").unwrap();
        cmd.current_dir(self.tmp.path())
            .env_remove("ENVREG_REGISTRY")
            .env_remove("ENVREG_SESSION_ID")
            .env_remove("DSH_HOME")
            .env_remove("KUBECONFIG_STAGING")
            .env_remove("KUBECONFIG_PROD")
            .env("HOME", self.home())
            // Where servers record the registry they serve for their host's hook
            // (`envreg_core::served`): private to this sandbox.
            .env("TMPDIR", self.home())
            .env("NO_COLOR", "1");
        cmd
    }

    /// `envreg --registry <copy>` with the example's credentials configured (the two
    /// kubeconfig variables set, the Grafana token file present), so output shows only
    /// what a test is about, not `CREDENTIAL_MISSING` warnings.
    pub fn configured(&self) -> Command {
        let token = self.home().join(".config/acme/grafana-prod.token");
        std::fs::create_dir_all(token.parent().unwrap()).unwrap();
        std::fs::write(&token, "not-a-real-token").unwrap();
        let mut cmd = self.envreg();
        cmd.env("KUBECONFIG_PROD", "/nonexistent/kubeconfig-prod")
            .env("KUBECONFIG_STAGING", "/nonexistent/kubeconfig-staging");
        cmd
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.registry().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Replace the sandbox path and timestamps so snapshots do not change per run.
    pub fn redact(&self, text: &str) -> String {
        redact(text, self.tmp.path())
    }
}

pub fn redact(text: &str, tmp: &Path) -> String {
    let out = text.replace(&tmp.display().to_string(), "[TMP]");
    // RFC 3339 timestamps (hand-written ones included: simpler than telling them apart)
    // and backup stamps like 20261130T235901Z.
    let rfc3339 =
        regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)").unwrap();
    let compact = regex::Regex::new(r"\d{8}T\d{6}Z").unwrap();
    let out = rfc3339.replace_all(&out, "[TIMESTAMP]");
    compact.replace_all(&out, "[STAMP]").into_owned()
}

/// stdout, stderr and exit code of a finished command, as one text for snapshots.
pub fn transcript(sandbox: &Sandbox, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut text = format!("exit: {}\n", output.status.code().unwrap_or(-1));
    if !stdout.is_empty() {
        text.push_str("--- stdout\n");
        text.push_str(&stdout);
    }
    if !stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&stderr);
    }
    sandbox.redact(&text)
}

/// Parse stdout as JSON, with the sandbox path and save timestamps redacted.
pub fn json_of(sandbox: &Sandbox, output: &Output) -> serde_json::Value {
    let text = sandbox.redact(&String::from_utf8_lossy(&output.stdout));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{text}"))
}
