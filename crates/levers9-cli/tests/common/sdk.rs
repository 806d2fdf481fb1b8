//! The SDK's pytest suite against a real stack.

use std::process::Command;

use levers9_api::v1::{CreateTokenRequest, CreateTokenResponse, RevokeTokenRequest};

use super::fleet::python_image;
use super::{backend_env, text, with_token, Backend, Controlplane, SECRET};

/// A controlplane whose functions run on the test Python base image.
pub fn controlplane(backend: Backend, extra: &[(&str, &str)]) -> Controlplane {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let mut env = backend_env(backend);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    env.push(("LEVERS9_BASE_IMAGE_REGISTRY".into(), registry.into()));
    env.push(("LEVERS9_BASE_IMAGE".into(), name.into()));
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    Controlplane::start_with(env)
}

/// Runs the SDK's pytest suite (`pytest_args` select tests) against the
/// controlplane with a fresh workspace token and `env`; panics with every
/// log on a failure.
pub async fn pytest(
    cp: &Controlplane,
    admin: &str,
    worker_log: &str,
    pytest_args: &[&str],
    env: &[(&str, &str)],
) {
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
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        // The whole suite unless a file of it is named.
        .args((!pytest_args.iter().any(|a| a.starts_with("tests/"))).then_some("tests"))
        .args(pytest_args)
        .current_dir(sdk)
        .env("HOME", home.path())
        .env("LEVERS9_TEST_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_TEST_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .env("LEVERS9_TEST_TOKEN", token)
        .env("LEVERS9_TEST_REVOKED_TOKEN", revoked.secret)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().copied())
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

pub async fn workspace_token(cp: &Controlplane, admin: &str) -> CreateTokenResponse {
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
