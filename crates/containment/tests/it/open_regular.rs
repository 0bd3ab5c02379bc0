//! `Root::open_regular`: the loader's open. Same verdict as `Root::open` on every kind
//! of path (plain, link inside, link out, a folder link out, a chain out and back in),
//! plus: a FIFO or a folder is refused without blocking.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::os::unix::fs::symlink;

use containment::{Error, Root};

fn read(root: &Root, rel: &str) -> Result<String, Error> {
    let (mut file, meta) = root.open_regular(rel, root.path())?;
    let mut text = String::new();
    file.read_to_string(&mut text).unwrap();
    assert_eq!(meta.len() as usize, text.len());
    Ok(text)
}

#[test]
fn same_verdicts_as_open_and_no_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let (inside, outside) = (tmp.path().join("in"), tmp.path().join("out"));
    std::fs::create_dir_all(inside.join("d")).unwrap();
    std::fs::create_dir_all(outside.join("etc")).unwrap();
    std::fs::write(inside.join("d/a"), "A").unwrap();
    std::fs::write(outside.join("etc/s"), "S").unwrap();
    symlink("d/a", inside.join("alias")).unwrap();
    symlink(outside.join("etc/s"), inside.join("out-file")).unwrap();
    symlink(outside.join("etc"), inside.join("out-dir")).unwrap();
    symlink(inside.join("d"), outside.join("back")).unwrap();
    symlink(outside.join("back"), inside.join("round")).unwrap();
    nix::unistd::mkfifo(&inside.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let root = Root::new(&inside).unwrap();

    assert_eq!(read(&root, "d/a").unwrap(), "A");
    assert_eq!(read(&root, "alias").unwrap(), "A");
    assert_eq!(read(&root, "round/a").unwrap(), "A");
    assert_eq!(
        read(&root, &inside.join("d/a").display().to_string()).unwrap(),
        "A"
    );
    for out in ["out-file", "out-dir/s", "../out/etc/s"] {
        assert!(
            matches!(read(&root, out), Err(Error::OutsideRoot { .. })),
            "{out}"
        );
        // The same verdict as Root::open.
        assert!(matches!(
            root.open(out, root.path(), std::fs::OpenOptions::new().read(true)),
            Err(Error::OutsideRoot { .. })
        ));
    }
    for not_file in ["fifo", "d", "."] {
        assert!(
            matches!(read(&root, not_file), Err(Error::NotARegularFile { .. })),
            "{not_file}"
        );
    }
    assert!(matches!(read(&root, ""), Err(Error::Empty)));
    assert!(matches!(read(&root, "d/missing"), Err(Error::Open { .. })));
}
