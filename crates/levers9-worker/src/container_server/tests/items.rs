//! A generator's items: forwarded in order before its result, and the
//! caller's acknowledgements passed to the runner.

use levers9_api::v1::{worker_message, TaskResultState};
use serde_json::json;

use super::{fixture, input, receive, send};

#[tokio::test]
async fn items_are_reported_in_order_before_the_result_and_acks_reach_the_runner() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    f.server.send_input(input("t1", b"args", 0));
    receive(&mut runner).await;
    for index in 0..2u64 {
        let header = json!({"type": "item", "task_id": "t1", "index": index});
        send(&mut runner, header, format!("item {index}").as_bytes()).await;
    }
    send(
        &mut runner,
        json!({"type": "result", "task_id": "t1", "state": "complete"}),
        b"2",
    )
    .await;
    for index in 0..2u64 {
        match f.next_event().await {
            worker_message::Kind::TaskItem(item) => {
                assert_eq!(
                    (item.container_id.as_str(), item.task_id.as_str()),
                    (super::ID, "t1")
                );
                assert_eq!(item.item_index, index);
                assert_eq!(item.payload, format!("item {index}").into_bytes());
            }
            other => panic!("expected an item, got {other:?}"),
        }
    }
    assert_eq!(f.next_result().await.state(), TaskResultState::Complete);
}

#[tokio::test]
async fn an_ack_goes_to_the_runner_only_while_its_task_runs() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    f.server.send_input(input("t1", b"", 0));
    receive(&mut runner).await;
    f.server.ack_items("t1", 8);
    let (header, body) = receive(&mut runner).await;
    assert_eq!(
        header,
        json!({"type": "ack", "task_id": "t1", "received": 8})
    );
    assert!(body.is_empty());
    // Not a task of this runner: nothing is sent, so the next frame it
    // gets is the next input.
    f.server.ack_items("other", 1);
    f.server.send_input(input("t2", b"", 0));
    let (header, _) = receive(&mut runner).await;
    assert_eq!(header["type"], "input");
}

#[tokio::test]
async fn an_item_of_a_task_that_is_not_running_is_dropped() {
    let mut f = fixture();
    let mut runner = f.ready_runner().await;
    send(
        &mut runner,
        json!({"type": "item", "task_id": "nobody", "index": 0}),
        b"x",
    )
    .await;
    f.server.send_input(input("t1", b"", 0));
    receive(&mut runner).await;
    send(
        &mut runner,
        json!({"type": "result", "task_id": "t1", "state": "complete"}),
        b"",
    )
    .await;
    // The first event after ready is t1's result, not the stray item.
    assert_eq!(f.next_result().await.task_id, "t1");
}
