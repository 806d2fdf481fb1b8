//! A worker token may drain or cordon only the worker that registered with
//! it, over gRPC and over REST; an admin token may do either to any worker.

mod common;

use std::time::{Duration, Instant};

use common::fleet::Worker;
use common::{with_token, Backend, Controlplane};
use levers9_api::v1::{
    CordonWorkerRequest, CreateTokenRequest, DrainWorkerRequest, ListWorkersRequest,
};

async fn worker_token(cp: &Controlplane, admin: &str) -> String {
    cp.tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "worker".into(),
                description: "ownership".into(),
            },
            admin,
        ))
        .await
        .expect("worker token")
        .into_inner()
        .secret
}

/// A runc worker `id` of the pool default, registered with `token`.
async fn worker(cp: &Controlplane, admin: &str, token: &str, id: &str) -> Worker {
    let state_dir = tempfile::Builder::new()
        .prefix("l9w-")
        .tempdir()
        .expect("dir");
    let address = format!("127.0.0.1:{}", cp.grpc_port);
    let args = ["--pool", "default", "--runtime", "runc", "--worker-id", id];
    let worker = Worker::launch(&address, token, &args, &[], state_dir);
    worker.wait_listed(cp, admin, id).await;
    worker
}

#[tokio::test]
async fn a_worker_token_drains_and_cordons_only_its_own_worker() {
    let cp = Controlplane::start(Backend::Embedded);
    let admin = cp.admin_token().await;
    let token_a = worker_token(&cp, &admin).await;
    let token_b = worker_token(&cp, &admin).await;
    let suffix = std::process::id();
    let (id_a, id_b) = (format!("own-a-{suffix}"), format!("own-b-{suffix}"));
    let _a = worker(&cp, &admin, &token_a, &id_a).await;
    let _b = worker(&cp, &admin, &token_b, &id_b).await;

    let mut workers = cp.workers().await;
    let refused = workers
        .drain_worker(with_token(
            DrainWorkerRequest {
                worker_id: id_b.clone(),
            },
            &token_a,
        ))
        .await
        .expect_err("A may not drain B");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert!(
        refused
            .message()
            .contains("only the worker that registered with it"),
        "{}",
        refused.message()
    );
    let refused = workers
        .cordon_worker(with_token(
            CordonWorkerRequest {
                worker_id: id_b.clone(),
            },
            &token_a,
        ))
        .await
        .expect_err("A may not cordon B");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);

    // The REST mapping goes through the same check.
    let response = reqwest::Client::new()
        .post(format!(
            "http://127.0.0.1:{}/api/v1/controlplane/workers/{id_b}/drain",
            cp.http_port
        ))
        .bearer_auth(&token_a)
        .send()
        .await
        .expect("REST drain");
    assert_eq!(response.status(), reqwest::StatusCode::FORBIDDEN);

    // Taking over B's id with A's token while B is connected is refused too.
    let state_dir = tempfile::tempdir().expect("dir");
    let mut impostor = Worker::launch(
        &format!("127.0.0.1:{}", cp.grpc_port),
        &token_a,
        &[
            "--pool",
            "default",
            "--runtime",
            "runc",
            "--worker-id",
            &id_b,
        ],
        &[],
        state_dir,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !impostor.log().contains("connected with another token") {
        assert!(Instant::now() < deadline, "{}", impostor.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    impostor.kill();

    workers
        .drain_worker(with_token(
            DrainWorkerRequest {
                worker_id: id_a.clone(),
            },
            &token_a,
        ))
        .await
        .expect("A drains itself");
    workers
        .cordon_worker(with_token(
            CordonWorkerRequest {
                worker_id: id_b.clone(),
            },
            &admin,
        ))
        .await
        .expect("an admin cordons any worker");
    let listed = workers
        .list_workers(with_token(ListWorkersRequest {}, &admin))
        .await
        .expect("list")
        .into_inner()
        .workers;
    assert!(listed.iter().all(|w| w.cordoned), "{listed:?}");
}
