//! The supervisor on a fake runtime and fake images, without root: what
//! it reports, what it hands the runtime, and what it frees.

mod compiled;
mod harness;
mod spares;

use std::collections::HashMap;
use std::time::Duration;

use levers9_api::v1::{
    worker_message, ContainerEventState, ObjectMount, TaskInput, TaskResult, TaskResultState,
    VolumeMount,
};
use levers9_runtime::{Exit, Stream};
use levers9_volumes::Owner;

use crate::fake_runtime::{id, Call};
use harness::{env_of, harness, request, with_gpus, NO_COMMAND};

#[tokio::test]
async fn a_container_reports_its_output_then_its_exit_once_and_is_forgotten() {
    let mut h = harness();
    h.start(request("c1")).await;
    let held = h.supervisor.running();
    assert_eq!(held.len(), 1);
    assert_eq!(
        (held[0].cpu_millicores, held[0].memory_mib),
        (250, 128),
        "re-registration reports what it holds"
    );

    // More lines than a task sends in one turn (tokio's budget is 128),
    // so an exit reported without waiting for them would overtake some.
    let lines: Vec<String> = (1..=300).map(|n| format!("line {n}\n")).collect();
    for line in &lines {
        h.runtime.output("c1", Stream::Stdout, line.as_bytes());
    }
    h.runtime.output("c1", Stream::Stderr, b"oops\n");
    h.runtime.exit("c1", Exit::Code(3));

    for (line, seq) in lines.iter().zip(1..) {
        let chunk = h.log().await;
        assert_eq!(
            (chunk.stream.as_str(), chunk.data.as_slice(), chunk.seq),
            ("stdout", line.as_bytes(), seq)
        );
    }
    let last = h.log().await;
    assert_eq!(
        (last.stream.as_str(), last.data.as_slice(), last.seq),
        ("stderr", &b"oops\n"[..], 301)
    );
    let exit = h.event().await;
    assert_eq!(
        (
            exit.container_id.as_str(),
            exit.state(),
            exit.exit_code,
            exit.oom_killed
        ),
        ("c1", ContainerEventState::Exited, 3, false)
    );
    assert_eq!(exit.message, "");
    assert!(h.held().is_empty(), "still held: {:?}", h.held());
    assert!(h.prepared().is_empty(), "root file system not released");
    h.assert_no_more_reports().await;
}

#[tokio::test]
async fn the_spec_takes_the_image_defaults_under_the_request() {
    let mut h = harness();
    let mut run = request("c1");
    run.env = HashMap::from([
        ("MODE".into(), "request".into()),
        ("LEVERS9_STUB_ID".into(), "st-1".into()),
    ]);
    h.start(run).await;
    let spec = h.spec_of("c1");
    assert_eq!(spec.args, ["/bin/app", "--serve"]);
    assert_eq!(env_of(&spec, "MODE"), ["request"]);
    assert_eq!(env_of(&spec, "PATH"), ["/bin"]);
    assert_eq!(spec.cwd, "/srv");
    assert_eq!(spec.rootfs, h.images.root.join("c1"));
    assert_eq!(
        (
            spec.resources.cpu_millicores,
            spec.resources.cpu_limit_millicores,
            spec.resources.memory_mib
        ),
        (250, 1000, 128),
        "a small container may burst to a core"
    );
    assert_eq!(
        h.supervisor.held_as(&id("c1")),
        Some((id("c1"), "st-1".to_owned()))
    );

    let mut run = request("c2");
    run.args = vec!["sh".into(), "-c".into(), "true".into()];
    run.working_dir = "/work".into();
    h.start(run).await;
    let spec = h.spec_of("c2");
    assert_eq!(
        spec.args,
        ["sh", "-c", "true"],
        "the request's command wins"
    );
    assert_eq!(spec.cwd, "/work");
}

#[tokio::test]
async fn a_repeated_run_request_starts_one_container() {
    let mut h = harness();
    h.start(request("c1")).await;
    h.supervisor.run(request("c1"));
    h.runtime.exit("c1", Exit::Code(0));
    assert_eq!(h.event().await.state(), ContainerEventState::Exited);
    assert_eq!(h.runtime.started().len(), 1);
    h.assert_no_more_reports().await;
}

#[tokio::test]
async fn a_start_failure_is_reported_with_its_reason_and_frees_everything() {
    let mut h = harness();
    h.runtime.fail_start("c1", "cannot open /dev/nvidia0");
    h.supervisor.run(with_gpus("c1", 2));

    let (id, message) = h.failure().await;
    assert_eq!(
        (id.as_str(), message.as_str()),
        ("c1", "cannot start the container: container c1 failed to start (exit status: 1): cannot open /dev/nvidia0")
    );
    assert!(h.held().is_empty());
    assert!(h.prepared().is_empty(), "root file system not released");

    // Both GPUs are free again, in order.
    h.start(with_gpus("c2", 2)).await;
    assert_eq!(env_of(&h.spec_of("c2"), "NVIDIA_VISIBLE_DEVICES"), ["0,1"]);
    h.runtime.exit("c2", Exit::Code(0));
    assert_eq!(h.event().await.state(), ContainerEventState::Exited);
    h.assert_no_more_reports().await;
}

#[tokio::test]
async fn a_request_whose_id_is_not_a_plain_name_fails_and_is_not_held() {
    let mut h = harness();
    h.supervisor.run(request("../escape"));
    let (id, message) = h.failure().await;
    assert_eq!(
        (id.as_str(), message.as_str()),
        (
            "../escape",
            "invalid container id \"../escape\": use 1-64 of [A-Za-z0-9_.-], starting with a letter or digit"
        )
    );
    assert!(h.held().is_empty());
    assert!(h.runtime.started().is_empty());
    assert!(h.prepared().is_empty());
}

#[tokio::test]
async fn gpus_go_to_one_container_at_a_time_and_come_back_at_its_exit() {
    let mut h = harness();
    h.start(with_gpus("c1", 1)).await;
    h.start(with_gpus("c2", 1)).await;
    assert_eq!(env_of(&h.spec_of("c1"), "NVIDIA_VISIBLE_DEVICES"), ["0"]);
    assert_eq!(env_of(&h.spec_of("c2"), "NVIDIA_VISIBLE_DEVICES"), ["1"]);

    h.supervisor.run(with_gpus("c3", 1));
    let (id, message) = h.failure().await;
    assert_eq!(
        (id.as_str(), message.as_str()),
        (
            "c3",
            "not enough GPUs available: asked for 1 h100, 0 free on this worker"
        )
    );
    assert!(
        h.runtime
            .started()
            .iter()
            .all(|spec| spec.id.as_str() != "c3"),
        "a container without its GPUs never starts"
    );
    assert!(!h.prepared().contains("c3"));

    h.runtime.exit("c1", Exit::Code(0));
    assert_eq!(h.event().await.state(), ContainerEventState::Exited);
    h.start(with_gpus("c4", 1)).await;
    assert_eq!(env_of(&h.spec_of("c4"), "NVIDIA_VISIBLE_DEVICES"), ["0"]);
    assert_eq!(h.held(), ["c2", "c4"]);
}

#[tokio::test]
async fn what_fails_before_the_start_never_reaches_the_runtime() {
    let mut h = harness();
    let mut missing = with_gpus("c1", 2);
    missing.image = "127.0.0.1:5000/levers9/missing:1".into();
    h.supervisor.run(missing);
    let (_, message) = h.failure().await;
    assert_eq!(
        message,
        "cannot pull image 127.0.0.1:5000/levers9/missing:1: image 127.0.0.1:5000/levers9/missing:1 not found in registry 127.0.0.1:5000: check the name and that it was pushed"
    );

    let mut bare = with_gpus("c2", 2);
    bare.image = NO_COMMAND.into();
    h.supervisor.run(bare);
    let (_, failed) = h.failure().await;
    assert_eq!(
        failed,
        format!("image {NO_COMMAND} has no command and none was given: pass one after --")
    );

    let mut object = with_gpus("c3", 2);
    let digest = format!("sha256:{}", "f".repeat(64));
    object.objects = vec![ObjectMount {
        digest: digest.clone(),
        target: "/code".into(),
        ..ObjectMount::default()
    }];
    h.supervisor.run(object);
    let (_, failed) = h.failure().await;
    assert_eq!(
        failed,
        format!("cannot fetch object {digest}: object {digest} not found")
    );

    let mut volume = with_gpus("c4", 2);
    volume.volumes = vec![VolumeMount {
        name: "nope".into(),
        mount_path: "/data".into(),
    }];
    h.supervisor.run(volume);
    let (_, failed) = h.failure().await;
    assert!(
        failed.starts_with("cannot mount volume \"nope\": "),
        "{failed}"
    );

    assert!(h.runtime.calls().is_empty(), "{:?}", h.runtime.calls());
    assert!(h.held().is_empty());
    assert!(h.prepared().is_empty(), "root file systems not released");
    // Each failure gave its GPUs back.
    h.start(with_gpus("c5", 2)).await;
}

#[tokio::test]
async fn how_a_container_ended_is_told_in_its_exit_code() {
    let mut h = harness();
    for (id, exit) in [
        ("oom", Exit::OomKilled),
        ("killed", Exit::Signal(9)),
        ("ok", Exit::Code(0)),
    ] {
        h.start(request(id)).await;
        h.runtime.exit(id, exit);
        let event = h.event().await;
        assert_eq!(event.state(), ContainerEventState::Exited, "{id}");
        match id {
            "oom" => {
                assert_eq!((event.exit_code, event.oom_killed), (137, true));
                assert_eq!(event.message, "killed by the kernel's OOM killer: the container used more memory than its limit");
            }
            "killed" => assert_eq!((event.exit_code, event.oom_killed), (137, false)),
            _ => assert_eq!((event.exit_code, event.oom_killed), (0, false)),
        }
    }
}

#[tokio::test]
async fn a_lost_exit_is_a_failure_that_frees_the_container() {
    let mut h = harness();
    h.start(with_gpus("c1", 2)).await;
    h.runtime.lose("c1");
    let (id, message) = h.failure().await;
    assert_eq!(
        (id.as_str(), message.as_str()),
        (
            "c1",
            "lost track of the container: the exit of container c1 was lost"
        )
    );
    assert!(h.held().is_empty());
    assert!(h.prepared().is_empty());
    h.start(with_gpus("c2", 2)).await;
}

#[tokio::test]
async fn concurrent_stops_pass_the_grace_and_the_exit_is_reported_once() {
    let mut h = harness();
    h.start(request("c1")).await;
    h.supervisor.stop(id("c1"), Duration::from_secs(7));
    h.supervisor.stop(id("c1"), Duration::from_secs(7));
    let exit = h.event().await;
    assert_eq!(
        (exit.container_id.as_str(), exit.state(), exit.exit_code),
        ("c1", ContainerEventState::Exited, 143),
        "SIGTERM is 128 + 15"
    );
    h.runtime
        .until("both stops", |calls| {
            calls
                .iter()
                .filter(|c| matches!(c, Call::Stop { .. }))
                .count()
                == 2
        })
        .await;
    assert_eq!(
        h.runtime.stops(),
        [
            ("c1".to_owned(), Duration::from_secs(7)),
            ("c1".to_owned(), Duration::from_secs(7))
        ]
    );
    assert!(h.held().is_empty());
    h.assert_no_more_reports().await;
}

#[tokio::test]
async fn a_shutting_down_worker_stops_every_container_it_holds() {
    let mut h = harness();
    h.start(request("c1")).await;
    h.start(request("c2")).await;
    h.supervisor.stop_all(Duration::from_secs(10)).await;
    let mut stops = h.runtime.stops();
    stops.sort();
    assert_eq!(
        stops,
        [
            ("c1".to_owned(), Duration::from_secs(10)),
            ("c2".to_owned(), Duration::from_secs(10))
        ]
    );
    let mut ended = [h.event().await, h.event().await].map(|e| (e.container_id.clone(), e.state()));
    ended.sort();
    assert_eq!(
        ended,
        [
            ("c1".to_owned(), ContainerEventState::Exited),
            ("c2".to_owned(), ContainerEventState::Exited)
        ]
    );
}

#[tokio::test]
async fn a_dead_volume_mount_stops_only_the_containers_bound_to_it() {
    let mut h = harness();
    h.volumes
        .create(Owner::shared("ws1"), "data")
        .await
        .expect("volume");
    let mut bound = request("bound");
    bound.volumes = vec![VolumeMount {
        name: "data".into(),
        mount_path: "/data".into(),
    }];
    h.start(bound).await;
    h.start(request("free")).await;
    let mount = h
        .spec_of("bound")
        .mounts
        .into_iter()
        .find(|m| m.destination == "/data")
        .expect("the volume is bound in");
    assert!(!mount.read_only);
    assert_eq!(
        mount.source,
        h.dir.path().join("volumes/workspaces/ws1/data")
    );

    h.supervisor.stop_volume_users(Duration::from_secs(5));
    let exit = h.event().await;
    assert_eq!(
        (exit.container_id.as_str(), exit.state()),
        ("bound", ContainerEventState::Exited)
    );
    assert_eq!(
        h.runtime.stops(),
        [("bound".to_owned(), Duration::from_secs(5))]
    );
    assert!(h.runtime.is_running("free"));
    assert_eq!(h.held(), ["free"]);
}

#[tokio::test]
async fn a_function_container_gets_a_server_removed_at_its_exit() {
    let mut h = harness();
    let mut function = request("f1");
    function.container_server = true;
    h.start(function).await;
    let spec = h.spec_of("f1");
    assert_eq!(
        env_of(&spec, "LEVERS9_CONTAINER_SERVER"),
        ["/levers9/run/server.sock"]
    );
    assert!(spec
        .mounts
        .iter()
        .any(|m| m.destination == "/levers9/run" && m.source == h.run_dir("f1")));
    assert!(h.run_dir("f1").join("server.sock").exists());

    h.runtime.exit("f1", Exit::Code(127));
    let exit = h.event().await;
    assert_eq!(exit.exit_code, 127);
    assert_eq!(
        exit.message,
        "the container exited with code 127 before the function runner connected: does the image have python3 (3.9 or later) on its PATH?"
    );
    assert!(!h.run_dir("f1").exists(), "the server's directory is left");
}

#[tokio::test]
async fn a_function_container_that_fails_to_start_leaves_no_server() {
    let mut h = harness();
    h.runtime.fail_start("f1", "bad config");
    let mut function = request("f1");
    function.container_server = true;
    h.supervisor.run(function);
    h.failure().await;
    assert!(!h.run_dir("f1").exists(), "the server's directory is left");
    h.supervisor.task_input(TaskInput {
        container_id: "f1".into(),
        task_id: "t1".into(),
        ..TaskInput::default()
    });
    match h.next().await {
        worker_message::Kind::TaskResult(result) => assert_eq!(
            result,
            TaskResult {
                container_id: "f1".into(),
                task_id: "t1".into(),
                state: TaskResultState::Lost.into(),
                message: "container f1 is not running on worker w1".into(),
                ..TaskResult::default()
            }
        ),
        other => panic!("expected the input reported lost, got {other:?}"),
    }
}
