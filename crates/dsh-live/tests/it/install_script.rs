//! `scripts/install-dsh-plugins.sh` and the plugins' shared client: the client is
//! installed into the profile beside whichever plugins are asked for, once, and the
//! script refuses a plugin that names another version of it. (Installing both plugins
//! and running them in dsh is what envreg's and facet's `dsh_live` tests do.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use dsh_live::{Dsh, DshHome};
use test_support::{copy_dir, repo_root};

const CLIENT: &str = "dsh-bridge-client";

/// Every folder named `name` under `dir` (links not followed).
fn folders_named(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() == name {
                found.push(entry.path());
            }
            folders_named(&entry.path(), name, found);
        }
    }
}

#[test]
fn one_plugin_alone_gets_the_client_beside_it_once_and_resolves_it() {
    let dsh = Dsh::find();
    let home = DshHome::new(&dsh);
    let out = home.try_install_plugins(&["dsh-envreg"]);
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    assert!(report.contains("dsh-envreg 0.1.0 installed"), "{report}");

    let modules = home.profile_dir().join("node_modules");
    let mut copies = Vec::new();
    folders_named(&modules, CLIENT, &mut copies);
    assert_eq!(copies, vec![modules.join(CLIENT)], "{report}");
    assert!(
        !modules.join("dsh-facet").exists(),
        "only dsh-envreg was asked for"
    );

    // What Node (and so dsh) resolves the plugin's import to.
    let resolved = Command::new(dsh.node_dir.join("node"))
        .args([
            "-p",
            "require('node:module').createRequire(process.argv[1]).resolve('dsh-bridge-client')",
        ])
        .arg(modules.join("dsh-envreg/package.json"))
        .output()
        .unwrap();
    assert!(resolved.status.success(), "{resolved:?}");
    let expected = std::fs::canonicalize(modules.join(CLIENT).join("index.js")).unwrap();
    assert_eq!(
        Path::new(String::from_utf8_lossy(&resolved.stdout).trim()),
        expected
    );
}

#[test]
fn a_plugin_naming_another_client_version_is_refused() {
    let dsh = Dsh::find();
    let home = DshHome::new(&dsh);
    // A checkout whose dsh-facet was left behind at another client version.
    let checkout = home.scratch("checkout");
    let root = repo_root();
    std::fs::create_dir_all(checkout.join("scripts")).unwrap();
    std::fs::copy(
        root.join("scripts/install-dsh-plugins.sh"),
        checkout.join("scripts/install-dsh-plugins.sh"),
    )
    .unwrap();
    for package in [CLIENT, "dsh-facet"] {
        copy_dir(
            &root.join("integrations").join(package),
            &checkout.join("integrations").join(package),
        );
    }
    let manifest = checkout.join("integrations/dsh-facet/package.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    json["peerDependencies"][CLIENT] = "0.0.9".into();
    std::fs::write(&manifest, json.to_string()).unwrap();

    let out = home.try_install_plugins_from(&checkout, &["dsh-facet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "dsh-facet wants dsh-bridge-client 0.0.9 but dsh-bridge-client 0.1.0 is installed; \
             install both from one checkout"
        ),
        "{stderr}"
    );
}
