//! Private registries end to end: a second `docker-registry` that asks for
//! htpasswd credentials, started by each test on a free loopback port with
//! the busybox test image copied in. Anonymous calls are refused; a worker
//! with `--registry-credentials` pulls and runs, one without fails naming
//! the registry; a controlplane with `LEVERS9_REGISTRY_CREDENTIALS_FILE`
//! resolves a private tag to its digest, one without is refused; and the
//! password is in no log and no process's command line meanwhile.

mod common;

use common::fleet::{busybox_image, python_image, Worker};
use common::registry::{http_get, http_status, CmdlineWatch, PrivateRegistry, REALM};
use common::{text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::image_service_client::ImageServiceClient;
use levers9_api::v1::{VerifyImageRequest, VerifyImageResponse};

#[tokio::test]
async fn workers_pull_private_images_only_with_their_credentials() {
    let registry = PrivateRegistry::start();
    let watch = CmdlineWatch::start(secrets(&registry));
    let address = registry.address.clone();

    let (status, head) = http_get(&address, "/v2/", None).expect("the registry answers");
    assert_eq!(status, 401, "anonymous /v2/ is refused: {head}");
    assert!(
        head.contains("Basic") && head.contains(&format!("realm=\"{REALM}\"")),
        "a Basic challenge: {head}"
    );
    let basic = format!("Basic {}", registry.basic_auth());
    assert_eq!(http_status(&address, "/v2/", Some(&basic)), Some(200));
    let private = registry.copy_in(&busybox_image(), "levers9/busybox", "v1");
    let (_, digest) = private.split_once('@').expect("by digest");
    let manifest = format!("/v2/levers9/busybox/manifests/{digest}");
    assert_eq!(http_status(&address, &manifest, None), Some(401));

    let cp = Controlplane::start(Backend::Embedded);
    let admin = cp.admin_token().await;

    // Side by side, by pool: a worker without credentials and one with the
    // registry's docker config JSON (0600).
    let anonymous = Worker::start(&cp, &admin, "default", "runc").await;
    let credentials = tempfile::tempdir().expect("dir");
    let file = registry.docker_config(credentials.path());
    let file_arg = file.display().to_string();
    let worker = worker_with(
        &cp,
        &admin,
        "private",
        &["--registry-credentials", &file_arg],
    )
    .await;

    // Without credentials the run fails, naming the registry.
    let out = cp.cli_as(
        &admin,
        &["container", "run", &private, "--", "echo", "never"],
        None,
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(125),
        "{stderr}\n{}",
        anonymous.log()
    );
    assert!(
        stderr.contains(&format!("registry {address} refused access"))
            && stderr.contains(&format!("check the credentials configured for {address}")),
        "the reason names the registry and its credentials: {stderr}"
    );
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));

    // With them, it runs.
    let out = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            "--pool",
            "private",
            &private,
            "--",
            "sh",
            "-c",
            "echo from a private registry; exit 4",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}\n{}",
        text(&out.stderr),
        worker.log()
    );
    assert_eq!(text(&out.stdout), "from a private registry\n");
    // By tag too: the worker resolves it with the same credentials.
    let tagged = format!("{address}/levers9/busybox:v1");
    let out = cp.cli_as(
        &admin,
        &[
            "container",
            "run",
            "--pool",
            "private",
            &tagged,
            "--",
            "true",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        worker.log()
    );

    let logs = [
        ("controlplane", cp.log()),
        ("worker without credentials", anonymous.log()),
        ("worker with credentials", worker.log()),
    ];
    assert_no_leaks(&registry, watch, &logs);
}

#[tokio::test]
async fn the_controlplane_resolves_private_tags_only_with_its_credentials_file() {
    let registry = PrivateRegistry::start();
    let watch = CmdlineWatch::start(secrets(&registry));
    let address = registry.address.clone();
    let private = registry.copy_in(&busybox_image(), "levers9/busybox", "v2");
    let by_tag = spec(&format!("{address}/levers9/busybox:v2"));
    // Built images live there too, so every image call of the controlplane
    // goes to the private registry.
    let env = |extra: &[(&str, String)]| {
        let mut env = common::backend_env(Backend::Embedded);
        env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
        env.push(("LEVERS9_WORKER_IMAGE_REGISTRY".into(), address.clone()));
        env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        env
    };

    let anonymous = Controlplane::start_with(env(&[]));
    let admin = anonymous.admin_token().await;
    let refused = verify(&anonymous, &admin, &by_tag)
        .await
        .expect_err("the registry refuses an anonymous controlplane");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition, "{refused}");
    assert!(
        refused
            .message()
            .contains(&format!("registry {address} refused"))
            && refused
                .message()
                .contains("imageService.registryCredentialsFile"),
        "the refusal names the registry and the setting: {}",
        refused.message()
    );

    // A wrong password is refused the same way, and not repeated.
    let wrong = tempfile::tempdir().expect("dir");
    let wrong_password = format!("wrong-{}", registry.password);
    let wrong_file = registry.docker_config_with_password(wrong.path(), &wrong_password);
    let misconfigured = Controlplane::start_with(env(&[(
        "LEVERS9_REGISTRY_CREDENTIALS_FILE",
        wrong_file.display().to_string(),
    )]));
    let admin = misconfigured.admin_token().await;
    let refused = verify(&misconfigured, &admin, &by_tag)
        .await
        .expect_err("the registry refuses a wrong password");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition, "{refused}");
    assert!(
        refused
            .message()
            .contains(&format!("registry {address} refused"))
            && !refused.message().contains(&wrong_password),
        "{}",
        refused.message()
    );
    assert!(!misconfigured.log().contains(&wrong_password));

    let credentials = tempfile::tempdir().expect("dir");
    let file = registry.docker_config(credentials.path());
    let cp = Controlplane::start_with(env(&[(
        "LEVERS9_REGISTRY_CREDENTIALS_FILE",
        file.display().to_string(),
    )]));
    let admin = cp.admin_token().await;
    let resolved = verify(&cp, &admin, &by_tag)
        .await
        .unwrap_or_else(|e| panic!("tag resolution failed: {e}\n{}", cp.log()));
    assert!(!resolved.exists, "nothing was built: {resolved:?}");
    // An image id is the hash of the spec with its base resolved to a
    // digest: the tag's id is the id of the digest the tag points at.
    let pinned = verify(&cp, &admin, &spec(&private))
        .await
        .expect("resolve by digest");
    assert_eq!(
        resolved.image_id, pinned.image_id,
        "{address}/levers9/busybox:v2 resolved to {private}"
    );
    let other = registry.copy_in(&busybox_image(), "levers9/other", "v2");
    assert_ne!(
        verify(&cp, &admin, &spec(&format!("{address}/levers9/other:v2")))
            .await
            .expect("resolve another repository")
            .image_id,
        resolved.image_id,
        "another repository ({other}) is another base"
    );
    cp.wait_for_log(
        "registry credentials loaded",
        std::time::Duration::from_secs(5),
    )
    .await;

    let logs = [
        ("controlplane without credentials", anonymous.log()),
        ("controlplane with a wrong password", misconfigured.log()),
        ("controlplane with credentials", cp.log()),
    ];
    assert_no_leaks(&registry, watch, &logs);
}

/// A build on a private registry: its base image is a private tag the
/// controlplane resolves, the build worker pulls it with its credentials,
/// the builder pushes the built layers there with the credentials it gets
/// in `LEVERS9_REGISTRY_AUTH`, and a worker with credentials runs the
/// result. The build log the user sees holds no credential either.
#[tokio::test]
async fn an_image_builds_from_and_into_a_private_registry() {
    let registry = PrivateRegistry::start();
    let watch = CmdlineWatch::start(secrets(&registry));
    let address = registry.address.clone();
    registry.copy_in(&python_image(), "levers9/python", "3.11");
    let credentials = tempfile::tempdir().expect("dir");
    let file = registry.docker_config(credentials.path());
    let mut env = common::backend_env(Backend::Embedded);
    for (k, v) in [
        ("LEVERS9_BOOTSTRAP_SECRET", SECRET.to_owned()),
        ("LEVERS9_BASE_IMAGE_REGISTRY", address.clone()),
        ("LEVERS9_BASE_IMAGE", "levers9/python:3.11".to_owned()),
        ("LEVERS9_WORKER_IMAGE_REGISTRY", address.clone()),
        (
            "LEVERS9_REGISTRY_CREDENTIALS_FILE",
            file.display().to_string(),
        ),
    ] {
        env.push((k.into(), v));
    }
    let cp = Controlplane::start_with(env);
    let admin = cp.admin_token().await;
    let file_arg = file.display().to_string();
    let with_credentials = ["--registry-credentials", file_arg.as_str()];
    let build = worker_with(&cp, &admin, "build", &with_credentials).await;
    let runner = worker_with(&cp, &admin, "default", &with_credentials).await;

    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos()
    );
    let dir = tempfile::tempdir().expect("dir");
    let app = dir.path().join("app.py");
    std::fs::write(
        &app,
        format!(
            "from levers9 import Image\n\nIMAGE = Image().add_commands([\"echo {nonce} > /nonce\"])\n"
        ),
    )
    .expect("write app");
    let python = std::env::var("LEVERS9_TEST_PYTHON").expect("LEVERS9_TEST_PYTHON");
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let out = cp.cli(
        home.path(),
        &["image", "build", &format!("{}::IMAGE", app.display())],
        &[
            ("LEVERS9_TOKEN", admin.as_str()),
            ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
            ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
            ("LEVERS9_PYTHON", python.as_str()),
        ],
        None,
    );
    let (built, build_log) = (text(&out.stdout).trim().to_owned(), text(&out.stderr));
    assert!(
        out.status.success(),
        "the build failed: {build_log}\n--- controlplane ---\n{}\n--- build worker ---\n{}",
        cp.log(),
        build.log()
    );
    assert!(
        built.starts_with(&format!("{address}/")) && built.contains("@sha256:"),
        "built into the private registry: {built}"
    );
    let (repository, digest) = built[address.len()..].split_once('@').expect("by digest");
    let manifest = format!("/v2{repository}/manifests/{digest}");
    assert_eq!(http_status(&address, &manifest, None), Some(401));
    let basic = format!("Basic {}", registry.basic_auth());
    assert_eq!(http_status(&address, &manifest, Some(&basic)), Some(200));

    let out = cp.cli_as(
        &admin,
        &["container", "run", &built, "--", "cat", "/nonce"],
        None,
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        runner.log()
    );
    assert_eq!(text(&out.stdout).trim(), nonce);

    let logs = [
        ("controlplane", cp.log()),
        ("build worker", build.log()),
        ("worker", runner.log()),
        ("build output", build_log),
    ];
    // The build container's bundle (its config.json holds the
    // credentials while it runs) goes once it has exited.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let on_disk = files_holding(build.state_dir.path(), &secrets(&registry));
        if on_disk.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the build worker's state dir keeps the credentials after the build: {on_disk:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_no_leaks(&registry, watch, &logs);
}

/// A runc worker of `pool` started with `extra` arguments, once listed.
async fn worker_with(cp: &Controlplane, admin: &str, pool: &str, extra: &[&str]) -> Worker {
    let state = tempfile::Builder::new()
        .prefix("l9w-")
        .tempdir()
        .expect("state dir");
    let (worker, worker_id) = Worker::spawn_in(cp, admin, pool, "runc", state, extra).await;
    worker.wait_listed(cp, admin, &worker_id).await;
    worker
}

/// The watch is not blind: a process with a needle in its arguments is
/// found (and the needle masked in the report).
#[test]
fn the_cmdline_watch_finds_a_secret_argument() {
    let needle = format!("l9-needle-{}", std::process::id());
    let watch = CmdlineWatch::start(vec![needle.clone()]);
    let mut child = std::process::Command::new("sh")
        .args(["-c", "read line", &needle])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sh runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while watch.found().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    let (found, _) = watch.finish();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("<SECRET>") && !found[0].contains(&needle),
        "{found:?}"
    );
}

/// The files under `dir` (symbolic links not followed) that hold a needle.
fn files_holding(dir: &std::path::Path, needles: &[String]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let Ok(bytes) = std::fs::read(entry.path()) else {
                    continue;
                };
                let content = String::from_utf8_lossy(&bytes);
                if needles.iter().any(|n| content.contains(n.as_str())) {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

/// An image spec of no steps on `base`.
fn spec(base: &str) -> String {
    serde_json::json!({ "base_image": base }).to_string()
}

async fn verify(
    cp: &Controlplane,
    token: &str,
    spec: &str,
) -> Result<VerifyImageResponse, tonic::Status> {
    ImageServiceClient::new(cp.channel().await)
        .verify_image(with_token(
            VerifyImageRequest {
                spec: spec.to_owned(),
            },
            token,
        ))
        .await
        .map(tonic::Response::into_inner)
}

/// The password and the `auth` value that carries it.
fn secrets(registry: &PrivateRegistry) -> Vec<String> {
    vec![registry.password.clone(), registry.basic_auth()]
}

/// Neither the password nor its base64 form is in these logs, nor was in
/// any process's command line while the test ran.
fn assert_no_leaks(registry: &PrivateRegistry, watch: CmdlineWatch, logs: &[(&str, String)]) {
    for (name, log) in logs {
        assert!(!log.is_empty(), "the {name} wrote a log");
        for secret in secrets(registry) {
            assert!(
                !log.contains(&secret),
                "the {name}'s log holds the registry credentials"
            );
        }
    }
    let (found, scans) = watch.finish();
    assert!(scans > 0, "/proc was never scanned");
    assert!(
        found.is_empty(),
        "command lines held the registry credentials: {found:#?}"
    );
}
