//! The journal on its default store: one SQLite file.
#![allow(clippy::unwrap_used)]

mod common;

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
    common::a_killed_runner_leaves_unknown("sqlite_child_runner", &location, raw.to_str().unwrap())
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
