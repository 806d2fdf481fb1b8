//! Sandboxes (docs/sandboxes.md) on real containers: the SDK's
//! `test_sandbox.py` against a controlplane with a runc worker, and with a
//! gVisor worker; and `levers9 container exec` from the CLI.

mod common;

use common::fleet::{python_image, Worker};
use common::sdk::{controlplane, pytest};
use common::{text, Backend};

async fn sandboxes_on(runtime: &str) {
    let cp = controlplane(Backend::Embedded, &[]);
    let admin = cp.admin_token().await;
    let worker = Worker::start(&cp, &admin, "default", runtime).await;
    let image = python_image();
    pytest(
        &cp,
        &admin,
        &worker.log(),
        &["tests/test_sandbox.py"],
        &[("LEVERS9_TEST_SANDBOXES", &image)],
    )
    .await;
    // The CLI: a container, a command in it with stdin, its exit code.
    let run = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            "--detach",
            &image,
            "--",
            "python3",
            "-c",
            "import time; time.sleep(120)",
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let id = text(&run.stdout).trim().to_owned();
    common::fleet::wait_for_state(
        &cp,
        &admin,
        &id,
        "running",
        std::time::Duration::from_secs(120),
    )
    .await;
    let exec = cp.cli_as(
        &admin,
        &[
            "container",
            "exec",
            "-i",
            &id,
            "--",
            "sh",
            "-c",
            "tr a-z A-Z; exit 4",
        ],
        Some("shout\n"),
    );
    assert_eq!(exec.status.code(), Some(4), "{}", text(&exec.stderr));
    assert_eq!(text(&exec.stdout), "SHOUT\n");
}

#[tokio::test]
async fn sandboxes_exec_stream_and_copy_files_on_runc() {
    sandboxes_on("runc").await;
}

#[tokio::test]
async fn sandboxes_exec_stream_and_copy_files_on_gvisor() {
    sandboxes_on("gvisor").await;
}
