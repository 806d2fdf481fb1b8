//! Cancelled inputs: dropped by the runner if they have not started, their
//! container stopped if they have.

use std::time::Duration;

use levers9_api::v1::TaskResultState;
use serde_json::json;
use tokio::net::UnixStream;

use super::{fixture, input, receive, send, Fixture, ID, WAIT};

/// A runner that says hello as runners that answer cancels do.
async fn cancelling_runner(f: &mut Fixture) -> UnixStream {
    f.ready_runner_saying(json!({"type": "hello", "container_id": ID, "cancels": true}))
        .await
}

/// The cancel goes to the runner; its answer that the input never started
/// is reported as cancelled, and the container is not stopped. Had the
/// input been running, the timeout of the one after it would have started.
#[tokio::test]
async fn a_waiting_input_the_runner_drops_is_reported_cancelled() {
    let mut f = fixture();
    let mut runner = cancelling_runner(&mut f).await;
    f.server.send_input(input("first", b"", 0));
    f.server.send_input(input("second", b"", 0));
    f.server.send_input(input("third", b"", 300));
    for _ in 0..3 {
        receive(&mut runner).await;
    }

    f.server.cancel_input("second");
    let (header, body) = receive(&mut runner).await;
    assert_eq!(header, json!({"type": "cancel", "task_id": "second"}));
    assert!(body.is_empty());
    send(
        &mut runner,
        json!({"type": "result", "task_id": "second", "state": "cancelled", "message": "cancelled before it started"}),
        b"",
    )
    .await;
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("second", TaskResultState::Cancelled)
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(f.stops.try_recv().is_err(), "the container was stopped");
    assert!(
        f.events.try_recv().is_err(),
        "the input after it timed out before it ran"
    );
}

/// A runner that says the input already runs gets its container stopped;
/// a refusal for an input that has since ended changes nothing.
#[tokio::test]
async fn a_running_input_the_runner_cannot_drop_stops_its_container() {
    let mut f = fixture();
    let mut runner = cancelling_runner(&mut f).await;
    f.server.send_input(input("done", b"", 0));
    receive(&mut runner).await;
    send(
        &mut runner,
        json!({"type": "result", "task_id": "done", "state": "complete"}),
        b"",
    )
    .await;
    assert_eq!(f.next_result().await.task_id, "done");
    send(
        &mut runner,
        json!({"type": "cancel_refused", "task_id": "done"}),
        b"",
    )
    .await;

    f.server.send_input(input("busy", b"", 0));
    receive(&mut runner).await;
    f.server.cancel_input("busy");
    assert_eq!(receive(&mut runner).await.0["type"], "cancel");
    assert!(f.stops.try_recv().is_err(), "stopped for an ended input");
    send(
        &mut runner,
        json!({"type": "cancel_refused", "task_id": "busy"}),
        b"",
    )
    .await;
    tokio::time::timeout(WAIT, f.stops.recv())
        .await
        .expect("the container stopped within 5 s")
        .unwrap();
}

/// An input still waiting for the runner's hello never reaches it.
#[tokio::test]
async fn an_input_waiting_for_the_hello_is_dropped_by_the_worker() {
    let mut f = fixture();
    f.server.send_input(input("early", b"", 0));
    f.server.cancel_input("early");
    let result = f.next_result().await;
    assert_eq!(
        (result.task_id.as_str(), result.state()),
        ("early", TaskResultState::Cancelled)
    );
    let mut runner = cancelling_runner(&mut f).await;
    f.server.send_input(input("later", b"", 0));
    assert_eq!(receive(&mut runner).await.0["task_id"], "later");
}

/// A runner that never said it answers cancels (an older SDK's) is not
/// asked: its container is stopped, as before cancels reached runners.
#[tokio::test]
async fn a_runner_that_does_not_answer_cancels_has_its_container_stopped() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    f.server.send_input(input("busy", b"", 0));
    receive(&mut runner).await;
    f.server.cancel_input("busy");
    tokio::time::timeout(WAIT, f.stops.recv())
        .await
        .expect("the container stopped within 5 s")
        .unwrap();
}
