//! What a backend keeps of a program's output: reader tasks that collect a stream
//! (all of stdout, the tail of stderr), a bounded join that hands over what was read
//! even when a surviving process holds the pipe open, the `logs` line helper, and
//! [`bounded`], the one cut of a quoted text.
//!
//! Shared by every backend that runs a process (`command`, the agent programs, ACP);
//! it knows nothing of a stream's format. Decision: readers append to shared bytes
//! rather than return them, so a reader given up on still yields what it read.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;

/// How much of stderr is kept for `logs` (the tail).
pub(crate) const STDERR_TAIL: usize = 16 * 1024;

/// Bytes a reader task has read so far, shared with the task: a reader given up on
/// (a survivor holds its pipe open) still hands over what it read. The lock is held
/// for one chunk at a time; a poisoned lock still holds good bytes and is used.
#[derive(Debug, Clone, Default)]
pub(crate) struct Collected(Arc<std::sync::Mutex<Vec<u8>>>);

impl Collected {
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let mut bytes = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut bytes)
    }

    fn take(&self) -> Vec<u8> {
        self.with(std::mem::take)
    }
}

/// A reader task and what it has collected.
pub(crate) struct Reader {
    task: tokio::task::JoinHandle<()>,
    collected: Collected,
}

impl Reader {
    /// Spawns `read`, which appends what it reads to the [`Collected`] it is given.
    pub(crate) fn spawn<F>(read: impl FnOnce(Collected) -> F) -> Reader
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let collected = Collected::default();
        let task = tokio::spawn(read(collected.clone()));
        Reader { task, collected }
    }

    /// A reader of `stream` keeping its last [`STDERR_TAIL`] bytes.
    pub(crate) fn tail(stream: Option<tokio::process::ChildStderr>) -> Reader {
        Reader::spawn(|into| read_tail(stream, into, |_| {}))
    }

    /// [`Reader::tail`] that also hands `echo` each chunk as it is read, then `None`
    /// at the end of the stream.
    pub(crate) fn tail_echo(
        stream: Option<tokio::process::ChildStderr>,
        echo: impl FnMut(Option<&[u8]>) + Send + 'static,
    ) -> Reader {
        Reader::spawn(|into| read_tail(stream, into, echo))
    }
}

/// Reads a stream to the end into `into`, keeping its last [`STDERR_TAIL`] bytes.
async fn read_tail(
    stream: Option<tokio::process::ChildStderr>,
    into: Collected,
    mut echo: impl FnMut(Option<&[u8]>) + Send + 'static,
) {
    let Some(mut stream) = stream else {
        return;
    };
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let chunk = buf.get(..n).unwrap_or_default();
                echo(Some(chunk));
                into.with(|tail| {
                    tail.extend_from_slice(chunk);
                    if tail.len() > 2 * STDERR_TAIL {
                        tail.drain(..tail.len() - STDERR_TAIL);
                    }
                })
            }
        }
    }
    echo(None);
}

/// Why a reader did not reach the end of its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unfinished {
    /// Still open a second after the tree was terminated: some process outside the
    /// tree we could see (one that escaped it: a new session, a cleared
    /// environment) holds the pipe, so the program's work may go on.
    HeldOpen,
    /// The reader task failed.
    Failed,
}

impl Unfinished {
    /// What `logs` says about it.
    pub(crate) fn note(self) -> &'static str {
        match self {
            Unfinished::HeldOpen => {
                "output still held open by a surviving process; kept what came before"
            }
            Unfinished::Failed => "output reader failed; kept what came before",
        }
    }
}

/// Joins a reader, giving up after a second: a surviving process may hold the pipe
/// open. Either way the bytes read so far are returned (a stderr tail is cut to its
/// last [`STDERR_TAIL`] bytes by the caller's reader; at most twice that here).
pub(crate) async fn join_bounded(reader: Reader) -> (Vec<u8>, Option<Unfinished>) {
    let Reader { task, collected } = reader;
    let abort = task.abort_handle();
    let unfinished = match tokio::time::timeout(Duration::from_secs(1), task).await {
        Ok(Ok(())) => None,
        Ok(Err(_)) => Some(Unfinished::Failed),
        Err(_) => {
            abort.abort();
            Some(Unfinished::HeldOpen)
        }
    };
    (collected.take(), unfinished)
}

pub(crate) fn push_line(logs: &mut String, line: &str) {
    if !logs.is_empty() && !logs.ends_with('\n') {
        logs.push('\n');
    }
    logs.push_str(line);
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` when cut: how
/// every backend bounds a detail, a quoted message or a probe's output.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", text.get(..end).unwrap_or_default())
}
