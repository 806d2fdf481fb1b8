//! `attach`: a class's runner presents its credential before running its
//! `@enter` methods, so their Dict and Queue calls are served, while no
//! input goes out before its hello.

use levers9_api::v1::worker_message;
use levers9_config::ContainerServerAuthMode;
use serde_json::{json, Value};
use tokio::net::UnixStream;

use super::{auth, closed, fixture_with, input, receive, send, until, Connection, ID};
use crate::security::{Check, SecurityMetrics};

/// Sends a Dict call and returns the code of its reply.
async fn dict_len(runner: &mut UnixStream, call_id: u64) -> Value {
    send(
        runner,
        json!({"type": "object_call", "call_id": call_id, "method": "DictLen", "name": "d"}),
        b"",
    )
    .await;
    let (reply, _) = receive(runner).await;
    assert_eq!(
        (reply["type"].as_str(), reply["call_id"].as_u64()),
        (Some("object_reply"), Some(call_id))
    );
    reply["code"].clone()
}

#[tokio::test]
async fn an_attached_runner_s_object_calls_are_served_before_its_hello_but_no_input_goes_out() {
    let metrics = SecurityMetrics::default();
    let mut f = fixture_with(auth(ContainerServerAuthMode::Enforce, &metrics));
    let (_, credential) = f.server.credential_env().expect("a credential is issued");
    f.server.send_input(input("early", b"1", 0));
    let mut runner = f.connect().await;

    assert_eq!(
        dict_len(&mut runner, 1).await,
        "PERMISSION_DENIED",
        "not before the credential"
    );
    send(
        &mut runner,
        json!({"type": "attach", "container_id": ID, "credential": credential}),
        b"",
    )
    .await;
    // Past the credential check: this fixture has no forwarder, so the
    // call fails on the next one.
    assert_eq!(dict_len(&mut runner, 2).await, "UNAVAILABLE");
    {
        let state = f.server.shared.state();
        assert!(matches!(
            state.connection,
            Connection::Open {
                admitted: true,
                ready: false,
                ..
            }
        ));
        assert_eq!(state.queued.len(), 1, "the input waits for the hello");
    }
    assert!(f.events.try_recv().is_err(), "no RunnerReady before hello");

    send(
        &mut runner,
        json!({"type": "hello", "container_id": ID, "credential": credential}),
        b"",
    )
    .await;
    let (delivered, body) = receive(&mut runner).await;
    assert_eq!(
        (delivered["task_id"].as_str(), body.as_slice()),
        (Some("early"), &b"1"[..])
    );
    assert!(matches!(
        f.next_event().await,
        worker_message::Kind::RunnerReady(_)
    ));
    assert_eq!(
        metrics.count(Check::ContainerServerAuth, "enforce", "pool-1"),
        0
    );
}

#[tokio::test]
async fn an_attach_without_the_credential_or_as_another_container_closes_the_connection() {
    let metrics = SecurityMetrics::default();
    let f = fixture_with(auth(ContainerServerAuthMode::Enforce, &metrics));
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "attach", "container_id": ID}),
        b"",
    )
    .await;
    assert!(closed(&mut runner).await, "the connection is closed");
    assert_eq!(
        metrics.count(Check::ContainerServerAuth, "enforce", "pool-1"),
        1
    );
    drop(f);

    let f = fixture_with(auth(ContainerServerAuthMode::Enforce, &metrics));
    let (_, credential) = f.server.credential_env().expect("issued");
    let mut runner = f.connect().await;
    send(
        &mut runner,
        json!({"type": "attach", "container_id": "someone-else", "credential": credential}),
        b"",
    )
    .await;
    assert!(closed(&mut runner).await, "the connection is closed");
    until("the server drops the connection", || {
        matches!(f.server.shared.state().connection, Connection::Closed(_))
    })
    .await;
}
