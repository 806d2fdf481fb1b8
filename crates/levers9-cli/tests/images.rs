//! Image builds end to end: the SDK's test_images.py against a controlplane
//! that pushes to the test registry, a worker of the `build` pool that runs
//! the build containers (on the host network, to reach PyPI and the Debian
//! mirror) and a worker of the `default` pool that runs functions in the
//! built images. Builds deduplicated across two controlplane replicas on
//! Postgres and Redis, and a push refused by a read-only registry.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::fleet::{python_image, Worker};
use common::sdk::{controlplane, pytest};
use common::{
    backend_env, free_port, objects_bucket_env, text, with_token, Backend, Controlplane, SECRET,
};
use levers9_api::v1::ListContainersRequest;

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
        // The timeout test runs on a stack of its own, below.
        &[
            "tests/test_images.py",
            "-k",
            "not test_a_build_past_its_timeout_is_stopped_and_fails",
        ],
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

/// Two controlplane replicas on one Postgres and Redis, each asked at once
/// for the same new spec: one build container runs, the other replica
/// follows it, and both callers get the image.
#[tokio::test]
async fn identical_builds_on_two_replicas_run_once() {
    let (first, second) = replicas();
    let admin = first.admin_token().await;
    let _build = Worker::start(&first, &admin, "build", "runc").await;
    let dir = tempfile::tempdir().expect("dir");
    let app = slow_app(dir.path());
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| image_build(&first, &admin, &app));
        let b = s.spawn(|| image_build(&second, &admin, &app));
        (a.join().expect("first"), b.join().expect("second"))
    });
    let logs = || {
        format!(
            "--- first ---\n{}\n--- second ---\n{}",
            first.log(),
            second.log()
        )
    };
    for (ok, _, stderr) in [&a, &b] {
        assert!(ok, "image build failed: {stderr}\n{}", logs());
    }
    assert_eq!(a.1.trim(), b.1.trim(), "both get the same image");
    assert!(
        [&a.2, &b.2]
            .iter()
            .any(|e| e.contains("waiting for the build of image")
                && e.contains("on another replica")),
        "one caller followed the other replica's build:\n{}\n---\n{}",
        a.2,
        b.2
    );
    let containers = first
        .containers()
        .await
        .list_containers(with_token(ListContainersRequest {}, &admin))
        .await
        .expect("list containers")
        .into_inner()
        .containers;
    let builds: Vec<_> = containers
        .iter()
        .filter(|c| c.args.iter().any(|a| a == "levers9.builder"))
        .collect();
    assert_eq!(builds.len(), 1, "one build container: {builds:?}");
}

/// The replica building an image dies (SIGKILL) while another waits for
/// it: the lease expires, the waiting replica takes it over and its caller
/// gets the image.
#[tokio::test]
async fn a_build_outlives_the_replica_that_started_it() {
    let (first, second) = replicas();
    let admin = first.admin_token().await;
    // The worker talks to the replica that stays.
    let _build = Worker::start(&second, &admin, "build", "runc").await;
    let dir = tempfile::tempdir().expect("dir");
    let app = slow_app(dir.path());
    std::thread::scope(|s| {
        let started = s.spawn(|| image_build(&first, &admin, &app));
        logged(&first, "image build started");
        let follower = s.spawn(|| image_build(&second, &admin, &app));
        // Killed only once the second replica follows the build, so the
        // test is about taking over a lease, not about a second build.
        logged(&second, "following the build on another replica");
        let pid = first.pid().to_string();
        let killed = Command::new("kill").args(["-KILL", &pid]).status();
        assert!(killed.is_ok_and(|s| s.success()), "kill the first replica");
        let _ = started.join();
        let (ok, reference, stderr) = follower.join().expect("follower");
        assert!(ok, "the follower got no image: {stderr}\n{}", second.log());
        assert!(reference.contains("/images@sha256:"), "{reference}");
        assert!(
            stderr.contains("on another replica"),
            "it waited for the first replica: {stderr}"
        );
    });
}

/// Waits (two minutes at most) until `cp` has logged `line`.
fn logged(cp: &Controlplane, line: &str) {
    for _ in 0..1200 {
        if cp.log().contains(line) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the controlplane never logged {line:?}:\n{}", cp.log());
}

/// Two controlplane replicas on one fresh Postgres database, Redis prefix
/// and objects bucket prefix, pushing images to the test registry. The
/// bucket is what the docs ask of replicas: a build container started by
/// one replica fetches its objects through the other, which holds the
/// worker's stream.
fn replicas() -> (Controlplane, Controlplane) {
    let image = python_image();
    let (registry, name) = image.split_once('/').expect("image has a registry");
    let mut env = backend_env(Backend::Servers);
    env.extend(objects_bucket_env("image-replicas"));
    for (k, v) in [
        ("LEVERS9_BOOTSTRAP_SECRET", SECRET),
        ("LEVERS9_BASE_IMAGE_REGISTRY", registry),
        ("LEVERS9_BASE_IMAGE", name),
        ("LEVERS9_WORKER_IMAGE_REGISTRY", registry),
    ] {
        env.push((k.into(), v.into()));
    }
    (
        Controlplane::start_with(env.clone()),
        Controlplane::start_with(env),
    )
}

/// An app whose image has a step of its own (never built before) that lasts
/// long enough for a second request to find the first one's build running.
fn slow_app(dir: &Path) -> String {
    app(
        dir,
        &format!(
            "Image().add_commands([\"python3 -c 'import time; time.sleep(8)'\", \"echo {} > /nonce\"])",
            nonce()
        ),
    )
}

/// A `worker.imageRegistry` that refuses pushes (a read-only registry on
/// the test registry's storage, so look-ups work): the build fails with the
/// registry and its answer, and no credential.
#[tokio::test]
async fn a_refused_push_names_the_registry_and_its_answer() {
    let read_only = ReadOnlyRegistry::start();
    let cp = controlplane(
        Backend::Embedded,
        &[("LEVERS9_WORKER_IMAGE_REGISTRY", &read_only.address)],
    );
    let admin = cp.admin_token().await;
    let build = Worker::start(&cp, &admin, "build", "runc").await;
    let dir = tempfile::tempdir().expect("dir");
    let app = app(
        dir.path(),
        &format!("Image().add_commands([\"echo {} > /nonce\"])", nonce()),
    );
    let (ok, _, stderr) = image_build(&cp, &admin, &app);
    assert!(!ok, "the push cannot succeed: {stderr}\n{}", build.log());
    assert!(
        stderr.contains(&format!("registry {}", read_only.address))
            && stderr.contains("answered 405"),
        "the error names the registry and its answer: {stderr}\n{}",
        build.log()
    );
    assert!(
        !stderr.contains(&admin) && !stderr.contains(SECRET),
        "no credential in the error: {stderr}"
    );
}

/// `docker-registry` serving the test registry's storage read-only.
struct ReadOnlyRegistry {
    child: Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl ReadOnlyRegistry {
    fn start() -> Self {
        let storage = std::env::var("LEVERS9_TEST_REGISTRY_DIR")
            .expect("LEVERS9_TEST_REGISTRY_DIR (run under scripts/test-servers.sh)");
        let address = format!("127.0.0.1:{}", free_port());
        let dir = tempfile::tempdir().expect("dir");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog: {{level: warn}}\nstorage:\n  filesystem: {{rootdirectory: {storage}}}\n  \
                 maintenance: {{readonly: {{enabled: true}}}}\nhttp: {{addr: {address}}}\n"
            ),
        )
        .expect("write registry config");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry runs");
        // Built before the wait, so a registry that never answers is
        // stopped (on drop) too.
        let registry = Self {
            child,
            address,
            _dir: dir,
        };
        for _ in 0..100 {
            if std::net::TcpStream::connect(&registry.address).is_ok() {
                return registry;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the read-only registry does not answer at {}",
            registry.address
        );
    }
}

impl Drop for ReadOnlyRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A distinct value, so a spec that holds it was never built.
fn nonce() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("{nanos}-{}", std::process::id())
}

/// Writes an app whose `IMAGE` is `expression`; returns `FILE::IMAGE`.
fn app(dir: &Path, expression: &str) -> String {
    let file = dir.join("app.py");
    std::fs::write(
        &file,
        format!("from levers9 import Image\n\nIMAGE = {expression}\n"),
    )
    .expect("write app");
    format!("{}::IMAGE", file.display())
}

/// `levers9 image build SPEC`: success, stdout, stderr.
fn image_build(cp: &Controlplane, token: &str, spec: &str) -> (bool, String, String) {
    cli(cp, token, &["image", "build", spec])
}

/// `levers9 ARGS` with the SDK's test Python: success, stdout, stderr.
fn cli(cp: &Controlplane, token: &str, args: &[&str]) -> (bool, String, String) {
    let python = std::env::var("LEVERS9_TEST_PYTHON").expect("LEVERS9_TEST_PYTHON");
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let env = [
        ("LEVERS9_TOKEN", token),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ("LEVERS9_PYTHON", python.as_str()),
    ];
    let out = cp.cli(home.path(), args, &env, None);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `levers9 image build | list | show | rm` on an image the SDK tests built.
fn cli_builds_lists_shows_and_removes(cp: &Controlplane, admin: &str) {
    let app = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sdk/python/tests/images_app.py::PRUNED"
    );
    let cli = |args: &[&str]| cli(cp, admin, args);
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
