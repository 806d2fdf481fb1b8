//! Image builds end to end: the SDK's test_images.py against a controlplane
//! that pushes to the test registry, a worker of the `build` pool that runs
//! the build containers (on the host network, to reach PyPI and the Debian
//! mirror) and a worker of the `default` pool that runs functions in the
//! built images.

mod common;

use common::fleet::{python_image, Worker};
use common::sdk::{controlplane, pytest};
use common::Backend;

#[tokio::test]
async fn images_are_built_once_on_the_build_pool_and_functions_run_in_them() {
    let image = python_image();
    let (registry, _) = image.split_once('/').expect("image has a registry");
    let cp = controlplane(
        Backend::Embedded,
        &[("LEVERS9_WORKER_IMAGE_REGISTRY", registry)],
    );
    let admin = cp.admin_token().await;
    let build = Worker::start(&cp, &admin, "build", "runc").await;
    let functions = Worker::start(&cp, &admin, "default", "runc").await;
    let _logs = WorkerLogsOnPanic(&build, &functions);
    pytest(
        &cp,
        &admin,
        "(printed below)",
        &["tests/test_images.py"],
        &[("LEVERS9_TEST_IMAGE_BUILDS", "1")],
    )
    .await;
}

/// Prints the workers' logs when the test fails: they are written while
/// pytest runs, after its failure message is made.
struct WorkerLogsOnPanic<'a>(&'a Worker, &'a Worker);

impl Drop for WorkerLogsOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- build worker ---\n{}\n--- function worker ---\n{}",
                self.0.log(),
                self.1.log()
            );
        }
    }
}
