//! The fleet journal against a real PostgreSQL server (started by
//! scripts/setup.d/30-postgres.sh, which exports AGENT_EXEC_TEST_PG_URL).
#![allow(clippy::unwrap_used)]

mod common;

use agent_exec_journal::{Journal, JournalLocation};

/// A fresh database on the test server, so tests never see each other's rows.
async fn fresh() -> (String, JournalLocation) {
    let admin = std::env::var("AGENT_EXEC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "AGENT_EXEC_TEST_PG_URL is not set: the PostgreSQL peer is missing; run scripts/test.sh \
             (its scripts/setup.d/30-postgres.sh installs and starts the server)"
        )
    });
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
    common::a_killed_runner_leaves_unknown("postgres_child_runner", &location, &url).await;
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
