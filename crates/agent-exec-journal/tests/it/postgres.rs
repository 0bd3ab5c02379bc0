//! The fleet journal against a real PostgreSQL server (started by
//! scripts/setup.d/30-postgres.sh, which exports AGENT_EXEC_TEST_PG_URL).
#![allow(clippy::unwrap_used)]

use crate::common;

use agent_exec_journal::{Journal, JournalLocation};

/// A fresh database on the test server, so tests never see each other's rows.
async fn fresh() -> (String, JournalLocation) {
    let admin = test_support::peers::env(
        "AGENT_EXEC_TEST_PG_URL",
        "the PostgreSQL server",
        test_support::peers::Setup::Postgres,
    );
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!("PostgreSQL at {admin} is unreachable ({e}); run scripts/test.sh to start it")
        });
    tokio::spawn(connection);
    let name = format!("journal_test_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (admin.as_str(), String::new()),
    };
    let authority_end = base.find("://").unwrap() + 3;
    let path_start = base[authority_end..]
        .find('/')
        .map_or(base.len(), |i| authority_end + i);
    let url = format!("{}/{name}{query}", &base[..path_start]);
    (url.clone(), JournalLocation::Postgres(url))
}

#[tokio::test]
async fn lifecycle_retries_and_terminal_states() {
    let (_url, location) = fresh().await;
    let (journal, recovered) = Journal::open(&location).await.unwrap();
    assert!(recovered.is_empty());
    common::lifecycle_is_recorded_in_order(&journal).await;
    common::retries_reuse_the_id_and_sum_usage(&journal).await;
    common::terminal_states_are_never_overwritten(&journal).await;
    common::the_hook_records_contract_results(&journal).await;
    let listed = journal.list(2).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].execution_id, "hook-2", "newest first");
    common::a_finished_execution_is_not_run_again(&journal).await;
    common::sessions_are_journaled_and_resume_claims(&journal).await;
    common::resume_refusals(&journal).await;
}

#[tokio::test]
async fn a_live_owner_is_left_alone() {
    let (_url, location) = fresh().await;
    common::a_live_owner_is_left_alone(&location).await;
}

#[tokio::test]
async fn postgres_child_runner() {
    common::run_as_child_if_asked().await;
}

#[tokio::test]
async fn a_runner_killed_with_sigkill_leaves_unknown() {
    let (url, location) = fresh().await;
    common::a_killed_runner_leaves_unknown(
        &test_support::test_name(module_path!(), "postgres_child_runner"),
        &location,
        &url,
    )
    .await;
}

#[tokio::test]
async fn concurrent_opens_create_the_schema_once() {
    let (_url, location) = fresh().await;
    let opens = (0..4).map(|_| {
        let location = location.clone();
        tokio::spawn(async move { Journal::open(&location).await.map(|_| ()) })
    });
    for open in opens {
        open.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn a_killed_runner_can_be_resumed() {
    let (url, location) = fresh().await;
    common::a_killed_runner_can_be_resumed(
        &test_support::test_name(module_path!(), "postgres_child_runner"),
        &location,
        &url,
    )
    .await;
}

/// The version-1 tables exactly as the previous release created them (before
/// `agent_exec_attempts.session_handle`), to prove the in-place migration.
const V1_SCHEMA: &str = "
CREATE TABLE agent_exec_meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE agent_exec_executions (
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
    updated_at        TEXT NOT NULL
);
CREATE INDEX agent_exec_executions_open ON agent_exec_executions(owner_host)
    WHERE state IN ('running', 'canceling');
CREATE TABLE agent_exec_attempts (
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
    PRIMARY KEY (execution_id, attempt)
);
CREATE TABLE agent_exec_transitions (
    seq          BIGSERIAL PRIMARY KEY,
    execution_id TEXT NOT NULL REFERENCES agent_exec_executions(execution_id),
    attempt      INTEGER NOT NULL,
    from_state   TEXT,
    to_state     TEXT NOT NULL,
    at           TEXT NOT NULL,
    note         TEXT
);
CREATE INDEX agent_exec_transitions_by_execution
    ON agent_exec_transitions(execution_id, seq);
INSERT INTO agent_exec_meta (key, value) VALUES ('schema_version', 1);
INSERT INTO agent_exec_executions (execution_id, backend, state, attempts, request_json,
    error_json, error_code, prompt_tokens, completion_tokens, owner_host, owner_boot_id,
    owner_pid, owner_start_ticks, created_at, updated_at)
    VALUES ('old-1', 'command', 'failed', 1, '{\"execution_id\":\"old-1\",\"prompt\":\"p\"}',
    '{\"code\":\"agent.provider_rejected\",\"side_effects\":\"none\"}', 'agent.provider_rejected',
    3, 4, 'h', 'b', 1, 1, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:01.000000Z');
INSERT INTO agent_exec_attempts VALUES ('old-1', 1, 'command', 'failed',
    '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:01.000000Z', NULL, 3, 4, 'h', 'b', 1, 1);
";

async fn admin_of(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test]
async fn a_version_1_database_is_migrated_in_place_and_a_newer_one_refused() {
    let (url, location) = fresh().await;
    admin_of(&url).await.batch_execute(V1_SCHEMA).await.unwrap();
    let (journal, _) = Journal::open(&location).await.unwrap();
    let old = journal.show("old-1").await.unwrap().unwrap();
    assert_eq!(
        old.summary.usage.prompt_tokens, 3,
        "rows survive the migration"
    );
    assert_eq!(old.attempts[0].session_handle, None);
    common::sessions_are_journaled_and_resume_claims(&journal).await;
    drop(journal);
    let client = admin_of(&url).await;
    let version: i32 = client
        .query_one(
            "SELECT value FROM agent_exec_meta WHERE key = 'schema_version'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, 3);
    client
        .execute(
            "UPDATE agent_exec_meta SET value = 99 WHERE key = 'schema_version'",
            &[],
        )
        .await
        .unwrap();
    let err = Journal::open(&location).await.unwrap_err();
    assert!(
        matches!(
            err,
            agent_exec_journal::JournalError::NewerSchema { found: 99, .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn results_are_kept_pruned_and_cancels_requested() {
    let (_url, location) = fresh().await;
    let (journal, _) = Journal::open(&location).await.unwrap();
    common::results_are_kept_byte_for_byte(&journal).await;
    common::prune_deletes_only_ended_executions(&journal).await;
    common::cancel_requests_reach_the_runner(&journal).await;
}

#[tokio::test]
async fn a_version_2_database_is_migrated_in_place_and_keeps_results() {
    let (url, location) = fresh().await;
    // Version 2 exactly as the previous release left it: version 1 and its
    // migration (a database created at version 2 has the same columns, in order).
    let v2 = V1_SCHEMA.to_owned()
        + "ALTER TABLE agent_exec_attempts ADD COLUMN IF NOT EXISTS session_handle TEXT;
           UPDATE agent_exec_attempts SET session_handle = 'thread-1';
           UPDATE agent_exec_meta SET value = 2 WHERE key = 'schema_version';";
    admin_of(&url).await.batch_execute(&v2).await.unwrap();
    let (journal, _) = Journal::open(&location).await.unwrap();
    let old = journal.show("old-1").await.unwrap().unwrap();
    assert_eq!(old.summary.usage.prompt_tokens, 3, "rows survive");
    assert_eq!(old.attempts[0].session_handle.as_deref(), Some("thread-1"));
    assert_eq!(old.result, None, "no result was kept before version 3");
    common::results_are_kept_byte_for_byte(&journal).await;
    drop(journal);
    let version: i32 = admin_of(&url)
        .await
        .query_one(
            "SELECT value FROM agent_exec_meta WHERE key = 'schema_version'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, 3);
}

#[tokio::test]
async fn a_bad_owner_row_is_a_diagnostic_not_a_dead_journal() {
    let (url, location) = fresh().await;
    let (journal, _) = Journal::open(&location).await.unwrap();
    common::begin_running(&journal, "bad-owner").await;
    drop(journal);
    admin_of(&url)
        .await
        .batch_execute(
            "UPDATE agent_exec_executions SET owner_pid = -1 WHERE execution_id = 'bad-owner';
             UPDATE agent_exec_attempts SET owner_pid = 4294967296
                 WHERE execution_id = 'bad-owner';",
        )
        .await
        .unwrap();
    common::a_bad_owner_row_is_that_rows_problem(&location).await;
}
