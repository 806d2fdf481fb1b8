//! Inputs beyond the runner's concurrency: they wait in its queue, start
//! in order, and are lost (not failed) when the runner leaves first.

use std::time::Duration;

use levers9_api::v1::{worker_message, TaskResultState};
use levers9_config::ContainerServerAuthMode;
use serde_json::json;

use super::{auth, fixture_of, input, receive, send, WAIT};
use crate::security::SecurityMetrics;

/// Inputs beyond the runner's concurrency go to it at once and wait in its
/// queue; each one's timeout counts from when the input before it ended.
#[tokio::test]
async fn an_input_waiting_for_a_thread_times_out_only_once_it_runs() {
    let mut f = fixture_of(
        auth(ContainerServerAuthMode::Off, &SecurityMetrics::default()),
        1,
    );
    let mut runner = f.ready_runner().await;
    f.server.send_input(input("first", b"", 0));
    f.server.send_input(input("second", b"", 300));
    assert_eq!(receive(&mut runner).await.0["task_id"], "first");
    assert_eq!(receive(&mut runner).await.0["task_id"], "second");
    send(
        &mut runner,
        json!({"type": "output", "task_id": "second", "stream": "stdout"}),
        b"early",
    )
    .await;

    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        f.stops.try_recv().is_err(),
        "an input that never ran timed out"
    );
    send(
        &mut runner,
        json!({"type": "result", "task_id": "first", "state": "complete"}),
        b"",
    )
    .await;
    match f.next_event().await {
        worker_message::Kind::TaskOutput(output) => assert_eq!(output.data, b"early"),
        other => panic!("expected the waiting input's output, got {other:?}"),
    }
    assert_eq!(f.next_result().await.task_id, "first");
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("second", TaskResultState::Timeout)
    );
    tokio::time::timeout(WAIT, f.stops.recv())
        .await
        .unwrap()
        .unwrap();
}

/// Inputs waiting in the runner's queue never ran when it leaves: they are
/// reported lost (run again elsewhere, no attempt used); the running one is
/// not, its container's end fails it.
#[tokio::test]
async fn inputs_waiting_in_the_runner_are_lost_when_it_leaves() {
    let mut f = fixture_of(
        auth(ContainerServerAuthMode::Off, &SecurityMetrics::default()),
        2,
    );
    let mut runner = f.ready_runner().await;
    for id in ["a", "b", "c", "d"] {
        f.server.send_input(input(id, b"", 0));
        receive(&mut runner).await;
    }
    send(
        &mut runner,
        json!({"type": "result", "task_id": "a", "state": "complete"}),
        b"",
    )
    .await;
    assert_eq!(f.next_result().await.task_id, "a");
    drop(runner);
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("d", TaskResultState::Lost)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        f.events.try_recv().is_err(),
        "b and c ran: their container's end reports them"
    );
}
