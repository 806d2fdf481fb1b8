//! Attached clusters and workers wanted, end to end against a real
//! controlplane on Postgres and Redis: requests queued for a pool with no
//! workers make the demand rule ask for workers, and `cluster join --print`
//! writes manifests that pass `kubernetes-validate --strict`. No
//! Kubernetes API server can run on the test machines; the reconciler's
//! requests are checked in crates/levers9-kube's tests.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::fleet::{busybox_image, wait_wanted, wanted};
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{CreateTokenRequest, PoolScaling, RunContainerRequest, StopContainerRequest};

/// A controlplane on the test servers with `config` as its config file.
fn controlplane(config: &str) -> Controlplane {
    let mut env = backend_env(Backend::Servers);
    let path = common::config_file(config);
    env.push(("LEVERS9_CONFIG".into(), path.display().to_string()));
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    Controlplane::start_with(env)
}

async fn queue(cp: &Controlplane, admin: &str, pool: &str) -> String {
    cp.containers()
        .await
        .run_container(with_token(
            RunContainerRequest {
                image: busybox_image(),
                args: vec!["true".into()],
                memory_mib: 64,
                pool: pool.into(),
                ..Default::default()
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

async fn token(cp: &Controlplane, admin: &str, token_type: &str) -> String {
    cp.tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: token_type.into(),
                description: "cluster test".into(),
            },
            admin,
        ))
        .await
        .expect("create token")
        .into_inner()
        .secret
}

/// A configured pool with no workers: five queued requests at two per
/// worker ask for three workers; stopped, the pool goes back to its
/// minimum. Workspace tokens may not ask.
#[tokio::test]
async fn queued_requests_for_an_empty_pool_ask_for_workers() {
    let cp = controlplane(
        "worker:\n  pools:\n    l4:\n      gpuType: L4\n      requiresPoolSelector: true\n      scaling: {minWorkers: 0, maxWorkers: 4, requestsPerWorker: 2}\n",
    );
    let admin = cp.admin_token().await;
    let idle = wanted(&cp, &admin, "l4", None).await.expect("wanted");
    assert_eq!((idle.wanted, idle.waiting, idle.present), (0, 0, 0));
    assert_eq!(idle.scaling.expect("scaling").max_workers, 4);

    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(queue(&cp, &admin, "l4").await);
    }
    let busy = wait_wanted(&cp, &admin, "l4", None, |a| a.waiting == 5).await;
    assert_eq!(
        (busy.waiting, busy.present, busy.wanted),
        (5, 0, 3),
        "{busy:?}"
    );

    for id in ids {
        cp.containers()
            .await
            .stop_container(with_token(
                StopContainerRequest { container_id: id },
                &admin,
            ))
            .await
            .expect("stop");
    }
    let after = wait_wanted(&cp, &admin, "l4", None, |a| a.waiting == 0).await;
    assert_eq!((after.waiting, after.wanted), (0, 0), "{after:?}");

    let workspace = token(&cp, &admin, "workspace").await;
    let refused = wanted(&cp, &workspace, "l4", None)
        .await
        .expect_err("a workspace token may not ask");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
}

/// An attached cluster's pool is in no config: once its agent has asked
/// (with the worker token `cluster join` made), requests may name it with
/// no worker there yet, and the agent's bounds apply.
#[tokio::test]
async fn an_attached_pool_takes_requests_before_its_first_worker() {
    let cp = controlplane("worker:\n  pools: {}\n");
    let admin = cp.admin_token().await;
    let worker = token(&cp, &admin, "worker").await;
    let bounds = Some(PoolScaling {
        min_workers: 0,
        max_workers: 2,
        requests_per_worker: 1,
    });
    let first = wanted(&cp, &worker, "attached", bounds)
        .await
        .expect("wanted");
    assert_eq!(first.wanted, 0);
    for _ in 0..3 {
        queue(&cp, &admin, "attached").await;
    }
    let answer = wait_wanted(&cp, &worker, "attached", bounds, |a| a.waiting == 3).await;
    assert_eq!(
        (answer.waiting, answer.wanted),
        (3, 2),
        "capped at the agent's maximum: {answer:?}"
    );
}

fn kubernetes_validate() -> PathBuf {
    let path = std::env::var_os("LEVERS9_TEST_KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../.tmp/deploy-tools/venv/bin/kubernetes-validate")
        });
    assert!(
        path.exists(),
        "{} is missing: scripts/test-deploy.sh installs it (or set LEVERS9_TEST_KUBERNETES_VALIDATE)",
        path.display()
    );
    path
}

/// `cluster join --print` makes a worker token and writes manifests that
/// are valid Kubernetes 1.33 objects, with that token only in the Secret;
/// the token lets the agent ask for its pool.
#[tokio::test]
async fn cluster_join_prints_valid_manifests_with_a_working_token() {
    let cp = controlplane("worker:\n  pools: {}\n");
    let admin = cp.admin_token().await;
    let out = cp.cli_as(
        &admin,
        &[
            "cluster",
            "join",
            "--pool",
            "gke-l4",
            "--image",
            "registry.example.com/levers9/worker:9",
            "--controlplane",
            "levers9-grpc.example.com:443",
            "--gpu-type",
            "L4",
            "--node-selector",
            "cloud.google.com/gke-accelerator=nvidia-l4",
            "--max-workers",
            "3",
            "--print",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    for kind in [
        "Namespace",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Secret",
        "Deployment",
    ] {
        assert!(
            yaml.contains(&format!("kind: {kind}\n")),
            "{kind} missing:\n{yaml}"
        );
    }
    assert!(!yaml.contains("ClusterRole"), "{yaml}");
    assert!(yaml.contains("- --max-workers\n"), "{yaml}");

    let file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("file");
    std::fs::write(file.path(), &yaml).expect("write");
    let checked = Command::new(kubernetes_validate())
        .args(["--quiet", "--strict", "-k", "1.33"])
        .arg(file.path())
        .output()
        .expect("run kubernetes-validate");
    assert!(
        checked.status.success(),
        "{}{}",
        text(&checked.stdout),
        text(&checked.stderr)
    );

    let secret: String = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("the Secret's token")
        .trim_matches('\'')
        .to_owned();
    assert!(
        !text(&out.stderr).contains(&secret),
        "the token is not echoed"
    );
    let answer = wanted(&cp, &secret, "gke-l4", None)
        .await
        .expect("the agent may ask");
    assert_eq!(answer.pool, "gke-l4");
}

/// A `provider: kubernetes` pool with queued requests: within a round the
/// controlplane dials the pool's API server (here a bare TCP listener, as
/// no API server runs on the test machines), says in its log that the round
/// failed, and never logs the service-account token.
#[tokio::test]
async fn a_kubernetes_pool_with_waiting_requests_dials_its_api_server() {
    let api_server = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listener");
    let port = api_server.local_addr().expect("address").port();
    let token = tempfile::NamedTempFile::new().expect("token file");
    std::fs::write(token.path(), "sa-token-never-logged").expect("write token");
    let cp = controlplane(&format!(
        "worker:\n  pools:\n    gke:\n      provider: kubernetes\n      requiresPoolSelector: true\n      scaling: {{maxWorkers: 2}}\n      kubernetes:\n        apiServer: https://127.0.0.1:{port}\n        tokenFile: {}\n        namespace: levers9-gke\n        workerImage: registry.example.com/levers9/worker:9\n        controlplaneAddress: levers9-grpc.example.com:443\n",
        token.path().display()
    ));
    let admin = cp.admin_token().await;
    queue(&cp, &admin, "gke").await;
    let dialed = tokio::time::timeout(Duration::from_secs(40), api_server.accept()).await;
    let Ok(accepted) = dialed else {
        panic!(
            "the pool's API server was not dialed within 40 s:\n{}",
            cp.log()
        );
    };
    let (connection, _) = accepted.expect("accept");
    drop(connection);
    let line = cp
        .wait_for_log(
            "cannot reconcile the pool's workers",
            Duration::from_secs(40),
        )
        .await;
    assert!(
        line.contains("cannot list worker Jobs of pool gke in namespace levers9-gke"),
        "{line}"
    );
    assert!(!cp.log().contains("sa-token-never-logged"), "{}", cp.log());
    let health = tonic_health::pb::health_client::HealthClient::new(cp.channel().await)
        .check(tonic_health::pb::HealthCheckRequest {
            service: "levers9.v1.ClusterService".into(),
        })
        .await
        .expect("health")
        .into_inner();
    assert_eq!(health.status, 1, "SERVING");
}
