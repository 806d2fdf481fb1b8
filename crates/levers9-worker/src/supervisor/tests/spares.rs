//! Spares on the fake runtime: when one starts, what it is given, when it
//! makes room and when it goes, and its adoption, with a fake runner on
//! its container server's socket. (A real runner in runc and gVisor: the
//! SDK's test_spares.py, run by crates/levers9-cli/tests/spares.rs.)

use std::time::Duration;

use levers9_api::v1::{worker_message, ContainerEventState, ObjectMount, RunContainer};
use levers9_runtime::{ContainerSpec, Exit};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::harness::{code, harness_with, request, Harness};
use crate::objects::tests::digest_of;
use crate::supervisor::SpareOptions;

/// A function container's request: its server, and its code (`app.py`).
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
            digest: digest_of(&code()),
            target: "/levers9/code".into(),
            unpack: true,
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

/// Plays the runner of `spare`: connects to its server and says it waits,
/// having imported `modules`; returns once the worker could adopt it.
async fn waiting_runner(h: &Harness, spare: &ContainerSpec, modules: &[&str]) -> UnixStream {
    let run = spare
        .mounts
        .iter()
        .find(|m| m.destination == "/levers9/run")
        .expect("the server's directory");
    let mut runner = UnixStream::connect(run.source.join("server.sock"))
        .await
        .unwrap();
    let header =
        json!({"type": "spare", "container_id": spare.id.as_str(), "modules": modules}).to_string();
    runner.write_u32(header.len() as u32).await.unwrap();
    runner.write_all(header.as_bytes()).await.unwrap();
    runner.write_u32(0).await.unwrap();
    wait_for("the spare waits", || h.supervisor.spares_waiting() == 1).await;
    runner
}

/// The next frame's header the worker sent the runner.
async fn frame(runner: &mut UnixStream) -> Value {
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut header = vec![0; runner.read_u32().await.unwrap() as usize];
        runner.read_exact(&mut header).await.unwrap();
        let mut body = vec![0; runner.read_u32().await.unwrap() as usize];
        runner.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&header).unwrap()
    })
    .await
    .expect("a frame within 10 s")
}

fn roomy() -> SpareOptions {
    SpareOptions {
        count: 1,
        cpu_millicores: 2000,
        memory_mib: 4096,
    }
}

#[tokio::test]
async fn a_cold_start_adopts_a_waiting_spare_with_its_code_and_environment() {
    let mut h = harness_with(roomy());
    h.start(function("c1", 256)).await;
    wait_for("a spare started", || !spares(&h).is_empty()).await;
    let spare = spares(&h).remove(0);
    let mut runner = waiting_runner(&h, &spare, &["json", "levers9"]).await;

    let mut second = function("c2", 256);
    second.env.insert("GREETING".into(), "hi".into());
    second.env.insert("LEVERS9_STUB_ID".into(), "st-2".into());
    h.supervisor.run(second);
    let assign = frame(&mut runner).await;
    assert_eq!(
        (&assign["type"], &assign["container_id"]),
        (&json!("assign"), &json!("c2"))
    );
    assert_eq!(assign["env"]["GREETING"], "hi");
    assert_eq!(assign["env"]["LEVERS9_FUNCTION"], "f");
    assert_eq!(assign["env"]["LEVERS9_CONTAINER_ID"], "c2");
    let code_dir = &spare
        .mounts
        .iter()
        .find(|m| m.destination == "/levers9/code")
        .unwrap()
        .source;
    assert_eq!(
        std::fs::read_to_string(code_dir.join("app.py")).unwrap(),
        "print('hello')\n"
    );
    let running = h.event().await;
    assert_eq!(
        (running.container_id.as_str(), running.state()),
        ("c2", ContainerEventState::Running)
    );
    assert!(
        !h.runtime.started().iter().any(|s| s.id.as_str() == "c2"),
        "no container of its own"
    );
    // What the spare's processes do (the seccomp log) is the container's.
    assert_eq!(
        h.supervisor.held_as(&spare.id),
        Some((crate::fake_runtime::id("c2"), "st-2".to_owned()))
    );

    // The runtime knows it by the spare's id.
    h.supervisor
        .stop(crate::fake_runtime::id("c2"), Duration::from_secs(1));
    let spare_id = spare.id.to_string();
    wait_for("the spare's container stopped", || {
        h.runtime.stops().iter().any(|(id, _)| id == &spare_id)
    })
    .await;
    let exit = loop {
        match h.next().await {
            worker_message::Kind::Event(e) if e.state() == ContainerEventState::Exited => break e,
            _ => continue,
        }
    };
    assert_eq!(exit.container_id, "c2");
    let dir = code_dir.parent().unwrap().to_owned();
    wait_for("the spare's directory removed", || !dir.exists()).await;
    drop(runner);
}

#[tokio::test]
async fn code_with_a_module_the_spare_imported_starts_a_container_of_its_own() {
    let mut h = harness_with(roomy());
    h.start(function("c1", 256)).await;
    wait_for("a spare started", || !spares(&h).is_empty()).await;
    let spare = spares(&h).remove(0);
    let _runner = waiting_runner(&h, &spare, &["app", "levers9"]).await;

    h.start(function("c2", 256)).await;
    assert!(
        h.runtime.started().iter().any(|s| s.id.as_str() == "c2"),
        "started as usual"
    );
    let spare_id = spare.id.to_string();
    wait_for("the spare stopped", || {
        h.runtime.stops().iter().any(|(id, _)| id == &spare_id)
    })
    .await;
    h.runtime.exit("c2", Exit::Code(0));
}

#[tokio::test]
async fn a_spare_started_under_looser_hardening_is_not_adopted() {
    let mut h = harness_with(roomy());
    h.start(function("c1", 256)).await;
    wait_for("a spare started", || !spares(&h).is_empty()).await;
    let spare = spares(&h).remove(0);
    let _runner = waiting_runner(&h, &spare, &["levers9"]).await;

    // The controlplane's settings tightened on a new attach.
    let mut stricter = (*h.supervisor.security()).clone();
    stricter.server_auth = levers9_config::ContainerServerAuthMode::Enforce;
    h.supervisor.set_security(stricter);
    h.start(function("c2", 256)).await;
    assert!(
        h.runtime.started().iter().any(|s| s.id.as_str() == "c2"),
        "started as usual, under the new hardening"
    );
    h.runtime.exit("c2", Exit::Code(0));
}

#[tokio::test]
async fn a_spare_of_an_image_its_tag_no_longer_names_is_not_adopted() {
    let mut h = harness_with(roomy());
    h.start(function("c1", 256)).await;
    wait_for("a spare started", || !spares(&h).is_empty()).await;
    let spare = spares(&h).remove(0);
    let _runner = waiting_runner(&h, &spare, &["levers9"]).await;

    h.images.push(&function("c2", 256).image);
    h.start(function("c2", 256)).await;
    assert!(
        h.runtime.started().iter().any(|s| s.id.as_str() == "c2"),
        "started as usual, on the image the tag names now"
    );
    let spare_id = spare.id.to_string();
    wait_for("the spare stopped", || {
        h.runtime.stops().iter().any(|(id, _)| id == &spare_id)
    })
    .await;
    h.runtime.exit("c2", Exit::Code(0));
}
