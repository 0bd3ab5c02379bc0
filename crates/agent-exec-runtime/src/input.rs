//! Reading a file the caller names (a prompt file, a schema, a config, a request) with
//! a size cap and without waiting on a FIFO that has no writer (issue 20, finding 5).
//!
//! The file is opened with `O_NONBLOCK`, so opening a FIFO never waits for a writer.
//! A regular file over the cap is refused from its `fstat` size, before any byte is
//! read (a sparse 8 GB file costs nothing). Anything else — a FIFO, `/dev/zero`, a
//! socket — is read in blocking mode up to one byte past the cap: a FIFO without a
//! writer reads as empty at once, an endless one stops at the cap. Not done: giving
//! up on a FIFO whose writer keeps it open and never writes (as `cat` would, it
//! waits; SIGKILL ends it — nothing has been started yet).

use std::fs::OpenOptions;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

use nix::fcntl::{FcntlArg, OFlag, fcntl};

/// Reads all of `path`, refusing more than `limit` bytes with an error that says so.
pub fn read_capped(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let meta = file.metadata()?;
    let too_big = |size: String| {
        std::io::Error::other(format!(
            "{size}, over the limit of {limit} bytes for this input"
        ))
    };
    if meta.is_dir() {
        return Err(std::io::Error::other("it is a directory, not a file"));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(too_big(format!("it is {} bytes", meta.len())));
    }
    if !meta.is_file() {
        // A FIFO or device: blocking reads from here (a FIFO without a writer is EOF).
        let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(std::io::Error::from)?;
        let blocking = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
        fcntl(&file, FcntlArg::F_SETFL(blocking)).map_err(std::io::Error::from)?;
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        let kind = if meta.file_type().is_fifo() {
            "the FIFO gave more"
        } else if meta.file_type().is_char_device() {
            "the device gave more"
        } else {
            "it grew to more"
        };
        return Err(too_big(format!("{kind} than {limit} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_within_the_cap_is_read_and_one_over_it_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, b"hello").unwrap();
        assert_eq!(read_capped(&small, 5).unwrap(), b"hello");
        let err = read_capped(&small, 4).unwrap_err().to_string();
        assert!(
            err.contains("it is 5 bytes, over the limit of 4 bytes"),
            "{err}"
        );
        // Sparse: 8 GB long, refused from its size alone.
        let sparse = dir.path().join("sparse");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        let err = read_capped(&sparse, 1 << 20).unwrap_err().to_string();
        assert!(err.contains("8589934592 bytes"), "{err}");
        let err = read_capped(dir.path(), 10).unwrap_err().to_string();
        assert!(err.contains("directory"), "{err}");
    }

    #[test]
    fn an_endless_device_stops_at_the_cap_and_a_fifo_without_writer_does_not_wait() {
        let err = read_capped(Path::new("/dev/zero"), 1000)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the device gave more than 1000 bytes"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(
            read_capped(&fifo, 10).unwrap(),
            b"",
            "no writer: empty at once"
        );
    }
}
