//! Spares on the fake runtime: when one starts, what it is given, when it
//! makes room and when it goes. (Adoption needs a runner: see the SDK's
//! test_spares.py, run by crates/levers9-cli/tests/spares.rs.)

use std::time::Duration;

use levers9_api::v1::{ObjectMount, RunContainer};
use levers9_runtime::ContainerSpec;

use super::harness::{harness_with, request, Harness, CODE_DIGEST};
use crate::supervisor::SpareOptions;

/// A function container's request: its server, and its code as a file.
fn function(id: &str, memory_mib: u64) -> RunContainer {
    RunContainer {
        container_server: true,
        memory_mib,
        env: [
            ("LEVERS9_CODE_DIR", "/levers9/code"),
            ("LEVERS9_FUNCTION", "f"),
            ("PYTHONPATH", "/levers9/code"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into(),
        objects: vec![ObjectMount {
            digest: CODE_DIGEST.into(),
            target: "/levers9/code".into(),
            unpack: false,
            compile: false,
        }],
        ..request(id)
    }
}

fn spares(h: &Harness) -> Vec<ContainerSpec> {
    h.runtime
        .started()
        .into_iter()
        .filter(|spec| spec.id.as_str().starts_with("spare-"))
        .collect()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what} within 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_function_container_leaves_a_spare_of_its_shape_which_makes_room_when_asked() {
    let mut h = harness_with(SpareOptions {
        count: 1,
        cpu_millicores: 2000,
        memory_mib: 1024,
    });
    h.start(function("c1", 256)).await;
    wait_for("a spare started", || !spares(&h).is_empty()).await;
    let spare = spares(&h).remove(0);
    let env = |name: &str| {
        spare
            .env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(env("LEVERS9_SPARE").as_deref(), Some("1"));
    assert_eq!(env("PYTHONPATH").as_deref(), Some("/levers9/code"));
    assert_eq!(env("LEVERS9_FUNCTION"), None, "the function is the call's");
    let code = spare
        .mounts
        .iter()
        .find(|m| m.destination == "/levers9/code")
        .expect("a code directory");
    assert!(code.read_only);
    assert!(code.source.starts_with(h.dir.path().join("state/spares")));
    assert_eq!(std::fs::read_dir(&code.source).unwrap().count(), 0);
    assert_eq!(spare.resources.memory_mib, 256);
    assert_eq!(h.held(), ["c1"], "the controlplane is not told of spares");

    // 256 + 700 fit in 1024; with the spare's 256 they would not.
    h.start(RunContainer {
        memory_mib: 700,
        ..request("big")
    })
    .await;
    let stopped = spare.id.to_string();
    wait_for("the spare stopped", || {
        h.runtime.stops().iter().any(|(id, _)| id == &stopped)
    })
    .await;
    let dir = code.source.parent().unwrap().to_owned();
    wait_for("the spare's directory removed", || !dir.exists()).await;
}

#[tokio::test]
async fn no_spare_starts_without_room_or_when_spares_are_off() {
    for (count, memory_mib) in [(1, 400), (0, 4096)] {
        let mut h = harness_with(SpareOptions {
            count,
            cpu_millicores: 2000,
            memory_mib,
        });
        h.start(function("c1", 256)).await;
        // A whole container's life after it: a spare would have started.
        h.assert_no_more_reports().await;
        assert!(spares(&h).is_empty(), "{count} spares, {memory_mib} MiB");
    }
}

#[tokio::test]
async fn the_count_the_controlplane_sends_starts_spares_and_stops_those_over_it() {
    let mut h = harness_with(SpareOptions {
        count: 0,
        cpu_millicores: 2000,
        memory_mib: 4096,
    });
    h.supervisor.set_spares(1);
    h.start(function("c1", 256)).await;
    wait_for("a spare started", || !spares(&h).is_empty()).await;
    let stopped = spares(&h).remove(0).id.to_string();

    h.supervisor.set_spares(0);
    wait_for("the spare stopped", || {
        h.runtime.stops().iter().any(|(id, _)| id == &stopped)
    })
    .await;
    h.start(function("c2", 256)).await;
    h.assert_no_more_reports().await;
    assert_eq!(spares(&h).len(), 1, "no spare after the count went to 0");
}
