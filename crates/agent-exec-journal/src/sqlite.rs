//! The embedded journal: one SQLite file in WAL mode.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction, so two runners sharing the file never
//! interleave a read-check-write.
//!
//! Durability, decided per write (an fsync costs milliseconds, and a run makes five
//! writes): the write that records an execution *starting* commits with
//! `synchronous = FULL` — it is on disk before any backend runs, so no power cut can lose
//! the fact that something was started. Every later write (attempt start, transitions,
//! outcomes) commits with `synchronous = NORMAL`: safe against any process crash
//! (SIGKILL included — the WAL is in the OS page cache), and against a power cut it can
//! only lose tail writes, which turns the execution back into a non-terminal one that
//! the next open honestly marks `unknown`. Not taken: FULL for every write (measured
//! about 3× the whole-run overhead of `agent-exec run` on an ordinary disk), or NORMAL
//! for every write (a power cut could then erase a started execution: a guess by
//! omission).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::decide::{self, Orphan, Recovery, stored_state as state_col};
use crate::owner::{ProcessIdentity, StoredInt};
use crate::record::{
    AttemptRecord, CancelAsk, End, ExecutionRecord, ExecutionStart, ExecutionSummary, KeptResult,
    Prior, Recovered, Resumable, State, TransitionRecord, Usage, json_or_text,
};
use crate::{JournalError, now_rfc3339};

/// The schema version this build writes (`PRAGMA user_version`). 2 added
/// `attempts.session_handle` (resume); 3 added the kept result, the output tail and
/// the cancel request to `executions`. An older file is migrated in place on open.
const SCHEMA_VERSION: i64 = 3;

/// From version 1 to 2, in the transaction that sets the new version.
const MIGRATE_1_TO_2: &str = "ALTER TABLE attempts ADD COLUMN session_handle TEXT;";

/// From version 2 to 3, likewise.
const MIGRATE_2_TO_3: &str = "
ALTER TABLE executions ADD COLUMN result_json TEXT;
ALTER TABLE executions ADD COLUMN result_note TEXT;
ALTER TABLE executions ADD COLUMN output_tail TEXT;
ALTER TABLE executions ADD COLUMN cancel_request TEXT;
";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS executions (
    execution_id      TEXT PRIMARY KEY NOT NULL,
    backend           TEXT NOT NULL,
    state             TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    request_json      TEXT,
    deadline          TEXT,
    error_json        TEXT,
    error_code        TEXT,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    owner_host        TEXT NOT NULL,
    owner_boot_id     TEXT NOT NULL,
    owner_pid         INTEGER NOT NULL,
    owner_start_ticks INTEGER NOT NULL,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    result_json       TEXT,
    result_note       TEXT,
    output_tail       TEXT,
    cancel_request    TEXT
);
CREATE INDEX IF NOT EXISTS executions_open ON executions(state)
    WHERE state IN ('running', 'canceling');
CREATE TABLE IF NOT EXISTS attempts (
    execution_id      TEXT NOT NULL REFERENCES executions(execution_id),
    attempt           INTEGER NOT NULL,
    backend           TEXT NOT NULL,
    state             TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    finished_at       TEXT,
    error_json        TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    owner_host        TEXT NOT NULL,
    owner_boot_id     TEXT NOT NULL,
    owner_pid         INTEGER NOT NULL,
    owner_start_ticks INTEGER NOT NULL,
    session_handle    TEXT,
    PRIMARY KEY (execution_id, attempt)
);
CREATE TABLE IF NOT EXISTS transitions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_id TEXT NOT NULL REFERENCES executions(execution_id),
    attempt      INTEGER NOT NULL,
    from_state   TEXT,
    to_state     TEXT NOT NULL,
    at           TEXT NOT NULL,
    note         TEXT
);
CREATE INDEX IF NOT EXISTS transitions_by_execution ON transitions(execution_id, seq);
";

/// The SQLite journal. Share it behind an `Arc`; all methods take `&self`.
pub struct SqliteJournal {
    conn: Mutex<Connection>,
    path: PathBuf,
    me: ProcessIdentity,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

type Tx<'a> = Transaction<'a>;

impl SqliteJournal {
    /// Opens (creating if needed) the journal file and its parent directory, then turns
    /// every execution left non-terminal by a dead process into `unknown`.
    pub fn open(path: &Path) -> Result<(SqliteJournal, Vec<Recovered>), JournalError> {
        let at = |source: rusqlite::Error| JournalError::Sqlite {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| JournalError::Io {
                path: parent.to_owned(),
                source,
            })?;
        }
        let mut conn = Connection::open(path).map_err(at)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(at)?;
        // WAL: readers (`runs`) never block the runner. NORMAL by default; the start of an
        // execution is committed with FULL (see the module doc).
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(at)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(at)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(at)?;
        let newer = |found: i64| JournalError::NewerSchema {
            location: path.display().to_string(),
            found,
            supported: SCHEMA_VERSION,
        };
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(at)?;
        if version > SCHEMA_VERSION {
            return Err(newer(version));
        }
        // At the current version the schema is whole: it was created (or migrated) in
        // the transaction that wrote the version. Not re-run then: compiling SCHEMA's
        // statements was ~4% of the CPU time of `agent-exec run` (perf, issue 20).
        if version != SCHEMA_VERSION {
            // Create or migrate under the write lock, reading the version again inside:
            // two processes opening an old file at once migrate it once.
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(at)?;
            let version: i64 = tx
                .pragma_query_value(None, "user_version", |row| row.get(0))
                .map_err(at)?;
            if version > SCHEMA_VERSION {
                return Err(newer(version));
            }
            tx.execute_batch(SCHEMA).map_err(at)?;
            // Version 0 is a new file: SCHEMA made it whole.
            if version == 1 {
                tx.execute_batch(MIGRATE_1_TO_2).map_err(at)?;
            }
            if (1..=2).contains(&version) {
                tx.execute_batch(MIGRATE_2_TO_3).map_err(at)?;
            }
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(at)?;
            tx.commit().map_err(at)?;
        }
        // A short-lived CLI closes the file after every run; the default checkpoint on
        // close would fsync the database each time. The WAL is checkpointed by SQLite's
        // automatic checkpoint instead, which is just as safe. Its threshold is a trade:
        // the first connection of every process re-reads and checksums the whole WAL
        // (the wal-index is rebuilt; ~2 µs a page, and a run writes ~25 pages), while a
        // checkpoint costs two fsyncs. At SQLite's default of 1000 pages the re-read was
        // the largest CPU cost of `agent-exec run` (about 1 ms); at 250 pages, measured
        // with scripts/bench-agent-exec.sh's interleaving against 1000 in the same run,
        // a run took 1.0 ms less at the median and 0.9 ms less on average (a checkpoint
        // every ~10 runs). 100 pages was no better than 250 at the median and worse on
        // average. A checkpoint only ever makes more of the WAL durable.
        conn.pragma_update(None, "wal_autocheckpoint", 250)
            .map_err(at)?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(at)?;
        let journal = SqliteJournal {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            me: ProcessIdentity::current(),
        };
        let recovered = journal.recover()?;
        Ok((journal, recovered))
    }

    /// The file this journal writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with_tx<T>(
        &self,
        body: impl FnOnce(&Tx<'_>) -> Result<T, JournalError>,
    ) -> Result<T, JournalError> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let out = body(&tx)?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(out)
    }

    /// [`SqliteJournal::with_tx`], with the commit fsynced (`synchronous = FULL`).
    fn with_durable_tx<T>(
        &self,
        body: impl FnOnce(&Tx<'_>) -> Result<T, JournalError>,
    ) -> Result<T, JournalError> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| self.err(e))?;
        let outcome = (|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.err(e))?;
            let out = body(&tx)?;
            tx.commit().map_err(|e| self.err(e))?;
            Ok(out)
        })();
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| self.err(e))?;
        outcome
    }

    fn err(&self, source: rusqlite::Error) -> JournalError {
        JournalError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn log(
        &self,
        tx: &Tx<'_>,
        execution_id: &str,
        attempt: u32,
        from: Option<State>,
        to: State,
        note: Option<&str>,
    ) -> Result<(), JournalError> {
        tx.execute(
            "INSERT INTO transitions (execution_id, attempt, from_state, to_state, at, note)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                execution_id,
                attempt,
                from.map(State::as_str),
                to.as_str(),
                now_rfc3339(),
                note
            ],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Marks every open execution whose owner is provably gone as `unknown`.
    pub fn recover(&self) -> Result<Vec<Recovered>, JournalError> {
        self.with_tx(|tx| {
            let open = {
                let mut stmt = tx
                    .prepare(
                        "SELECT execution_id, attempts, state, owner_host, owner_boot_id, owner_pid,
                             owner_start_ticks
                         FROM executions WHERE state IN ('running', 'canceling')",
                    )
                    .map_err(|e| self.err(e))?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((
                            text_col(r, 0),
                            count_col(r, 1),
                            text_col(r, 2),
                            owner_from(r, 3),
                        ))
                    })
                    .map_err(|e| self.err(e))?;
                rows.collect::<Result<Vec<_>, _>>()
                    .map_err(|e| self.err(e))?
            };
            let mut recovered = Vec::new();
            for (execution_id, attempt, state, owner) in open {
                let reason = match decide::recovery(&owner, |o| o.liveness(&self.me)) {
                    Recovery::Orphaned(reason) => reason,
                    Recovery::Leave => continue,
                    Recovery::Unjudged(problem) => {
                        let location = self.path.display().to_string();
                        crate::warn_unjudged(&location, &execution_id, &problem);
                        continue;
                    }
                };
                let orphan = Orphan::new(state_col(state), &reason);
                self.mark_unknown(tx, &execution_id, attempt, &orphan)?;
                recovered.push(Recovered {
                    execution_id,
                    attempt,
                    previous: orphan.previous,
                    reason,
                });
            }
            Ok(recovered)
        })
    }

    fn mark_unknown(
        &self,
        tx: &Tx<'_>,
        execution_id: &str,
        attempt: u32,
        orphan: &Orphan,
    ) -> Result<(), JournalError> {
        let now = now_rfc3339();
        let error = &orphan.error_json;
        tx.execute(
            "UPDATE attempts SET state = 'unknown', finished_at = ?2, error_json = ?3
             WHERE execution_id = ?1 AND state IN ('running', 'canceling')",
            params![execution_id, now, error],
        )
        .map_err(|e| self.err(e))?;
        tx.execute(
            "UPDATE executions SET state = 'unknown', error_json = ?2,
                 error_code = 'agent.unknown_outcome',
                 cancel_requested = cancel_requested OR ?3, updated_at = ?4
             WHERE execution_id = ?1",
            params![execution_id, error, orphan.cancel_requested, now],
        )
        .map_err(|e| self.err(e))?;
        self.log(
            tx,
            execution_id,
            attempt,
            Some(orphan.previous),
            State::Unknown,
            Some(&orphan.reason),
        )
    }

    /// Starts an execution, or continues it when the id is already journaled (a step
    /// retry: same id, same deadline, usage carried). Refuses while another live process
    /// still runs it; an orphaned run is first marked `unknown`.
    pub fn start_execution(&self, start: &ExecutionStart<'_>) -> Result<Prior, JournalError> {
        self.with_durable_tx(|tx| {
            let now = now_rfc3339();
            let existing = tx
                .query_row(
                    "SELECT state, attempts, deadline, prompt_tokens, completion_tokens,
                         owner_host, owner_boot_id, owner_pid, owner_start_ticks, error_json
                     FROM executions WHERE execution_id = ?1",
                    [start.execution_id],
                    |r| {
                        Ok((
                            state_col(r.get(0)?),
                            r.get::<_, u32>(1)?,
                            r.get::<_, Option<String>>(2)?,
                            usage_from(r, 3)?,
                            owner_from(r, 5),
                            r.get::<_, Option<String>>(9)?,
                        ))
                    },
                )
                .optional()
                .map_err(|e| self.err(e))?;
            let me = &self.me;
            let Some((previous, attempts, deadline, usage, owner, error_json)) = existing else {
                tx.execute(
                    "INSERT INTO executions (execution_id, backend, state, attempts, request_json,
                         deadline, owner_host, owner_boot_id, owner_pid, owner_start_ticks,
                         created_at, updated_at)
                     VALUES (?1, ?2, 'running', 0, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
                    params![
                        start.execution_id,
                        start.backend,
                        start.request_json,
                        start.deadline,
                        me.host,
                        me.boot_id,
                        me.pid,
                        me.start_ticks as i64,
                        now
                    ],
                )
                .map_err(|e| self.err(e))?;
                self.log(
                    tx,
                    start.execution_id,
                    0,
                    None,
                    State::Running,
                    Some(decide::STARTED_NOTE),
                )?;
                return Ok(Prior::default());
            };
            let continuation = decide::continue_execution(
                start.execution_id,
                previous,
                owner,
                error_json.as_deref(),
                |o| o.liveness(me),
            )?;
            if let Some(orphan) = &continuation.orphan {
                self.mark_unknown(tx, start.execution_id, attempts, orphan)?;
            }
            tx.execute(
                "UPDATE executions SET state = 'running', error_json = NULL, error_code = NULL,
                     request_json = COALESCE(request_json, ?2), deadline = COALESCE(deadline, ?3),
                     owner_host = ?4, owner_boot_id = ?5, owner_pid = ?6, owner_start_ticks = ?7,
                     updated_at = ?8, result_json = NULL, result_note = NULL,
                     output_tail = NULL, cancel_request = NULL
                 WHERE execution_id = ?1",
                params![
                    start.execution_id,
                    start.request_json,
                    start.deadline,
                    me.host,
                    me.boot_id,
                    me.pid,
                    me.start_ticks as i64,
                    now
                ],
            )
            .map_err(|e| self.err(e))?;
            self.log(
                tx,
                start.execution_id,
                attempts,
                Some(continuation.from),
                State::Running,
                Some(decide::CONTINUED_NOTE),
            )?;
            Ok(Prior {
                attempts,
                usage,
                deadline: deadline.or_else(|| start.deadline.map(str::to_owned)),
            })
        })
    }

    /// Starts attempt `attempt`, which must be the next one (1-based).
    pub fn start_attempt(
        &self,
        execution_id: &str,
        attempt: u32,
        backend: &str,
    ) -> Result<(), JournalError> {
        self.with_tx(|tx| {
            let (state, attempts) = self.execution_state(tx, execution_id)?;
            decide::check_next_attempt(execution_id, state, attempts, attempt)?;
            let now = now_rfc3339();
            let me = &self.me;
            tx.execute(
                "INSERT INTO attempts (execution_id, attempt, backend, state, started_at,
                     owner_host, owner_boot_id, owner_pid, owner_start_ticks)
                 VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8)",
                params![
                    execution_id,
                    attempt,
                    backend,
                    now,
                    me.host,
                    me.boot_id,
                    me.pid,
                    me.start_ticks as i64
                ],
            )
            .map_err(|e| self.err(e))?;
            tx.execute(
                "UPDATE executions SET attempts = ?2, backend = ?3, state = 'running', updated_at = ?4
                 WHERE execution_id = ?1",
                params![execution_id, attempt, backend, now],
            )
            .map_err(|e| self.err(e))?;
            let note = decide::attempt_note(attempt, backend);
            self.log(tx, execution_id, attempt, None, State::Running, Some(&note))
        })
    }

    fn execution_state(
        &self,
        tx: &Tx<'_>,
        execution_id: &str,
    ) -> Result<(State, u32), JournalError> {
        tx.query_row(
            "SELECT state, attempts FROM executions WHERE execution_id = ?1",
            [execution_id],
            |r| Ok((state_col(r.get(0)?), r.get(1)?)),
        )
        .optional()
        .map_err(|e| self.err(e))?
        .ok_or_else(|| JournalError::NoSuchExecution(execution_id.to_owned()))
    }

    fn attempt_state(
        &self,
        tx: &Tx<'_>,
        execution_id: &str,
        attempt: u32,
    ) -> Result<State, JournalError> {
        tx.query_row(
            "SELECT state FROM attempts WHERE execution_id = ?1 AND attempt = ?2",
            params![execution_id, attempt],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| self.err(e))?
        .map(state_col)
        .ok_or_else(|| JournalError::NoSuchAttempt {
            execution_id: execution_id.to_owned(),
            attempt,
        })
    }

    /// Records the session handle attempt `attempt` reported; the last one counts.
    ///
    /// Durability: committed like every write after the start (`synchronous =
    /// NORMAL`), not fsynced. What the handle must survive is the runner being
    /// killed (SIGKILL a moment later), and a committed WAL write survives any crash
    /// of the process. A power cut may lose it; the execution is then refused as
    /// having no handle — a resume that cannot happen, never a wrong one.
    pub fn record_session(
        &self,
        execution_id: &str,
        attempt: u32,
        session: &str,
    ) -> Result<(), JournalError> {
        agent_exec_contract::check_session_handle(session).map_err(JournalError::Invalid)?;
        self.with_tx(|tx| {
            let state = self.attempt_state(tx, execution_id, attempt)?;
            decide::check_attempt_open(execution_id, attempt, state)?;
            tx.execute(
                "UPDATE attempts SET session_handle = ?3 WHERE execution_id = ?1 AND attempt = ?2",
                params![execution_id, attempt, session],
            )
            .map_err(|e| self.err(e))?;
            Ok(())
        })
    }

    /// Resumes `execution_id` in one transaction, or (`claim` false) only says whether
    /// it could be resumed. See [`crate::Journal::resume`] and
    /// [`crate::Journal::resumable`].
    pub fn resume<T>(
        &self,
        execution_id: &str,
        backend: Option<&str>,
        claim: bool,
        parse: impl FnOnce(Option<&str>) -> Result<T, JournalError>,
    ) -> Result<Resumable<T>, JournalError> {
        self.with_tx(|tx| {
            let row = tx
                .query_row(
                    "SELECT state, attempts, backend, request_json, deadline, prompt_tokens,
                         completion_tokens, owner_host, owner_boot_id, owner_pid, owner_start_ticks
                     FROM executions WHERE execution_id = ?1",
                    [execution_id],
                    |r| {
                        Ok((
                            state_col(r.get(0)?),
                            r.get::<_, u32>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, Option<String>>(3)?,
                            r.get::<_, Option<String>>(4)?,
                            usage_from(r, 5)?,
                            owner_from(r, 7),
                        ))
                    },
                )
                .optional()
                .map_err(|e| self.err(e))?;
            let Some((mut state, attempts, journaled, request_json, deadline, usage, owner)) = row
            else {
                return Err(JournalError::NoSuchExecution(execution_id.to_owned()));
            };
            if let Some(reason) =
                decide::take_over(execution_id, state, owner, |o| o.liveness(&self.me))?
            {
                if claim {
                    self.mark_unknown(tx, execution_id, attempts, &Orphan::new(state, &reason))?;
                }
                state = State::Unknown;
            }
            let session = tx
                .query_row(
                    "SELECT attempt, session_handle FROM attempts
                     WHERE execution_id = ?1 AND backend = ?2 AND session_handle IS NOT NULL
                     ORDER BY attempt DESC LIMIT 1",
                    params![execution_id, journaled],
                    |r| Ok((r.get::<_, u32>(0)?, r.get::<_, String>(1)?)),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            let (session_attempt, session) =
                decide::check_resumable(execution_id, state, &journaled, backend, session)?;
            let request = parse(request_json.as_deref())?;
            if claim {
                let me = &self.me;
                tx.execute(
                    "UPDATE executions SET state = 'running', error_json = NULL, error_code = NULL,
                         owner_host = ?2, owner_boot_id = ?3, owner_pid = ?4,
                         owner_start_ticks = ?5, updated_at = ?6, result_json = NULL,
                         result_note = NULL, output_tail = NULL, cancel_request = NULL
                     WHERE execution_id = ?1",
                    params![
                        execution_id,
                        me.host,
                        me.boot_id,
                        me.pid,
                        me.start_ticks as i64,
                        now_rfc3339()
                    ],
                )
                .map_err(|e| self.err(e))?;
                self.log(
                    tx,
                    execution_id,
                    attempts,
                    Some(state),
                    State::Running,
                    Some(&decide::resumed_note(session_attempt)),
                )?;
            }
            Ok(Resumable {
                backend: journaled,
                session,
                session_attempt,
                request,
                prior: Prior {
                    attempts,
                    usage,
                    deadline,
                },
            })
        })
    }

    /// Records a non-terminal state change of an attempt (today: `canceling`). A change
    /// to the state it is already in records nothing.
    pub fn transition(
        &self,
        execution_id: &str,
        attempt: u32,
        to: State,
        note: Option<&str>,
    ) -> Result<(), JournalError> {
        decide::check_transition_target(to)?;
        self.with_tx(|tx| {
            let from = self.attempt_state(tx, execution_id, attempt)?;
            if !decide::transition_needed(execution_id, attempt, from, to)? {
                return Ok(());
            }
            tx.execute(
                "UPDATE attempts SET state = ?3 WHERE execution_id = ?1 AND attempt = ?2",
                params![execution_id, attempt, to.as_str()],
            )
            .map_err(|e| self.err(e))?;
            tx.execute(
                "UPDATE executions SET state = ?3, updated_at = ?4,
                     cancel_requested = cancel_requested OR ?5
                 WHERE execution_id = ?1 AND attempts = ?2",
                params![
                    execution_id,
                    attempt,
                    to.as_str(),
                    now_rfc3339(),
                    to == State::Canceling
                ],
            )
            .map_err(|e| self.err(e))?;
            self.log(tx, execution_id, attempt, Some(from), to, note)
        })
    }

    /// Records the outcome of an attempt. The execution stays open until
    /// [`SqliteJournal::finish_execution`]; its usage becomes the sum over its attempts.
    pub fn finish_attempt(
        &self,
        execution_id: &str,
        attempt: u32,
        end: &End<'_>,
    ) -> Result<(), JournalError> {
        decide::check_outcome(end.outcome)?;
        self.with_tx(|tx| {
            let from = self.attempt_state(tx, execution_id, attempt)?;
            decide::check_attempt_open(execution_id, attempt, from)?;
            let now = now_rfc3339();
            tx.execute(
                "UPDATE attempts SET state = ?3, finished_at = ?4, error_json = ?5,
                     prompt_tokens = ?6, completion_tokens = ?7
                 WHERE execution_id = ?1 AND attempt = ?2",
                params![
                    execution_id,
                    attempt,
                    end.outcome.as_str(),
                    now,
                    end.error_json,
                    end.usage.prompt_tokens as i64,
                    end.usage.completion_tokens as i64
                ],
            )
            .map_err(|e| self.err(e))?;
            tx.execute(
                "UPDATE executions SET updated_at = ?2,
                     prompt_tokens = (SELECT COALESCE(SUM(prompt_tokens), 0) FROM attempts WHERE execution_id = ?1),
                     completion_tokens = (SELECT COALESCE(SUM(completion_tokens), 0) FROM attempts WHERE execution_id = ?1)
                 WHERE execution_id = ?1",
                params![execution_id, now],
            )
            .map_err(|e| self.err(e))?;
            self.log(tx, execution_id, attempt, Some(from), end.outcome, end.error_code)
        })
    }

    /// Records the outcome of the execution (the result returned to the caller).
    pub fn finish_execution(&self, execution_id: &str, end: &End<'_>) -> Result<(), JournalError> {
        self.finish_execution_kept(execution_id, end, None)
    }

    /// [`SqliteJournal::finish_execution`], keeping the result the caller got.
    pub fn finish_execution_kept(
        &self,
        execution_id: &str,
        end: &End<'_>,
        kept: Option<&KeptResult>,
    ) -> Result<(), JournalError> {
        decide::check_outcome(end.outcome)?;
        self.with_tx(|tx| {
            let (from, attempts) = self.execution_state(tx, execution_id)?;
            decide::check_execution_open(execution_id, from, attempts)?;
            tx.execute(
                "UPDATE executions SET state = ?2, error_json = ?3, error_code = ?4,
                     cancel_requested = cancel_requested OR ?5, updated_at = ?6,
                     result_json = ?7, result_note = ?8
                 WHERE execution_id = ?1",
                params![
                    execution_id,
                    end.outcome.as_str(),
                    end.error_json,
                    end.error_code,
                    end.cancel_requested,
                    now_rfc3339(),
                    kept.map(|k| k.json.as_str()),
                    kept.and_then(|k| k.note.as_deref())
                ],
            )
            .map_err(|e| self.err(e))?;
            self.log(
                tx,
                execution_id,
                attempts,
                Some(from),
                end.outcome,
                Some(&decide::execution_note(end)),
            )
        })
    }

    /// Asks the runner of `execution_id` to cancel it: recorded in the journal, which
    /// the runner polls while it runs (see `crate::Journal::request_cancel`). A second
    /// request keeps the first one's words.
    pub fn request_cancel(&self, execution_id: &str, by: &str) -> Result<CancelAsk, JournalError> {
        self.with_tx(|tx| {
            let row = tx
                .query_row(
                    "SELECT state, attempts, owner_host, owner_boot_id, owner_pid, owner_start_ticks
                     FROM executions WHERE execution_id = ?1",
                    [execution_id],
                    |r| Ok((state_col(text_col(r, 0)), count_col(r, 1), owner_from(r, 2).0)),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            let Some((state, attempts, owner)) = row else {
                return Err(JournalError::NoSuchExecution(execution_id.to_owned()));
            };
            let Some(note) = decide::cancel_note(state, by, &now_rfc3339()) else {
                return Ok(CancelAsk::AlreadyEnded(state));
            };
            tx.execute(
                "UPDATE executions SET cancel_request = COALESCE(cancel_request, ?2)
                 WHERE execution_id = ?1",
                params![execution_id, note],
            )
            .map_err(|e| self.err(e))?;
            self.log(tx, execution_id, attempts, Some(state), state, Some(&note))?;
            Ok(CancelAsk::Recorded { owner })
        })
    }

    /// The cancel request recorded for `execution_id` while it runs, if any: what its
    /// runner polls. A read (no write lock).
    pub fn cancel_request(&self, execution_id: &str) -> Result<Option<String>, JournalError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.query_row(
            "SELECT cancel_request FROM executions
             WHERE execution_id = ?1 AND state IN ('running', 'canceling')",
            [execution_id],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()
        .map(Option::flatten)
        .map_err(|e| self.err(e))
    }

    /// Keeps the tail of the output the execution streamed (at most
    /// [`crate::OUTPUT_TAIL_CAP`] bytes of `output`'s end).
    pub fn record_output_tail(&self, execution_id: &str, output: &str) -> Result<(), JournalError> {
        let tail = crate::tail_of(output, crate::OUTPUT_TAIL_CAP);
        self.with_tx(|tx| {
            tx.execute(
                "UPDATE executions SET output_tail = ?2 WHERE execution_id = ?1",
                params![execution_id, tail],
            )
            .map_err(|e| self.err(e))?;
            Ok(())
        })
    }

    /// Deletes every execution that ended (a terminal state) before `cutoff`, with
    /// its attempts and transitions; a running one is never deleted. Returns how many.
    pub fn prune_ended_before(&self, cutoff: &str) -> Result<u64, JournalError> {
        self.with_tx(|tx| {
            let doomed = "SELECT execution_id FROM executions
                 WHERE state IN ('succeeded', 'failed', 'canceled', 'unknown') AND updated_at < ?1";
            for table in ["transitions", "attempts"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE execution_id IN ({doomed})"),
                    [cutoff],
                )
                .map_err(|e| self.err(e))?;
            }
            let n = tx
                .execute(
                    "DELETE FROM executions
                     WHERE state IN ('succeeded', 'failed', 'canceled', 'unknown') AND updated_at < ?1",
                    [cutoff],
                )
                .map_err(|e| self.err(e))?;
            Ok(n as u64)
        })
    }

    /// The most recent executions first.
    pub fn list(&self, limit: u32) -> Result<Vec<ExecutionSummary>, JournalError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM executions ORDER BY rowid DESC LIMIT ?1"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([limit], summary_from_row)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Everything about one execution, or `None` when the id is not in the journal.
    pub fn show(&self, execution_id: &str) -> Result<Option<ExecutionRecord>, JournalError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let head = conn
            .query_row(
                &format!(
                    "SELECT {SUMMARY_COLUMNS}, request_json, error_json, owner_host, owner_boot_id,
                         owner_pid, owner_start_ticks, result_json, result_note, output_tail,
                         cancel_request
                     FROM executions WHERE execution_id = ?1"
                ),
                [execution_id],
                |r| {
                    Ok((
                        summary_from_row(r)?,
                        r.get::<_, Option<String>>(11)?,
                        r.get::<_, Option<String>>(12)?,
                        owner_from(r, 13).0,
                        [17, 18, 19, 20].map(|i| r.get::<_, Option<String>>(i).ok().flatten()),
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((
            summary,
            request,
            error,
            owner,
            [result, result_note, output_tail, cancel_request],
        )) = head
        else {
            return Ok(None);
        };
        let attempts = {
            let mut stmt = conn
                .prepare(
                    "SELECT attempt, backend, state, started_at, finished_at, error_json, prompt_tokens,
                         completion_tokens, owner_host, owner_boot_id, owner_pid, owner_start_ticks,
                         session_handle
                     FROM attempts WHERE execution_id = ?1 ORDER BY attempt",
                )
                .map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map([execution_id], |r| {
                    Ok(AttemptRecord {
                        attempt: r.get(0)?,
                        backend: r.get(1)?,
                        state: state_col(r.get(2)?),
                        started_at: r.get(3)?,
                        finished_at: r.get(4)?,
                        error: json_or_text(r.get(5)?),
                        usage: usage_from(r, 6)?,
                        owner: owner_from(r, 8).0,
                        session_handle: r.get(12)?,
                    })
                })
                .map_err(|e| self.err(e))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.err(e))?
        };
        let transitions = {
            let mut stmt = conn
                .prepare(
                    "SELECT attempt, from_state, to_state, at, note FROM transitions
                     WHERE execution_id = ?1 ORDER BY seq",
                )
                .map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map([execution_id], |r| {
                    Ok(TransitionRecord {
                        attempt: r.get(0)?,
                        from: r.get::<_, Option<String>>(1)?.map(state_col),
                        to: state_col(r.get(2)?),
                        at: r.get(3)?,
                        note: r.get(4)?,
                    })
                })
                .map_err(|e| self.err(e))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.err(e))?
        };
        Ok(Some(ExecutionRecord {
            summary,
            request: json_or_text(request),
            error: json_or_text(error),
            result: json_or_text(result.clone()),
            result_text: result,
            result_note,
            output_tail,
            cancel_request,
            attempts,
            transitions,
            owner,
        }))
    }
}

const SUMMARY_COLUMNS: &str =
    "execution_id, backend, state, attempts, error_code, cancel_requested,
    prompt_tokens, completion_tokens, deadline, created_at, updated_at";

/// A listing row, read leniently: a value of the wrong type or range in one row
/// shows as 0 or empty rather than failing the whole listing.
fn summary_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ExecutionSummary> {
    Ok(ExecutionSummary {
        execution_id: text_col(r, 0),
        backend: text_col(r, 1),
        state: state_col(text_col(r, 2)),
        attempts: count_col(r, 3),
        error_code: r.get(4).ok().flatten(),
        cancel_requested: matches!(int_col(r, 5), StoredInt::Int(n) if n != 0),
        usage: usage_from(r, 6)?,
        deadline: r.get(8).ok().flatten(),
        created_at: text_col(r, 9),
        updated_at: text_col(r, 10),
    })
}

fn usage_from(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Usage> {
    let tokens = |i| match int_col(r, i) {
        StoredInt::Int(n) => n.max(0) as u64,
        StoredInt::Other(_) => 0,
    };
    Ok(Usage {
        prompt_tokens: tokens(first),
        completion_tokens: tokens(first + 1),
    })
}

/// The owner columns from `first` on, and what is wrong with them, if anything (see
/// [`ProcessIdentity::from_stored`]).
fn owner_from(r: &rusqlite::Row<'_>, first: usize) -> (ProcessIdentity, Option<String>) {
    ProcessIdentity::from_stored(
        text_col(r, first),
        text_col(r, first + 1),
        int_col(r, first + 2),
        int_col(r, first + 3),
    )
}

/// An integer column as stored (SQLite keeps any type in any column).
fn int_col(r: &rusqlite::Row<'_>, i: usize) -> StoredInt {
    use rusqlite::types::ValueRef;
    match r.get_ref(i) {
        Ok(ValueRef::Integer(n)) => StoredInt::Int(n),
        Ok(ValueRef::Null) => StoredInt::Other("NULL".into()),
        Ok(ValueRef::Real(f)) => StoredInt::Other(f.to_string()),
        Ok(ValueRef::Text(t)) => StoredInt::Other(format!("{:?}", String::from_utf8_lossy(t))),
        Ok(ValueRef::Blob(_)) => StoredInt::Other("a blob".into()),
        Err(e) => StoredInt::Other(e.to_string()),
    }
}

/// A count (attempts), 0 when the row holds no count.
fn count_col(r: &rusqlite::Row<'_>, i: usize) -> u32 {
    match int_col(r, i) {
        StoredInt::Int(n) => u32::try_from(n).unwrap_or(0),
        StoredInt::Other(_) => 0,
    }
}

/// A text column, whatever the row holds there (empty for NULL or a blob).
fn text_col(r: &rusqlite::Row<'_>, i: usize) -> String {
    use rusqlite::types::ValueRef;
    match r.get_ref(i) {
        Ok(ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        Ok(ValueRef::Integer(n)) => n.to_string(),
        Ok(ValueRef::Real(f)) => f.to_string(),
        _ => String::new(),
    }
}
