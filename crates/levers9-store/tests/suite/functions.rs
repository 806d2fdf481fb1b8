//! The behaviour every `FunctionStore` backend must show.

use chrono::{DateTime, Duration, Utc};
use futures::future::join_all;
use levers9_store::{
    FunctionStore, NewTask, RecordStore, StoreError, StubRecord, TaskRecord, TaskState,
};
use uuid::Uuid;

use super::{at, workspace_with_token};

/// A workspace's id, made with its admin token.
pub(super) async fn workspace<S: RecordStore>(store: &S, name: &str) -> String {
    workspace_with_token(store, name).await.0
}

pub(super) fn stub(workspace_id: &str, id: &str) -> StubRecord {
    StubRecord {
        id: id.to_owned(),
        workspace_id: workspace_id.to_owned(),
        name: "resize".to_owned(),
        code_digest: "sha256:c0de".to_owned(),
        sdk_digest: "sha256:5d4".to_owned(),
        module_path: "app.images".to_owned(),
        function_name: "resize".to_owned(),
        config_json: r#"{"cpu":1000,"memory":512}"#.to_owned(),
        created_at: at(1),
    }
}

pub(super) fn task(workspace_id: &str, stub_id: &str, created_at: DateTime<Utc>) -> NewTask {
    NewTask {
        id: Uuid::now_v7().to_string(),
        workspace_id: workspace_id.to_owned(),
        stub_id: stub_id.to_owned(),
        function_name: "resize".to_owned(),
        created_at,
    }
}

/// A workspace with one stub and one pending task of it, created at `at(10)`.
pub(super) async fn pending_task<S: RecordStore + FunctionStore>(store: &S) -> (String, NewTask) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    let new = task(&ws, "stub-1", at(10));
    store
        .insert_tasks(std::slice::from_ref(&new))
        .await
        .unwrap();
    (ws, new)
}

/// The stored task; it must exist.
pub(super) async fn stored_task<S: FunctionStore>(store: &S, id: &str) -> TaskRecord {
    store.find_task(id).await.unwrap().expect("the task exists")
}

pub async fn objects_are_put_idempotently_per_workspace<S: RecordStore + FunctionStore>(store: &S) {
    let mine = workspace(store, "mine").await;
    let theirs = workspace(store, "theirs").await;

    store
        .put_object(&mine, "sha256:aa", 1024, at(1))
        .await
        .unwrap();
    store
        .put_object(&mine, "sha256:aa", 1024, at(2))
        .await
        .unwrap();

    assert!(store.has_object(&mine, "sha256:aa").await.unwrap());
    assert!(!store.has_object(&theirs, "sha256:aa").await.unwrap());
    assert!(!store.has_object(&mine, "sha256:bb").await.unwrap());
}

pub async fn a_stub_is_created_once_and_then_returned_as_stored<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    let mut first = stub(&ws, "stub-1");
    first.created_at = at(1) + Duration::nanoseconds(123_456_789);

    let created = store.get_or_create_stub(first.clone()).await.unwrap();
    let mut twin = stub(&ws, "stub-1");
    twin.config_json = "{}".to_owned();
    twin.created_at = at(50);
    let again = store.get_or_create_stub(twin).await.unwrap();

    assert_eq!(created.config_json, first.config_json);
    assert_eq!(created.created_at, at(1) + Duration::microseconds(123_456));
    assert_eq!(again, created);
    assert_eq!(store.get_stub(&ws, "stub-1").await.unwrap(), Some(created));
    assert_eq!(store.get_stub(&ws, "stub-2").await.unwrap(), None);
}

pub async fn concurrent_twins_of_a_stub_store_one_row<S: RecordStore + FunctionStore>(store: &S) {
    let ws = workspace(store, "team").await;

    let outcomes = join_all((0..8).map(|_| store.get_or_create_stub(stub(&ws, "stub-1")))).await;

    let stored = store.get_stub(&ws, "stub-1").await.unwrap().unwrap();
    for outcome in outcomes {
        assert_eq!(outcome.unwrap(), stored);
    }
}

pub async fn another_workspace_cannot_read_or_take_a_stub<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let mine = workspace(store, "mine").await;
    let theirs = workspace(store, "theirs").await;
    store
        .get_or_create_stub(stub(&mine, "stub-1"))
        .await
        .unwrap();

    let read = store.get_stub(&theirs, "stub-1").await.unwrap();
    let err = store
        .get_or_create_stub(stub(&theirs, "stub-1"))
        .await
        .unwrap_err();

    assert_eq!(read, None);
    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "stub with id \"stub-1\" in another workspace already exists"
    );
}

pub async fn stubs_are_listed_newest_first_per_workspace<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let mine = workspace(store, "mine").await;
    let theirs = workspace(store, "theirs").await;
    for (n, id) in ["stub-1", "stub-2", "stub-3"].into_iter().enumerate() {
        let created_at = at(10 + i64::try_from(n).unwrap());
        store
            .get_or_create_stub(StubRecord {
                created_at,
                ..stub(&mine, id)
            })
            .await
            .unwrap();
    }
    store
        .get_or_create_stub(stub(&theirs, "stub-theirs"))
        .await
        .unwrap();

    let ids = |stubs: Vec<StubRecord>| stubs.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_stubs(&mine, 10).await.unwrap()),
        ["stub-3", "stub-2", "stub-1"]
    );
    assert_eq!(
        ids(store.list_stubs(&mine, 2).await.unwrap()),
        ["stub-3", "stub-2"]
    );
    assert_eq!(
        ids(store.list_stubs(&theirs, 10).await.unwrap()),
        ["stub-theirs"]
    );
    let listed = store.list_stubs(&mine, 1).await.unwrap().remove(0);
    assert_eq!(
        listed,
        store.get_stub(&mine, "stub-3").await.unwrap().unwrap()
    );
}

pub async fn thousands_of_tasks_are_inserted_at_once_and_listed_newest_first<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    let other = workspace(store, "other").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    let tasks: Vec<NewTask> = (0..2_500).map(|i| task(&ws, "stub-1", at(i))).collect();

    store.insert_tasks(&tasks).await.unwrap();

    let newest = store.list_tasks(&ws, 10).await.unwrap();
    let expected: Vec<&str> = tasks.iter().rev().take(10).map(|t| t.id.as_str()).collect();
    let listed: Vec<&str> = newest.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(listed, expected);
    assert_eq!(newest[0].created_at, at(2_499));
    assert_eq!(newest[0].state, TaskState::Pending);
    assert_eq!(newest[0].attempts, 0);
    assert_eq!(newest[0].started_at, None);
    assert_eq!(store.list_tasks(&ws, 10_000).await.unwrap().len(), 2_500);
    assert!(store.list_tasks(&other, 10).await.unwrap().is_empty());
}

pub async fn a_batch_of_tasks_is_stored_all_or_none<S: RecordStore + FunctionStore>(store: &S) {
    let (ws, existing) = pending_task(store).await;
    let theirs = workspace(store, "theirs").await;
    let mut batch: Vec<NewTask> = (0..600).map(|i| task(&ws, "stub-1", at(i))).collect();
    batch.push(existing.clone());

    let clash = store.insert_tasks(&batch).await.unwrap_err();
    let foreign_stub = store.insert_tasks(&[task(&theirs, "stub-1", at(0))]).await;

    assert!(matches!(clash, StoreError::AlreadyExists(_)), "{clash:?}");
    assert_eq!(store.list_tasks(&ws, 1_000).await.unwrap().len(), 1);
    assert!(
        foreign_stub.is_err(),
        "a task runs only its workspace's stubs"
    );
    assert!(store.list_tasks(&theirs, 10).await.unwrap().is_empty());
}

pub async fn another_workspace_cannot_read_a_task<S: RecordStore + FunctionStore>(store: &S) {
    let (ws, new) = pending_task(store).await;
    let theirs = workspace(store, "theirs").await;

    let mine = store.get_task(&ws, &new.id).await.unwrap().unwrap();

    assert_eq!(mine.id, new.id);
    assert_eq!(mine.stub_id, "stub-1");
    assert_eq!(mine.function_name, "resize");
    assert_eq!(store.get_task(&theirs, &new.id).await.unwrap(), None);
    assert_eq!(store.find_task(&new.id).await.unwrap(), Some(mine));
    assert_eq!(store.find_task("no-such-task").await.unwrap(), None);
}
