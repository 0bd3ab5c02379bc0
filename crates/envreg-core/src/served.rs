//! Which registry the envreg server a host started is serving, so that host's
//! `envreg hook` judges a write against the registry the write will land in (issue 19:
//! a hook that looked a registry up again from the event's `cwd` could be steered by a
//! decoy `envreg.yaml` the agent wrote there, and then said nothing while the server
//! wrote production with nobody asked).
//!
//! Decision: the server records what it serves, keyed by the process that started it
//! (the host: Claude Code, Codex, dsh), and the hook looks for a record whose host is one
//! of its own ancestors. Nothing in a tool call (its `cwd`, its arguments) can point the
//! hook elsewhere. Passing the same `--registry` to both would also do, but hosts start
//! MCP servers with a trimmed environment (Codex passes a fixed list of variables), so a
//! variable the hook sees is not proof of what the server sees; the record is.
//!
//! - Where: `$TMPDIR/envreg-<uid>/served/` (a folder this user owns, mode 0700, checked
//!   before every use; anything else and nothing is recorded or trusted). Not
//!   `$XDG_RUNTIME_DIR`: Codex does not pass it to its MCP servers.
//! - A record is one file, `<host pid>-<host start>.<server pid>-<server start>.json`,
//!   holding `{"registry": "/canonical/path"}`. Start times (from `/proc`) make a reused
//!   pid a different process: a record counts only while both its host and its server
//!   are the processes named. The server removes its record on exit; records of gone
//!   servers are ignored and swept by the next server that starts.
//! - Linux only (`/proc`). Elsewhere nothing is recorded and the hook needs the registry
//!   named; without it, it asks.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// A process, told apart from a later one with the same pid by its start time (clock
/// ticks since boot, `/proc/PID/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessKey {
    pub pid: u32,
    pub start: u64,
}

/// `pid`'s parent and start time, from the text of `/proc/PID/stat`. The command name
/// (field 2) may hold spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), …, starttime (22).
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((ppid, start))
}

/// The parent and key of process `pid`, or `None` when it is gone (or not on Linux).
fn stat_of(pid: u32) -> Option<(u32, ProcessKey)> {
    let mut text = String::new();
    fs::File::open(format!("/proc/{pid}/stat"))
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    let (ppid, start) = parse_stat(&text)?;
    Some((ppid, ProcessKey { pid, start }))
}

/// Whether `key` names a process that is still running.
fn alive(key: ProcessKey) -> bool {
    stat_of(key.pid).is_some_and(|(_, now)| now == key) && key.pid != 0
}

/// The record's file name for a server `server` started by `host`.
fn file_name(host: ProcessKey, server: ProcessKey) -> String {
    format!(
        "{}-{}.{}-{}.json",
        host.pid, host.start, server.pid, server.start
    )
}

/// `(host, server)` from a record's file name; `None` for anything else in the folder.
pub fn parse_file_name(name: &str) -> Option<(ProcessKey, ProcessKey)> {
    let stem = name.strip_suffix(".json")?;
    let (host, server) = stem.split_once('.')?;
    let key = |part: &str| -> Option<ProcessKey> {
        let (pid, start) = part.split_once('-')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(pid) || !digits(start) {
            return None;
        }
        Some(ProcessKey {
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
        })
    };
    Some((key(host)?, key(server)?))
}

/// The registry a record names, from its bytes; `None` unless it is exactly the shape
/// written here with an absolute path.
pub fn parse_record(bytes: &[u8]) -> Option<PathBuf> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let path = PathBuf::from(value.get("registry")?.as_str()?);
    path.is_absolute().then_some(path)
}

/// The folder records live in (created when `create`), `None` when it does not exist
/// and was not to be created, or why it cannot be trusted.
fn folder(create: bool) -> Result<Option<PathBuf>, String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
    let uid = fs::metadata("/proc/self")
        .map_err(|e| format!("this system has no /proc ({e}), so no server recorded its registry"))?
        .uid();
    let base = std::env::temp_dir().join(format!("envreg-{uid}"));
    let dir = base.join("served");
    for level in [&base, &dir] {
        if create {
            match fs::DirBuilder::new().mode(0o700).create(level) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create {}: {e}", level.display())),
            }
        }
        let meta = match fs::symlink_metadata(level) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(format!("{} cannot be read: {}", level.display(), e.kind())),
        };
        if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "{} is not a private folder of this user (owner, mode 0700), so what it holds is not trusted",
                level.display()
            ));
        }
    }
    Ok(Some(dir))
}

/// What a running server recorded; dropping it removes the record.
#[derive(Debug)]
pub struct ServedRecord {
    file: PathBuf,
}

impl Drop for ServedRecord {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.file);
    }
}

/// Records that this process serves `registry_root` for the process that started it.
/// Called once by `envreg serve` over stdio and by `envreg dsh-bridge`; an error is
/// logged by the caller and costs only the hook's certainty (it then asks).
pub fn record(registry_root: &Path) -> Result<ServedRecord, String> {
    let registry = fs::canonicalize(registry_root)
        .map_err(|e| format!("{} cannot be resolved: {e}", registry_root.display()))?;
    let (ppid, server) = stat_of(std::process::id())
        .ok_or("this process's /proc entry cannot be read, so no registry was recorded")?;
    let (_, host) = stat_of(ppid).ok_or("the process that started this one is gone")?;
    let dir = folder(true)?.ok_or("the records folder vanished")?;
    sweep(&dir);
    let body = serde_json::json!({ "registry": registry }).to_string();
    let file = dir.join(file_name(host, server));
    let temp = dir.join(format!(".{}.tmp", file_name(host, server)));
    fs::write(&temp, body)
        .and_then(|()| fs::rename(&temp, &file))
        .map_err(|e| {
            let _ = fs::remove_file(&temp);
            format!("cannot write {}: {e}", file.display())
        })?;
    Ok(ServedRecord { file })
}

/// Removes records whose server is gone (a server killed before it could remove its own).
fn sweep(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten().take(MAX_ENTRIES) {
        let name = entry.file_name();
        if let Some((_, server)) = name.to_str().and_then(parse_file_name)
            && !alive(server)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// How many folder entries a lookup or sweep reads at most (outside input: bounded).
const MAX_ENTRIES: usize = 4096;

/// What the hook learned about its host's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRegistry {
    /// Every server of the nearest host with a record serves this registry.
    Known(PathBuf),
    /// Servers of one host serve different registries: the hook cannot tell which one
    /// a call goes to.
    Ambiguous(Vec<PathBuf>),
    /// No running server recorded anything for any ancestor of this process.
    NotRecorded,
    /// Records cannot be read or trusted here (no `/proc`, a folder not ours, …).
    Unavailable(String),
}

/// The registry the envreg server started by this process's host serves: records whose
/// host is the nearest ancestor of this process that has any live record.
pub fn host_registry() -> HostRegistry {
    let dir = match folder(false) {
        Ok(Some(dir)) => dir,
        // No server of this user ever recorded anything here.
        Ok(None) => return HostRegistry::NotRecorded,
        Err(why) => return HostRegistry::Unavailable(why),
    };
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) => {
            return HostRegistry::Unavailable(format!("{} cannot be listed: {e}", dir.display()));
        }
    };
    let records: Vec<(ProcessKey, ProcessKey, PathBuf)> = entries
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(|entry| {
            let (host, server) = parse_file_name(entry.file_name().to_str()?)?;
            Some((host, server, entry.path()))
        })
        .collect();
    let Some((mut pid, _)) = stat_of(std::process::id()) else {
        return HostRegistry::Unavailable("this process's /proc entry cannot be read".to_owned());
    };
    // Walk up the ancestors (bounded: a cycle cannot happen, but a bound costs nothing).
    for _ in 0..64 {
        if pid <= 1 {
            break;
        }
        let Some((parent, key)) = stat_of(pid) else {
            break;
        };
        let mut found: Vec<PathBuf> = Vec::new();
        for (host, server, file) in &records {
            if *host != key || !alive(*server) {
                continue;
            }
            let mut bytes = Vec::new();
            let read = fs::File::open(file).and_then(|f| f.take(65_536).read_to_end(&mut bytes));
            match read.ok().and_then(|_| parse_record(&bytes)) {
                Some(registry) if !found.contains(&registry) => found.push(registry),
                Some(_) => {}
                None => {
                    return HostRegistry::Unavailable(format!(
                        "the record {} cannot be read",
                        file.display()
                    ));
                }
            }
        }
        match found.len() {
            0 => pid = parent,
            1 => return HostRegistry::Known(found.remove(0)),
            _ => return HostRegistry::Ambiguous(found),
        }
    }
    HostRegistry::NotRecorded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let stat = "4242 (a) b) (c) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 0 0";
        assert_eq!(parse_stat(stat), Some((17, 98765)));
        assert_eq!(parse_stat("4242 (x) S"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn this_process_has_a_parent_and_a_start_time() {
        let (ppid, me) = stat_of(std::process::id()).expect("/proc on Linux");
        assert_eq!(me.pid, std::process::id());
        assert!(ppid > 0);
        assert!(alive(me));
        assert!(!alive(ProcessKey {
            pid: me.pid,
            start: me.start + 1
        }));
    }

    #[test]
    fn file_names_round_trip_and_nothing_else_parses() {
        let host = ProcessKey { pid: 10, start: 20 };
        let server = ProcessKey { pid: 30, start: 40 };
        assert_eq!(
            parse_file_name(&file_name(host, server)),
            Some((host, server))
        );
        for other in [
            ".10-20.30-40.json.tmp",
            "10-20.30-40.yaml",
            "10-20.json",
            "10-+2.30-40.json",
            "../10-20.30-40.json",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_record_must_name_an_absolute_registry() {
        assert_eq!(
            parse_record(br#"{"registry":"/srv/reg"}"#),
            Some(PathBuf::from("/srv/reg"))
        );
        assert_eq!(parse_record(br#"{"registry":"reg"}"#), None);
        assert_eq!(parse_record(b"\xff"), None);
        assert_eq!(parse_record(br#"{"registry":7}"#), None);
    }

    proptest::proptest! {
        /// Names in the folder and `/proc` text are outside input: never a panic.
        #[test]
        fn parsers_never_panic(text in "\\PC{0,80}") {
            let _ = parse_stat(&text);
            let _ = parse_file_name(&text);
            let _ = parse_record(text.as_bytes());
        }
    }
}
