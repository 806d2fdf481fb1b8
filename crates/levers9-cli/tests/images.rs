//! Image builds end to end: the SDK's test_images.py against a controlplane
//! that pushes to the test registry, a worker of the `build` pool that runs
//! the build containers (on the host network, to reach PyPI and the Debian
//! mirror) and a worker of the `default` pool that runs functions in the
//! built images.

mod common;

use common::fleet::{python_image, Worker};
use common::sdk::{controlplane, pytest};
use common::{text, Backend, Controlplane};

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
    cli_builds_lists_shows_and_removes(&cp, &admin);
}

#[tokio::test]
async fn a_build_past_its_timeout_is_stopped_and_fails() {
    let image = python_image();
    let (registry, _) = image.split_once('/').expect("image has a registry");
    let cp = controlplane(
        Backend::Embedded,
        &[
            ("LEVERS9_WORKER_IMAGE_REGISTRY", registry),
            ("LEVERS9_IMAGE_BUILD_TIMEOUT_SECONDS", "8"),
        ],
    );
    let admin = cp.admin_token().await;
    let build = Worker::start(&cp, &admin, "build", "runc").await;
    pytest(
        &cp,
        &admin,
        &build.log(),
        &["tests/test_images.py", "-k", "timeout"],
        &[
            ("LEVERS9_TEST_IMAGE_BUILDS", "1"),
            ("LEVERS9_TEST_SHORT_BUILD_TIMEOUT", "8"),
        ],
    )
    .await;
}

/// `levers9 image build | list | show | rm` on an image the SDK tests built.
fn cli_builds_lists_shows_and_removes(cp: &Controlplane, admin: &str) {
    let python = std::env::var("LEVERS9_TEST_PYTHON").expect("LEVERS9_TEST_PYTHON");
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let env = [
        ("LEVERS9_TOKEN", admin),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ("LEVERS9_PYTHON", python.as_str()),
    ];
    let app = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sdk/python/tests/images_app.py::PRUNED"
    );
    let cli = |args: &[&str]| {
        let out = cp.cli(home.path(), args, &env, None);
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let (ok, reference, stderr) = cli(&["image", "build", app]);
    assert!(ok, "image build failed: {stderr}");
    let reference = reference.trim().to_owned();
    assert!(reference.contains("/images@sha256:"), "{reference}");
    assert!(
        stderr.contains("built already"),
        "the SDK tests built it: {stderr}"
    );
    let (ok, list, stderr) = cli(&["image", "list"]);
    assert!(ok, "image list failed: {stderr}");
    let id = list
        .lines()
        .skip(1)
        .filter_map(|row| row.split_whitespace().next())
        .find(|id| cli(&["image", "show", id]).1.contains(&reference))
        .unwrap_or_else(|| panic!("{reference} is not listed:\n{list}"))
        .to_owned();
    let (_, shown, _) = cli(&["image", "show", &id]);
    assert!(
        shown.contains("APP_MODE") && shown.contains("sha256:"),
        "{shown}"
    );
    let (ok, _, stderr) = cli(&["image", "rm", &id]);
    assert!(ok, "image rm failed: {stderr}");
    let (ok, _, stderr) = cli(&["image", "show", &id]);
    assert!(!ok && stderr.contains("levers9 image list"), "{stderr}");
    // Gone, so built again: from its last built step on.
    let (ok, again, stderr) = cli(&["image", "build", app]);
    assert!(
        ok && again.contains("/images@sha256:"),
        "rebuild failed: {stderr}"
    );
    assert!(
        stderr.contains("built already: starting after them"),
        "{stderr}"
    );
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
