//! Scheduling at fleet scale, end to end with real processes on Postgres
//! and Redis: GPU pools (inventories declared with --gpu, no GPU hardware),
//! cordon and drain, withdrawn requests, and (`scheduling/survival.rs`)
//! function calls that outlive a killed worker, a restarted or killed
//! controlplane, and a Redis restart.

mod common;
#[path = "scheduling/survival.rs"]
mod survival;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fleet::{busybox_image, python_image, wait_for_state, wait_wanted, Worker};
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{
    ContainerState, CreateTokenRequest, ListTasksRequest, RunContainerRequest, TaskState,
};

fn run_cli(cp: &Controlplane, token: &str, args: &[&str]) -> std::process::Output {
    cp.cli_as(token, args, None)
}

/// A controlplane on Postgres and Redis with `config` as its config file
/// and the test Python image as the functions' base image.
fn controlplane(config: &str, extra: &[(&str, &str)]) -> Controlplane {
    let mut env = backend_env(Backend::Servers);
    servers_env(&mut env, config, extra);
    Controlplane::start_with(env)
}

/// Adds the bootstrap secret, the base image and a config file to `env`.
fn servers_env(env: &mut Vec<(String, String)>, config: &str, extra: &[(&str, &str)]) {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let path = common::config_file(config);
    env.push(("LEVERS9_CONFIG".into(), path.display().to_string()));
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    for (k, v) in extra {
        env.push(((*k).into(), (*v).into()));
    }
}

async fn detached(cp: &Controlplane, admin: &str, request: RunContainerRequest) -> String {
    cp.containers()
        .await
        .run_container(with_token(
            RunContainerRequest {
                image: busybox_image(),
                memory_mib: 64,
                ..request
            },
            admin,
        ))
        .await
        .expect("run container")
        .into_inner()
        .container
        .expect("container")
        .container_id
}

fn sleeping(seconds: u32) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("trap 'exit 0' TERM; sleep {seconds} & wait"),
    ]
}

/// Pools per GPU type: an unnamed request finds the pool of its type,
/// a pool that requires its selector is taken only when named, and the
/// failures name the cause and, for blind GPU workers, the setting.
#[tokio::test]
async fn gpu_requests_find_their_pool_or_say_why_not() {
    let cp = controlplane(
        "worker:\n  pools:\n    l40s: {gpuType: L40S}\n    h100: {gpuType: H100, requiresPoolSelector: true}\n    a100: {gpuType: A100}\n",
        &[],
    );
    let admin = cp.admin_token().await;
    let _l40s = Worker::start_with_gpus(&cp, &admin, "l40s", &["L40S:0,1"]).await;
    let _h100 = Worker::start_with_gpus(&cp, &admin, "h100", &["H100:0,1,2,3"]).await;
    // Up without a GPU, as a worker pod that did not request one.
    let _blind = Worker::start(&cp, &admin, "a100", "runc").await;
    let image = busybox_image();
    let run = |extra: &[&str]| {
        let mut args = vec!["container", "run", image.as_str()];
        args.splice(2..2, extra.iter().copied());
        args.extend(["--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES"]);
        run_cli(&cp, &admin, &args)
    };

    let out = run(&["--gpu", "H100,L40S", "--gpu-count", "2"]);
    assert_eq!(
        text(&out.stdout),
        "0,1\n",
        "H100 needs its pool named, so L40S: {}",
        text(&out.stderr)
    );
    let out = run(&["--pool", "h100", "--gpu", "H100", "--gpu-count", "4"]);
    assert_eq!(text(&out.stdout), "0,1,2,3\n", "{}", text(&out.stderr));

    let out = run(&["--gpu", "H200"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("no pool offers GPU H200"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["--gpu", "A100"]);
    assert_eq!(out.status.code(), Some(125));
    let why = text(&out.stderr);
    assert!(why.contains("not enough GPUs available"), "{why}");
    assert!(why.contains("worker.jobResourcesEnforced: true"), "{why}");
    let out = run(&["--gpu", "L40S", "--gpu-count", "3"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("not enough GPUs available"),
        "{}",
        text(&out.stderr)
    );
}

/// Waits until the controlplane's scheduler has read a picture of the
/// fleet with exactly `workers` (it reads one every 500 ms and logs each
/// change).
async fn schedules_on(cp: &Controlplane, workers: &[&str]) {
    let mut sorted = workers.to_vec();
    sorted.sort_unstable();
    let want = format!("workers={sorted:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = cp.log();
        let last = log
            .lines()
            .rfind(|l| l.contains("the workers this replica schedules on changed"));
        if last.is_some_and(|l| l.contains(&want)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the scheduler never read {want}:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A cordoned worker gets nothing new; with every worker cordoned a
/// request waits; uncordoning lets it run; drain waits for what runs.
#[tokio::test]
async fn cordon_uncordon_and_drain() {
    let cp = controlplane("{}\n", &[]);
    let admin = cp.admin_token().await;
    let (w1, id1) = worker(&cp, &admin).await;
    let (_w2, id2) = worker(&cp, &admin).await;

    let out = run_cli(&cp, &admin, &["worker", "cordon", &id1]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&run_cli(&cp, &admin, &["worker", "list"]).stdout);
    assert!(
        list.lines()
            .any(|l| l.contains(&id1) && l.contains("cordoned")),
        "{list}"
    );
    schedules_on(&cp, &[&id2]).await;
    for _ in 0..3 {
        let id = detached(
            &cp,
            &admin,
            RunContainerRequest {
                args: sleeping(1),
                ..Default::default()
            },
        )
        .await;
        let c = wait_for_state(&cp, &admin, &id, "running", Duration::from_secs(30)).await;
        assert_eq!(c.worker_id, id2, "nothing new on the cordoned worker");
    }

    run_cli(&cp, &admin, &["worker", "cordon", &id2]);
    schedules_on(&cp, &[]).await;
    let waiting = detached(
        &cp,
        &admin,
        RunContainerRequest {
            args: sleeping(3),
            // Named, the pool counts it in its demand once the scheduler
            // finds it no room: then it waits, not merely not looked at yet.
            pool: "default".into(),
            ..Default::default()
        },
    )
    .await;
    let demand = wait_wanted(&cp, &admin, "default", None, |d| d.waiting == 1).await;
    assert_eq!(demand.waiting, 1, "the scheduler never found it no room");
    wait_for_state(&cp, &admin, &waiting, "pending", Duration::from_secs(1)).await;
    let out = run_cli(&cp, &admin, &["worker", "uncordon", &id1]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let placed = wait_for_state(&cp, &admin, &waiting, "running", Duration::from_secs(30)).await;
    assert_eq!(placed.worker_id, id1);

    let out = run_cli(&cp, &admin, &["worker", "drain", &id1]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("drained"),
        "{}",
        text(&out.stdout)
    );
    wait_for_state(&cp, &admin, &waiting, "exited", Duration::from_secs(1)).await;
    drop(w1);
    let out = run_cli(&cp, &admin, &["worker", "cordon", "no-such-worker"]);
    assert!(
        text(&out.stderr).contains("levers9 worker list"),
        "{}",
        text(&out.stderr)
    );
}

async fn worker(cp: &Controlplane, admin: &str) -> (Worker, String) {
    let before: Vec<String> = worker_ids(cp, admin).await;
    let w = Worker::start(cp, admin, "default", "runc").await;
    let id = worker_ids(cp, admin)
        .await
        .into_iter()
        .find(|id| !before.contains(id))
        .expect("the new worker is listed");
    (w, id)
}

async fn worker_ids(cp: &Controlplane, admin: &str) -> Vec<String> {
    cp.workers()
        .await
        .list_workers(with_token(levers9_api::v1::ListWorkersRequest {}, admin))
        .await
        .expect("list workers")
        .into_inner()
        .workers
        .into_iter()
        .map(|w| w.worker_id)
        .collect()
}

/// The caller: a function that sleeps and returns its attempt, called with
/// `.remote()` or spawned and followed with `get()` across outages (with
/// `retries=2`, or `once` with the SDK's default of none); or a map of six
/// inputs that each want a whole core, printing the containers that ran
/// them.
const CALLER: &str = r#"
import os, sys, time
import levers9
from levers9 import FunctionCall, function

@function(retries=2)
def outlast(seconds):
    time.sleep(seconds)
    return "attempt " + os.environ["LEVERS9_TASK_ATTEMPT"]

@function()
def once(seconds):
    time.sleep(seconds)
    return "attempt " + os.environ["LEVERS9_TASK_ATTEMPT"]

# A whole core each: the test's worker holds two.
@function(cpu=1, memory="64Mi")
def wide(seconds):
    time.sleep(seconds)
    return os.environ["LEVERS9_CONTAINER_ID"]

if __name__ == "__main__":
    mode, seconds = sys.argv[1], float(sys.argv[2])
    if mode == "map":
        for container in sorted(set(wide.map([seconds] * 6))):
            print("result:", container, flush=True)
        sys.exit(0)
    if mode == "remote":
        print("result:", outlast.remote(seconds), flush=True)
        sys.exit(0)
    if mode == "once":
        print("result:", once.remote(seconds), flush=True)
        sys.exit(0)
    call = outlast.spawn(seconds)
    print("task:", call.task_id, flush=True)
    deadline = time.monotonic() + 180
    while True:
        try:
            print("result:", FunctionCall.from_id(call.task_id).get(), flush=True)
            break
        except (levers9.ControlplaneUnavailable, levers9.ControlplaneError) as error:
            if time.monotonic() > deadline:
                raise
            print("following again after:", error, file=sys.stderr, flush=True)
            time.sleep(0.5)
"#;

/// Starts the caller against `cp` with a fresh workspace token.
async fn caller(cp: &Controlplane, admin: &str, dir: &Path, args: &[&str]) -> (Child, String) {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let token = cp
        .tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "workspace".into(),
                description: "caller".into(),
            },
            admin,
        ))
        .await
        .expect("token")
        .into_inner()
        .secret;
    std::fs::write(dir.join("caller.py"), CALLER).expect("write the caller");
    let child = Command::new(python)
        .arg("caller.py")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .env("LEVERS9_TOKEN", &token)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the caller");
    (child, token)
}

/// Waits until the workspace's one task runs, and returns it.
async fn running_task(cp: &Controlplane, token: &str, within: Duration) -> levers9_api::v1::Task {
    let deadline = Instant::now() + within;
    loop {
        let tasks = cp
            .functions()
            .await
            .list_tasks(with_token(ListTasksRequest { limit: 10 }, token))
            .await
            .map(|r| r.into_inner().tasks)
            .unwrap_or_default();
        if let Some(task) = tasks.into_iter().find(|t| t.state() == TaskState::Running) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "no task ran within {within:?}:\n{}",
            cp.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The caller's output lines once it exits; panics unless it succeeded.
fn finished(child: Child, logs: &[String]) -> Vec<String> {
    let out = child.wait_with_output().expect("caller");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "the caller failed:\n{stdout}\n{}\n{}",
        text(&out.stderr),
        logs.join("\n--------\n")
    );
    stdout.lines().map(str::to_owned).collect()
}

fn results(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.starts_with("result:")).collect()
}

/// kill -9 of the worker running a `retries=0` task (a reclaimed spot
/// node): the task runs again on the other worker without using a retry,
/// the caller's `.remote()` follows it and gets one result, and `task
/// show` lists both runs of attempt 1 with their workers and the reason.
/// A map asks for a container per input, more than its worker holds. Once
/// its queue is empty the requests no worker took are withdrawn: they fail
/// with the reason, and none starts later to hold room nobody needs.
#[tokio::test]
async fn requests_a_finished_map_no_longer_needs_are_withdrawn() {
    let cp = controlplane("{}\n", &[]);
    let admin = cp.admin_token().await;
    let (w, _) = worker(&cp, &admin).await;
    let dir = tempfile::tempdir().expect("dir");
    let (child, token) = caller(&cp, &admin, dir.path(), &["map", "1"]).await;
    let lines = finished(child, &[cp.log(), w.log()]);
    let ran: Vec<String> = results(&lines)
        .iter()
        .map(|l| l.trim_start_matches("result: ").to_owned())
        .collect();
    assert!(
        (1..=2).contains(&ran.len()),
        "two containers fit the worker: {lines:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let containers = cp
            .containers()
            .await
            .list_containers(with_token(
                levers9_api::v1::ListContainersRequest {},
                &token,
            ))
            .await
            .expect("list containers")
            .into_inner()
            .containers;
        let (used, others): (Vec<_>, Vec<_>) = containers
            .iter()
            .partition(|c| ran.contains(&c.container_id));
        let withdrawn = others.iter().all(|c| {
            c.state() == ContainerState::Failed
                && c.worker_id.is_empty()
                && c.message.starts_with("withdrawn before a worker took it")
        });
        if used.len() == ran.len() && !others.is_empty() && withdrawn {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the requests left over were not withdrawn: {containers:#?}\n{}",
            cp.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
