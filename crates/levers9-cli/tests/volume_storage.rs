//! Volumes of a workspace with storage credentials of its own, on real
//! JuiceFS over the test S3 server: its files land in its bucket (its own
//! file system, metadata in tables of its own in Postgres), a workspace
//! without credentials stays on the shared file system and sees none of
//! them, set-again credentials are what new mounts use (wrong ones fail
//! the call naming the volume and what to do), a worker's dead mount of a
//! workspace's file system is replaced, and no juicefs process shows a
//! key.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::fleet::Worker;
use common::juicefs::{
    app, cli_ok, controlplane, juicefs_processes, kill_mount_and_wait, ok, required,
    write_on_a_read_on_b, MetaRedis, MountCleanup,
};
use common::{text, with_token, Controlplane};
use futures::TryStreamExt;
use levers9_api::v1::{CreateWorkspaceRequest, GetWorkspaceRequest};
use object_store::aws::AmazonS3Builder;
use object_store::ObjectStore;

/// A fresh Postgres database for the workspaces' file systems, as a
/// JuiceFS metadata URL.
fn workspace_meta_url() -> String {
    let admin = required("LEVERS9_TEST_DATABASE_URL");
    let name = format!("l9jfs_{}_{}", std::process::id(), common::free_port());
    let created = Command::new("psql")
        .args([
            admin.as_str(),
            "-q",
            "-c",
            &format!("CREATE DATABASE {name}"),
        ])
        .output()
        .expect("psql runs");
    assert!(created.status.success(), "create database: {created:?}");
    let server = admin.rsplit_once('/').expect("url has a database").0;
    format!("{server}/{name}?sslmode=disable")
}

/// Sets the caller's workspace's storage: the test S3 server, `bucket`,
/// its access key and `secret_key` (from stdin).
fn set_storage(cp: &Controlplane, token: &str, bucket: &str, secret_key: &str) {
    let out = cp.cli_as(
        token,
        &[
            "workspace",
            "storage",
            "set",
            "--endpoint",
            &required("LEVERS9_TEST_S3_ENDPOINT"),
            "--bucket",
            bucket,
            "--access-key-id",
            &required("LEVERS9_TEST_S3_ACCESS_KEY_ID"),
        ],
        Some(secret_key),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The keys of the objects of `bucket` under `prefix`.
async fn objects(bucket: &str, prefix: &str) -> Vec<String> {
    let store = AmazonS3Builder::new()
        .with_endpoint(required("LEVERS9_TEST_S3_ENDPOINT"))
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_access_key_id(required("LEVERS9_TEST_S3_ACCESS_KEY_ID"))
        .with_secret_access_key(required("LEVERS9_TEST_S3_SECRET_ACCESS_KEY"))
        .with_allow_http(true)
        .build()
        .expect("an S3 client");
    let prefix = object_store::path::Path::from(prefix);
    store
        .list(Some(&prefix))
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .expect("list the bucket")
}

#[tokio::test]
async fn a_workspace_with_its_own_storage_keeps_its_volumes_in_its_bucket() {
    let redis = MetaRedis::start();
    let mut juicefs = redis.juicefs_env(5);
    juicefs.push((
        "LEVERS9_JUICEFS_WORKSPACE_META_URL".into(),
        workspace_meta_url(),
    ));
    let fs_name = juicefs
        .iter()
        .find(|(k, _)| k == "LEVERS9_JUICEFS_NAME")
        .map(|(_, v)| v.clone())
        .expect("a file system name");
    let cp = controlplane(juicefs.clone());
    let admin = cp.admin_token().await;
    let a = Worker::start_with_env(&cp, &admin, "a", &juicefs).await;
    let b = Worker::start_with_env(&cp, &admin, "b", &juicefs).await;
    let c = Worker::start_with_env(&cp, &admin, "c", &juicefs).await;
    let _cleanup = MountCleanup(vec![
        cp.dir.path().to_owned(),
        a.state_dir.path().to_owned(),
        b.state_dir.path().to_owned(),
        c.state_dir.path().to_owned(),
    ]);
    let logs = || {
        format!(
            "--- controlplane ---\n{}\n--- worker a ---\n{}\n--- worker b ---\n{}\n--- worker c ---\n{}",
            cp.log(),
            a.log(),
            b.log(),
            c.log()
        )
    };
    let workspace_a = cp
        .workspaces()
        .await
        .get_workspace(with_token(GetWorkspaceRequest {}, &admin))
        .await
        .expect("get workspace")
        .into_inner()
        .workspace
        .expect("a workspace")
        .id;

    // Workspace A brings its own bucket: its volume, and a file written on
    // worker a and read back on worker b, live there.
    let bucket_a = format!("l9ws-a-{}", std::process::id());
    let secret = required("LEVERS9_TEST_S3_SECRET_ACCESS_KEY");
    set_storage(&cp, &admin, &bucket_a, &secret);
    cli_ok(&cp, &admin, &["volume", "create", "shared"]);
    write_on_a_read_on_b(&cp, &admin, &logs);
    let listed = cli_ok(&cp, &admin, &["volume", "ls", "shared"]);
    assert!(listed.contains("hello.txt"), "{listed}");
    let chunks = objects(&bucket_a, &format!("{fs_name}/chunks")).await;
    assert!(!chunks.is_empty(), "no data in A's bucket\n{}", logs());
    let shared_root = cp.dir.path().join("data/juicefs/mnt/workspaces");
    assert!(
        !shared_root.join(&workspace_a).exists(),
        "A's volumes are in the shared file system"
    );

    // Workspace B has no credentials: the shared file system, where A's
    // file is not.
    let created = cp
        .workspaces()
        .await
        .create_workspace(with_token(
            CreateWorkspaceRequest { name: "b".into() },
            &admin,
        ))
        .await
        .expect("create workspace")
        .into_inner();
    let other = created.admin_token;
    let workspace_b = created.workspace.expect("a workspace").id;
    cli_ok(&cp, &other, &["volume", "create", "shared"]);
    assert_eq!(
        ok(app(&cp, &other, "listing", "[]"), &logs),
        serde_json::json!([])
    );
    assert_eq!(
        ok(
            app(&cp, &other, "write_text", r#"["b.txt", "from b"]"#),
            &logs
        ),
        6
    );
    assert!(shared_root
        .join(&workspace_b)
        .join("shared/b.txt")
        .is_file());
    assert_eq!(
        ok(app(&cp, &admin, "listing", "[]"), &logs),
        serde_json::json!(["hello.txt"])
    );

    // No juicefs process (shared and workspace mounts, controlplane and
    // workers) shows a key or the metadata password.
    let owned: Vec<PathBuf> = vec![
        cp.dir.path().to_owned(),
        a.state_dir.path().to_owned(),
        b.state_dir.path().to_owned(),
    ];
    let dirs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    let processes = juicefs_processes(&dirs);
    let workspace_mounts = processes
        .iter()
        .filter(|(_, cmdline)| cmdline.contains(&format!("/workspaces/{workspace_a}/")))
        .count();
    assert!(
        workspace_mounts >= 3,
        "A's file system mounted by the controlplane and both workers: {processes:?}"
    );
    for (pid, cmdline) in &processes {
        for key in [
            secret.as_str(),
            &required("LEVERS9_TEST_S3_ACCESS_KEY_ID"),
            &redis.password,
        ] {
            assert!(!cmdline.contains(key), "pid {pid} shows a key: {cmdline}");
        }
    }

    // Worker b's mount of A's file system dies: b lets it go and replaces
    // its warm container, whose next start mounts A's file system again
    // with the keys its run request brings.
    kill_mount_and_wait(
        &b,
        &format!("/workspaces/{workspace_a}/"),
        "stopping a container whose volume mount died",
    )
    .await;
    assert_eq!(
        ok(app(&cp, &admin, "read_text", r#"["hello.txt"]"#), &logs),
        "from a"
    );

    // Set again with a wrong key: the next mount (worker c's first
    // container) uses it, and the call says which volume and what to do.
    let wrong = "not-the-secret-key-0123456789";
    set_storage(&cp, &admin, &bucket_a, wrong);
    let failed = app(&cp, &admin, "read_on_c", r#"["hello.txt"]"#);
    let message = failed["error"]
        .as_str()
        .unwrap_or_else(|| panic!("a wrong key mounted: {failed}\n{}", logs()));
    assert!(
        message.contains(r#"cannot mount volume "shared": the workspace's storage"#)
            && message.contains(&bucket_a)
            && message.contains("SignatureDoesNotMatch")
            && message.contains("levers9 workspace storage set"),
        "{message}\n{}",
        logs()
    );
    assert!(!message.contains(wrong), "{message}");

    // The right key again: worker c mounts with it and reads A's file.
    set_storage(&cp, &admin, &bucket_a, &secret);
    assert_eq!(
        ok(app(&cp, &admin, "read_on_c", r#"["hello.txt"]"#), &logs),
        "from a"
    );
    for log in [cp.log(), a.log(), b.log(), c.log()] {
        assert!(!log.contains(&secret) && !log.contains(wrong));
    }
    drop((a, b, c));
}
