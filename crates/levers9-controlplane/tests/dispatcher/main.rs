//! The function dispatcher's state machine on the embedded backends (SQLite
//! and the in-process hot state; PostgreSQL where its connections matter).
//! The test plays the scheduler and a worker:
//! it places the containers the dispatcher asks for, reads the worker's
//! inbox and answers as the worker's stream would.

mod floor;
mod rig;

use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{controlplane_message, run_event, FinalTaskState, StubConfig};
use levers9_controlplane::fleet::inbox;
use levers9_controlplane::fleet::records::ContainerState;
use levers9_controlplane::functions::{DispatchEvent, InputEnd};
use levers9_controlplane::scheduler::BACKLOG;
use levers9_state::Queues;
use levers9_store::{AttemptOutcome, FinalState, PostgresStore, TaskState as StoredState};

use rig::{fresh_postgres, idle_rig, idle_rig_on, next_event, psql, rig, WAIT, WORKER};

#[tokio::test]
async fn a_warm_container_takes_the_next_input_without_a_new_container() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (first, mut events) = rig.submit(&stub).await;
    let container = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (first.as_str(), 1));
    assert_eq!(input.container_id, container);
    assert_eq!(input.timeout_ms, 300_000, "the default timeout");
    rig.complete(&input, &mut events).await;
    rig.row(&first, FinalState::Complete).await;

    let (second, _) = rig.submit(&stub).await;
    let input = rig.input().await;
    assert_eq!(input.task_id, second);
    assert_eq!(input.container_id, container, "the warm container took it");
    rig.no_container_requested().await;
}

/// A task submitted just before a dispatcher takes the lease is both in
/// the unfinished rows it takes over and in the events it then reads: it
/// is queued once, and runs once.
#[tokio::test]
async fn a_task_whose_row_comes_with_it_is_written_with_its_start_and_end() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit_unwritten(&stub).await;
    let container = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (task.as_str(), 1));
    rig.complete(&input, &mut events).await;
    rig.row(&task, FinalState::Complete).await;
    let attempts = rig.store.task_attempts(&task).await.expect("attempts");
    let seen: Vec<(&str, Option<AttemptOutcome>)> = attempts
        .iter()
        .map(|a| (a.container_id.as_str(), a.outcome))
        .collect();
    assert_eq!(
        seen,
        [(
            container.as_str(),
            Some(AttemptOutcome::Ended(FinalState::Complete))
        )]
    );
}

#[tokio::test]
async fn a_task_whose_row_comes_with_it_told_before_any_dispatcher_leads_is_written() {
    // Told while no dispatcher leads, the task waits on the hot state's
    // queue: its row must go with it.
    let rig = idle_rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit_unwritten(&stub).await;
    rig.start();
    rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (task.as_str(), 1));
    rig.complete(&input, &mut events).await;
    rig.row(&task, FinalState::Complete).await;
}

#[tokio::test]
async fn a_task_whose_row_comes_with_it_is_listed_pending_while_no_container_takes_it() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, _events) = rig.submit_unwritten(&stub).await;
    // Its row waits for its start at most the writer's hold (2 s), then is
    // written as it stands.
    let row = rig.row_in(&task, StoredState::Pending).await;
    assert_eq!(row.attempts, 0);
}

#[tokio::test]
async fn an_end_is_written_again_when_postgres_dropped_the_dispatchers_connection() {
    let url = fresh_postgres();
    let store = Arc::new(PostgresStore::connect(&url, 2).await.expect("store"));
    // The dispatcher's own pool, named so that only its connection is cut.
    let dispatching = PostgresStore::connect(&format!("{url}?application_name=l9dispatch"), 1)
        .await
        .expect("dispatcher's store");
    let rig = idle_rig_on(store, Arc::new(dispatching), None).await;
    rig.start();
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    rig.ready_container().await;
    let input = rig.input().await;
    rig.row_in(&task, StoredState::Running).await;
    // What a restart of PostgreSQL does to the dispatcher's pooled
    // connection: its next statement, the end's batch, fails.
    let dispatcher = "FROM pg_stat_activity WHERE application_name = 'l9dispatch'";
    assert_eq!(
        psql(
            &url,
            &format!("SELECT pg_terminate_backend(pid) {dispatcher}")
        ),
        "t"
    );
    while psql(&url, &format!("SELECT count(*) {dispatcher}")) != "0" {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    rig.complete(&input, &mut events).await;
    rig.row(&task, FinalState::Complete).await;
}

#[tokio::test]
async fn a_task_submitted_as_the_dispatcher_starts_runs_once() {
    let rig = idle_rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    rig.start();
    rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (task.as_str(), 1));
    rig.no_container_requested().await;
    rig.complete(&input, &mut events).await;
    let more = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(300))
        .await
        .expect("pop");
    assert!(more.is_none(), "the task was sent again");
}

#[tokio::test]
async fn a_failed_attempt_is_retried_within_the_budget_then_fails() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            retries: 1,
            ..StubConfig::default()
        })
        .await;
    let (task, mut events) = rig.submit(&stub).await;
    rig.ready_container().await;
    let first = rig.input().await;
    rig.finish(&first, InputEnd::Error, "ValueError: boom")
        .await;
    match next_event(&mut events).await {
        run_event::Kind::Retrying(retry) => {
            assert_eq!(retry.attempt, 2);
            assert_eq!(retry.reason, "ValueError: boom");
        }
        other => panic!("expected a retry, got {other:?}"),
    }
    let second = rig.input().await;
    assert_eq!(
        (second.task_id.as_str(), second.attempt),
        (task.as_str(), 2)
    );
    // An input the container never ran goes back without using an attempt,
    // to another container: one that lost an input is on its way out.
    rig.finish(&second, InputEnd::Lost, "container gone").await;
    let replacement = rig.ready_container().await;
    let again = rig.input().await;
    assert_eq!((again.attempt, &again.container_id), (2, &replacement));
    rig.finish(&again, InputEnd::Error, "ValueError: boom")
        .await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state(), FinalTaskState::Error),
        other => panic!("expected the result, got {other:?}"),
    }
    let row = rig.row(&task, FinalState::Error).await;
    assert_eq!(row.attempts, 2);
}

/// A warm container of a fast function is sent its next input before it
/// finished the last (a buffer in its runner's queue); one of a slow
/// function is not, and a new container takes the queued input.
#[tokio::test]
async fn fast_functions_get_their_next_input_early_and_slow_ones_wait() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let container = rig.fast_container(&stub).await;
    let (_, _a) = rig.submit(&stub).await;
    let (_, _b) = rig.submit(&stub).await;
    let a = rig.input().await;
    let b = rig.input().await;
    assert_eq!(
        (&a.container_id, &b.container_id),
        (&container, &container),
        "the second input went to the busy container's buffer"
    );

    let slow = rig
        .stub(StubConfig {
            keep_warm_seconds: 60,
            ..StubConfig::default()
        })
        .await;
    let (_, _events) = rig.submit(&slow).await;
    let busy = rig.ready_container().await;
    let input = rig.input().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    rig.finish(&input, InputEnd::Complete, "").await;
    let (_, _a) = rig.submit(&slow).await;
    let (_, _b) = rig.submit(&slow).await;
    assert_eq!(rig.input().await.container_id, busy);
    let another = rig.ready_container().await;
    assert_eq!(
        rig.input().await.container_id,
        another,
        "the queued input waited for a container with a free slot"
    );
}

#[tokio::test]
async fn a_request_still_waiting_for_a_worker_is_withdrawn_once_the_queue_is_empty() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (_, _a) = rig.submit(&stub).await;
    let (_, _b) = rig.submit(&stub).await;
    let first = rig.ready_container().await;
    let waiting = String::from_utf8(
        rig.state
            .pop(BACKLOG, WAIT)
            .await
            .expect("pop")
            .expect("a second container was requested for the second input"),
    )
    .expect("utf-8");
    let input = rig.input().await;
    rig.finish(&input, InputEnd::Complete, "").await;
    // The second input goes to the first container; nothing is queued.
    assert_eq!(rig.input().await.container_id, first);
    let deadline = tokio::time::Instant::now() + WAIT;
    let reason = loop {
        let marks = rig
            .parts
            .scheduling
            .withdrawals(std::slice::from_ref(&waiting))
            .await
            .expect("read");
        if let Some(Some(reason)) = marks.into_iter().next() {
            break reason;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the request was not withdrawn"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        reason.starts_with("withdrawn before a worker took it"),
        "{reason}"
    );
    assert_eq!(
        rig.parts
            .scheduling
            .withdrawals(&[first])
            .await
            .expect("read"),
        [None],
        "a placed container is not withdrawn"
    );
}

#[tokio::test]
async fn an_idle_container_is_stopped_after_its_keep_warm_window() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    let (_, _events) = rig.submit(&stub).await;
    let container = rig.ready_container().await;
    let input = rig.input().await;
    rig.finish(&input, InputEnd::Complete, "").await;
    match rig.inbox().await {
        controlplane_message::Kind::Stop(stop) => assert_eq!(stop.container_id, container),
        other => panic!("expected a stop, got {other:?}"),
    }
}

#[tokio::test]
async fn a_container_that_cannot_start_fails_the_queue_with_the_reason() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    let container_id = rig.place().await;
    let mut container = rig
        .fleet
        .container(&container_id)
        .await
        .expect("get")
        .expect("record");
    container.state = ContainerState::Failed;
    container.message = "cannot pull image registry.test/python:3.11: not found".into();
    rig.fleet.put_container(&container).await.expect("put");
    rig.fleet.publish_end(&container_id).await.expect("end");
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => {
            assert_eq!(notice.state(), FinalTaskState::Error);
            assert!(
                notice.message.contains("failed to start")
                    && notice.message.contains("cannot pull image"),
                "{}",
                notice.message
            );
        }
        other => panic!("expected the result, got {other:?}"),
    }
    rig.row(&task, FinalState::Error).await;
}

/// A fast function's container holds inputs beyond its concurrency. One
/// cancelled before its runner started it is dropped there, keeps its
/// slot until the worker says so, and the container stays warm.
#[tokio::test]
async fn a_cancelled_input_its_runner_has_not_started_is_dropped_and_the_container_stays() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let container = rig.fast_container(&stub).await;
    let (_, _a) = rig.submit(&stub).await;
    let (waiting, mut events) = rig.submit(&stub).await;
    let a = rig.input().await;
    let b = rig.input().await;
    assert_eq!((&b.task_id, &b.container_id), (&waiting, &container));

    let cancel = rig.cancel(&waiting).await;
    assert_eq!(
        (cancel.container_id, cancel.task_id),
        (container.clone(), waiting.clone())
    );
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state(), FinalTaskState::Cancelled),
        other => panic!("expected the result, got {other:?}"),
    }
    rig.finish(&b, InputEnd::Cancelled, "cancelled before it started")
        .await;
    rig.finish(&a, InputEnd::Complete, "").await;
    let (next, _) = rig.submit(&stub).await;
    let input = rig.input().await;
    assert_eq!((&input.task_id, &input.container_id), (&next, &container));
    rig.no_container_requested().await;
    rig.row(&waiting, FinalState::Cancelled).await;
}

/// A cancelled input that already runs cannot be interrupted: its worker
/// stops the container, and the other input it held runs again elsewhere
/// without using an attempt.
#[tokio::test]
async fn a_cancelled_input_already_running_stops_its_container_and_the_others_run_again() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let first = rig.fast_container(&stub).await;
    let (running, _) = rig.submit(&stub).await;
    let (other, mut events) = rig.submit(&stub).await;
    assert_eq!(rig.input().await.task_id, running);
    assert_eq!(rig.input().await.task_id, other);

    assert_eq!(rig.cancel(&running).await.task_id, running);
    // The runner refused: the worker stopped the container.
    rig.exited(&first, 143).await;
    let second = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!(
        (
            input.task_id.as_str(),
            input.attempt,
            input.container_id.as_str()
        ),
        (other.as_str(), 1, second.as_str())
    );
    rig.finish(&input, InputEnd::Complete, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state(), FinalTaskState::Complete),
        other => panic!("expected the result without a retry, got {other:?}"),
    }
    rig.row(&running, FinalState::Cancelled).await;
    rig.row(&other, FinalState::Complete).await;
}

/// A drained worker's container takes no new input; its input comes back
/// when it ends and runs elsewhere under the same attempt (no retry used);
/// once idle, a draining container is stopped.
#[tokio::test]
async fn a_draining_workers_inputs_are_handed_back_without_using_an_attempt() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    let first = rig.ready_container().await;
    assert_eq!(rig.input().await.attempt, 1);
    rig.tell(DispatchEvent::Drain {
        worker_id: WORKER.into(),
        draining: true,
    })
    .await;
    // The worker's drain grace ran out: it stopped the container.
    rig.exited(&first, 143).await;
    rig.tell(DispatchEvent::Drain {
        worker_id: WORKER.into(),
        draining: false,
    })
    .await;
    let second = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!((input.task_id.as_str(), input.attempt), (task.as_str(), 1));
    assert_eq!(input.container_id, second);

    rig.tell(DispatchEvent::Drain {
        worker_id: WORKER.into(),
        draining: true,
    })
    .await;
    rig.finish(&input, InputEnd::Complete, "").await;
    match next_event(&mut events).await {
        run_event::Kind::Result(notice) => assert_eq!(notice.state(), FinalTaskState::Complete),
        other => panic!("expected the result without a retry, got {other:?}"),
    }
    match rig.inbox().await {
        controlplane_message::Kind::Stop(stop) => assert_eq!(stop.container_id, second),
        other => panic!("expected the idle draining container stopped, got {other:?}"),
    }
    rig.row(&task, FinalState::Complete).await;
    let outcomes = rig.outcomes(&task).await;
    assert_eq!(
        outcomes,
        [
            (1, Some(AttemptOutcome::Requeued)),
            (1, Some(FinalState::Complete.into()))
        ]
    );
}

/// A worker lost under a `retries=0` call (a reclaimed spot node): the
/// input runs again in a new container under the same attempt, the caller
/// hears why and then gets the result, and the attempt says it was lost.
#[tokio::test]
async fn a_lost_workers_input_runs_again_without_using_a_retry() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, mut events) = rig.submit(&stub).await;
    let first = rig.ready_container().await;
    assert_eq!(rig.input().await.attempt, 1);

    rig.lost(&first).await;
    match next_event(&mut events).await {
        run_event::Kind::Retrying(retrying) => {
            assert_eq!(retrying.attempt, 1, "no retry is used");
            assert!(
                retrying.reason.contains("declared lost")
                    && retrying.reason.contains("infrastructure retry 1 of 3"),
                "{}",
                retrying.reason
            );
        }
        other => panic!("expected a retry notice, got {other:?}"),
    }
    let second = rig.ready_container().await;
    let input = rig.input().await;
    assert_eq!(
        (input.attempt, input.container_id.as_str()),
        (1, second.as_str())
    );
    rig.complete(&input, &mut events).await;
    rig.row(&task, FinalState::Complete).await;
    let outcomes = rig.outcomes(&task).await;
    assert_eq!(
        outcomes,
        [
            (1, Some(AttemptOutcome::Lost)),
            (1, Some(FinalState::Complete.into()))
        ]
    );
    let attempts = rig.store.task_attempts(&task).await.expect("attempts");
    assert!(attempts[0].message.contains("infrastructure retry 1 of 3"));
}

/// Lost infrastructure has its own bound: after three lost workers the
/// fourth counts as a failed attempt, so with `retries=0` the task ends
/// with the reason rather than looping.
#[tokio::test]
async fn a_task_that_loses_its_worker_past_the_bound_fails_with_the_reason() {
    let rig = rig().await;
    let stub = rig.stub(StubConfig::default()).await;
    let (task, _events) = rig.submit(&stub).await;
    for _ in 0..4 {
        let container = rig.ready_container().await;
        assert_eq!(rig.input().await.attempt, 1);
        rig.lost(&container).await;
    }
    let ended = rig.row(&task, FinalState::Error).await;
    assert!(ended.message.contains("declared lost"), "{}", ended.message);
    let outcomes: Vec<Option<AttemptOutcome>> = rig
        .outcomes(&task)
        .await
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    let lost = Some(AttemptOutcome::Lost);
    assert_eq!(outcomes, [lost, lost, lost, Some(FinalState::Error.into())]);
}
