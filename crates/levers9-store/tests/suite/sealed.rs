//! The behaviour every `SealedStore` backend must show.

use chrono::Utc;
use futures::future::join_all;
use levers9_store::{
    NewWorkspace, RecordStore, SealedId, SealedKind, SealedStore, SealedValue, StoreError,
};

use super::{at, new_token, new_workspace};

async fn workspace<S: RecordStore>(store: &S, name: &str) -> String {
    let ws: NewWorkspace = new_workspace(name);
    let token = new_token(&ws.id, levers9_store::TokenType::Admin, at(0));
    store.create_workspace(ws, token).await.unwrap().id
}

fn id(workspace_id: &str, name: &str) -> SealedId {
    SealedId {
        kind: SealedKind::Secret,
        workspace_id: workspace_id.to_owned(),
        name: name.to_owned(),
    }
}

fn value(workspace_id: &str, name: &str, key: &str, bytes: &[u8]) -> SealedValue {
    SealedValue {
        id: id(workspace_id, name),
        key_id: key.to_owned(),
        sealed: bytes.to_vec(),
        created_at: at(1),
        updated_at: at(1),
    }
}

pub async fn sealed_value_round_trips<S: RecordStore + SealedStore>(store: &S) {
    let ws = workspace(store, "a").await;
    store
        .insert_sealed(value(&ws, "DB_PASSWORD", "k1", b"\x00\x01cipher"))
        .await
        .unwrap();
    let read = store.get_sealed(&id(&ws, "DB_PASSWORD")).await.unwrap();
    assert_eq!(
        read,
        Some(value(&ws, "DB_PASSWORD", "k1", b"\x00\x01cipher"))
    );
    let clash = store
        .insert_sealed(value(&ws, "DB_PASSWORD", "k1", b"other"))
        .await
        .unwrap_err();
    assert!(matches!(clash, StoreError::AlreadyExists(_)), "{clash}");
}

pub async fn sealed_values_are_listed_per_workspace_and_kind<S: RecordStore + SealedStore>(
    store: &S,
) {
    let a = workspace(store, "a").await;
    let b = workspace(store, "b").await;
    for name in ["B_SECOND", "A_FIRST"] {
        store
            .insert_sealed(value(&a, name, "k1", b"x"))
            .await
            .unwrap();
    }
    store
        .insert_sealed(value(&b, "OTHER", "k1", b"x"))
        .await
        .unwrap();
    let mut storage = value(&a, "default", "k1", b"creds");
    storage.id.kind = SealedKind::StorageCredentials;
    store.put_sealed(storage).await.unwrap();
    let names: Vec<String> = store
        .list_sealed(SealedKind::Secret, &a)
        .await
        .unwrap()
        .into_iter()
        .map(|info| info.id.name)
        .collect();
    assert_eq!(names, ["A_FIRST", "B_SECOND"]);
}

pub async fn update_and_delete_touch_only_their_row<S: RecordStore + SealedStore>(store: &S) {
    let a = workspace(store, "a").await;
    let b = workspace(store, "b").await;
    store
        .insert_sealed(value(&a, "TOKEN", "k1", b"a"))
        .await
        .unwrap();
    store
        .insert_sealed(value(&b, "TOKEN", "k1", b"b"))
        .await
        .unwrap();
    let updated = store
        .update_sealed(&id(&a, "TOKEN"), "k2", b"a2", at(5))
        .await
        .unwrap()
        .expect("exists");
    assert_eq!(updated.key_id, "k2");
    assert_eq!(updated.updated_at, at(5));
    assert_eq!(updated.created_at, at(1));
    assert!(store
        .update_sealed(&id(&a, "MISSING"), "k2", b"x", at(5))
        .await
        .unwrap()
        .is_none());
    assert!(store.delete_sealed(&id(&a, "TOKEN")).await.unwrap());
    assert!(!store.delete_sealed(&id(&a, "TOKEN")).await.unwrap());
    let untouched = store.get_sealed(&id(&b, "TOKEN")).await.unwrap().unwrap();
    assert_eq!(untouched.sealed, b"b");
}

pub async fn rows_not_on_a_key_are_walked_in_pages<S: RecordStore + SealedStore>(store: &S) {
    let ws = workspace(store, "a").await;
    for i in 0..25 {
        let key = if i % 5 == 0 { "new" } else { "old" };
        store
            .insert_sealed(value(&ws, &format!("S{i:02}"), key, b"x"))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<SealedId> = None;
    loop {
        let page = store
            .sealed_not_on_key("new", cursor.as_ref(), 7)
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 7);
        cursor = page.last().map(|v| v.id.clone());
        seen.extend(page.into_iter().map(|v| v.id.name));
    }
    assert_eq!(seen.len(), 20);
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted);
    let counts = store.count_sealed_by_key().await.unwrap();
    assert_eq!(counts, vec![("new".to_owned(), 5), ("old".to_owned(), 20)]);
}

pub async fn reseal_swaps_only_an_unchanged_row<S: RecordStore + SealedStore>(store: &S) {
    let ws = workspace(store, "a").await;
    store
        .insert_sealed(value(&ws, "S", "old", b"v1"))
        .await
        .unwrap();
    let seen = store.get_sealed(&id(&ws, "S")).await.unwrap().unwrap();
    // A user updates the value between the read and the re-seal.
    store
        .update_sealed(&id(&ws, "S"), "old", b"v2", Utc::now())
        .await
        .unwrap();
    assert!(!store.reseal(&seen, "new", b"v1-resealed").await.unwrap());
    let current = store.get_sealed(&id(&ws, "S")).await.unwrap().unwrap();
    assert_eq!(current.sealed, b"v2", "the user's update survives");
    assert!(store.reseal(&current, "new", b"v2-resealed").await.unwrap());
    let resealed = store.get_sealed(&id(&ws, "S")).await.unwrap().unwrap();
    assert_eq!(resealed.key_id, "new");
    assert_eq!(
        resealed.updated_at, current.updated_at,
        "a re-seal is no change"
    );
}

pub async fn concurrent_reseals_of_one_row_have_one_winner<S: RecordStore + SealedStore>(
    store: &S,
) {
    let ws = workspace(store, "a").await;
    store
        .insert_sealed(value(&ws, "S", "old", b"v"))
        .await
        .unwrap();
    let seen = store.get_sealed(&id(&ws, "S")).await.unwrap().unwrap();
    let attempts = (0..8).map(|i| {
        let seen = seen.clone();
        async move { store.reseal(&seen, "new", format!("r{i}").as_bytes()).await }
    });
    let wins = join_all(attempts)
        .await
        .into_iter()
        .filter(|r| *r.as_ref().unwrap())
        .count();
    assert_eq!(wins, 1);
}
