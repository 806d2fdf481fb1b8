//! Spare function containers (`worker.spares`): the SDK's test_spares.py
//! against a worker keeping one, on runc and on gVisor. The runc worker
//! sets the key itself; the gVisor one has no config and takes the
//! controlplane's, as a Kubernetes Job's worker does. And the SDK's whole
//! suite on a worker whose cold starts adopt spares.

mod common;

use common::fleet::Worker;
use common::sdk::{controlplane, pytest, SUITE_ELSEWHERE};
use common::Backend;

async fn a_cold_start_adopts_a_spare(runtime: &str) {
    let spares = [("LEVERS9_WORKER_SPARES", "1")];
    let (on_controlplane, on_worker) = match runtime {
        "gvisor" => (&spares[..], Vec::new()),
        _ => (
            &[][..],
            vec![("LEVERS9_WORKER_SPARES".to_owned(), "1".to_owned())],
        ),
    };
    let cp = controlplane(Backend::Embedded, on_controlplane);
    let admin = cp.admin_token().await;
    let worker = Worker::start_on_with_env(&cp, &admin, "default", runtime, &on_worker).await;
    let log = worker.log_path().display().to_string();
    pytest(
        &cp,
        &admin,
        &worker.log(),
        &["tests/test_spares.py"],
        &[("LEVERS9_TEST_WORKER_LOG", log.as_str())],
    )
    .await;
}

#[tokio::test]
async fn a_cold_start_adopts_a_spare_on_runc() {
    a_cold_start_adopts_a_spare("runc").await;
}

#[tokio::test]
async fn a_cold_start_adopts_a_spare_on_gvisor() {
    a_cold_start_adopts_a_spare("gvisor").await;
}

/// Classes, generators, endpoints, Dict and Queue calls, secrets, retries
/// and timeouts in containers that began as spares: the suite that
/// functions.rs runs, with the controlplane's `worker.spares` at 1.
#[tokio::test]
async fn the_sdk_suite_passes_when_cold_starts_adopt_spares() {
    let cp = controlplane(Backend::Servers, &[("LEVERS9_WORKER_SPARES", "1")]);
    let admin = cp.admin_token().await;
    let worker = Worker::start_roomy(&cp, &admin, "default", "runc").await;
    pytest(&cp, &admin, &worker.log(), &SUITE_ELSEWHERE, &[]).await;
    let log = worker.log();
    let adopted = log.matches("a container adopted a spare").count();
    assert!(
        adopted >= 5,
        "only {adopted} containers adopted a spare:\n{log}"
    );
}
