//! `min_containers`: the floors the dispatcher keeps for deployed stubs.

use std::time::Duration;

use levers9_api::v1::StubConfig;
use levers9_controlplane::fleet::inbox;
use levers9_controlplane::functions::InputEnd;
use levers9_controlplane::scheduler::BACKLOG;
use levers9_state::Queues;
use levers9_store::FinalState;

use super::rig::{idle_rig, rig, WORKER};

/// `min_containers` of a deployed stub: its container is asked for with no
/// call, serves the first call, outlives its keep-warm window, and is
/// replaced when its worker is lost.
#[tokio::test]
async fn a_deployed_floor_is_kept_warm_and_replaced_when_its_worker_is_lost() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            min_containers: 1,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&stub).await;
    let warm = rig.ready_container().await;

    let (task, _events) = rig.submit(&stub).await;
    let input = rig.input().await;
    assert_eq!(
        input.container_id, warm,
        "the call goes to the floor's container"
    );
    rig.finish(&input, InputEnd::Complete, "").await;
    rig.row(&task, FinalState::Complete).await;
    // Past the keep-warm window (1 s) it is not stopped.
    let message = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        message.is_none(),
        "the floor's container was told something"
    );
    rig.no_container_requested().await;

    rig.lost(&warm).await;
    let replacement = rig.ready_container().await;
    assert_ne!(replacement, warm);
    let (_, _events) = rig.submit(&stub).await;
    assert_eq!(rig.input().await.container_id, replacement);
}

/// A stub called but never deployed has no floor: nothing is asked for
/// before a call.
#[tokio::test]
async fn min_containers_of_a_stub_that_is_not_deployed_asks_for_nothing() {
    let rig = rig().await;
    rig.stub(StubConfig {
        min_containers: 1,
        ..StubConfig::default()
    })
    .await;
    let popped = rig
        .state
        .pop(BACKLOG, Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        popped.is_none(),
        "a container was asked for an undeployed stub"
    );
}

/// A redeploy with a lower floor lets the extra containers go after their
/// keep-warm window, and one with another stub lets the old stub's all go.
#[tokio::test]
async fn a_lower_floor_lets_the_extra_containers_go() {
    let rig = rig().await;
    let two = rig
        .stub(StubConfig {
            min_containers: 2,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&two).await;
    let first = rig.ready_container().await;
    let second = rig.ready_container().await;
    rig.no_container_requested().await;

    let one = rig
        .stub(StubConfig {
            min_containers: 1,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&one).await;
    let kept = rig.ready_container().await;
    assert_eq!(rig.stops(2).await, [first, second].into_iter().collect());
    let message = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        message.is_none(),
        "the new floor's container was told something"
    );
    rig.no_container_requested().await;

    let none = rig
        .stub(StubConfig {
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&none).await;
    assert_eq!(rig.stops(1).await, [kept].into_iter().collect());
}

/// A floor deployed while no dispatcher ran (a controlplane restart) is
/// asked for as soon as one starts.
#[tokio::test]
async fn a_floor_deployed_before_the_dispatcher_starts_is_asked_for_when_it_starts() {
    let rig = idle_rig().await;
    let stub = rig
        .stub(StubConfig {
            min_containers: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&stub).await;
    rig.start();
    let warm = rig.ready_container().await;
    let (_, _events) = rig.submit(&stub).await;
    assert_eq!(rig.input().await.container_id, warm);
}

/// After a burst, keep-warm expiry stops the containers above the floor
/// and keeps the floor's.
#[tokio::test]
async fn keep_warm_expiry_scales_down_to_the_floor_not_to_zero() {
    let rig = rig().await;
    let stub = rig
        .stub(StubConfig {
            min_containers: 1,
            keep_warm_seconds: 1,
            ..StubConfig::default()
        })
        .await;
    rig.deploy(&stub).await;
    let first = rig.ready_container().await;
    let (_, _a) = rig.submit(&stub).await;
    let (_, _b) = rig.submit(&stub).await;
    let one = rig.input().await;
    assert_eq!(one.container_id, first);
    let second = rig.ready_container().await;
    let two = rig.input().await;
    assert_eq!(two.container_id, second);
    rig.finish(&one, InputEnd::Complete, "").await;
    rig.finish(&two, InputEnd::Complete, "").await;

    assert_eq!(rig.stops(1).await.len(), 1);
    let message = rig
        .state
        .pop(&inbox::queue(WORKER), Duration::from_millis(2500))
        .await
        .expect("pop");
    assert!(
        message.is_none(),
        "the floor's container was told something"
    );
    rig.no_container_requested().await;
}
