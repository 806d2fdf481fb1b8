//! Objects marked `compile`: compiled once per image in a container of
//! their own, the copy used by the containers after the first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use levers9_api::v1::{ObjectMount, RunContainer};
use levers9_image::Digest;
use levers9_runtime::{BindMount, ContainerSpec, Exit, Network, SecurityProfile};

use super::harness::{env_of, harness, request, Harness, IMAGE};
use crate::fake_runtime::Call;
use crate::supervisor::compiled::compile_id;

const SDK: &str = "/levers9/sdk";

/// The object's digest, unpacked in the harness's cache with one module.
fn sdk_object(h: &Harness) -> (String, PathBuf) {
    let hex = "a".repeat(64);
    let plain = h.dir.path().join("objects/unpacked").join(&hex);
    std::fs::create_dir_all(plain.join("levers9")).expect("unpacked");
    std::fs::write(plain.join("levers9/m.py"), "X = 1\n").expect("module");
    (format!("sha256:{hex}"), plain)
}

fn with_sdk(id: &str, digest: &str) -> RunContainer {
    RunContainer {
        objects: vec![ObjectMount {
            digest: digest.to_owned(),
            target: SDK.into(),
            unpack: true,
            compile: true,
        }],
        ..request(id)
    }
}

fn sdk_mount(spec: &ContainerSpec) -> &BindMount {
    spec.mounts
        .iter()
        .find(|m| m.destination == SDK)
        .expect("the SDK is mounted")
}

fn compiles(calls: &[Call]) -> Vec<ContainerSpec> {
    calls
        .iter()
        .filter_map(|call| match call {
            Call::Start(spec) if spec.id.as_str().starts_with("pyc-") => Some((**spec).clone()),
            _ => None,
        })
        .collect()
}

async fn until_exists(path: &Path, exists: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while path.exists() != exists {
        assert!(
            Instant::now() < deadline,
            "{} exists: {}",
            path.display(),
            !exists
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn the_sdk_is_compiled_once_per_image_in_a_bare_container_and_later_containers_mount_the_copy(
) {
    let mut h = harness();
    let (digest, plain) = sdk_object(&h);
    let mut first = with_sdk("c1", &digest);
    first.env.insert("SECRET_ENV".into(), "kept out".into());
    h.start(first).await;
    assert_eq!(sdk_mount(&h.spec_of("c1")).source, plain, "no copy yet");
    h.runtime
        .until("the compile", |calls| !compiles(calls).is_empty())
        .await;

    let compile = compiles(&h.runtime.calls()).remove(0);
    let target = SDK.to_owned();
    assert_eq!(
        compile.args,
        [
            "python3",
            "-I",
            "-m",
            "compileall",
            "-q",
            "--invalidation-mode",
            "unchecked-hash",
            &target
        ]
    );
    assert_eq!(
        env_of(&compile, "PATH"),
        ["/bin"],
        "the image's own environment"
    );
    assert!(
        env_of(&compile, "SECRET_ENV").is_empty(),
        "none of the request's"
    );
    assert_eq!(compile.network, Network::None);
    assert_eq!(
        compile.security,
        crate::security::SecurityPolicy::default()
            .profile
            .tightened_by(&SecurityProfile::hardened())
    );
    let copy = sdk_mount(&compile).clone();
    assert!(!copy.read_only && copy.source != plain, "{copy:?}");
    assert!(
        copy.source.join("levers9/m.py").is_file(),
        "the sources are copied"
    );

    // What python3 would write, and what a hostile interpreter might.
    std::fs::create_dir(copy.source.join("levers9/__pycache__")).expect("pycache");
    std::fs::write(
        copy.source.join("levers9/__pycache__/m.cpython-311.pyc"),
        b"pyc",
    )
    .expect("pyc");
    std::os::unix::fs::symlink("/etc/passwd", copy.source.join("levers9/link")).expect("link");
    h.runtime.exit(compile.id.as_str(), Exit::Code(0));
    let ready = h.dir.path().join("state/compiled").join(format!(
        "{}-{}",
        "a".repeat(64),
        Digest::of(IMAGE.as_bytes()).hex()
    ));
    until_exists(&ready, true).await;
    assert!(ready
        .join("levers9/__pycache__/m.cpython-311.pyc")
        .is_file());
    assert!(
        std::fs::symlink_metadata(ready.join("levers9/link")).is_err(),
        "only plain files and directories are kept"
    );
    assert!(
        !h.prepared().contains(compile.id.as_str()),
        "its root filesystem is released"
    );

    h.start(with_sdk("c2", &digest)).await;
    let mount = sdk_mount(&h.spec_of("c2")).clone();
    assert_eq!((mount.source, mount.read_only), (ready, true));
    assert_eq!(compiles(&h.runtime.calls()).len(), 1, "compiled once");
}

#[tokio::test]
async fn a_failed_compile_is_not_tried_again_and_containers_keep_the_plain_sdk() {
    let mut h = harness();
    let (digest, plain) = sdk_object(&h);
    h.start(with_sdk("c1", &digest)).await;
    h.runtime
        .until("the compile", |calls| !compiles(calls).is_empty())
        .await;
    let compile = compiles(&h.runtime.calls()).remove(0);
    let staging = sdk_mount(&compile).source.clone();
    h.runtime.exit(compile.id.as_str(), Exit::Code(1));
    until_exists(&staging, false).await;

    h.start(with_sdk("c2", &digest)).await;
    assert_eq!(sdk_mount(&h.spec_of("c2")).source, plain);
    assert_eq!(compiles(&h.runtime.calls()).len(), 1, "not tried again");
}

#[tokio::test]
async fn objects_not_marked_compile_are_mounted_as_they_are() {
    let mut h = harness();
    let (digest, plain) = sdk_object(&h);
    let mut run = with_sdk("c1", &digest);
    run.objects[0].compile = false;
    h.start(run).await;
    assert_eq!(sdk_mount(&h.spec_of("c1")).source, plain);
    h.assert_no_more_reports().await;
    assert!(compiles(&h.runtime.calls()).is_empty());
}

#[test]
fn compile_ids_fit_the_runtime_and_tell_two_images_of_one_sdk_apart() {
    let sdk = "a".repeat(64);
    let (one, two) = (
        compile_id(&format!("{sdk}-{}", "1".repeat(64))).unwrap(),
        compile_id(&format!("{sdk}-{}", "2".repeat(64))).unwrap(),
    );
    assert_ne!(one, two);
    assert!(one.as_str().len() <= 64, "{one}");
}
