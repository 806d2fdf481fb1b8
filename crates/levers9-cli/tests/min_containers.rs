//! `min_containers` end to end, with a real controlplane and a runc worker:
//! a function deployed with `min_containers=1` (`levers9 deploy`) has a
//! container running before any call, the first call is served by it, it
//! outlives its keep-warm window, and a redeploy with `min_containers=0`
//! lets it go; on the embedded backends and on Postgres and Redis.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::fleet::{python_image, Worker};
use common::stubs::workspace_token;
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{ContainerState, ListContainersRequest};

/// The app, with `{floor}` for its `min_containers`: the function answers
/// with the id of the container that ran it.
const APP: &str = r#"import os

from levers9 import function


@function(min_containers={floor}, keep_warm_seconds=2)
def whoami():
    return os.environ["LEVERS9_CONTAINER_ID"]
"#;

/// How long the floor's first container may take (an image pull).
const START: Duration = Duration::from_secs(180);

fn env(backend: Backend) -> Vec<(String, String)> {
    let mut env = backend_env(backend);
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env
}

fn python() -> String {
    std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    })
}

/// The SDK's settings for `token` against `cp`, with the SDK from this tree.
fn sdk_env(cp: &Controlplane, token: &str) -> Vec<(&'static str, String)> {
    vec![
        ("LEVERS9_TOKEN", token.to_owned()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1".to_owned()),
        ("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string()),
        ("LEVERS9_PYTHON", python()),
        (
            "PYTHONPATH",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python").to_owned(),
        ),
    ]
}

/// Writes the app with `floor` and runs `levers9 deploy` on it.
fn deploy(cp: &Controlplane, token: &str, file: &Path, floor: u32) {
    std::fs::write(file, APP.replace("{floor}", &floor.to_string())).expect("write app");
    let home = tempfile::tempdir().expect("home");
    let env = sdk_env(cp, token);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let file = file.to_str().expect("utf-8 path");
    let out = cp.cli(home.path(), &["deploy", file], &env, None);
    assert!(out.status.success(), "deploy: {}", text(&out.stderr));
}

/// Calls the deployed function through the SDK; the container that ran it.
fn call(cp: &Controlplane, token: &str) -> String {
    let script = "from levers9.deployment import lookup\n\
                  print(lookup('floor', 'whoami').remote())";
    let out: Output = Command::new(python())
        .args(["-c", script])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .envs(sdk_env(cp, token))
        .output()
        .expect("run python");
    assert!(out.status.success(), "call: {}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// The workspace's running containers.
async fn running(cp: &Controlplane, token: &str) -> Vec<String> {
    let listed = cp
        .containers()
        .await
        .list_containers(with_token(ListContainersRequest {}, token))
        .await
        .expect("list containers")
        .into_inner()
        .containers;
    listed
        .into_iter()
        .filter(|c| c.state() == ContainerState::Running)
        .map(|c| c.container_id)
        .collect()
}

/// Waits until the running containers satisfy `done`; them.
async fn wait_running(
    cp: &Controlplane,
    token: &str,
    within: Duration,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let now = running(cp, token).await;
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "{what}: running {now:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_deployed_floor_runs_before_any_call_serves_it_and_goes_with_a_lower_floor() {
    floor_on(Backend::Embedded).await;
}

#[tokio::test]
async fn a_deployed_floor_on_postgres_and_redis() {
    floor_on(Backend::Servers).await;
}

async fn floor_on(backend: Backend) {
    let cp = Controlplane::start_with(env(backend));
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    let user = workspace_token(&cp, &admin, "user").await;
    let code = tempfile::tempdir().expect("code");
    let file = code.path().join("floor.py");
    let logs = || format!("{}\n--------\n{}", cp.log(), worker.log());

    deploy(&cp, &user, &file, 1);
    let warm = wait_running(&cp, &user, START, "no container before any call", |r| {
        r.len() == 1
    })
    .await
    .remove(0);

    let served = call(&cp, &user);
    assert_eq!(served, warm, "the call went elsewhere\n{}", logs());

    // Past its keep-warm window (2 s) it still runs, alone.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        running(&cp, &user).await,
        std::slice::from_ref(&warm),
        "{}",
        logs()
    );

    deploy(&cp, &user, &file, 0);
    wait_running(
        &cp,
        &user,
        Duration::from_secs(30),
        "the floor's container still runs after a redeploy with min_containers=0",
        |r| !r.contains(&warm),
    )
    .await;
}
