//! The stdio transport, with a guard in front of the SDK's decoder.
//!
//! Why not `rmcp::transport::stdio()` as is: a line that is not JSON is dropped without
//! an answer, and a request whose shape is wrong is answered without its id, so the
//! client waits forever for that id. JSON-RPC 2.0 asks for an answer to both. This
//! transport reads newline-delimited JSON itself and answers what the SDK cannot
//! decode, then goes on reading (issue 19: one bad line used to end the server):
//! - not UTF-8 → `-32700 Parse error`, naming the offset of the first bad byte;
//! - not JSON (nesting deeper than serde_json's 128 levels included) → `-32700`
//!   (id `null`);
//! - JSON but not a valid MCP message (a batch array included: MCP has no batches) →
//!   `-32600 Invalid Request`, with the request's id when it has one;
//! - a line over [`MAX_LINE_BYTES`] → `-32600`; the line is skipped without being kept
//!   (the limit matches the HTTP transport's body limit).
//!
//! Every other line goes to rmcp unchanged, and every outgoing message is one line on
//! stdout. The error messages name what was wrong, never echo the input. The line
//! reader, [`LineReader`], is also `envreg dsh-bridge`'s.

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Stdin};
use tokio::sync::mpsc;

/// The longest line accepted (4 MiB, as rmcp's HTTP body limit).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Newline-delimited JSON-RPC over the process's stdin and stdout.
pub struct GuardedStdio {
    input: BufReader<Stdin>,
    lines: LineReader,
    /// Every outgoing line, in order, to the one task that owns stdout. Queuing is
    /// synchronous, so `receive` — which rmcp may drop at any await — can neither lose
    /// nor repeat a bad line's reply (a reply written inside `receive` was once lost
    /// when the call was dropped while `send` held stdout, and the client hung).
    out: mpsc::UnboundedSender<Vec<u8>>,
    writer: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl GuardedStdio {
    /// Must be called inside a tokio runtime (it starts the writer task).
    pub fn new() -> GuardedStdio {
        let (out, lines) = mpsc::unbounded_channel();
        GuardedStdio {
            input: BufReader::new(tokio::io::stdin()),
            lines: LineReader::new(MAX_LINE_BYTES),
            out,
            writer: Some(tokio::spawn(write_lines(lines))),
        }
    }
}

/// What [`read_bounded_line`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A line is in the buffer (its `\n` included when there was one).
    Line,
    /// A line over the limit was skipped up to and including its `\n`; nothing kept.
    TooLong,
    /// End of input.
    Eof,
}

/// Reads `\n`-terminated lines, refusing — and skipping to the next newline — a line
/// over `max` bytes without keeping it. Memory is bounded by `max` plus the reader's
/// buffer, whatever the input.
///
/// Cancel-safe: rmcp drops a pending `receive` future when it has something else to do
/// first, so everything read so far (the partial line, whether it is being skipped)
/// lives here, not in the future; the only await is `fill_buf`, which consumes nothing.
#[derive(Debug)]
pub struct LineReader {
    max: usize,
    /// The line read so far; after [`LineRead::Line`], the whole line.
    pub line: Vec<u8>,
    /// The current line went over `max`: skipping to its end.
    skipping: bool,
    /// `line` holds a line already returned: clear it before reading on.
    returned: bool,
}

impl LineReader {
    pub fn new(max: usize) -> LineReader {
        LineReader {
            max,
            line: Vec::new(),
            skipping: false,
            returned: false,
        }
    }

    /// The next line (into [`LineReader::line`], its `\n` included when there was one).
    pub async fn next<R: AsyncBufRead + Unpin>(
        &mut self,
        reader: &mut R,
    ) -> std::io::Result<LineRead> {
        if self.returned {
            self.line.clear();
            self.returned = false;
        }
        loop {
            let chunk = reader.fill_buf().await?;
            if chunk.is_empty() {
                let end = if std::mem::take(&mut self.skipping) {
                    LineRead::TooLong
                } else if self.line.is_empty() {
                    LineRead::Eof
                } else {
                    self.returned = true;
                    LineRead::Line
                };
                return Ok(end);
            }
            let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if !self.skipping {
                self.line.extend_from_slice(&chunk[..take]);
                if self.line.len() > self.max {
                    self.skipping = true;
                    self.line = Vec::new();
                }
            }
            reader.consume(take);
            if done {
                if std::mem::take(&mut self.skipping) {
                    return Ok(LineRead::TooLong);
                }
                self.returned = true;
                return Ok(LineRead::Line);
            }
        }
    }
}

impl Default for GuardedStdio {
    fn default() -> Self {
        Self::new()
    }
}

/// Writes each queued line to stdout, in order, until every sender is gone.
async fn write_lines(mut lines: mpsc::UnboundedReceiver<Vec<u8>>) -> std::io::Result<()> {
    let mut out = tokio::io::stdout();
    while let Some(mut bytes) = lines.recv().await {
        bytes.push(b'\n');
        out.write_all(&bytes).await?;
        out.flush().await?;
    }
    Ok(())
}

fn error_reply(id: Value, code: i64, message: &str) -> Vec<u8> {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
        .to_string()
        .into_bytes()
}

/// Decode one line, or say what to answer instead.
pub fn decode_line(line: &str) -> Result<RxJsonRpcMessage<RoleServer>, Vec<u8>> {
    match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => Ok(message),
        Err(_) => match serde_json::from_str::<Value>(line) {
            Err(error) => Err(error_reply(
                Value::Null,
                -32700,
                &format!(
                    "Parse error: the line is not JSON (line {}, column {})",
                    error.line(),
                    error.column()
                ),
            )),
            Ok(value) => {
                let id = value
                    .get("id")
                    .filter(|id| id.is_string() || id.is_number())
                    .cloned()
                    .unwrap_or(Value::Null);
                let method = value.get("method").and_then(Value::as_str).unwrap_or("?");
                Err(error_reply(
                    id,
                    -32600,
                    &format!(
                        "Invalid Request: not a valid JSON-RPC 2.0 / MCP message (method {method}); check `jsonrpc`, `id` and the shape of `params`"
                    ),
                ))
            }
        },
    }
}

impl Transport<RoleServer> for GuardedStdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let queued = serde_json::to_vec(&item)
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                self.out
                    .send(bytes)
                    .map_err(|_| std::io::Error::other("stdout is closed"))
            });
        async move { queued }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let read = self.lines.next(&mut self.input).await;
            let reply = match read {
                Ok(LineRead::Eof) => return None,
                Err(error) => {
                    tracing::info!(%error, "stdin closed");
                    return None;
                }
                Ok(LineRead::TooLong) => error_reply(
                    Value::Null,
                    -32600,
                    &format!(
                        "Invalid Request: message over {MAX_LINE_BYTES} bytes; it was skipped"
                    ),
                ),
                Ok(LineRead::Line) => match std::str::from_utf8(&self.lines.line) {
                    Err(error) => error_reply(
                        Value::Null,
                        -32700,
                        &format!(
                            "Parse error: the line is not UTF-8 (invalid byte at offset {})",
                            error.valid_up_to()
                        ),
                    ),
                    Ok(line) if line.trim().is_empty() => continue,
                    Ok(line) => match decode_line(line.trim()) {
                        Ok(message) => return Some(message),
                        Err(reply) => reply,
                    },
                },
            };
            tracing::info!("answered an undecodable message");
            if self.out.send(reply).is_err() {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing the queue lets the writer drain what was queued and end.
        let (closed, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.out, closed));
        match self.writer.take() {
            Some(writer) => writer.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        let bytes = decode_line(line).expect_err("should be refused");
        serde_json::from_slice(&bytes).expect("reply is JSON")
    }

    #[test]
    fn garbage_is_a_parse_error() {
        let r = reply("{not json");
        assert_eq!(r["error"]["code"], -32700);
        assert_eq!(r["id"], Value::Null);
    }

    #[test]
    fn wrong_shape_keeps_the_id() {
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"oops"}"#);
        assert_eq!(r["error"]["code"], -32600);
        assert_eq!(r["id"], 7);
        assert!(
            !r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("oops")
        );
    }

    #[test]
    fn valid_messages_pass() {
        assert!(decode_line(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_ok());
        assert!(decode_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_ok());
    }
}
