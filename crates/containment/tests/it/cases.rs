//! The cases `shared/spec/facet.md` lists, as real trees in temp folders.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use containment::{Error, MAX_SYMLINK_HOPS, Root, Verdict, is_within, resolve};

/// `<tmp>/w/proj` (the root, holding `src/lib.rs`), `<tmp>/w/proj2`, `<tmp>/outside/secret`.
struct Tree {
    _dir: tempfile::TempDir,
    top: PathBuf,
    root: Root,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        // The tempdir itself may sit behind a symlink (macOS /tmp): canonicalize once.
        let top = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(top.join("w/proj/src")).unwrap();
        fs::write(top.join("w/proj/src/lib.rs"), "inside").unwrap();
        fs::create_dir_all(top.join("w/proj2")).unwrap();
        fs::write(top.join("w/proj2/lib.rs"), "sibling").unwrap();
        fs::create_dir_all(top.join("outside")).unwrap();
        fs::write(top.join("outside/secret"), "secret").unwrap();
        let root = Root::new(top.join("w/proj")).unwrap();
        Tree {
            _dir: dir,
            top,
            root,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.top.join(rel)
    }

    fn verdict(&self, raw: &str) -> Verdict {
        self.root.contains(raw, self.root.path()).unwrap()
    }
}

#[test]
fn plain_relative_and_absolute_paths_inside() {
    let t = Tree::new();
    assert_eq!(
        t.verdict("src/lib.rs"),
        Verdict::Inside(t.p("w/proj/src/lib.rs"))
    );
    assert_eq!(t.verdict("."), Verdict::Inside(t.p("w/proj")));
    let abs = t.p("w/proj/src/new.rs");
    assert_eq!(
        t.verdict(abs.to_str().unwrap()),
        Verdict::Inside(abs.clone())
    );
    assert_eq!(
        t.verdict("src/deep/er/new.rs"),
        Verdict::Inside(t.p("w/proj/src/deep/er/new.rs"))
    );
}

#[test]
fn prefix_collision_is_outside() {
    let t = Tree::new();
    assert_eq!(
        t.verdict("../proj2/lib.rs"),
        Verdict::Outside(t.p("w/proj2/lib.rs"))
    );
    assert!(!is_within(&t.p("w/proj2"), &t.p("w/proj")));
    assert!(is_within(&t.p("w/proj"), &t.p("w/proj")));
    // A root written with a trailing slash is the same root.
    let slashed = Root::new(format!("{}/", t.p("w/proj").display())).unwrap();
    assert_eq!(slashed.path(), t.root.path());
}

#[test]
fn dot_dot_applies_after_a_symlink() {
    let t = Tree::new();
    // proj/deep -> ../../outside/inner ; deep/.. is outside/, not proj/.
    fs::create_dir_all(t.p("outside/inner")).unwrap();
    symlink("../../outside/inner", t.p("w/proj/deep")).unwrap();
    assert_eq!(
        t.verdict("deep/../secret"),
        Verdict::Outside(t.p("outside/secret"))
    );
    // And the converse: a link out whose `..` lands back inside is inside.
    symlink(t.p("w/proj/src"), t.p("outside/back")).unwrap();
    symlink(t.p("outside/back"), t.p("w/proj/via")).unwrap();
    assert_eq!(
        t.verdict("via/../src/lib.rs"),
        Verdict::Inside(t.p("w/proj/src/lib.rs"))
    );
}

#[test]
fn symlink_inside_to_file_or_folder_outside() {
    let t = Tree::new();
    symlink(t.p("outside/secret"), t.p("w/proj/secret_link")).unwrap();
    symlink("../../outside", t.p("w/proj/out_dir")).unwrap();
    assert_eq!(
        t.verdict("secret_link"),
        Verdict::Outside(t.p("outside/secret"))
    );
    assert_eq!(
        t.verdict("out_dir/secret"),
        Verdict::Outside(t.p("outside/secret"))
    );
    // A file that does not exist yet, under the outside folder (a write).
    assert_eq!(
        t.verdict("out_dir/not_yet/new.txt"),
        Verdict::Outside(t.p("outside/not_yet/new.txt"))
    );
    // The open helper refuses both, and reads the inside file.
    let base = t.root.path();
    assert!(matches!(
        t.root.read("secret_link", base),
        Err(Error::OutsideRoot { .. })
    ));
    assert!(matches!(
        t.root.read("out_dir/secret", base),
        Err(Error::OutsideRoot { .. })
    ));
    assert_eq!(t.root.read("src/lib.rs", base).unwrap(), b"inside");
}

#[test]
fn symlink_inside_to_inside_is_inside_and_readable() {
    let t = Tree::new();
    symlink("src/lib.rs", t.p("w/proj/alias")).unwrap();
    assert_eq!(
        t.verdict("alias"),
        Verdict::Inside(t.p("w/proj/src/lib.rs"))
    );
    assert_eq!(t.root.read("alias", t.root.path()).unwrap(), b"inside");
}

#[test]
fn dangling_symlink_to_outside_is_outside() {
    let t = Tree::new();
    symlink(t.p("outside/does_not_exist"), t.p("w/proj/dangling")).unwrap();
    let resolved = resolve("dangling", t.root.path()).unwrap();
    assert!(!resolved.exists());
    assert_eq!(
        t.verdict("dangling"),
        Verdict::Outside(t.p("outside/does_not_exist"))
    );
    // Writing through it with create would make the outside file: refused.
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true);
    assert!(matches!(
        t.root.open("dangling", t.root.path(), &options),
        Err(Error::OutsideRoot { .. })
    ));
    assert!(!t.p("outside/does_not_exist").exists());
}

#[test]
fn chain_of_symlinks_that_escapes() {
    let t = Tree::new();
    symlink("b", t.p("w/proj/a")).unwrap();
    symlink("src/../c", t.p("w/proj/b")).unwrap();
    symlink("../proj2", t.p("w/proj/c")).unwrap();
    assert_eq!(
        t.verdict("a/lib.rs"),
        Verdict::Outside(t.p("w/proj2/lib.rs"))
    );
}

#[test]
fn loops_fail_closed() {
    let t = Tree::new();
    symlink("loop_b", t.p("w/proj/loop_a")).unwrap();
    symlink("loop_a", t.p("w/proj/loop_b")).unwrap();
    symlink("self_loop", t.p("w/proj/self_loop")).unwrap();
    for raw in ["loop_a", "loop_b/x", "self_loop"] {
        assert!(
            matches!(
                t.root.contains(raw, t.root.path()),
                Err(Error::SymlinkLoop { .. })
            ),
            "{raw}"
        );
    }
    // A chain exactly at the limit resolves; one longer does not, as in the kernel.
    let mut previous = "src".to_string();
    for hop in 0..=MAX_SYMLINK_HOPS {
        let name = format!("hop{hop}");
        symlink(&previous, t.p(&format!("w/proj/{name}"))).unwrap();
        previous = name;
    }
    let at_limit = format!("hop{}", MAX_SYMLINK_HOPS - 1);
    assert!(t.verdict(&at_limit).is_inside());
    assert!(fs::canonicalize(t.p(&format!("w/proj/{at_limit}"))).is_ok());
    let over = format!("hop{MAX_SYMLINK_HOPS}");
    assert!(matches!(
        t.root.contains(&over, t.root.path()),
        Err(Error::SymlinkLoop { .. })
    ));
    assert_eq!(
        fs::canonicalize(t.p(&format!("w/proj/{over}")))
            .unwrap_err()
            .raw_os_error(),
        Some(nix::libc::ELOOP)
    );
}

#[test]
fn nul_empty_and_relative_base_fail_closed() {
    let t = Tree::new();
    let base = t.root.path();
    assert!(matches!(t.root.contains("", base), Err(Error::Empty)));
    assert!(matches!(
        t.root.contains("src\0/../../outside", base),
        Err(Error::NulByte)
    ));
    assert!(matches!(
        t.root.contains("src", "relative/base"),
        Err(Error::RelativeBase { .. })
    ));
    assert!(Root::new("relative").is_err());
}

#[test]
fn unreadable_components_fail_closed() {
    let t = Tree::new();
    // A name longer than NAME_MAX cannot be examined (ENAMETOOLONG): refused, not
    // treated as a missing tail. (Permission denied: see tests/permission.rs.)
    let long = "x".repeat(300);
    assert!(matches!(
        t.root.contains(format!("src/{long}/y"), t.root.path()),
        Err(Error::Unreadable { .. })
    ));
    // A path continuing below a file fails like the kernel's ENOTDIR.
    assert!(matches!(
        t.root
            .contains("src/lib.rs/../../../outside", t.root.path()),
        Err(Error::NotADirectory { .. })
    ));
}

#[test]
fn root_given_through_a_symlinked_path() {
    let t = Tree::new();
    symlink(t.p("w"), t.p("alias_w")).unwrap();
    let via_link = Root::new(t.p("alias_w/proj")).unwrap();
    assert_eq!(via_link.path(), t.root.path());
    // Paths written through either spelling compare equal.
    let through_alias = t.p("alias_w/proj/src/lib.rs");
    assert!(t.root.contains(&through_alias, "/").unwrap().is_inside());
    assert!(
        via_link
            .contains("src/lib.rs", t.p("alias_w/proj"))
            .unwrap()
            .is_inside()
    );
    assert!(matches!(
        Root::new(t.p("w/proj/src/lib.rs")),
        Err(Error::RootNotADirectory { .. })
    ));
    assert!(matches!(
        Root::new(t.p("w/missing")),
        Err(Error::RootNotADirectory { .. })
    ));
}

#[test]
fn relative_paths_ignore_the_process_cwd() {
    let t = Tree::new();
    // Whatever the test process's cwd is, the base decides. Use a base elsewhere.
    let elsewhere = t.p("outside");
    assert_eq!(
        t.root.contains("secret", &elsewhere).unwrap(),
        Verdict::Outside(t.p("outside/secret"))
    );
    assert_eq!(
        t.root.contains("../w/proj/src", &elsewhere).unwrap(),
        Verdict::Inside(t.p("w/proj/src"))
    );
    let cwd = std::env::current_dir().unwrap();
    assert_ne!(cwd, t.p("outside"));
}

#[test]
fn proc_self_root_is_the_filesystem_root() {
    let t = Tree::new();
    let through_proc = format!("/proc/self/root{}", t.p("outside/secret").display());
    assert_eq!(
        t.root.contains(&through_proc, "/").unwrap(),
        Verdict::Outside(t.p("outside/secret"))
    );
    let inside_through_proc = format!("/proc/self/root{}", t.p("w/proj/src/lib.rs").display());
    assert_eq!(
        t.root.contains(&inside_through_proc, "/").unwrap(),
        Verdict::Inside(t.p("w/proj/src/lib.rs"))
    );
}

#[test]
fn missing_tail_dot_dot_resumes_the_real_walk() {
    let t = Tree::new();
    symlink("../../outside", t.p("w/proj/out_dir")).unwrap();
    // `new/..` is lexical (new does not exist), then `out_dir` is a real link out.
    assert_eq!(
        t.verdict("new/../out_dir/secret"),
        Verdict::Outside(t.p("outside/secret"))
    );
    assert_eq!(
        t.verdict("new/deeper/../../src/lib.rs"),
        Verdict::Inside(t.p("w/proj/src/lib.rs"))
    );
    // Climbing past `/` stays at `/`.
    assert_eq!(
        t.root.contains("/../../..", "/").unwrap(),
        Verdict::Outside(PathBuf::from("/"))
    );
}

#[test]
fn open_creates_inside_and_needs_the_parent_to_exist() {
    let t = Tree::new();
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    t.root.open("src/new.txt", t.root.path(), &options).unwrap();
    assert!(Path::new(&t.p("w/proj/src/new.txt")).exists());
    assert!(matches!(
        t.root.open("nowhere/new.txt", t.root.path(), &options),
        Err(Error::Open { .. })
    ));
}
