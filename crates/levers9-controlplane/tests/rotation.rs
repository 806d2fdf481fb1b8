//! Key rotation over both record stores: tampered and swapped values are
//! refused and left as they are, everything else moves to the new key.

use chrono::Utc;
use levers9_controlplane::sealing::{self, rotate};
use levers9_seal::{Key, Keyring};
use levers9_store::{
    NewToken, NewWorkspace, PostgresStore, RecordStore, SealedId, SealedKind, SealedStore,
    SealedValue, SqliteStore, TokenType,
};

fn key(byte: u8) -> Key {
    Key::from_bytes([byte; 32])
}

async fn workspace(store: &dyn RecordStore, name: &str) -> String {
    let id = uuid::Uuid::now_v7().to_string();
    let token = NewToken {
        id: uuid::Uuid::now_v7().to_string(),
        workspace_id: id.clone(),
        token_type: TokenType::Admin,
        description: String::new(),
        hash: uuid::Uuid::new_v4().as_bytes().repeat(2),
        created_at: Utc::now(),
    };
    let ws = NewWorkspace {
        id: id.clone(),
        name: name.to_owned(),
        created_at: Utc::now(),
    };
    store.create_workspace(ws, token).await.expect("workspace");
    id
}

fn sealed(keyring: &Keyring, workspace_id: &str, name: &str, plain: &str) -> SealedValue {
    let id = SealedId {
        kind: SealedKind::Secret,
        workspace_id: workspace_id.to_owned(),
        name: name.to_owned(),
    };
    sealing::sealed_value(keyring, id, plain.as_bytes(), Utc::now())
}

async fn tampered_and_swapped_values_are_refused<S: RecordStore + SealedStore>(store: S) {
    let old = Keyring::new(key(1), vec![]);
    let a = workspace(&store, "a").await;
    let b = workspace(&store, "b").await;
    let good = sealed(&old, &a, "GOOD", "fine");
    let mut tampered = sealed(&old, &a, "TAMPERED", "value");
    let last = tampered.sealed.len() - 1;
    tampered.sealed[last] ^= 0x01;
    // A's ciphertext copied onto B's row of the same name.
    let mut swapped = sealed(&old, &b, "GOOD", "other");
    swapped.sealed = good.sealed.clone();
    for value in [&good, &tampered, &swapped] {
        store.insert_sealed(value.clone()).await.expect("insert");
    }

    let new = Keyring::new(key(2), vec![key(1)]);
    let report = rotate(&store, &new, 2).await.expect("rotation runs");
    assert_eq!(report.resealed, 1);
    assert_eq!(report.tampered, 2);
    assert!(!report.all_rows_on_current_key());
    for untouched in [&tampered, &swapped] {
        let now = store
            .get_sealed(&untouched.id)
            .await
            .expect("get")
            .expect("kept");
        assert_eq!(now.sealed, untouched.sealed, "left exactly as it was");
    }
    let moved = store
        .get_sealed(&good.id)
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(moved.key_id, key(2).id().as_str());
    assert_eq!(
        sealing::open(&Keyring::new(key(2), vec![]), &moved).expect("opens"),
        b"fine"
    );

    // A second pass has nothing left it can do, and says so the same way.
    let again = rotate(&store, &new, 2).await.expect("rotation runs");
    assert_eq!((again.resealed, again.tampered), (0, 2));
}

#[tokio::test]
async fn sqlite_refuses_tampered_and_swapped_values() {
    let dir = tempfile::tempdir().expect("dir");
    let store = SqliteStore::open(&dir.path().join("r.db"))
        .await
        .expect("open");
    tampered_and_swapped_values_are_refused(store).await;
}

#[tokio::test]
async fn postgres_refuses_tampered_and_swapped_values() {
    let admin = std::env::var("LEVERS9_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_DATABASE_URL is not set: run the tests with scripts/test-servers.sh")
    });
    let name = format!("l9rot_{}", uuid::Uuid::new_v4().simple());
    let status = std::process::Command::new("psql")
        .args([
            admin.as_str(),
            "-q",
            "-c",
            &format!("CREATE DATABASE {name}"),
        ])
        .status()
        .expect("psql");
    assert!(status.success());
    let (server, _) = admin.rsplit_once('/').expect("url with a database");
    let store = PostgresStore::connect(&format!("{server}/{name}"), 4)
        .await
        .expect("connect");
    tampered_and_swapped_values_are_refused(store).await;
}
