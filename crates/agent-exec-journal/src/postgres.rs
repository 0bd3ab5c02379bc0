//! The fleet journal: the same tables on PostgreSQL, reached through a URL.
//!
//! Tables are prefixed `agent_exec_` because a fleet database is usually shared. Schema
//! creation runs under a transaction-scoped advisory lock so runners starting together
//! do not race on `CREATE TABLE IF NOT EXISTS`. Row-level `SELECT … FOR UPDATE` takes the
//! place of SQLite's `BEGIN IMMEDIATE`. Recovery on open only judges attempts owned by
//! *this* host (see [`crate::owner`]); other hosts' runners are not provably dead from here.
//! TLS is not wired (`NoTls`): point it at a loopback server, a Unix socket, or a tunnel.

use std::sync::Arc;

use tokio_postgres::error::SqlState;
use tokio_postgres::{Row, Transaction};

use crate::pg_connection::{PgConnection, redact_url};

use crate::decide::{self, Orphan, Recovery, stored_state as state_col};
use crate::owner::{ProcessIdentity, StoredInt};
use crate::record::{
    AttemptRecord, CancelAsk, End, ExecutionRecord, ExecutionStart, ExecutionSummary, KeptResult,
    Prior, Recovered, Resumable, State, TransitionRecord, Usage, json_or_text,
};
use crate::{JournalError, now_rfc3339};

/// 2 added `agent_exec_attempts.session_handle` (resume); 3 the kept result, the
/// output tail and the cancel request on `agent_exec_executions`. An older database
/// is migrated in place, under the schema lock.
const SCHEMA_VERSION: i32 = 3;

/// From version 2 to 3.
const MIGRATE_2_TO_3: &str = "
ALTER TABLE agent_exec_executions ADD COLUMN IF NOT EXISTS result_json TEXT;
ALTER TABLE agent_exec_executions ADD COLUMN IF NOT EXISTS result_note TEXT;
ALTER TABLE agent_exec_executions ADD COLUMN IF NOT EXISTS output_tail TEXT;
ALTER TABLE agent_exec_executions ADD COLUMN IF NOT EXISTS cancel_request TEXT;
";

/// From version 1 to 2 (`IF NOT EXISTS`: harmless if a crashed migration got halfway —
/// it cannot, it is one transaction, but the statement costs nothing more).
const MIGRATE_1_TO_2: &str =
    "ALTER TABLE agent_exec_attempts ADD COLUMN IF NOT EXISTS session_handle TEXT;";
/// Arbitrary constant naming the schema-creation advisory lock.
const SCHEMA_LOCK: i64 = 0x6167_656e_7465_7865;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_exec_meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_exec_executions (
    seq               BIGSERIAL UNIQUE,
    execution_id      TEXT PRIMARY KEY,
    backend           TEXT NOT NULL,
    state             TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    request_json      TEXT,
    deadline          TEXT,
    error_json        TEXT,
    error_code        TEXT,
    cancel_requested  BOOLEAN NOT NULL DEFAULT FALSE,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    owner_host        TEXT NOT NULL,
    owner_boot_id     TEXT NOT NULL,
    owner_pid         BIGINT NOT NULL,
    owner_start_ticks BIGINT NOT NULL,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    result_json       TEXT,
    result_note       TEXT,
    output_tail       TEXT,
    cancel_request    TEXT
);
CREATE INDEX IF NOT EXISTS agent_exec_executions_open ON agent_exec_executions(owner_host)
    WHERE state IN ('running', 'canceling');
CREATE TABLE IF NOT EXISTS agent_exec_attempts (
    execution_id      TEXT NOT NULL REFERENCES agent_exec_executions(execution_id),
    attempt           INTEGER NOT NULL,
    backend           TEXT NOT NULL,
    state             TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    finished_at       TEXT,
    error_json        TEXT,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    owner_host        TEXT NOT NULL,
    owner_boot_id     TEXT NOT NULL,
    owner_pid         BIGINT NOT NULL,
    owner_start_ticks BIGINT NOT NULL,
    session_handle    TEXT,
    PRIMARY KEY (execution_id, attempt)
);
CREATE TABLE IF NOT EXISTS agent_exec_transitions (
    seq          BIGSERIAL PRIMARY KEY,
    execution_id TEXT NOT NULL REFERENCES agent_exec_executions(execution_id),
    attempt      INTEGER NOT NULL,
    from_state   TEXT,
    to_state     TEXT NOT NULL,
    at           TEXT NOT NULL,
    note         TEXT
);
CREATE INDEX IF NOT EXISTS agent_exec_transitions_by_execution
    ON agent_exec_transitions(execution_id, seq);
";

/// The PostgreSQL journal.
pub struct PgJournal {
    /// Its connection, which a fleet command may share ([`PgJournal::open_on`]).
    conn: Arc<PgConnection>,
    /// The URL with any password removed, for messages.
    location: String,
    me: ProcessIdentity,
}

impl std::fmt::Debug for PgJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgJournal")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PgJournal {
    /// Connects, creates the tables if needed, and recovers this host's orphaned attempts.
    pub async fn open(url: &str) -> Result<(PgJournal, Vec<Recovered>), JournalError> {
        let conn = PgConnection::connect(url)
            .await
            .map_err(|source| JournalError::Postgres {
                location: redact_url(url),
                source,
            })?;
        PgJournal::open_on(Arc::new(conn)).await
    }

    /// [`PgJournal::open`] over a connection the caller already has (and may keep
    /// using for its own tables: the fleet's one-shot commands need one connection,
    /// not one per component).
    pub async fn open_on(
        conn: Arc<PgConnection>,
    ) -> Result<(PgJournal, Vec<Recovered>), JournalError> {
        let journal = PgJournal {
            location: conn.location().to_owned(),
            conn,
            me: ProcessIdentity::current(),
        };
        // What every open runs, prepared in one round trip (a one-shot command runs
        // each once; parsing them one by one was a round trip each).
        journal
            .conn
            .prepare_all(&[VERSION_SQL, OPEN_SQL, &show_head_sql()])
            .await;
        journal.migrate().await?;
        let recovered = journal.recover().await?;
        Ok((journal, recovered))
    }

    /// The connection (shared with whoever opened the journal on it).
    pub fn connection(&self) -> &Arc<PgConnection> {
        &self.conn
    }

    /// The redacted URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    fn err(&self, source: tokio_postgres::Error) -> JournalError {
        JournalError::Postgres {
            location: self.location.clone(),
            source,
        }
    }

    /// The schema at this version: one read when it is (every open but the first
    /// one of a database); the tables are created, under a transaction-scoped
    /// advisory lock, only when the version row is missing. The version row is written
    /// in the transaction that creates the tables, so its presence proves them.
    async fn migrate(&self) -> Result<(), JournalError> {
        {
            let client = self.conn.read().await;
            match self.conn.query_opt(&*client, VERSION_SQL, &[]).await {
                // At this version or newer: nothing to write (newer is refused). An
                // older one is migrated below, under the lock.
                Ok(Some(row)) if row.get::<_, i32>(0) >= SCHEMA_VERSION => {
                    return self.check_version(row.get(0));
                }
                Ok(Some(_)) => {}
                // No row, or no table yet: create below.
                Ok(None) => {}
                Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
                Err(e) => return Err(self.err(e)),
            }
        }
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .await
            .map_err(|e| self.err(e))?;
        tx.batch_execute(SCHEMA).await.map_err(|e| self.err(e))?;
        let found: Option<i32> = tx
            .query_opt(
                "SELECT value FROM agent_exec_meta WHERE key = 'schema_version'",
                &[],
            )
            .await
            .map_err(|e| self.err(e))?
            .map(|r| r.get(0));
        match found {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(JournalError::NewerSchema {
                    location: self.location.clone(),
                    found: i64::from(v),
                    supported: i64::from(SCHEMA_VERSION),
                });
            }
            Some(SCHEMA_VERSION) => {}
            Some(old) => {
                if old == 1 {
                    tx.batch_execute(MIGRATE_1_TO_2)
                        .await
                        .map_err(|e| self.err(e))?;
                }
                if old <= 2 {
                    tx.batch_execute(MIGRATE_2_TO_3)
                        .await
                        .map_err(|e| self.err(e))?;
                }
                tx.execute(
                    "UPDATE agent_exec_meta SET value = $1 WHERE key = 'schema_version'",
                    &[&SCHEMA_VERSION],
                )
                .await
                .map_err(|e| self.err(e))?;
            }
            None => {
                tx.execute(
                    "INSERT INTO agent_exec_meta (key, value) VALUES ('schema_version', $1)",
                    &[&SCHEMA_VERSION],
                )
                .await
                .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().await.map_err(|e| self.err(e))
    }

    fn check_version(&self, found: i32) -> Result<(), JournalError> {
        if found > SCHEMA_VERSION {
            return Err(JournalError::NewerSchema {
                location: self.location.clone(),
                found: i64::from(found),
                supported: i64::from(SCHEMA_VERSION),
            });
        }
        Ok(())
    }

    async fn log(
        &self,
        tx: &Transaction<'_>,
        execution_id: &str,
        attempt: u32,
        from: Option<State>,
        to: State,
        note: Option<&str>,
    ) -> Result<(), JournalError> {
        self.conn.execute(tx,
            "INSERT INTO agent_exec_transitions (execution_id, attempt, from_state, to_state, at, note)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &execution_id,
                &(attempt as i32),
                &from.map(State::as_str),
                &to.as_str(),
                &now_rfc3339(),
                &note,
            ],
        )
        .await
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Marks every open execution of this host whose owner is provably gone as `unknown`.
    ///
    /// Two steps. First a plain read of this host's open executions, judged here, with
    /// no lock taken: in a fleet many processes open the journal all the time (every
    /// `submit`, `wait`, `cancel`), and locking the live workers' rows made their
    /// journal writes wait on each open. Then, only when some owner is dead, those rows
    /// are locked and judged again (state and owner re-read: another process may have
    /// settled or continued one in between). `SKIP LOCKED`, ordered: two recoveries
    /// locking the same rows in different orders deadlocked (seen: `deadlock detected`
    /// in the 200-submit fleet test); a row another transaction holds is being settled
    /// by another recovery or continued by a new owner, so it is left to them.
    pub async fn recover(&self) -> Result<Vec<Recovered>, JournalError> {
        let candidates: Vec<String> = {
            let client = self.conn.read().await;
            self.conn
                .query(&*client, OPEN_SQL, &[&self.me.host])
                .await
                .map_err(|e| self.err(e))?
                .iter()
                .filter(|row| {
                    match decide::recovery(&owner_from(row, 3), |o| o.liveness(&self.me)) {
                        Recovery::Orphaned(_) => true,
                        Recovery::Leave => false,
                        Recovery::Unjudged(problem) => {
                            crate::warn_unjudged(&self.location, row.get(0), &problem);
                            false
                        }
                    }
                })
                .map(|row| row.get(0))
                .collect()
        };
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let rows = self
            .conn
            .query(
                &tx,
                &format!(
                    "{OPEN_SQL} AND execution_id = ANY($2) ORDER BY execution_id FOR UPDATE SKIP LOCKED"
                ),
                &[&self.me.host, &candidates],
            )
            .await
            .map_err(|e| self.err(e))?;
        let mut recovered = Vec::new();
        for row in rows {
            let execution_id: String = row.get(0);
            let attempt = row.get::<_, i32>(1) as u32;
            // Judged again under the lock: it may have moved on since the read.
            let Recovery::Orphaned(reason) =
                decide::recovery(&owner_from(&row, 3), |o| o.liveness(&self.me))
            else {
                continue;
            };
            let orphan = Orphan::new(state_col(row.get(2)), &reason);
            self.mark_unknown(&tx, &execution_id, attempt, &orphan)
                .await?;
            recovered.push(Recovered {
                execution_id,
                attempt,
                previous: orphan.previous,
                reason,
            });
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(recovered)
    }

    async fn mark_unknown(
        &self,
        tx: &Transaction<'_>,
        execution_id: &str,
        attempt: u32,
        orphan: &Orphan,
    ) -> Result<(), JournalError> {
        let now = now_rfc3339();
        let error = &orphan.error_json;
        self.conn.execute(tx,
            "UPDATE agent_exec_attempts SET state = 'unknown', finished_at = $2, error_json = $3
             WHERE execution_id = $1 AND state IN ('running', 'canceling')",
            &[&execution_id, &now, &error],
        )
        .await
        .map_err(|e| self.err(e))?;
        self.conn
            .execute(
                tx,
                "UPDATE agent_exec_executions SET state = 'unknown', error_json = $2,
                 error_code = 'agent.unknown_outcome', cancel_requested = cancel_requested OR $3,
                 updated_at = $4
             WHERE execution_id = $1",
                &[&execution_id, error, &orphan.cancel_requested, &now],
            )
            .await
            .map_err(|e| self.err(e))?;
        self.log(
            tx,
            execution_id,
            attempt,
            Some(orphan.previous),
            State::Unknown,
            Some(&orphan.reason),
        )
        .await
    }

    /// Settles one execution whose owner is known to be gone by a proof made
    /// *outside* this process (the fleet's worker lease expired, see
    /// `agent-exec-fleet`): if it is still `running`/`canceling` **and** still owned by
    /// exactly `owner`, it becomes `unknown` like a recovered orphan. Returns whether
    /// it did. An execution that moved on (finished, or taken over by a later attempt
    /// of another process) is left alone: the owner check is the fence.
    pub async fn settle_orphan(
        &self,
        execution_id: &str,
        owner: &ProcessIdentity,
        reason: &str,
    ) -> Result<bool, JournalError> {
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let row = self
            .conn
            .query_opt(
                &tx,
                "SELECT attempts, state, owner_host, owner_boot_id, owner_pid, owner_start_ticks
                 FROM agent_exec_executions WHERE execution_id = $1 FOR UPDATE",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            return Ok(false);
        };
        let attempt = row.get::<_, i32>(0) as u32;
        let previous = state_col(row.get(1));
        if !decide::settles_orphan(previous, &owner_from(&row, 2), owner) {
            return Ok(false);
        }
        self.mark_unknown(&tx, execution_id, attempt, &Orphan::new(previous, reason))
            .await?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(true)
    }

    /// Records the end of an execution that never started: a queued job canceled, or
    /// one whose worker died after claiming it and before starting it. Creates the
    /// row (0 attempts) or, for an execution that has earlier attempts (a step retry
    /// queued again), moves its terminal state on and logs why. Refused for an
    /// execution that is running.
    pub async fn record_unstarted(
        &self,
        execution_id: &str,
        backend: &str,
        request_json: Option<&str>,
        end: &End<'_>,
        note: &str,
    ) -> Result<(), JournalError> {
        decide::check_outcome(end.outcome)?;
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let now = now_rfc3339();
        let me = &self.me;
        let existing = self.conn.query_opt(&tx,
                "SELECT state, attempts FROM agent_exec_executions WHERE execution_id = $1 FOR UPDATE",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?;
        let (from, attempts) =
            match existing {
                None => {
                    self.conn.execute(&tx,
                    "INSERT INTO agent_exec_executions (execution_id, backend, state, attempts,
                         request_json, error_json, error_code, owner_host, owner_boot_id,
                         owner_pid, owner_start_ticks, created_at, updated_at)
                     VALUES ($1, $2, $3, 0, $4, $5, $6, $7, $8, $9, $10, $11, $11)",
                    &[
                        &execution_id,
                        &backend,
                        &end.outcome.as_str(),
                        &request_json,
                        &end.error_json,
                        &end.error_code,
                        &me.host,
                        &me.boot_id,
                        &i64::from(me.pid),
                        &(me.start_ticks as i64),
                        &now,
                    ],
                )
                .await
                .map_err(|e| self.err(e))?;
                    (None, 0)
                }
                Some(row) => {
                    let from = state_col(row.get(0));
                    let attempts = row.get::<_, i32>(1) as u32;
                    decide::check_unstarted(execution_id, Some(from))?;
                    self.conn.execute(&tx,
                    "UPDATE agent_exec_executions SET state = $2, error_json = $3, error_code = $4,
                         updated_at = $5
                     WHERE execution_id = $1",
                    &[
                        &execution_id,
                        &end.outcome.as_str(),
                        &end.error_json,
                        &end.error_code,
                        &now,
                    ],
                )
                .await
                .map_err(|e| self.err(e))?;
                    (Some(from), attempts)
                }
            };
        self.log(&tx, execution_id, attempts, from, end.outcome, Some(note))
            .await?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// See [`crate::SqliteJournal::start_execution`].
    pub async fn start_execution(&self, start: &ExecutionStart<'_>) -> Result<Prior, JournalError> {
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let now = now_rfc3339();
        let me = &self.me;
        let existing = self
            .conn
            .query_opt(
                &tx,
                "SELECT state, attempts, deadline, prompt_tokens, completion_tokens,
                     owner_host, owner_boot_id, owner_pid, owner_start_ticks, error_json
                 FROM agent_exec_executions WHERE execution_id = $1 FOR UPDATE",
                &[&start.execution_id],
            )
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = existing else {
            self.conn
                .execute(
                    &tx,
                    "INSERT INTO agent_exec_executions (execution_id, backend, state, attempts,
                     request_json, deadline, owner_host, owner_boot_id, owner_pid,
                     owner_start_ticks, created_at, updated_at)
                 VALUES ($1, $2, 'running', 0, $3, $4, $5, $6, $7, $8, $9, $9)",
                    &[
                        &start.execution_id,
                        &start.backend,
                        &start.request_json,
                        &start.deadline,
                        &me.host,
                        &me.boot_id,
                        &i64::from(me.pid),
                        &(me.start_ticks as i64),
                        &now,
                    ],
                )
                .await
                .map_err(|e| self.err(e))?;
            self.log(
                &tx,
                start.execution_id,
                0,
                None,
                State::Running,
                Some(decide::STARTED_NOTE),
            )
            .await?;
            tx.commit().await.map_err(|e| self.err(e))?;
            return Ok(Prior::default());
        };
        let attempts = row.get::<_, i32>(1) as u32;
        let deadline: Option<String> = row.get(2);
        let usage = usage_from(&row, 3);
        let continuation = decide::continue_execution(
            start.execution_id,
            state_col(row.get(0)),
            owner_from(&row, 5),
            row.get::<_, Option<&str>>(9),
            |o| o.liveness(me),
        )?;
        if let Some(orphan) = &continuation.orphan {
            self.mark_unknown(&tx, start.execution_id, attempts, orphan)
                .await?;
        }
        self.conn.execute(&tx,
            "UPDATE agent_exec_executions SET state = 'running', error_json = NULL, error_code = NULL,
                 request_json = COALESCE(request_json, $2), deadline = COALESCE(deadline, $3),
                 owner_host = $4, owner_boot_id = $5, owner_pid = $6, owner_start_ticks = $7,
                 updated_at = $8, result_json = NULL, result_note = NULL, output_tail = NULL,
                 cancel_request = NULL
             WHERE execution_id = $1",
            &[
                &start.execution_id,
                &start.request_json,
                &start.deadline,
                &me.host,
                &me.boot_id,
                &i64::from(me.pid),
                &(me.start_ticks as i64),
                &now,
            ],
        )
        .await
        .map_err(|e| self.err(e))?;
        self.log(
            &tx,
            start.execution_id,
            attempts,
            Some(continuation.from),
            State::Running,
            Some(decide::CONTINUED_NOTE),
        )
        .await?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Prior {
            attempts,
            usage,
            deadline: deadline.or_else(|| start.deadline.map(str::to_owned)),
        })
    }

    async fn execution_state(
        &self,
        tx: &Transaction<'_>,
        execution_id: &str,
    ) -> Result<(State, u32), JournalError> {
        let row = self.conn.query_opt(tx,
                "SELECT state, attempts FROM agent_exec_executions WHERE execution_id = $1 FOR UPDATE",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?
            .ok_or_else(|| JournalError::NoSuchExecution(execution_id.to_owned()))?;
        Ok((state_col(row.get(0)), row.get::<_, i32>(1) as u32))
    }

    async fn attempt_state(
        &self,
        tx: &Transaction<'_>,
        execution_id: &str,
        attempt: u32,
    ) -> Result<State, JournalError> {
        let row = self.conn.query_opt(tx,
                "SELECT state FROM agent_exec_attempts WHERE execution_id = $1 AND attempt = $2 FOR UPDATE",
                &[&execution_id, &(attempt as i32)],
            )
            .await
            .map_err(|e| self.err(e))?
            .ok_or_else(|| JournalError::NoSuchAttempt {
                execution_id: execution_id.to_owned(),
                attempt,
            })?;
        Ok(state_col(row.get(0)))
    }

    /// See [`crate::SqliteJournal::start_attempt`].
    pub async fn start_attempt(
        &self,
        execution_id: &str,
        attempt: u32,
        backend: &str,
    ) -> Result<(), JournalError> {
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let (state, attempts) = self.execution_state(&tx, execution_id).await?;
        decide::check_next_attempt(execution_id, state, attempts, attempt)?;
        let now = now_rfc3339();
        let me = &self.me;
        let n = attempt as i32;
        self.conn.execute(&tx,
            "INSERT INTO agent_exec_attempts (execution_id, attempt, backend, state, started_at,
                 owner_host, owner_boot_id, owner_pid, owner_start_ticks)
             VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8)",
            &[
                &execution_id,
                &n,
                &backend,
                &now,
                &me.host,
                &me.boot_id,
                &i64::from(me.pid),
                &(me.start_ticks as i64),
            ],
        )
        .await
        .map_err(|e| self.err(e))?;
        self.conn
            .execute(
                &tx,
                "UPDATE agent_exec_executions SET attempts = $2, backend = $3, state = 'running',
                 updated_at = $4
             WHERE execution_id = $1",
                &[&execution_id, &n, &backend, &now],
            )
            .await
            .map_err(|e| self.err(e))?;
        let note = decide::attempt_note(attempt, backend);
        self.log(
            &tx,
            execution_id,
            attempt,
            None,
            State::Running,
            Some(&note),
        )
        .await?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// See [`crate::SqliteJournal::record_session`] (committed; PostgreSQL's own
    /// durability applies).
    pub async fn record_session(
        &self,
        execution_id: &str,
        attempt: u32,
        session: &str,
    ) -> Result<(), JournalError> {
        agent_exec_contract::check_session_handle(session).map_err(JournalError::Invalid)?;
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let state = self.attempt_state(&tx, execution_id, attempt).await?;
        decide::check_attempt_open(execution_id, attempt, state)?;
        tx.execute(
            "UPDATE agent_exec_attempts SET session_handle = $3
             WHERE execution_id = $1 AND attempt = $2",
            &[&execution_id, &(attempt as i32), &session],
        )
        .await
        .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// See [`crate::SqliteJournal::resume`]. The execution's row is taken `FOR UPDATE`,
    /// so two resumes (or a resume and a step retry) cannot both claim it.
    pub async fn resume<T>(
        &self,
        execution_id: &str,
        backend: Option<&str>,
        claim: bool,
        parse: impl FnOnce(Option<&str>) -> Result<T, JournalError>,
    ) -> Result<Resumable<T>, JournalError> {
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let lock = if claim { " FOR UPDATE" } else { "" };
        let row = tx
            .query_opt(
                &format!(
                    "SELECT state, attempts, backend, request_json, deadline, prompt_tokens,
                         completion_tokens, owner_host, owner_boot_id, owner_pid, owner_start_ticks
                     FROM agent_exec_executions WHERE execution_id = $1{lock}"
                ),
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?
            .ok_or_else(|| JournalError::NoSuchExecution(execution_id.to_owned()))?;
        let mut state = state_col(row.get(0));
        let attempts = row.get::<_, i32>(1) as u32;
        let journaled: String = row.get(2);
        let request_json: Option<String> = row.get(3);
        let deadline: Option<String> = row.get(4);
        let usage = usage_from(&row, 5);
        if let Some(reason) = decide::take_over(execution_id, state, owner_from(&row, 7), |o| {
            o.liveness(&self.me)
        })? {
            if claim {
                let orphan = Orphan::new(state, &reason);
                self.mark_unknown(&tx, execution_id, attempts, &orphan)
                    .await?;
            }
            state = State::Unknown;
        }
        let session = tx
            .query_opt(
                "SELECT attempt, session_handle FROM agent_exec_attempts
                 WHERE execution_id = $1 AND backend = $2 AND session_handle IS NOT NULL
                 ORDER BY attempt DESC LIMIT 1",
                &[&execution_id, &journaled],
            )
            .await
            .map_err(|e| self.err(e))?
            .map(|r| (r.get::<_, i32>(0) as u32, r.get::<_, String>(1)));
        let (session_attempt, session) =
            decide::check_resumable(execution_id, state, &journaled, backend, session)?;
        let request = parse(request_json.as_deref())?;
        if claim {
            let me = &self.me;
            tx.execute(
                "UPDATE agent_exec_executions SET state = 'running', error_json = NULL,
                     error_code = NULL, owner_host = $2, owner_boot_id = $3, owner_pid = $4,
                     owner_start_ticks = $5, updated_at = $6, result_json = NULL,
                     result_note = NULL, output_tail = NULL, cancel_request = NULL
                 WHERE execution_id = $1",
                &[
                    &execution_id,
                    &me.host,
                    &me.boot_id,
                    &i64::from(me.pid),
                    &(me.start_ticks as i64),
                    &now_rfc3339(),
                ],
            )
            .await
            .map_err(|e| self.err(e))?;
            self.log(
                &tx,
                execution_id,
                attempts,
                Some(state),
                State::Running,
                Some(&decide::resumed_note(session_attempt)),
            )
            .await?;
            tx.commit().await.map_err(|e| self.err(e))?;
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
    }

    /// See [`crate::SqliteJournal::transition`].
    pub async fn transition(
        &self,
        execution_id: &str,
        attempt: u32,
        to: State,
        note: Option<&str>,
    ) -> Result<(), JournalError> {
        decide::check_transition_target(to)?;
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let from = self.attempt_state(&tx, execution_id, attempt).await?;
        if !decide::transition_needed(execution_id, attempt, from, to)? {
            return Ok(());
        }
        let n = attempt as i32;
        self.conn.execute(&tx,
            "UPDATE agent_exec_attempts SET state = $3 WHERE execution_id = $1 AND attempt = $2",
            &[&execution_id, &n, &to.as_str()],
        )
        .await
        .map_err(|e| self.err(e))?;
        self.conn
            .execute(
                &tx,
                "UPDATE agent_exec_executions SET state = $3, updated_at = $4,
                 cancel_requested = cancel_requested OR $5
             WHERE execution_id = $1 AND attempts = $2",
                &[
                    &execution_id,
                    &n,
                    &to.as_str(),
                    &now_rfc3339(),
                    &(to == State::Canceling),
                ],
            )
            .await
            .map_err(|e| self.err(e))?;
        self.log(&tx, execution_id, attempt, Some(from), to, note)
            .await?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// See [`crate::SqliteJournal::finish_attempt`].
    pub async fn finish_attempt(
        &self,
        execution_id: &str,
        attempt: u32,
        end: &End<'_>,
    ) -> Result<(), JournalError> {
        decide::check_outcome(end.outcome)?;
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let from = self.attempt_state(&tx, execution_id, attempt).await?;
        decide::check_attempt_open(execution_id, attempt, from)?;
        let now = now_rfc3339();
        self.conn
            .execute(
                &tx,
                "UPDATE agent_exec_attempts SET state = $3, finished_at = $4, error_json = $5,
                 prompt_tokens = $6, completion_tokens = $7
             WHERE execution_id = $1 AND attempt = $2",
                &[
                    &execution_id,
                    &(attempt as i32),
                    &end.outcome.as_str(),
                    &now,
                    &end.error_json,
                    &(end.usage.prompt_tokens as i64),
                    &(end.usage.completion_tokens as i64),
                ],
            )
            .await
            .map_err(|e| self.err(e))?;
        self.conn.execute(&tx,
            "UPDATE agent_exec_executions SET updated_at = $2,
                 prompt_tokens = (SELECT COALESCE(SUM(prompt_tokens), 0) FROM agent_exec_attempts WHERE execution_id = $1),
                 completion_tokens = (SELECT COALESCE(SUM(completion_tokens), 0) FROM agent_exec_attempts WHERE execution_id = $1)
             WHERE execution_id = $1",
            &[&execution_id, &now],
        )
        .await
        .map_err(|e| self.err(e))?;
        self.log(
            &tx,
            execution_id,
            attempt,
            Some(from),
            end.outcome,
            end.error_code,
        )
        .await?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// See [`crate::SqliteJournal::finish_execution`].
    pub async fn finish_execution(
        &self,
        execution_id: &str,
        end: &End<'_>,
    ) -> Result<(), JournalError> {
        self.finish_execution_kept(execution_id, end, None).await
    }

    /// See [`crate::SqliteJournal::finish_execution_kept`].
    pub async fn finish_execution_kept(
        &self,
        execution_id: &str,
        end: &End<'_>,
        kept: Option<&KeptResult>,
    ) -> Result<(), JournalError> {
        decide::check_outcome(end.outcome)?;
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let (from, attempts) = self.execution_state(&tx, execution_id).await?;
        decide::check_execution_open(execution_id, from, attempts)?;
        self.conn
            .execute(
                &tx,
                "UPDATE agent_exec_executions SET state = $2, error_json = $3, error_code = $4,
                 cancel_requested = cancel_requested OR $5, updated_at = $6, result_json = $7,
                 result_note = $8
             WHERE execution_id = $1",
                &[
                    &execution_id,
                    &end.outcome.as_str(),
                    &end.error_json,
                    &end.error_code,
                    &end.cancel_requested,
                    &now_rfc3339(),
                    &kept.map(|k| k.json.as_str()),
                    &kept.and_then(|k| k.note.as_deref()),
                ],
            )
            .await
            .map_err(|e| self.err(e))?;
        self.log(
            &tx,
            execution_id,
            attempts,
            Some(from),
            end.outcome,
            Some(&decide::execution_note(end)),
        )
        .await?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// See [`crate::SqliteJournal::request_cancel`].
    pub async fn request_cancel(
        &self,
        execution_id: &str,
        by: &str,
    ) -> Result<CancelAsk, JournalError> {
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let row = self
            .conn
            .query_opt(
                &tx,
                "SELECT state, attempts, owner_host, owner_boot_id, owner_pid, owner_start_ticks
                 FROM agent_exec_executions WHERE execution_id = $1 FOR UPDATE",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?
            .ok_or_else(|| JournalError::NoSuchExecution(execution_id.to_owned()))?;
        let state = state_col(row.get(0));
        let attempts = row.get::<_, i32>(1) as u32;
        let Some(note) = decide::cancel_note(state, by, &now_rfc3339()) else {
            return Ok(CancelAsk::AlreadyEnded(state));
        };
        self.conn
            .execute(
                &tx,
                "UPDATE agent_exec_executions SET cancel_request = COALESCE(cancel_request, $2)
                 WHERE execution_id = $1",
                &[&execution_id, &note],
            )
            .await
            .map_err(|e| self.err(e))?;
        self.log(&tx, execution_id, attempts, Some(state), state, Some(&note))
            .await?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(CancelAsk::Recorded {
            owner: owner_from(&row, 2).0,
        })
    }

    /// See [`crate::SqliteJournal::cancel_request`].
    pub async fn cancel_request(&self, execution_id: &str) -> Result<Option<String>, JournalError> {
        let client = self.conn.read().await;
        Ok(self
            .conn
            .query_opt(
                &*client,
                "SELECT cancel_request FROM agent_exec_executions
                 WHERE execution_id = $1 AND state IN ('running', 'canceling')",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?
            .and_then(|r| r.get(0)))
    }

    /// See [`crate::SqliteJournal::record_output_tail`].
    pub async fn record_output_tail(
        &self,
        execution_id: &str,
        output: &str,
    ) -> Result<(), JournalError> {
        let tail = crate::tail_of(output, crate::OUTPUT_TAIL_CAP);
        let client = self.conn.read().await;
        self.conn
            .execute(
                &*client,
                "UPDATE agent_exec_executions SET output_tail = $2 WHERE execution_id = $1",
                &[&execution_id, &tail],
            )
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// See [`crate::SqliteJournal::prune_ended_before`].
    pub async fn prune_ended_before(&self, cutoff: &str) -> Result<u64, JournalError> {
        let mut client = self.conn.lock().await;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let doomed = "SELECT execution_id FROM agent_exec_executions
             WHERE state IN ('succeeded', 'failed', 'canceled', 'unknown') AND updated_at < $1";
        for table in ["agent_exec_transitions", "agent_exec_attempts"] {
            self.conn
                .execute(
                    &tx,
                    &format!("DELETE FROM {table} WHERE execution_id IN ({doomed})"),
                    &[&cutoff],
                )
                .await
                .map_err(|e| self.err(e))?;
        }
        let n = self
            .conn
            .execute(
                &tx,
                "DELETE FROM agent_exec_executions
                 WHERE state IN ('succeeded', 'failed', 'canceled', 'unknown') AND updated_at < $1",
                &[&cutoff],
            )
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(n)
    }

    /// The most recent executions first.
    pub async fn list(&self, limit: u32) -> Result<Vec<ExecutionSummary>, JournalError> {
        let client = self.conn.read().await;
        let rows = self
            .conn
            .query(
                &*client,
                &format!(
                    "SELECT {SUMMARY_COLUMNS} FROM agent_exec_executions ORDER BY seq DESC LIMIT $1"
                ),
                &[&i64::from(limit)],
            )
            .await
            .map_err(|e| self.err(e))?;
        Ok(rows.iter().map(summary_from_row).collect())
    }

    /// Everything about one execution.
    pub async fn show(&self, execution_id: &str) -> Result<Option<ExecutionRecord>, JournalError> {
        let client = self.conn.read().await;
        let Some(head) = self
            .conn
            .query_opt(&*client, &show_head_sql(), &[&execution_id])
            .await
            .map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        let attempts = self.conn.query(&*client,
                "SELECT attempt, backend, state, started_at, finished_at, error_json, prompt_tokens,
                     completion_tokens, owner_host, owner_boot_id, owner_pid, owner_start_ticks,
                     session_handle
                 FROM agent_exec_attempts WHERE execution_id = $1 ORDER BY attempt",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?
            .iter()
            .map(|r| AttemptRecord {
                attempt: r.get::<_, i32>(0) as u32,
                backend: r.get(1),
                state: state_col(r.get(2)),
                started_at: r.get(3),
                finished_at: r.get(4),
                error: json_or_text(r.get(5)),
                usage: usage_from(r, 6),
                owner: owner_from(r, 8).0,
                session_handle: r.get(12),
            })
            .collect();
        let transitions = self
            .conn
            .query(
                &*client,
                "SELECT attempt, from_state, to_state, at, note FROM agent_exec_transitions
                 WHERE execution_id = $1 ORDER BY seq",
                &[&execution_id],
            )
            .await
            .map_err(|e| self.err(e))?
            .iter()
            .map(|r| TransitionRecord {
                attempt: r.get::<_, i32>(0) as u32,
                from: r.get::<_, Option<String>>(1).map(state_col),
                to: state_col(r.get(2)),
                at: r.get(3),
                note: r.get(4),
            })
            .collect();
        let result: Option<String> = head.get(17);
        Ok(Some(ExecutionRecord {
            summary: summary_from_row(&head),
            request: json_or_text(head.get(11)),
            error: json_or_text(head.get(12)),
            result: json_or_text(result.clone()),
            result_text: result,
            result_note: head.get(18),
            output_tail: head.get(19),
            cancel_request: head.get(20),
            attempts,
            transitions,
            owner: owner_from(&head, 13).0,
        }))
    }
}

/// The schema version row (see `migrate`).
const VERSION_SQL: &str = "SELECT value FROM agent_exec_meta WHERE key = 'schema_version'";

/// This host's open executions (see `recover`).
const OPEN_SQL: &str = "SELECT execution_id, attempts, state, owner_host, owner_boot_id,
         owner_pid, owner_start_ticks
     FROM agent_exec_executions
     WHERE state IN ('running', 'canceling') AND owner_host = $1";

/// One execution's row (see `show`).
fn show_head_sql() -> String {
    format!(
        "SELECT {SUMMARY_COLUMNS}, request_json, error_json, owner_host, owner_boot_id,
             owner_pid, owner_start_ticks, result_json, result_note, output_tail, cancel_request
         FROM agent_exec_executions WHERE execution_id = $1"
    )
}

const SUMMARY_COLUMNS: &str =
    "execution_id, backend, state, attempts, error_code, cancel_requested,
    prompt_tokens, completion_tokens, deadline, created_at, updated_at";

fn summary_from_row(r: &Row) -> ExecutionSummary {
    ExecutionSummary {
        execution_id: r.get(0),
        backend: r.get(1),
        state: state_col(r.get(2)),
        attempts: r.get::<_, i32>(3) as u32,
        error_code: r.get(4),
        cancel_requested: r.get(5),
        usage: usage_from(r, 6),
        deadline: r.get(8),
        created_at: r.get(9),
        updated_at: r.get(10),
    }
}

fn usage_from(r: &Row, first: usize) -> Usage {
    Usage {
        prompt_tokens: r.get::<_, i64>(first).max(0) as u64,
        completion_tokens: r.get::<_, i64>(first + 1).max(0) as u64,
    }
}

/// The owner columns from `first` on, and what is wrong with them, if anything (see
/// [`ProcessIdentity::from_stored`]).
fn owner_from(r: &Row, first: usize) -> (ProcessIdentity, Option<String>) {
    ProcessIdentity::from_stored(
        r.get(first),
        r.get(first + 1),
        StoredInt::Int(r.get(first + 2)),
        StoredInt::Int(r.get(first + 3)),
    )
}

#[cfg(test)]
mod tests {
    use crate::pg_connection::redact_url;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact_url("postgres://bob:s3cret@db.example:5432/j?sslmode=disable"),
            "postgres://bob@db.example:5432/j?sslmode=disable"
        );
        assert_eq!(redact_url("postgresql://bob@h/j"), "postgresql://bob@h/j");
        assert_eq!(redact_url("host=h password=x"), "<postgres url>");
        assert_eq!(
            redact_url("postgres://u@127.0.0.1:1/db?password=hunter2secret"),
            "postgres://u@127.0.0.1:1/db?password=[redacted]"
        );
        assert_eq!(
            redact_url("postgres://u:pw@h/db?sslmode=require&PassWord=x&sslpassword=y#frag"),
            "postgres://u@h/db?sslmode=require&PassWord=[redacted]&sslpassword=[redacted]"
        );
        assert_eq!(
            redact_url("postgres://h?password=hunter2secret"),
            "postgres://h?password=[redacted]"
        );
    }
}
