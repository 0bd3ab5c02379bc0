//! The journal on its default store: one SQLite file.
#![allow(clippy::unwrap_used)]

use crate::common;

use agent_exec_journal::{Journal, JournalError, JournalLocation, SqliteJournal};

fn fresh() -> (tempfile::TempDir, JournalLocation) {
    let dir = tempfile::tempdir().unwrap();
    let location = JournalLocation::Sqlite(dir.path().join("state/journal.sqlite3"));
    (dir, location)
}

#[tokio::test]
async fn lifecycle_retries_and_terminal_states() {
    let (_dir, location) = fresh();
    let (journal, recovered) = Journal::open(&location).await.unwrap();
    assert!(recovered.is_empty());
    common::lifecycle_is_recorded_in_order(&journal).await;
    common::retries_reuse_the_id_and_sum_usage(&journal).await;
    common::terminal_states_are_never_overwritten(&journal).await;
    common::the_hook_records_contract_results(&journal).await;
    let listed = journal.list(2).await.unwrap();
    assert_eq!(listed.len(), 2, "limit is honoured");
    assert_eq!(listed[0].execution_id, "hook-2", "newest first");
    common::a_finished_execution_is_not_run_again(&journal).await;
    common::sessions_are_journaled_and_resume_claims(&journal).await;
    common::resume_refusals(&journal).await;
}

#[tokio::test]
async fn a_live_owner_is_left_alone() {
    let (_dir, location) = fresh();
    common::a_live_owner_is_left_alone(&location).await;
}

#[tokio::test]
async fn sqlite_child_runner() {
    common::run_as_child_if_asked().await;
}

#[tokio::test]
async fn a_runner_killed_with_sigkill_leaves_unknown() {
    let (dir, location) = fresh();
    let raw = dir.path().join("state/journal.sqlite3");
    common::a_killed_runner_leaves_unknown(
        &test_support::test_name(module_path!(), "sqlite_child_runner"),
        &location,
        raw.to_str().unwrap(),
    )
    .await;
}

#[test]
fn the_file_is_in_wal_mode_and_a_newer_schema_is_refused() {
    let (_dir, location) = fresh();
    let JournalLocation::Sqlite(path) = &location else {
        unreachable!()
    };
    drop(SqliteJournal::open(path).unwrap());
    let conn = rusqlite::Connection::open(path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = SqliteJournal::open(path).unwrap_err();
    assert!(
        matches!(err, JournalError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade agent-exec"));
}

#[tokio::test]
async fn a_killed_runner_can_be_resumed() {
    let (dir, location) = fresh();
    let raw = dir.path().join("state/journal.sqlite3");
    common::a_killed_runner_can_be_resumed(
        &test_support::test_name(module_path!(), "sqlite_child_runner"),
        &location,
        raw.to_str().unwrap(),
    )
    .await;
}

/// The version-1 schema exactly as the previous release created it (before
/// `attempts.session_handle`), to prove the in-place migration.
const V1_SCHEMA: &str = "
CREATE TABLE executions (
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
    updated_at        TEXT NOT NULL
);
CREATE INDEX executions_open ON executions(state)
    WHERE state IN ('running', 'canceling');
CREATE TABLE attempts (
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
    PRIMARY KEY (execution_id, attempt)
);
CREATE TABLE transitions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_id TEXT NOT NULL REFERENCES executions(execution_id),
    attempt      INTEGER NOT NULL,
    from_state   TEXT,
    to_state     TEXT NOT NULL,
    at           TEXT NOT NULL,
    note         TEXT
);
CREATE INDEX transitions_by_execution ON transitions(execution_id, seq);
INSERT INTO executions VALUES ('old-1', 'command', 'failed', 1, '{\"execution_id\":\"old-1\",\"prompt\":\"p\"}',
    NULL, '{\"code\":\"agent.provider_rejected\",\"side_effects\":\"none\"}', 'agent.provider_rejected', 0, 3, 4,
    'h', 'b', 1, 1, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:01.000000Z');
INSERT INTO attempts VALUES ('old-1', 1, 'command', 'failed', '2026-01-01T00:00:00.000000Z',
    '2026-01-01T00:00:01.000000Z', NULL, 3, 4, 'h', 'b', 1, 1);
INSERT INTO transitions (execution_id, attempt, from_state, to_state, at, note)
    VALUES ('old-1', 1, 'running', 'failed', '2026-01-01T00:00:01.000000Z', NULL);
PRAGMA user_version = 1;
";

#[tokio::test]
async fn a_version_1_file_is_migrated_in_place() {
    let (_dir, location) = fresh();
    let JournalLocation::Sqlite(path) = &location else {
        unreachable!()
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(V1_SCHEMA)
        .unwrap();
    let (journal, _) = Journal::open(&location).await.unwrap();
    let old = journal.show("old-1").await.unwrap().unwrap();
    assert_eq!(old.summary.state, agent_exec_journal::State::Failed);
    assert_eq!(
        old.summary.usage.prompt_tokens, 3,
        "rows survive the migration"
    );
    assert_eq!(old.attempts[0].session_handle, None);
    assert_eq!(old.transitions.len(), 1);
    // The new column works on the migrated file.
    common::sessions_are_journaled_and_resume_claims(&journal).await;
    drop(journal);
    let conn = rusqlite::Connection::open(path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 3);
    drop(conn);
    // Opening again changes nothing.
    let (journal, _) = Journal::open(&location).await.unwrap();
    assert_eq!(
        journal
            .show("old-1")
            .await
            .unwrap()
            .unwrap()
            .summary
            .usage
            .prompt_tokens,
        3
    );
}

#[tokio::test]
async fn results_are_kept_pruned_and_cancels_requested() {
    let (_dir, location) = fresh();
    let (journal, _) = Journal::open(&location).await.unwrap();
    common::results_are_kept_byte_for_byte(&journal).await;
    common::prune_deletes_only_ended_executions(&journal).await;
    common::cancel_requests_reach_the_runner(&journal).await;
}

/// A version-2 file exactly as the previous release left it: the version-1 tables
/// and its migration to 2 (a file created at version 2 has the same columns in the
/// same order).
fn v2_schema() -> String {
    V1_SCHEMA.replace(
        "PRAGMA user_version = 1;",
        "ALTER TABLE attempts ADD COLUMN session_handle TEXT;
         UPDATE attempts SET session_handle = 'thread-1' WHERE execution_id = 'old-1';
         PRAGMA user_version = 2;",
    )
}

#[tokio::test]
async fn a_version_2_file_is_migrated_in_place_and_keeps_results() {
    let (_dir, location) = fresh();
    let JournalLocation::Sqlite(path) = &location else {
        unreachable!()
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(&v2_schema())
        .unwrap();
    let (journal, _) = Journal::open(&location).await.unwrap();
    let old = journal.show("old-1").await.unwrap().unwrap();
    assert_eq!(old.summary.usage.prompt_tokens, 3, "rows survive");
    assert_eq!(old.attempts[0].session_handle.as_deref(), Some("thread-1"));
    assert_eq!(old.result, None, "no result was kept before version 3");
    common::results_are_kept_byte_for_byte(&journal).await;
    drop(journal);
    let version: i64 = rusqlite::Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 3);
}

#[tokio::test]
async fn a_bad_owner_row_is_a_diagnostic_not_a_dead_journal() {
    let (_dir, location) = fresh();
    let JournalLocation::Sqlite(path) = &location else {
        unreachable!()
    };
    let (journal, _) = Journal::open(&location).await.unwrap();
    common::begin_running(&journal, "bad-owner").await;
    drop(journal);
    // SQLite keeps any type in any column: a negative pid, and text where a number
    // belongs.
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(
            "UPDATE executions SET owner_pid = -1 WHERE execution_id = 'bad-owner';
             UPDATE attempts SET owner_pid = 'x', owner_start_ticks = -5
                 WHERE execution_id = 'bad-owner';",
        )
        .unwrap();
    common::a_bad_owner_row_is_that_rows_problem(&location).await;
}
