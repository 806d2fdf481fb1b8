//! Python functions end to end: the SDK's pytest suite against a real
//! stack — a controlplane, a worker running containers, the test registry
//! holding the Python base image.

mod common;

use std::process::Command;
use std::time::Duration;

use common::fleet::{python_image, Worker};
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{CreateTokenRequest, CreateTokenResponse, RevokeTokenRequest};

/// A controlplane whose functions run on the test Python base image.
fn controlplane(backend: Backend) -> Controlplane {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let mut env = backend_env(backend);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    Controlplane::start_with(env)
}

/// Runs the SDK's pytest suite (`pytest_args` select tests) against the
/// controlplane with a fresh workspace token; panics with every log on a
/// failure.
async fn pytest(cp: &Controlplane, admin: &str, worker_log: &str, pytest_args: &[&str]) {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test), \
             which makes the SDK's venv"
        )
    });
    let token = workspace_token(cp, admin).await.secret;
    // A stale token: one that worked and was revoked.
    let revoked = workspace_token(cp, admin).await;
    cp.tokens()
        .await
        .revoke_token(with_token(
            RevokeTokenRequest {
                token_id: revoked.token.expect("token").id,
            },
            admin,
        ))
        .await
        .expect("revoke");
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python");
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .args(pytest_args)
        .current_dir(sdk)
        .env("HOME", home.path())
        .env("LEVERS9_TEST_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_TEST_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .env("LEVERS9_TEST_TOKEN", token)
        .env("LEVERS9_TEST_REVOKED_TOKEN", revoked.secret)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    assert!(
        out.status.success(),
        "the SDK tests failed:\n{}\n{}\n--- controlplane ---\n{}\n--- worker ---\n{}",
        text(&out.stdout),
        text(&out.stderr),
        cp.log(),
        worker_log
    );
    let summary = text(&out.stdout);
    assert!(
        summary.contains(" passed"),
        "pytest ran no test:\n{summary}"
    );
    println!("{summary}");
}

async fn workspace_token(cp: &Controlplane, admin: &str) -> CreateTokenResponse {
    cp.tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "workspace".into(),
                description: "sdk tests".into(),
            },
            admin,
        ))
        .await
        .expect("workspace token")
        .into_inner()
}

#[tokio::test]
async fn the_sdk_suite_passes_on_postgres_redis_and_runc() {
    let cp = controlplane(Backend::Servers);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "runc").await;
    pytest(&cp, &admin, &worker.log(), &[]).await;
}

/// `levers9 up` as a newcomer runs it: no registry configured, so it builds
/// its Python base image from Debian packages into its local image storage
/// and its worker pulls it from there.
#[tokio::test]
async fn smoke_tests_pass_on_levers9_up_with_the_base_image_it_builds() {
    let cp = Controlplane::up(Vec::new());
    // Downloading and packing the base image takes a while the first time.
    cp.wait_for_log("levers9 is up", Duration::from_secs(900))
        .await;
    let admin = cp.up_admin_token();
    pytest(&cp, &admin, "(in the controlplane's log)", &["-m", "smoke"]).await;
}

#[tokio::test]
async fn smoke_tests_pass_on_a_gvisor_pool() {
    let cp = controlplane(Backend::Embedded);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "gvisor").await;
    pytest(&cp, &admin, &worker.log(), &["-m", "smoke"]).await;
}
