//! The behaviour every `FunctionStore` backend must show as tasks start,
//! retry, get lost and end.

use chrono::{DateTime, Utc};
use levers9_store::{
    AttemptOutcome, FinalState, FunctionStore, NewTask, RecordStore, StoreError, TaskEnd,
    TaskMoves, TaskRetry, TaskStart, TaskState, TasksMoved,
};

use super::at;
use super::functions::{pending_task, stored_task, stub, task, workspace};

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

/// The first attempt of `task`, on container "c" of worker "w", at 10 s.
fn start_of(task: &NewTask) -> TaskStart {
    TaskStart {
        task_id: task.id.clone(),
        attempt: 1,
        container_id: "c".into(),
        worker_id: "w".into(),
        at: at(10),
    }
}

/// The end of `task` in `state`, at 20 s.
fn end_of(task: &NewTask, state: FinalState) -> TaskEnd {
    TaskEnd {
        task_id: task.id.clone(),
        state,
        message: String::new(),
        at: at(20),
    }
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
            inserted: 0,
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

pub async fn new_tasks_are_inserted_and_moved_in_one_transaction<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store.get_or_create_stub(stub(&ws, "stub-1")).await.unwrap();
    let tasks: Vec<NewTask> = (0..4).map(|i| task(&ws, "stub-1", at(i))).collect();
    // The first is a short call: inserted, started and ended in one move;
    // the second is inserted and started; the third starts and goes back
    // for a retry; the fourth is only inserted.
    let starts: Vec<TaskStart> = tasks[..3].iter().map(start_of).collect();
    let ends = [end_of(&tasks[0], FinalState::Complete)];
    let retries = [TaskRetry {
        task_id: &tasks[2].id,
        message: "ValueError: try again",
    }];
    let moved = store
        .move_tasks(&TaskMoves {
            inserts: &tasks,
            starts: &starts,
            retries: &retries,
            ends: &ends,
            ..TaskMoves::default()
        })
        .await
        .unwrap();

    assert_eq!(
        moved,
        TasksMoved {
            inserted: 4,
            started: 3,
            retried: 1,
            requeued: 0,
            ended: 1
        }
    );
    let first = stored_task(store, &tasks[0].id).await;
    assert_eq!(first.state, TaskState::Ended(FinalState::Complete));
    assert_eq!(
        (first.created_at, first.started_at, first.ended_at),
        (at(0), Some(at(10)), Some(at(20)))
    );
    assert_eq!(first.function_name, tasks[0].function_name);
    assert_eq!(
        (
            first.attempts,
            first.container_id.as_str(),
            first.worker_id.as_str()
        ),
        (1, "c", "w")
    );
    let second = stored_task(store, &tasks[1].id).await;
    assert_eq!(second.state, TaskState::Running);
    assert_eq!((second.started_at, second.ended_at), (Some(at(10)), None));
    let third = stored_task(store, &tasks[2].id).await;
    assert_eq!(
        (third.state, third.message.as_str()),
        (TaskState::Retry, "ValueError: try again")
    );
    let fourth = stored_task(store, &tasks[3].id).await;
    assert_eq!((fourth.state, fourth.attempts), (TaskState::Pending, 0));
    let outcomes = |attempts: Vec<levers9_store::AttemptRecord>| -> Vec<Option<AttemptOutcome>> {
        attempts.iter().map(|a| a.outcome).collect()
    };
    assert_eq!(
        outcomes(store.task_attempts(&tasks[0].id).await.unwrap()),
        [Some(AttemptOutcome::Ended(FinalState::Complete))]
    );
    assert_eq!(
        outcomes(store.task_attempts(&tasks[1].id).await.unwrap()),
        [None]
    );
    assert_eq!(
        outcomes(store.task_attempts(&tasks[2].id).await.unwrap()),
        [Some(AttemptOutcome::Retried)]
    );
    // A task that started and ended in the move is not among the
    // unfinished ones; the others are, oldest first.
    let unfinished: Vec<String> = store
        .unfinished_tasks(10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(
        unfinished,
        [
            tasks[1].id.clone(),
            tasks[2].id.clone(),
            tasks[3].id.clone()
        ]
    );

    // A task id stored already refuses the whole move: nothing of it is
    // written, not even the new task beside it (whose start is in the move);
    // so does a stored id among the tasks that start in the move.
    let another = task(&ws, "stub-1", at(3));
    let refusals = [
        (vec![another.clone(), tasks[1].clone()], &another),
        (vec![tasks[3].clone()], &tasks[3]),
    ];
    for (inserts, starting) in &refusals {
        let refused = store
            .move_tasks(&TaskMoves {
                inserts,
                starts: &[start_of(starting)],
                ..TaskMoves::default()
            })
            .await
            .unwrap_err();
        assert!(
            matches!(refused, StoreError::AlreadyExists(_)),
            "{refused:?}"
        );
    }
    assert!(store.find_task(&another.id).await.unwrap().is_none());
    assert_eq!(
        stored_task(store, &tasks[1].id).await.state,
        TaskState::Running
    );
    assert_eq!(
        stored_task(store, &tasks[3].id).await.state,
        TaskState::Pending
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
