//! The shared suite against PostgreSQL, each test on a fresh database of the server
//! named by `LEVERS9_TEST_DATABASE_URL`.

mod suite;

use futures::future::join_all;
use levers9_store::{PostgresStore, RecordStore};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

/// Enough connections for the 16 concurrent bootstraps of the race test.
const MAX_CONNECTIONS: u32 = 20;

/// Creates an empty database and returns its URL.
async fn fresh_database() -> String {
    let admin_url = std::env::var("LEVERS9_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!(
            "LEVERS9_TEST_DATABASE_URL is not set: run the tests through \
             `scripts/test-servers.sh cargo test`, which starts a throwaway PostgreSQL"
        )
    });
    let name = format!("l9_{}", Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&admin_url).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    with_database(&admin_url, &name)
}

/// `url` with its database (the last path segment) replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base.rsplit_once('/').expect("a URL with a database path");
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

async fn fresh_store() -> (PostgresStore, ()) {
    let url = fresh_database().await;
    (
        PostgresStore::connect(&url, MAX_CONNECTIONS).await.unwrap(),
        (),
    )
}

suite::record_store_suite!(fresh_store);

#[tokio::test]
async fn backend_is_postgres() {
    let (store, ()) = fresh_store().await;
    assert_eq!(store.backend(), "postgres");
}

#[tokio::test]
async fn replicas_starting_together_all_migrate_one_database() {
    let url = fresh_database().await;

    let stores = join_all((0..4).map(|_| PostgresStore::connect(&url, 2))).await;

    for store in stores {
        let store = store.unwrap();
        assert!(!store.has_workspace().await.unwrap());
    }
}

#[tokio::test]
async fn a_connection_the_server_dropped_fails_one_call_as_transient() {
    let url = fresh_database().await;
    let store = PostgresStore::connect(&url, 1).await.unwrap();
    assert!(!store.has_workspace().await.unwrap());
    // What a restart of PostgreSQL does to the pooled connection, which was
    // used a moment ago and so is handed out without a ping.
    let mut admin = PgConnection::connect(&url).await.unwrap();
    let others =
        "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let killed: Vec<(bool,)> =
        sqlx::query_as(&format!("SELECT pg_terminate_backend(pid) {others}"))
            .fetch_all(&mut admin)
            .await
            .unwrap();
    assert_eq!(killed, [(true,)]);
    for _ in 0..500 {
        let (left,): (i64,) = sqlx::query_as(&format!("SELECT count(*) {others}"))
            .fetch_one(&mut admin)
            .await
            .unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let error = store
        .has_workspace()
        .await
        .expect_err("the dropped connection fails its statement");
    assert!(error.is_transient(), "{error:?}");
    assert!(
        !store.has_workspace().await.unwrap(),
        "the next call gets a fresh connection"
    );
}
