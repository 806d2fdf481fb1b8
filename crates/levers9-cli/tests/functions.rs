//! Python functions end to end: the SDK's pytest suite against a real
//! stack — a controlplane, a worker running containers, the test registry
//! holding the Python base image.

mod common;

use std::time::Duration;

use common::fleet::Worker;
use common::sdk::{controlplane, pytest, SUITE_ELSEWHERE};
use common::{Backend, Controlplane};

#[tokio::test]
async fn the_sdk_suite_passes_on_postgres_redis_and_runc() {
    let cp = controlplane(Backend::Servers, &[]);
    let admin = cp.admin_token().await;
    let worker = Worker::start_roomy(&cp, &admin, "default", "runc").await;
    pytest(&cp, &admin, &worker.log(), &SUITE_ELSEWHERE, &[]).await;
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
    pytest(
        &cp,
        &admin,
        "(in the controlplane's log)",
        &["-m", "smoke"],
        &[],
    )
    .await;
}

#[tokio::test]
async fn smoke_tests_pass_on_a_gvisor_pool() {
    let cp = controlplane(Backend::Embedded, &[]);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", "gvisor").await;
    pytest(&cp, &admin, &worker.log(), &["-m", "smoke"], &[]).await;
}
