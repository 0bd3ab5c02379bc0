//! `facet dsh-bridge`: facet inside DeepSeek Harness (dsh), for the `dsh-facet`
//! plugin (`integrations/dsh-facet/`). One long-lived process per dsh, JSON lines
//! over its stdio; the JavaScript forwards and registers, this module decides.
//!
//! ## Why a long-lived process
//! A guard runs before every judged tool call and a context before every model
//! request. A process per call would pay facet's start-up (a few milliseconds,
//! see `scripts/bench-facet-hook.sh`) each time; logic in JavaScript would be a
//! second copy of the seed's rules. So the plugin spawns this once at apply time
//! and it lives until dsh closes its stdin (or kills it on dispose).
//!
//! ## Methods (protocol 1)
//! | method | params | result |
//! | --- | --- | --- |
//! | `hello` | `protocol` | `{name, version, protocol}` |
//! | `configure` | `config` (the row's) | the registrations ([`specs::specs`]) or `CONFIG_INVALID` |
//! | `judge` | caller, `tool`, `callId`, `arguments` | `{verdict: "allow"}` or `{verdict: "deny", reason}`, possibly after an `approval` question |
//! | `approval_answer` | `decision` (dsh's `ApprovalOutcome`) | — (answers the pending `judge` of the same id) |
//! | `context` | caller | `{text}`: the seed's context text, `""` for nothing |
//! | `facet` | caller, `callId`, `arguments` | the tool's value, or `{code, message, details}` |
//!
//! The caller is `session` (dsh's agent id), `cwd` (the directory dsh recorded
//! for the session, `session.header.cwd`) and `approval: {service, policy}` (is
//! dsh's approval service composed; the session's effective approval policy).
//!
//! ## Decisions
//! - The session is facet's usual per-session state ([`crate::state`]): the hook,
//!   the panel and this bridge read and write the same files, so `facet grant`
//!   from a terminal shows on the session's next request.
//! - The session directory is the one dsh recorded; relative paths resolve against
//!   it, as dsh's file tools resolve them. A judged call with no agent or no
//!   recorded directory is refused (fail closed): there is no facet to judge by.
//! - `ask` goes to the user through dsh's `ctx.approval` with the seed's sentence as
//!   the reason. `allowed-once` runs the call; `rejected` and `cancelled` refuse it
//!   with the sentence; `unavailable` (no answerer: headless dsh) is judged again as
//!   a session without an approval channel, which refuses with the seed's "refused"
//!   sentence, and the session is remembered as such, so its next binding says so
//!   and it is not asked again. An approval policy of `never` means no channel from
//!   the start.
//! - `facet action=add` is recorded only for the exact call (session, call id,
//!   paths) the user allowed; the approval is held here between the guard and the
//!   tool body, never trusted from the plugin. Where the guard would not ask (mode
//!   `off`, an unscoped session) the `add` records nothing and says so.
//! - The row's `mode` is the mode a session starts in (the configuration file's
//!   `default_mode` otherwise); `facet mode` changes a running session.
//!
//! - A request longer than [`wire::MAX_LINE_BYTES`] is answered `TOO_LARGE` under
//!   the id it starts with, so the plugin refuses that call instead of waiting.
//!
//! ## Not done
//! - The configuration file is read once, at `configure`; a change takes effect
//!   when dsh re-applies the plugin — except its standing grants (`[projects]`),
//!   read again for every judged call and binding, and a project's trusted
//!   `.facet.toml`, so a grant the person makes there counts at once.

mod guard;
mod held;
pub mod specs;
mod tool;
pub mod wire;

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;

use facet_core::{Mode, Policy};
use serde_json::{Map, Value, json};

pub use held::Bridge;
use held::{Caller, Started};

use crate::state;

/// The protocol this bridge speaks.
pub const PROTOCOL: u64 = 1;

impl Bridge {
    /// A bridge using `FACET_STATE_DIR` (or the default state folder).
    pub fn new() -> Bridge {
        Bridge::default()
    }

    /// A bridge with an explicit state folder and the default configuration, whatever
    /// the machine's configuration file says (tests, fuzzing).
    pub fn with_state_dir(dir: PathBuf) -> Bridge {
        Bridge {
            state_dir: Some(dir),
            config: Some(facet_core::Config::default()),
            ..Bridge::default()
        }
    }

    /// Answer one line; zero or more lines go back. Never panics.
    pub fn handle(&mut self, line: &[u8]) -> Vec<String> {
        let request = match wire::parse_line(line) {
            Ok(request) => request,
            Err(bad) => return vec![wire::error(bad.id, "BAD_REQUEST", &bad.message, None)],
        };
        let id = request.id;
        let params = &request.params;
        match request.method.as_str() {
            "hello" => vec![self.hello(id, request.protocol)],
            "configure" => vec![self.configure(id, params)],
            "approval_answer" => self.answer(id, params),
            method @ ("judge" | "context" | "facet") => {
                let Some(started) = &self.started else {
                    return vec![wire::error(
                        Some(id),
                        "NOT_CONFIGURED",
                        &format!("`{method}` before `configure`"),
                        None,
                    )];
                };
                let mut caller = Caller::read(params);
                if caller
                    .session
                    .as_ref()
                    .is_some_and(|session| self.unanswered.contains(session))
                {
                    caller.can_ask = false;
                }
                match method {
                    "judge" => self.judge(id, params, caller),
                    "context" => vec![wire::result(
                        id,
                        json!({"text": guard::context_text(started, &caller)}),
                    )],
                    _ => vec![self.facet(id, params, &caller)],
                }
            }
            other => vec![wire::error(
                Some(id),
                "UNKNOWN_METHOD",
                &format!("unknown method `{other}`"),
                None,
            )],
        }
    }

    fn hello(&self, id: u64, protocol: Option<u64>) -> String {
        if protocol != Some(PROTOCOL) {
            return wire::error(
                Some(id),
                "PROTOCOL_MISMATCH",
                &format!(
                    "facet {} speaks dsh-bridge protocol {PROTOCOL}, the plugin asked for {}",
                    env!("CARGO_PKG_VERSION"),
                    protocol.map_or("none".to_owned(), |p| p.to_string())
                ),
                None,
            );
        }
        wire::result(
            id,
            json!({"name": "facet", "version": env!("CARGO_PKG_VERSION"), "protocol": PROTOCOL}),
        )
    }

    fn configure(&mut self, id: u64, params: &Map<String, Value>) -> String {
        let empty = Map::new();
        let row = params
            .get("config")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        match self.start(row) {
            Ok((started, mode)) => {
                let answer = wire::result(id, specs::specs(&started.policy, mode));
                self.started = Some(started);
                answer
            }
            Err(message) => wire::error(Some(id), "CONFIG_INVALID", &message, None),
        }
    }

    fn start(&self, row: &Map<String, Value>) -> Result<(Started, Mode), String> {
        let row_mode = specs::row_mode(row)?;
        let mut core = match &self.config {
            Some(config) => config.clone(),
            None => facet_core::Config::load_chosen().map_err(|error| error.to_string())?,
        };
        if let Some(mode) = row_mode {
            core.default_mode = mode;
        }
        // The tool is registered as `facet`; a configuration that renamed the
        // facet tool must not make its `add` unjudged here.
        let name = crate::facet_tool::TOOL_NAME;
        if !core.facet_tool_names.iter().any(|known| known == name) {
            core.facet_tool_names.push(name.to_owned());
        }
        let store = state::open_store(self.state_dir.as_deref())
            .map_err(|error| format!("dsh-facet: facet's state folder cannot be used: {error}"))?
            .with_config(core.clone());
        let policy =
            Policy::new(&core).with_guarded(state::guarded_locations(self.state_dir.as_deref()));
        let mode = core.default_mode;
        Ok((
            Started {
                policy,
                core,
                store,
                live_config: self.config.is_none(),
            },
            mode,
        ))
    }
}

/// Serve stdin → stdout until stdin closes (dsh exited or disposed the plugin).
pub fn run_stdio() -> io::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    serve(stdin.lock(), stdout.lock(), Bridge::new())
}

/// The loop, over any reader and writer (tests run it on buffers).
pub fn serve(
    mut input: impl BufRead,
    mut output: impl Write,
    mut bridge: Bridge,
) -> io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = input
            .by_ref()
            .take(wire::MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            return Ok(());
        }
        let answers = if line.len() > wire::MAX_LINE_BYTES && !line.ends_with(b"\n") {
            skip_rest_of_line(&mut input)?;
            // The plugin writes `id` first, so the call can still be answered (and
            // the plugin refuses it) rather than left waiting forever.
            vec![wire::error(
                wire::leading_id(&line),
                "TOO_LARGE",
                &format!("a request is longer than {} bytes", wire::MAX_LINE_BYTES),
                None,
            )]
        } else {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            bridge.handle(text)
        };
        for answer in answers {
            // A closed stdout means dsh is gone: nothing is left to answer.
            if writeln!(output, "{answer}")
                .and_then(|()| output.flush())
                .is_err()
            {
                return Ok(());
            }
        }
    }
}

fn skip_rest_of_line(input: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buffer = input.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let all = buffer.len();
                input.consume(all);
            }
        }
    }
}
