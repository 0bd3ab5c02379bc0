//! Nothing is read from, written to or unlinked through a symbolic link that leaves
//! the registry (issue 14 §1). Every test builds a registry and an "outside" folder in
//! one temp dir; the outside files hold a canary string that must never surface.
//!
//! Each case here loaded, read or wrote the outside file on the code before the fix,
//! except the ones marked as guards (a link that stays inside, a chain that comes back,
//! a user-configured skills folder outside, a hard link): those pass either way and pin
//! what must keep working, or what is documented as out of scope.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use envreg_core::skills::{SkillCatalog, SkillLookup, SkillRoots};
use envreg_core::{Registry, SessionId};
use serde_json::json;

const CANARY: &str = "CANARY-7f3a9c-outside-secret";

struct Layout {
    _tmp: tempfile::TempDir,
    registry: PathBuf,
    outside: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let registry = tmp.path().join("registry");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(registry.join("services")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let layout = Layout {
            _tmp: tmp,
            registry,
            outside,
        };
        layout.write("services/plain.yaml", &service("plain", "Plain"));
        layout
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.registry.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn write_outside(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.outside.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn link(&self, rel: &str, target: &Path) {
        let path = self.registry.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, path).unwrap();
    }

    fn open(&self) -> Registry {
        Registry::open(&self.registry).unwrap()
    }
}

fn service(id: &str, name: &str) -> String {
    format!("id: {id}\nschemaVersion: 1\nname: {name}\n")
}

/// The secret: a valid service record, so a loader that follows the link loads it.
fn secret_service(id: &str) -> String {
    service(id, CANARY)
}

/// Everything validation reports, as the JSON a tool returns.
fn validate_json(registry: &Registry) -> String {
    serde_json::to_string(&registry.validate()).unwrap()
}

fn assert_no_canary(text: &str) {
    assert!(
        !text.contains(CANARY),
        "the outside file's content leaked:\n{text}"
    );
}

/// The diagnostic reported on `file`, as JSON text.
fn diagnostic_on(registry: &Registry, file: &str) -> String {
    let out = registry.validate();
    let found: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.file.as_deref() == Some(file))
        .collect();
    assert!(!found.is_empty(), "no diagnostic on {file}: {out:#?}");
    serde_json::to_string(&found).unwrap()
}

#[test]
fn a_record_file_linking_out_is_not_loaded_and_the_diagnostic_names_the_link() {
    let l = Layout::new();
    let secret = l.write_outside("secret.yaml", &secret_service("evil"));
    l.link("services/evil.yaml", &secret);
    let r = l.open();
    assert!(r.snapshot().service("evil").is_none());
    assert!(r.get(envreg_core::RecordKind::Service, "evil").is_err());
    let d = diagnostic_on(&r, "services/evil.yaml");
    assert!(d.contains("FILE_UNREADABLE"), "{d}");
    assert!(d.contains("symbolic link"), "{d}");
    assert!(d.contains("services/evil.yaml"), "{d}");
    assert_no_canary(&validate_json(&r));
    // The rest of the registry still loads.
    assert!(r.snapshot().service("plain").is_some());
}

#[test]
fn a_link_to_any_text_file_outside_is_not_parsed_or_quoted() {
    let l = Layout::new();
    let text = l.write_outside("notes.txt", &format!("{CANARY}: [not a record\n"));
    l.link("services/notes.yaml", &text);
    let r = l.open();
    let d = diagnostic_on(&r, "services/notes.yaml");
    assert!(d.contains("FILE_UNREADABLE"), "{d}");
    // No line or column: there is no text of ours to point into.
    assert!(!d.contains("\"line\""), "{d}");
    assert_no_canary(&validate_json(&r));
}

#[test]
fn a_link_that_stays_inside_loads() {
    // Guard: passes before and after the fix.
    let l = Layout::new();
    l.write("shared/alias.yaml", &service("alias", "Alias"));
    l.link("services/alias.yaml", Path::new("../shared/alias.yaml"));
    let r = l.open();
    assert_eq!(r.snapshot().service("alias").unwrap().name, "Alias");
    assert!(r.validate().ok, "{:#?}", r.validate());
}

#[test]
fn a_chain_that_leaves_and_comes_back_is_judged_by_its_target_and_loads() {
    // Guard: the rule is the canonical target, which is inside.
    let l = Layout::new();
    l.write("shared/round.yaml", &service("round", "Round"));
    let hop = l.outside.join("hop.yaml");
    symlink(l.registry.join("shared/round.yaml"), &hop).unwrap();
    l.link("services/round.yaml", &hop);
    let r = l.open();
    assert_eq!(r.snapshot().service("round").unwrap().name, "Round");
}

#[test]
fn a_chain_that_leaves_for_good_is_refused() {
    let l = Layout::new();
    let secret = l.write_outside("secret.yaml", &secret_service("chain"));
    let hop = l.outside.join("hop.yaml");
    symlink(&secret, &hop).unwrap();
    l.link("shared/chain.yaml", &hop);
    l.link("services/chain.yaml", Path::new("../shared/chain.yaml"));
    let r = l.open();
    assert!(r.snapshot().service("chain").is_none());
    let d = diagnostic_on(&r, "services/chain.yaml");
    assert!(d.contains("symbolic link"), "{d}");
    assert_no_canary(&validate_json(&r));
}

#[test]
fn a_kind_folder_linking_out_is_not_listed() {
    // `services -> /etc`, with a temp dir standing in for /etc.
    let l = Layout::new();
    std::fs::remove_dir_all(l.registry.join("services")).unwrap();
    l.write_outside("etc/passwd.yaml", &secret_service("passwd"));
    l.write_outside("etc/hosts.yaml", &secret_service("hosts"));
    l.link("services", &l.outside.join("etc"));
    let r = l.open();
    assert_eq!(r.snapshot().count(envreg_core::RecordKind::Service), 0);
    let d = diagnostic_on(&r, "services");
    assert!(d.contains("symbolic link"), "{d}");
    let all = validate_json(&r);
    assert_no_canary(&all);
    // The outside folder is not even listed: its file names do not appear.
    assert!(!all.contains("passwd") && !all.contains("hosts"), "{all}");
}

#[test]
fn envreg_yaml_linking_out_is_not_read_and_defaults_apply() {
    let l = Layout::new();
    l.write(
        "environments/canary-env.yaml",
        "id: canary-env\nschemaVersion: 1\nname: E\ntier: dev\nplatform: vm\n",
    );
    let config = l.write_outside(
        "config.yaml",
        &format!("# {CANARY}\ndefaults: {{ environmentId: canary-env }}\nwritePolicy: {{ requireApprovalForDelete: false }}\n"),
    );
    l.link("envreg.yaml", &config);
    let r = l.open();
    let cfg = r.config();
    assert_eq!(cfg.defaults.environment_id, None);
    assert!(
        cfg.write_policy.require_approval_for_delete,
        "defaults apply (fail closed)"
    );
    let d = diagnostic_on(&r, "envreg.yaml");
    assert!(
        d.contains("CONFIG_INVALID") && d.contains("symbolic link"),
        "{d}"
    );
    assert_no_canary(&validate_json(&r));
}

#[test]
fn a_session_file_linking_out_is_not_read() {
    let l = Layout::new();
    let outside = l.write_outside(
        "s1.json",
        &json!({ "sessionId": "s1", "defaultEnvironmentId": "canary-env" }).to_string(),
    );
    l.link("sessions/s1.json", &outside);
    let r = l.open();
    let ctx = r.get_context(&SessionId::new("s1").unwrap());
    assert_eq!(ctx.default_environment_id, None);
}

#[test]
fn a_sessions_folder_linking_out_is_not_written() {
    let l = Layout::new();
    l.write(
        "environments/dev.yaml",
        "id: dev\nschemaVersion: 1\nname: Dev\ntier: dev\nplatform: vm\n",
    );
    std::fs::create_dir_all(l.outside.join("sessions")).unwrap();
    l.link("sessions", &l.outside.join("sessions"));
    let r = l.open();
    let ctx = r
        .set_context(&SessionId::new("s1").unwrap(), Some("dev"))
        .unwrap();
    assert!(!ctx.persisted);
    let warning = serde_json::to_string(&ctx.warnings).unwrap();
    assert!(warning.contains("symbolic link"), "{warning}");
    assert_eq!(
        std::fs::read_dir(l.outside.join("sessions"))
            .unwrap()
            .count(),
        0
    );
}

fn save_service(r: &Registry, id: &str) -> Result<envreg_core::SaveOutput, envreg_core::EnvError> {
    let plan = r.plan_save(
        envreg_core::RecordKind::Service,
        json!({ "id": id, "schemaVersion": 1, "name": "Saved" }),
        false,
    )?;
    r.commit_save(plan)
}

fn delete_service(
    r: &Registry,
    id: &str,
) -> Result<envreg_core::DeleteOutput, envreg_core::EnvError> {
    let plan = r.plan_delete(envreg_core::RecordKind::Service, id, true)?;
    r.commit_delete(plan)
}

/// Every file under `dir`, recursively, with its content.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            } else {
                out.push((p, b"<link>".to_vec()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn save_into_a_kind_folder_linking_out_writes_nothing() {
    let l = Layout::new();
    std::fs::remove_dir_all(l.registry.join("services")).unwrap();
    std::fs::create_dir_all(l.outside.join("etc")).unwrap();
    l.link("services", &l.outside.join("etc"));
    let r = l.open();
    let before = tree(&l.outside);
    let err = save_service(&r, "new").unwrap_err();
    assert_eq!(err.code.as_str(), "STORAGE_UNWRITABLE", "{err}");
    assert!(err.message.contains("symbolic link"), "{err}");
    assert_eq!(tree(&l.outside), before, "nothing written outside");
}

#[test]
fn save_and_delete_over_a_record_linking_out_neither_read_nor_write_it() {
    let l = Layout::new();
    let secret = l.write_outside("secret.yaml", &secret_service("evil"));
    l.link("services/evil.yaml", &secret);
    let r = l.open();
    let before = tree(&l.outside);
    for result in [
        save_service(&r, "evil").map(|_| ()),
        delete_service(&r, "evil").map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert_eq!(err.code.as_str(), "STORAGE_UNWRITABLE", "{err}");
        assert!(err.message.contains("symbolic link"), "{err}");
        assert_no_canary(&serde_json::to_string(&err).unwrap());
    }
    assert_eq!(tree(&l.outside), before);
    // The link is left for a human; no backup copied the outside content in.
    assert!(
        std::fs::symlink_metadata(l.registry.join("services/evil.yaml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    for (path, bytes) in tree(&l.registry) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "{} holds the canary",
            path.display()
        );
    }
}

#[test]
fn a_backup_folder_linking_out_is_not_written() {
    let l = Layout::new();
    std::fs::create_dir_all(l.outside.join("backups")).unwrap();
    l.link(".backups", &l.outside.join("backups"));
    let r = l.open();
    for result in [
        save_service(&r, "plain").map(|_| ()),
        delete_service(&r, "plain").map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert_eq!(err.code.as_str(), "STORAGE_UNWRITABLE", "{err}");
    }
    assert!(tree(&l.outside).is_empty(), "{:?}", tree(&l.outside));
    // The record is untouched: no backup, no write.
    assert_eq!(
        std::fs::read_to_string(l.registry.join("services/plain.yaml")).unwrap(),
        service("plain", "Plain")
    );
}

#[test]
fn a_lock_file_linking_out_is_not_created_or_opened() {
    let l = Layout::new();
    l.link(".envreg.lock", &l.outside.join("lock"));
    let r = l.open();
    let err = save_service(&r, "new").unwrap_err();
    assert_eq!(err.code.as_str(), "STORAGE_UNWRITABLE", "{err}");
    assert!(
        !l.outside.join("lock").exists(),
        "the lock was created outside"
    );
    assert!(!l.registry.join("services/new.yaml").exists());
}

#[test]
fn a_leftover_temp_file_linking_out_is_replaced_not_written_through() {
    let l = Layout::new();
    let victim = l.write_outside("victim.txt", "keep me\n");
    l.link("services/.plain.yaml.tmp", &victim);
    l.link(
        ".backups/services/.plain.20000101T000000Z.yaml.tmp",
        &victim,
    );
    let r = l.open();
    save_service(&r, "plain").unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    let saved = l.registry.join("services/plain.yaml");
    assert!(
        std::fs::symlink_metadata(&saved).unwrap().is_file(),
        "the record is a plain file"
    );
    assert!(
        std::fs::read_to_string(saved)
            .unwrap()
            .contains("name: Saved")
    );
}

#[test]
fn the_watcher_applies_the_same_rule_to_files_that_appear_later() {
    let l = Layout::new();
    let r = l.open();
    assert!(r.snapshot().service("plain").is_some());
    let secret = l.write_outside("secret.yaml", &secret_service("late"));
    l.link("services/late.yaml", &secret);
    assert!(r.snapshot().service("late").is_none());
    let d = diagnostic_on(&r, "services/late.yaml");
    assert!(d.contains("symbolic link"), "{d}");
    // A folder swapped for a link out later is refused too.
    std::fs::rename(l.registry.join("services"), l.registry.join("old-services")).unwrap();
    l.write_outside("etc/x.yaml", &secret_service("x"));
    l.link("services", &l.outside.join("etc"));
    assert_eq!(r.snapshot().count(envreg_core::RecordKind::Service), 0);
    assert_no_canary(&validate_json(&r));
}

#[test]
fn a_hard_link_is_indistinguishable_and_out_of_scope() {
    // Documented limit (docs/envreg-registry.md, docs/containment.md): a hard link *is*
    // the file, by every path-based measure; this test pins that it loads, so the
    // documentation stays true.
    let l = Layout::new();
    let outside = l.write_outside("hard.yaml", &service("hard", "Hard"));
    std::fs::hard_link(&outside, l.registry.join("services/hard.yaml")).unwrap();
    let r = l.open();
    assert_eq!(r.snapshot().service("hard").unwrap().name, "Hard");
}

fn skill(name: &str) -> String {
    format!("---\nname: {name}\ndescription: {CANARY}\n---\n")
}

#[test]
fn skills_found_in_the_project_through_a_link_out_are_not_read() {
    let l = Layout::new();
    // The registry is its own git repository: the project is the registry folder.
    std::fs::create_dir_all(l.registry.join(".git")).unwrap();
    let file = l.write_outside("skills/evil.md", &skill("evil"));
    l.link(".agents/skills/evil.md", &file);
    l.link(".claude/skills", &l.outside.join("skills"));
    l.write(".dsh/skills/fine/SKILL.md", &skill("fine"));
    let home = l.outside.join("empty-home");
    let roots = SkillRoots {
        home: Some(home.clone()),
        dsh_home: Some(home),
        ..SkillRoots::discover(&l.registry, &Vec::<String>::new())
    };
    let catalog = SkillCatalog::new(&roots);
    assert!(matches!(catalog.lookup("fine"), SkillLookup::Found(_)));
    match catalog.lookup("evil") {
        SkillLookup::Unknown { reasons } => {
            let all = reasons.join("\n");
            assert!(all.contains("symbolic link"), "{all}");
        }
        other => panic!("a skill behind a link out was used: {other:?}"),
    }
}

#[test]
fn skills_dirs_inside_the_registry_are_confined_but_ones_configured_outside_are_allowed() {
    let l = Layout::new();
    l.write_outside("user-skills/mine/SKILL.md", &skill("mine"));
    l.write_outside("linked/theirs/SKILL.md", &skill("theirs"));
    l.link("ops/skills", &l.outside.join("linked"));
    let custom = vec![
        l.outside.join("user-skills").display().to_string(),
        "ops/skills".to_owned(),
    ];
    let home = l.outside.join("empty-home");
    let roots = SkillRoots {
        project: None,
        home: Some(home.clone()),
        dsh_home: Some(home),
        ..SkillRoots::discover(&l.registry, &custom)
    };
    let catalog = SkillCatalog::new(&roots);
    // Guard: an outside folder the user named in envreg.yaml is the user's choice.
    assert!(matches!(catalog.lookup("mine"), SkillLookup::Found(_)));
    // A folder inside the registry that is a link out is not.
    assert!(
        !matches!(catalog.lookup("theirs"), SkillLookup::Found(_)),
        "{:?}",
        catalog.lookup("theirs")
    );
}
