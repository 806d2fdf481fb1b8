//! The behaviour every `FunctionStore` backend must show.

use chrono::{DateTime, Duration, Utc};
use futures::future::join_all;
use levers9_store::{
    AttemptOutcome, FinalState, FunctionStore, NewTask, RecordStore, StoreError, StubRecord,
    TaskEnd, TaskMoves, TaskRecord, TaskRetry, TaskStart, TaskState, TasksMoved,
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

fn task(workspace_id: &str, stub_id: &str, created_at: DateTime<Utc>) -> NewTask {
    NewTask {
        id: Uuid::now_v7().to_string(),
        workspace_id: workspace_id.to_owned(),
        stub_id: stub_id.to_owned(),
        function_name: "resize".to_owned(),
        created_at,
    }
}

/// A workspace with one stub and one pending task of it, created at `at(10)`.
async fn pending_task<S: RecordStore + FunctionStore>(store: &S) -> (String, NewTask) {
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
async fn stored_task<S: FunctionStore>(store: &S, id: &str) -> TaskRecord {
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

/// Starts one attempt through the batch call; true if the task changed.
async fn start<S: FunctionStore>(
    store: &S,
    task_id: &str,
    attempt: u32,
    container_id: &str,
    worker_id: &str,
    at: DateTime<Utc>,
) -> bool {
    let start = TaskStart {
        task_id: task_id.to_owned(),
        attempt,
        container_id: container_id.to_owned(),
        worker_id: worker_id.to_owned(),
        at,
    };
    store.start_tasks(&[start]).await.unwrap() == 1
}

pub async fn many_tasks_start_and_end_in_one_call_and_finals_stay<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    // More than one statement's worth, so the chunks are exercised too.
    let tasks: Vec<NewTask> = (0..1_200).map(|i| task(&ws, "stub-1", at(i))).collect();
    store.insert_tasks(&tasks).await.unwrap();
    assert!(store
        .finish_task(
            &tasks[0].id,
            FinalState::Cancelled,
            "cancelled by user",
            at(5)
        )
        .await
        .unwrap());
    let starts: Vec<TaskStart> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| TaskStart {
            task_id: t.id.clone(),
            attempt: 1,
            container_id: format!("c-{}", i % 7),
            worker_id: "w".into(),
            at: at(10),
        })
        .collect();
    let ends: Vec<TaskEnd> = tasks
        .iter()
        .map(|t| TaskEnd {
            task_id: t.id.clone(),
            state: FinalState::Complete,
            message: String::new(),
            at: at(20),
        })
        .collect();

    let started = store.start_tasks(&starts).await.unwrap();
    let ended = store.finish_tasks(&ends).await.unwrap();

    assert_eq!(
        (started, ended),
        (1_199, 1_199),
        "all but the cancelled one"
    );
    let cancelled = stored_task(store, &tasks[0].id).await;
    assert_eq!(cancelled.state, TaskState::Ended(FinalState::Cancelled));
    assert_eq!(cancelled.attempts, 0);
    let last = stored_task(store, &tasks[1_199].id).await;
    assert_eq!(last.state, TaskState::Ended(FinalState::Complete));
    assert_eq!(last.container_id, "c-2");
    assert_eq!(last.started_at, Some(at(10)));
    assert_eq!(last.ended_at, Some(at(20)));
}

pub async fn starts_retries_and_ends_move_together_or_not_at_all<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    let tasks: Vec<NewTask> = (0..3).map(|i| task(&ws, "stub-1", at(i))).collect();
    store.insert_tasks(&tasks).await.unwrap();
    let start_of = |task: &NewTask| TaskStart {
        task_id: task.id.clone(),
        attempt: 1,
        container_id: "c".into(),
        worker_id: "w".into(),
        at: at(10),
    };
    let end_of = |task: &NewTask, state: FinalState| TaskEnd {
        task_id: task.id.clone(),
        state,
        message: String::new(),
        at: at(20),
    };
    // The first task starts and ends in one move (a short call); the second
    // starts and goes back for a retry; the third only starts.
    let starts: Vec<TaskStart> = tasks.iter().map(start_of).collect();
    let retries = [TaskRetry {
        task_id: &tasks[1].id,
        message: "worker lost",
    }];
    let ends = [end_of(&tasks[0], FinalState::Complete)];
    // Attempts are numbered from 1 (a CHECK of both schemas): the third
    // start fails after the first task's start and end were written.
    let mut bad_starts = starts.clone();
    bad_starts[2].attempt = 0;

    let refused = store
        .move_tasks(&TaskMoves {
            starts: &bad_starts,
            retries: &retries,
            ends: &ends,
            ..TaskMoves::default()
        })
        .await
        .unwrap_err();
    let untouched = [
        stored_task(store, &tasks[0].id).await.state,
        stored_task(store, &tasks[2].id).await.state,
    ];
    let no_attempts = store.task_attempts(&tasks[0].id).await.unwrap();
    let moved = store
        .move_tasks(&TaskMoves {
            starts: &starts,
            retries: &retries,
            ends: &ends,
            ..TaskMoves::default()
        })
        .await
        .unwrap();

    assert!(matches!(refused, StoreError::Database(_)), "{refused:?}");
    assert_eq!(
        untouched,
        [TaskState::Pending, TaskState::Pending],
        "a refused move changes nothing"
    );
    assert!(no_attempts.is_empty(), "{no_attempts:?}");
    assert_eq!(
        moved,
        TasksMoved {
            started: 3,
            retried: 1,
            requeued: 0,
            ended: 1
        }
    );
    let states = [
        stored_task(store, &tasks[0].id).await.state,
        stored_task(store, &tasks[1].id).await.state,
        stored_task(store, &tasks[2].id).await.state,
    ];
    assert_eq!(
        states,
        [
            TaskState::Ended(FinalState::Complete),
            TaskState::Retry,
            TaskState::Running
        ]
    );
    let attempts = store.task_attempts(&tasks[0].id).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        attempts[0].outcome,
        Some(AttemptOutcome::Ended(FinalState::Complete))
    );
    assert_eq!(attempts[0].ended_at, Some(at(20)));
    assert_eq!(
        store.task_attempts(&tasks[1].id).await.unwrap()[0].outcome,
        Some(AttemptOutcome::Retried)
    );
    assert_eq!(
        store.task_attempts(&tasks[2].id).await.unwrap()[0].outcome,
        None,
        "open while it runs"
    );

    // The third task's attempt was handed back unfinished; it starts again
    // elsewhere and ends in one move: the open attempt is closed as such.
    let again = [TaskStart {
        container_id: "c2".into(),
        at: at(15),
        ..start_of(&tasks[2])
    }];
    let moved = store
        .move_tasks(&TaskMoves {
            starts: &again,
            ends: &[end_of(&tasks[2], FinalState::Complete)],
            ..TaskMoves::default()
        })
        .await
        .unwrap();
    assert_eq!((moved.started, moved.ended), (1, 1));
    let attempts = store.task_attempts(&tasks[2].id).await.unwrap();
    let seen: Vec<(&str, Option<AttemptOutcome>)> = attempts
        .iter()
        .map(|a| (a.container_id.as_str(), a.outcome))
        .collect();
    assert_eq!(
        seen,
        [
            ("c", Some(AttemptOutcome::Requeued)),
            ("c2", Some(AttemptOutcome::Ended(FinalState::Complete)))
        ]
    );
    assert_eq!(
        stored_task(store, &tasks[2].id).await.state,
        TaskState::Ended(FinalState::Complete)
    );
}

pub async fn a_started_task_finishes_complete<S: RecordStore + FunctionStore>(store: &S) {
    let (_, new) = pending_task(store).await;

    assert!(start(store, &new.id, 1, "container-1", "worker-1", at(20)).await);
    let running = stored_task(store, &new.id).await;
    assert!(store
        .finish_task(&new.id, FinalState::Complete, "", at(30))
        .await
        .unwrap());

    assert_eq!(running.state, TaskState::Running);
    assert_eq!(running.attempts, 1);
    assert_eq!(running.container_id, "container-1");
    assert_eq!(running.worker_id, "worker-1");
    assert_eq!(running.started_at, Some(at(20)));
    assert_eq!(running.ended_at, None);
    let done = stored_task(store, &new.id).await;
    assert_eq!(done.state, TaskState::Ended(FinalState::Complete));
    assert_eq!(done.started_at, Some(at(20)));
    assert_eq!(done.ended_at, Some(at(30)));
    assert_eq!(done.container_id, "container-1");
}

pub async fn a_late_result_cannot_overwrite_a_cancel<S: RecordStore + FunctionStore>(store: &S) {
    let (_, new) = pending_task(store).await;
    start(store, &new.id, 1, "container-1", "worker-1", at(20)).await;
    assert!(store
        .finish_task(&new.id, FinalState::Cancelled, "cancelled by user", at(25))
        .await
        .unwrap());

    let late_result = store
        .finish_task(&new.id, FinalState::Complete, "", at(30))
        .await
        .unwrap();
    let late_retry = store.retry_task(&new.id, "worker lost").await.unwrap();
    let late_start = start(store, &new.id, 2, "container-2", "worker-2", at(35)).await;

    assert!(!late_result && !late_retry && !late_start);
    let task = stored_task(store, &new.id).await;
    assert_eq!(task.state, TaskState::Ended(FinalState::Cancelled));
    assert_eq!(task.message, "cancelled by user");
    assert_eq!(task.ended_at, Some(at(25)));
    assert_eq!(task.attempts, 1);
    assert_eq!(task.container_id, "container-1");
}

pub async fn a_retried_task_starts_again_with_more_attempts<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let (_, new) = pending_task(store).await;
    start(store, &new.id, 1, "container-1", "worker-1", at(20)).await;

    assert!(store.retry_task(&new.id, "worker lost").await.unwrap());
    let waiting = stored_task(store, &new.id).await;
    assert!(start(store, &new.id, 2, "container-2", "worker-2", at(40)).await);

    assert_eq!(waiting.state, TaskState::Retry);
    assert_eq!(waiting.message, "worker lost");
    let again = stored_task(store, &new.id).await;
    assert_eq!(again.state, TaskState::Running);
    assert_eq!(again.attempts, 2);
    assert_eq!(again.container_id, "container-2");
    assert_eq!(again.worker_id, "worker-2");
    assert_eq!(again.started_at, Some(at(20)), "the first start is kept");

    // Handed back unfinished (a drained worker): the same number again.
    assert!(start(store, &new.id, 2, "container-3", "worker-3", at(50)).await);
    store
        .finish_task(&new.id, FinalState::Complete, "", at(60))
        .await
        .unwrap();
    let attempts = store.task_attempts(&new.id).await.unwrap();
    let seen: Vec<_> = attempts
        .iter()
        .map(|a| (a.attempt, a.worker_id.as_str(), a.outcome, a.ended_at))
        .collect();
    assert_eq!(seen[0].0, 1);
    assert_eq!(seen[0].1, "worker-1");
    assert_eq!(seen[0].2, Some(AttemptOutcome::Retried));
    assert!(seen[0].3.is_some());
    assert_eq!(attempts[0].message, "worker lost");
    assert_eq!(
        seen[1],
        (2, "worker-2", Some(AttemptOutcome::Requeued), Some(at(50)))
    );
    assert_eq!(
        seen[2],
        (
            2,
            "worker-3",
            Some(AttemptOutcome::Ended(FinalState::Complete)),
            Some(at(60))
        )
    );
    assert_eq!(attempts[2].started_at, at(50));
}

pub async fn a_task_lost_with_its_worker_goes_back_to_pending_under_the_same_attempt<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let (_, new) = pending_task(store).await;
    start(store, &new.id, 1, "container-1", "worker-1", at(20)).await;
    let reason = "worker w1 was declared lost; running again elsewhere";
    let requeues = [TaskRetry {
        task_id: &new.id,
        message: reason,
    }];

    let moved = store
        .move_tasks(&TaskMoves {
            requeues: &requeues,
            ..TaskMoves::default()
        })
        .await
        .unwrap();
    let waiting = stored_task(store, &new.id).await;
    assert!(start(store, &new.id, 1, "container-2", "worker-2", at(40)).await);
    store
        .finish_task(&new.id, FinalState::Complete, "", at(60))
        .await
        .unwrap();

    assert_eq!(moved.requeued, 1);
    assert_eq!(waiting.state, TaskState::Pending);
    assert_eq!(waiting.message, reason);
    assert_eq!(waiting.attempts, 1);
    let attempts = store.task_attempts(&new.id).await.unwrap();
    let seen: Vec<(u32, &str, Option<AttemptOutcome>, &str)> = attempts
        .iter()
        .map(|a| {
            (
                a.attempt,
                a.worker_id.as_str(),
                a.outcome,
                a.message.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "worker-1", Some(AttemptOutcome::Lost), reason),
            (
                1,
                "worker-2",
                Some(AttemptOutcome::Ended(FinalState::Complete)),
                ""
            )
        ]
    );
}

pub async fn unfinished_tasks_leave_out_final_ones<S: RecordStore + FunctionStore>(store: &S) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    // One task per state, created in reverse so that creation order, not
    // insertion order, decides the listing.
    let tasks: Vec<NewTask> = TaskState::ALL
        .iter()
        .enumerate()
        .map(|(i, _)| task(&ws, "stub-1", at(100 - i as i64)))
        .collect();
    store.insert_tasks(&tasks).await.unwrap();
    for (new, state) in tasks.iter().zip(TaskState::ALL) {
        match state {
            TaskState::Pending => {}
            TaskState::Running => {
                start(store, &new.id, 1, "c", "w", at(200)).await;
            }
            TaskState::Retry => {
                store.retry_task(&new.id, "again").await.unwrap();
            }
            TaskState::Ended(end) => {
                store.finish_task(&new.id, end, "", at(200)).await.unwrap();
            }
        }
    }

    let unfinished = store.unfinished_tasks(100).await.unwrap();
    let first = store.unfinished_tasks(1).await.unwrap();

    let states: Vec<TaskState> = unfinished.iter().map(|t| t.state).collect();
    assert_eq!(
        states,
        [TaskState::Retry, TaskState::Running, TaskState::Pending],
        "oldest first"
    );
    assert_eq!(first.len(), 1);
    assert_eq!(first[0], unfinished[0]);
}
