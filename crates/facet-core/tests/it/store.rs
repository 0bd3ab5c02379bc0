//! The state folder: ids as data, first sight, atomic writes, and two writers at once
//! (threads, and real separate processes) whose grants both survive.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use facet_core::{Config, Mode, SessionId, StateStore, StoreError};

fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let top = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(top.join("proj/.git")).unwrap();
    fs::create_dir_all(top.join("proj/room")).unwrap();
    fs::create_dir_all(top.join("grants")).unwrap();
    (dir, top)
}

#[test]
fn session_ids_are_data_not_paths() {
    for raw in [
        "../../etc/passwd",
        "a/b",
        ".",
        "..",
        "x\0y",
        "é",
        "_2f",
        "/",
    ] {
        let stem = SessionId::new(raw).unwrap().file_stem();
        assert!(
            !stem.contains('/') && !stem.contains('\0') && stem != "." && stem != "..",
            "{raw}"
        );
        assert!(!stem.is_empty());
    }
    // Injective where a naive escape would collide.
    assert_ne!(
        SessionId::new("_2f").unwrap().file_stem(),
        SessionId::new("/").unwrap().file_stem()
    );
    assert_eq!(
        SessionId::new("7f3e2c1a-0b9d-4e8f-a1b2-c3d4e5f6a7b8")
            .unwrap()
            .file_stem(),
        "7f3e2c1a-0b9d-4e8f-a1b2-c3d4e5f6a7b8"
    );
    assert!(matches!(
        SessionId::new(""),
        Err(StoreError::InvalidSessionId { .. })
    ));
    assert!(matches!(
        SessionId::new(&"x".repeat(1025)),
        Err(StoreError::InvalidSessionId { .. })
    ));
    // Past 80 bytes the stem is a digest: short, distinct, never an encoded stem.
    let long = SessionId::new(&"x".repeat(81)).unwrap().file_stem();
    let longer = SessionId::new(&"x".repeat(1024)).unwrap().file_stem();
    assert!(long.starts_with("_h") && long.len() == 66, "{long}");
    assert_ne!(long, longer);
    assert_eq!(long, SessionId::new(&"x".repeat(81)).unwrap().file_stem());
    // The longest id, all escaped, is still a valid file name.
    let (_dir, top) = tree();
    let store = StateStore::open(top.join("state")).unwrap();
    let longest = SessionId::new(&"/".repeat(80)).unwrap();
    store
        .load_or_init(&longest, &top.join("proj/room"), &Config::default())
        .unwrap();
    assert!(store.load(&longest).unwrap().is_some());
}

#[test]
fn first_sight_records_the_directory_for_good() {
    let (_dir, top) = tree();
    let store = StateStore::open(top.join("state/nested")).unwrap();
    let config = Config::default();
    let id = SessionId::new("s1").unwrap();
    assert!(store.load(&id).unwrap().is_none());
    let first = store
        .load_or_init(&id, &top.join("proj/room"), &config)
        .unwrap();
    assert!(first.scoped);
    assert_eq!(first.directory, top.join("proj/room"));
    assert_eq!(first.mode, Mode::Ask);
    // Seen again from elsewhere: the root does not move.
    let again = store
        .load_or_init(&id, &top.join("grants"), &config)
        .unwrap();
    assert_eq!(again.directory, top.join("proj/room"));
    // Even an update that tries cannot move it.
    store
        .update(&id, |s| s.directory = top.join("grants"))
        .unwrap();
    assert_eq!(
        store.load(&id).unwrap().unwrap().directory,
        top.join("proj/room")
    );
    // A session started at the project top is not scoped.
    let top_level = store
        .load_or_init(&SessionId::new("s2").unwrap(), &top.join("proj"), &config)
        .unwrap();
    assert!(!top_level.scoped);
    assert_eq!(top_level.facet_root(), None);
    // A missing directory cannot be recorded.
    assert!(matches!(
        store.load_or_init(&SessionId::new("s3").unwrap(), &top.join("nope"), &config),
        Err(StoreError::Directory { .. })
    ));
    // The panel cannot update a session never seen.
    assert!(matches!(
        store.update(&SessionId::new("never").unwrap(), |_| ()),
        Err(StoreError::UnknownSession { .. })
    ));
    let listing = store.list().unwrap();
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s1", "s2"]);
    assert!(listing.problems.is_empty());
}

#[test]
fn a_corrupt_file_is_reported_and_left_untouched() {
    let (_dir, top) = tree();
    let store = StateStore::open(top.join("state")).unwrap();
    let id = SessionId::new("bad").unwrap();
    let path = top.join("state/bad.json");
    fs::write(&path, b"{ not json").unwrap();
    let error = store.load(&id).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }));
    assert!(error.to_string().contains("left untouched"));
    assert!(store.update(&id, |s| s.mode = Mode::Deny).is_err());
    assert!(
        store
            .load_or_init(&id, &top.join("proj/room"), &Config::default())
            .is_err()
    );
    assert_eq!(fs::read(&path).unwrap(), b"{ not json");
    let listing = store.list().unwrap();
    assert_eq!(listing.problems.len(), 1);
    // A file holding another session's state is not taken for this one.
    let other = SessionId::new("other").unwrap();
    store
        .load_or_init(&other, &top.join("proj/room"), &Config::default())
        .unwrap();
    fs::copy(top.join("state/other.json"), &path).unwrap();
    assert!(matches!(store.load(&id), Err(StoreError::Corrupt { .. })));
}

const GRANTS_PER_WRITER: usize = 15;

/// One writer: grants `grants/<tag>-<n>` one by one, each a separate locked update.
fn grant_many(state: &str, cwd: &str, tag: &str) {
    let store = StateStore::open(state).unwrap();
    let id = SessionId::new("shared").unwrap();
    let cwd = PathBuf::from(cwd);
    for n in 0..GRANTS_PER_WRITER {
        let raw = format!(
            "{}/grants/{tag}-{n}",
            cwd.parent().unwrap().parent().unwrap().display()
        );
        store
            .update_or_init(&id, &cwd, &Config::default(), |session| {
                session.grant(&[raw], &cwd).unwrap();
            })
            .unwrap();
    }
}

fn assert_all_grants(store: &StateStore, top: &std::path::Path, tags: &[&str]) {
    let session = store
        .load(&SessionId::new("shared").unwrap())
        .unwrap()
        .unwrap();
    for tag in tags {
        for n in 0..GRANTS_PER_WRITER {
            let expected = top.join(format!("grants/{tag}-{n}"));
            assert!(
                session.extras.contains(&expected),
                "lost grant {expected:?}"
            );
        }
    }
    assert_eq!(session.extras.len(), tags.len() * GRANTS_PER_WRITER);
}

#[test]
fn two_threads_granting_at_once_both_survive() {
    let (_dir, top) = tree();
    let state = top.join("state").display().to_string();
    let cwd = top.join("proj/room").display().to_string();
    std::thread::scope(|scope| {
        for tag in ["left", "right"] {
            let (state, cwd) = (state.clone(), cwd.clone());
            scope.spawn(move || grant_many(&state, &cwd, tag));
        }
    });
    assert_all_grants(&StateStore::open(&state).unwrap(), &top, &["left", "right"]);
}

/// Child half of the two-process test: does nothing unless the parent set the env.
#[test]
fn child_writer() {
    let (Ok(state), Ok(cwd), Ok(tag)) = (
        std::env::var("FACET_CORE_CHILD_STATE"),
        std::env::var("FACET_CORE_CHILD_CWD"),
        std::env::var("FACET_CORE_CHILD_TAG"),
    ) else {
        return;
    };
    grant_many(&state, &cwd, &tag);
}

#[test]
fn two_processes_granting_at_once_both_survive() {
    let (_dir, top) = tree();
    let state = top.join("state");
    let cwd = top.join("proj/room");
    let exe = std::env::current_exe().unwrap();
    // The test's name inside this binary: its module path without the crate.
    let child_writer = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::child_writer"),
        None => "child_writer".to_owned(),
    };
    let children: Vec<_> = ["one", "two"]
        .iter()
        .map(|tag| {
            Command::new(&exe)
                .args(["--exact", &child_writer, "--test-threads=1"])
                .env("FACET_CORE_CHILD_STATE", &state)
                .env("FACET_CORE_CHILD_CWD", &cwd)
                .env("FACET_CORE_CHILD_TAG", tag)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_all_grants(&StateStore::open(&state).unwrap(), &top, &["one", "two"]);
}

#[test]
fn a_directory_that_is_not_utf8_is_a_clear_error() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let (_dir, top) = tree();
    let odd = top.join(OsStr::from_bytes(b"room-\xff"));
    fs::create_dir(&odd).unwrap();
    let store = StateStore::open(top.join("state")).unwrap();
    let id = SessionId::new("odd").unwrap();
    let error = store
        .load_or_init(&id, &odd, &Config::default())
        .unwrap_err();
    assert!(matches!(error, StoreError::Encode { .. }), "{error}");
    assert!(store.load(&id).unwrap().is_none());
}
