//! The shared suite against SQLite, each test on a fresh file in its own temporary directory.

mod suite;

use levers9_store::{RecordStore, SqliteStore};
use tempfile::TempDir;

async fn fresh_store() -> (SqliteStore, TempDir) {
    let dir = TempDir::new().unwrap();
    let store = SqliteStore::open(&dir.path().join("records.db"))
        .await
        .unwrap();
    (store, dir)
}

suite::record_store_suite!(fresh_store);

#[tokio::test]
async fn backend_is_sqlite() {
    let (store, _dir) = fresh_store().await;
    assert_eq!(store.backend(), "sqlite");
}

#[tokio::test]
async fn open_creates_missing_directories() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("state").join("nested").join("records.db");

    SqliteStore::open(&path).await.unwrap();

    assert!(path.is_file());
}

#[tokio::test]
async fn records_survive_reopening() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("records.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let workspace = levers9_store::NewWorkspace {
        id: "w1".into(),
        name: "team".into(),
        created_at: chrono::DateTime::UNIX_EPOCH,
    };
    let token = levers9_store::NewToken {
        id: "t1".into(),
        workspace_id: "w1".into(),
        token_type: levers9_store::TokenType::Admin,
        description: String::new(),
        hash: vec![1; 32],
        created_at: chrono::DateTime::UNIX_EPOCH,
    };
    let created = store.create_workspace(workspace, token).await.unwrap();
    drop(store);

    let reopened = SqliteStore::open(&path).await.unwrap();

    assert_eq!(reopened.get_workspace("w1").await.unwrap(), Some(created));
    assert_eq!(reopened.list_tokens("w1").await.unwrap().len(), 1);
}
