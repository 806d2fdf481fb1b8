//! Containers end to end: a controlplane, workers running real runc and
//! runsc, images pulled from the test registry, the CLI.

mod common;

use std::time::Duration;

use common::fleet::{busybox_image, stack, wait_for_state, wait_wanted, Worker};
use common::{text, with_token, Backend, Controlplane};
use levers9_api::v1::{RunContainerRequest, StopContainerRequest};

fn run_cli(cp: &Controlplane, token: &str, args: &[&str]) -> std::process::Output {
    cp.cli_as(token, args, None)
}

async fn detached(cp: &Controlplane, admin: &str, args: &[&str], memory_mib: u64) -> String {
    let request = RunContainerRequest {
        args: args.iter().map(|a| a.to_string()).collect(),
        memory_mib,
        ..Default::default()
    };
    run_detached(cp, admin, request).await
}

/// Runs the busybox image with this request; its container id.
async fn run_detached(cp: &Controlplane, admin: &str, request: RunContainerRequest) -> String {
    let request = RunContainerRequest {
        image: busybox_image(),
        ..request
    };
    cp.containers()
        .await
        .run_container(with_token(request, admin))
        .await
        .expect("run")
        .into_inner()
        .container
        .expect("container")
        .container_id
}

async fn run_prints_output_and_exits_with_the_code(backend: Backend) {
    let (cp, admin, _worker) = stack(backend).await;
    let image = busybox_image();
    let out = run_cli(
        &cp,
        &admin,
        &[
            "container",
            "run",
            &image,
            "--",
            "sh",
            "-c",
            "echo hello from levers9; echo oops >&2; exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello from levers9\n");
    assert!(text(&out.stderr).contains("oops"));

    let listed = text(&run_cli(&cp, &admin, &["container", "list"]).stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains("exited") && l.contains(" 3 ")),
        "{listed}"
    );
    let workers = text(&run_cli(&cp, &admin, &["worker", "list"]).stdout);
    assert!(
        workers.contains("2000m/2000m") && workers.contains("ready"),
        "capacity given back: {workers}"
    );
}

/// `worker.pools.<name>.runtime` decides: a runc worker cannot join a gVisor
/// pool, a gVisor worker can, and runs the container under runsc.
#[tokio::test]
async fn a_gvisor_pool_runs_its_containers_under_runsc() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("levers9.yaml");
    std::fs::write(
        &config,
        "worker:\n  pools:\n    sandboxed:\n      runtime: gvisor\n",
    )
    .expect("config");
    let mut env = common::backend_env(Backend::Embedded);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), common::SECRET.into()));
    env.push(("LEVERS9_CONFIG".into(), config.display().to_string()));
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let state = tempfile::tempdir().expect("state");
    let (wrong, _) = Worker::spawn_in(&cp, &admin, "sandboxed", "runc", state, &[]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !wrong.log().contains("start it with --runtime gvisor") {
        assert!(
            std::time::Instant::now() < deadline,
            "no refusal:\n{}",
            wrong.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(wrong);
    let _worker = Worker::start(&cp, &admin, "sandboxed", "gvisor").await;
    let workers = text(&run_cli(&cp, &admin, &["worker", "list"]).stdout);
    assert!(
        workers
            .lines()
            .any(|l| l.contains("sandboxed") && l.contains("gvisor")),
        "{workers}"
    );
    let image = busybox_image();
    let out = run_cli(
        &cp,
        &admin,
        &[
            "container",
            "run",
            "--pool",
            "sandboxed",
            &image,
            "--",
            "sh",
            "-c",
            "echo from gvisor; exit 5",
        ],
    );
    assert_eq!(out.status.code(), Some(5), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from gvisor\n");
}

/// The Python base image the functions will run on: Debian's Python with
/// its standard library, under runc and under gVisor.
#[tokio::test]
async fn python_runs_in_a_container() {
    let (cp, admin, _runc) = stack(Backend::Embedded).await;
    let _gvisor = Worker::start(&cp, &admin, "sandboxed", "gvisor").await;
    let image = common::fleet::python_image();
    let program = "import json, sqlite3, ssl, sys; print(json.dumps({'sum': 1 + 2, 'py': sys.version_info[:2]}))";
    for pool in ["default", "sandboxed"] {
        let out = run_cli(
            &cp,
            &admin,
            &[
                "container",
                "run",
                "--pool",
                pool,
                "--memory",
                "256Mi",
                &image,
                "--",
                "python3",
                "-c",
                program,
            ],
        );
        assert!(out.status.success(), "{pool}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            "{\"sum\": 3, \"py\": [3, 11]}\n",
            "{pool}"
        );
    }
}

#[tokio::test]
async fn unknown_pools_and_missing_images_are_named() {
    let (cp, admin, _worker) = stack(Backend::Embedded).await;
    let image = busybox_image();
    let out = run_cli(
        &cp,
        &admin,
        &["container", "run", "--pool", "h200", &image, "--", "true"],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown pool \"h200\""),
        "{}",
        text(&out.stderr)
    );

    let registry = std::env::var("LEVERS9_TEST_REGISTRY").expect("registry");
    let missing = format!("{registry}/levers9-e2e/not-pushed:1");
    let out = run_cli(&cp, &admin, &["container", "run", &missing, "--", "true"]);
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&missing),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn an_oom_kill_is_reported_as_such() {
    let (cp, admin, _worker) = stack(Backend::Embedded).await;
    let image = busybox_image();
    // The shell holds the whole output of the substitution in memory.
    let out = run_cli(
        &cp,
        &admin,
        &[
            "container",
            "run",
            "--memory",
            "16Mi",
            &image,
            "--",
            "sh",
            "-c",
            "x=$(yes | head -c 67108864); echo survived",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(137),
        "stderr: {}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("OOM"), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("survived"));
}

#[tokio::test]
async fn stop_ends_a_running_container_and_leaves_nothing_behind() {
    let (cp, admin, worker) = stack(Backend::Embedded).await;
    // PID 1 gets no default signal handling: the shell traps SIGTERM itself.
    let id = detached(
        &cp,
        &admin,
        &[
            "sh",
            "-c",
            "trap 'echo got TERM; exit 143' TERM; echo ready; sleep 100 & wait",
        ],
        64,
    )
    .await;
    wait_for_state(&cp, &admin, &id, "running", Duration::from_secs(30)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !text(&run_cli(&cp, &admin, &["container", "logs", &id]).stdout).contains("ready") {
        assert!(
            std::time::Instant::now() < deadline,
            "the trap was never set"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cp.containers()
        .await
        .stop_container(with_token(
            StopContainerRequest {
                container_id: id.clone(),
            },
            &admin,
        ))
        .await
        .expect("stop");
    let ended = wait_for_state(&cp, &admin, &id, "exited", Duration::from_secs(30)).await;
    assert_eq!(
        ended.exit_code, 143,
        "ended by SIGTERM, before the grace ran out"
    );
    let logs = text(&run_cli(&cp, &admin, &["container", "logs", &id]).stdout);
    assert!(logs.contains("got TERM"), "{logs}");
    let state_dir = worker.state_dir.path().display().to_string();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert!(
        !mounts.contains(&state_dir),
        "a mount is left under {state_dir}"
    );
    let runc_root = worker.state_dir.path().join("runtime/runc");
    let listed = std::process::Command::new("runc")
        .arg("--root")
        .arg(&runc_root)
        .args(["list", "-q"])
        .output()
        .expect("runc list");
    assert_eq!(
        text(&listed.stdout).trim(),
        "",
        "runc still lists containers"
    );
}

/// A container still waiting for room is withdrawn when stopped: it fails
/// with the reason, never runs once room frees up, and holds none of it.
#[tokio::test]
async fn stopping_a_waiting_container_withdraws_it() {
    let (cp, admin, _worker) = stack(Backend::Embedded).await;
    let holder = detached(
        &cp,
        &admin,
        &["sh", "-c", "trap 'exit 143' TERM; sleep 100 & wait"],
        1536,
    )
    .await;
    wait_for_state(&cp, &admin, &holder, "running", Duration::from_secs(30)).await;
    // Named, the pool counts it in its demand once the scheduler finds it
    // no room: then it waits, it was not merely not looked at yet.
    let request = RunContainerRequest {
        args: vec!["true".into()],
        memory_mib: 1024,
        pool: "default".into(),
        ..Default::default()
    };
    let waiting = run_detached(&cp, &admin, request).await;
    let demand = wait_wanted(&cp, &admin, "default", None, |d| d.waiting == 1).await;
    assert_eq!(demand.waiting, 1, "the scheduler never found it no room");
    wait_for_state(&cp, &admin, &waiting, "pending", Duration::from_secs(1)).await;

    let out = run_cli(&cp, &admin, &["container", "stop", &waiting]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stopped = wait_for_state(&cp, &admin, &waiting, "failed", Duration::from_secs(5)).await;
    assert_eq!(stopped.message, "stopped before it started");

    let out = run_cli(&cp, &admin, &["container", "stop", &holder]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    wait_for_state(&cp, &admin, &holder, "exited", Duration::from_secs(30)).await;
    // All of the worker is free: the withdrawn request took none of it.
    let whole = detached(&cp, &admin, &["true"], 2048).await;
    wait_for_state(&cp, &admin, &whole, "exited", Duration::from_secs(30)).await;
    let after = wait_for_state(&cp, &admin, &waiting, "failed", Duration::from_secs(1)).await;
    assert!(after.worker_id.is_empty(), "it ran on {}", after.worker_id);
}

/// A worker killed with SIGKILL stops heartbeating: within its TTL it is
/// declared lost, and so are its containers.
#[tokio::test]
async fn a_killed_worker_is_marked_lost_within_its_ttl() {
    let mut env = common::backend_env(Backend::Servers);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), common::SECRET.into()));
    env.push(("LEVERS9_WORKER_HEARTBEAT_TTL_SECONDS".into(), "2".into()));
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let mut worker = Worker::start(&cp, &admin, "default", "runc").await;
    let id = detached(&cp, &admin, &["sleep", "100"], 64).await;
    wait_for_state(&cp, &admin, &id, "running", Duration::from_secs(30)).await;
    worker.kill();
    let lost = wait_for_state(&cp, &admin, &id, "lost", Duration::from_secs(8)).await;
    assert!(
        lost.message.contains("stopped sending heartbeats"),
        "{}",
        lost.message
    );
    let workers = text(&run_cli(&cp, &admin, &["worker", "list"]).stdout);
    assert!(!workers.contains("ready"), "{workers}");
    // A worker started again on the same state dir reaps what was left.
    let dir = std::mem::replace(&mut worker.state_dir, tempfile::tempdir().expect("dir"));
    let again = Worker::start_in(&cp, &admin, "default", "runc", dir).await;
    assert!(
        again
            .log()
            .contains("removed containers left by a previous run"),
        "{}",
        again.log()
    );
}

/// The controlplane dies while a container runs; the container goes on,
/// the worker reconnects to the restarted controlplane, and the end of the
/// container (exit code and output) is still reported.
#[tokio::test]
async fn a_container_outlives_a_controlplane_restart() {
    let mut env = common::backend_env(Backend::Servers);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), common::SECRET.into()));
    let grpc_port = common::free_port();
    let http_port = common::free_port();
    env.push(("LEVERS9_GRPC_PORT".into(), grpc_port.to_string()));
    env.push(("LEVERS9_HTTP_PORT".into(), http_port.to_string()));
    let first = Controlplane::start_with(env.clone());
    let admin = first.admin_token().await;
    let _worker = Worker::start(&first, &admin, "default", "runc").await;
    let id = detached(
        &first,
        &admin,
        &["sh", "-c", "sleep 3; echo done; exit 4"],
        64,
    )
    .await;
    wait_for_state(&first, &admin, &id, "running", Duration::from_secs(30)).await;
    drop(first);

    let second = Controlplane::start_with(env);
    let ended = wait_for_state(&second, &admin, &id, "exited", Duration::from_secs(30)).await;
    assert_eq!(ended.exit_code, 4);
    let logs = run_cli(&second, &admin, &["container", "logs", &id]);
    assert_eq!(text(&logs.stdout), "done\n", "{}", text(&logs.stderr));
}

/// The REST mapping: run, read and list containers, list workers; another
/// workspace's container is not found.
#[tokio::test]
async fn containers_and_workers_over_rest() {
    let (cp, admin, _worker) = stack(Backend::Embedded).await;
    let http = reqwest::Client::new();
    let ran: serde_json::Value = http
        .post(cp.http("/api/v1/controlplane/containers"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({
            "image": busybox_image(),
            "args": ["sh", "-c", "exit 7"],
            "memoryMib": 64,
        }))
        .send()
        .await
        .expect("POST containers")
        .json()
        .await
        .expect("json");
    let id = ran["container"]["containerId"]
        .as_str()
        .expect("id")
        .to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got: serde_json::Value = http
            .get(cp.http(&format!("/api/v1/controlplane/containers/{id}")))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("GET container")
            .json()
            .await
            .expect("json");
        if got["container"]["state"] == "exited" {
            assert_eq!(got["container"]["exitCode"], 7);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let workers: serde_json::Value = http
        .get(cp.http("/api/v1/controlplane/workers"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("GET workers")
        .json()
        .await
        .expect("json");
    assert_eq!(workers["workers"][0]["status"], "ready", "{workers}");

    let other = cp
        .workspaces()
        .await
        .create_workspace(with_token(
            levers9_api::v1::CreateWorkspaceRequest {
                name: "other".into(),
            },
            &admin,
        ))
        .await
        .expect("workspace")
        .into_inner()
        .admin_token;
    let hidden = http
        .get(cp.http(&format!("/api/v1/controlplane/containers/{id}")))
        .bearer_auth(&other)
        .send()
        .await
        .expect("GET container");
    assert_eq!(hidden.status(), 404);
}

/// A GPU container on a machine with a CDI spec for `nvidia.com/gpu` gets
/// the device node, environment and mount the spec lists for its GPU, made
/// by runc for real. /dev/null stands in for the GPU's node.
#[tokio::test]
async fn gpu_containers_get_the_devices_of_the_cdi_spec() {
    let cdi = tempfile::tempdir().expect("cdi dir");
    let libs = tempfile::tempdir().expect("driver dir");
    std::fs::write(libs.path().join("libcuda.so.1"), "driver").expect("lib");
    let spec = serde_json::json!({
        "cdiVersion": "0.5.0",
        "kind": "nvidia.com/gpu",
        "devices": [
            {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/null"}]}},
            {"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1", "hostPath": "/dev/null"}]}}
        ],
        "containerEdits": {
            "env": ["NVIDIA_VISIBLE_DEVICES=void"],
            "mounts": [{"hostPath": libs.path(), "containerPath": "/usr/lib/nvidia", "options": ["ro", "bind"]}]
        }
    });
    std::fs::write(cdi.path().join("nvidia.json"), spec.to_string()).expect("spec");
    let cp = Controlplane::start(Backend::Embedded);
    let admin = cp.admin_token().await;
    let env = [(
        "LEVERS9_WORKER_CDI_SPEC_DIRS".to_owned(),
        cdi.path().display().to_string(),
    )];
    let _worker = Worker::start_with_gpus_and_env(&cp, &admin, "default", &["L40S:1"], &env).await;
    let image = busybox_image();
    let script = "echo $NVIDIA_VISIBLE_DEVICES; ls /dev | grep nvidia; \
                  echo x > /dev/nvidia1 && echo wrote; cat /usr/lib/nvidia/libcuda.so.1";
    let out = run_cli(
        &cp,
        &admin,
        &[
            "container",
            "run",
            "--gpu",
            "L40S",
            &image,
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert_eq!(
        text(&out.stdout),
        "void\nnvidia1\nwrote\ndriver",
        "{}",
        text(&out.stderr)
    );
}

/// GPU inventories on workers (no GPU hardware needed): type preference,
/// counts, packing, device ids handed to the container, clear failures.
async fn gpu_requests_get_their_type_count_and_devices(backend: Backend) {
    let cp = Controlplane::start(backend);
    let admin = cp.admin_token().await;
    let _l40s = Worker::start_with_gpus(&cp, &admin, "default", &["L40S:0,1"]).await;
    let _h100 = Worker::start_with_gpus(&cp, &admin, "default", &["H100:0,1,2,3"]).await;
    let image = busybox_image();
    let show = ["--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES"];
    let run = |extra: &[&str]| {
        let mut args = vec!["container", "run", image.as_str()];
        args.splice(2..2, extra.iter().copied());
        args.extend(show);
        run_cli(&cp, &admin, &args)
    };

    let out = run(&["--gpu", "H100,L40S", "--gpu-count", "4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "0,1,2,3\n", "all four H100s");
    let out = run(&["--gpu", "A100,L40S", "--gpu-count", "2"]);
    assert_eq!(
        text(&out.stdout),
        "0,1\n",
        "the first type offered: {}",
        text(&out.stderr)
    );

    // With the H100 worker full, the preference falls through to L40S.
    let busy = detached_gpus(&cp, &admin, &["H100"], 4).await;
    wait_for_state(&cp, &admin, &busy, "running", Duration::from_secs(30)).await;
    let id = detached_gpus(&cp, &admin, &["H100", "L40S"], 1).await;
    let placed = wait_for_state(&cp, &admin, &id, "running", Duration::from_secs(30)).await;
    assert_eq!(placed.gpu_type, "L40S");

    let out = run(&["--gpu", "H200"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("no pool offers GPU H200"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["--gpu", "H100,L40S", "--gpu-count", "5"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("has 5 GPUs"),
        "{}",
        text(&out.stderr)
    );
    cp.containers()
        .await
        .stop_container(with_token(
            StopContainerRequest { container_id: busy },
            &admin,
        ))
        .await
        .expect("stop");
}

async fn detached_gpus(cp: &Controlplane, admin: &str, types: &[&str], count: u32) -> String {
    let request = RunContainerRequest {
        args: vec![
            "sh".into(),
            "-c".into(),
            "trap 'exit 0' TERM; sleep 100 & wait".into(),
        ],
        gpu_types: types.iter().map(|t| t.to_string()).collect(),
        gpu_count: count,
        memory_mib: 64,
        ..Default::default()
    };
    run_detached(cp, admin, request).await
}

on_both_backends!(
    run_prints_output_and_exits_with_the_code,
    gpu_requests_get_their_type_count_and_devices,
);
