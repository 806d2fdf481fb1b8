//! A spare's runner: it says `spare` and waits; `assign` gives it a
//! container, whose id the server serves and reports under from then on.

use std::collections::BTreeMap;

use levers9_api::v1::worker_message;
use serde_json::json;

use super::{closed, fixture, input, receive, send, until, ID};
use crate::fake_runtime::id;

#[tokio::test]
async fn an_assigned_spare_serves_the_container_it_was_given() {
    let mut f = fixture();
    let env = BTreeMap::from([("GREETING".to_owned(), "hi".to_owned())]);
    assert!(
        !f.server.assign(&id("c-2"), &env, "/levers9/code"),
        "no runner waits yet"
    );
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "spare", "container_id": ID, "modules": ["json", "levers9"]}),
        b"",
    )
    .await;
    until("the spare waits", || f.server.spare_modules().is_some()).await;
    assert_eq!(f.server.spare_modules().unwrap(), ["json", "levers9"]);
    // Queued until the hello, as for any container.
    f.server.send_input(input("early", b"1", 0));

    assert!(f.server.assign(&id("c-2"), &env, "/levers9/code"));
    assert_eq!(f.server.spare_modules(), None, "assigned once");
    let (header, _) = receive(&mut runner).await;
    assert_eq!(
        header,
        json!({"type": "assign", "container_id": "c-2", "env": {"GREETING": "hi"}, "working_dir": "/levers9/code"})
    );
    send(
        &mut runner,
        json!({"type": "hello", "container_id": "c-2"}),
        b"",
    )
    .await;
    match f.next_event().await {
        worker_message::Kind::RunnerReady(ready) => assert_eq!(ready.container_id, "c-2"),
        other => panic!("expected RunnerReady, got {other:?}"),
    }
    let (header, _) = receive(&mut runner).await;
    assert_eq!(header["task_id"], "early");
    send(
        &mut runner,
        json!({"type": "result", "task_id": "early", "state": "complete"}),
        b"2",
    )
    .await;
    let result = f.next_result().await;
    assert_eq!(
        (result.container_id.as_str(), result.payload.as_slice()),
        ("c-2", &b"2"[..])
    );
}

#[tokio::test]
async fn an_assigned_spare_that_says_hello_as_the_spare_is_refused() {
    let f = fixture();
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "spare", "container_id": ID}),
        b"",
    )
    .await;
    until("the spare waits", || f.server.spare_modules().is_some()).await;
    assert!(f.server.assign(&id("c-2"), &BTreeMap::new(), ""));
    receive(&mut runner).await;
    send(
        &mut runner,
        json!({"type": "hello", "container_id": ID}),
        b"",
    )
    .await;
    assert!(closed(&mut runner).await);
    assert!(!f.server.outcome().said_hello);
}
