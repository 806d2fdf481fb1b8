//! Workers started without storage settings of their own (as Kubernetes
//! Jobs, machine and cluster agents are) mount the volumes' JuiceFS file
//! system the controlplane hands them when they attach, on real JuiceFS
//! over the test S3 server with its metadata in a Redis that wants a
//! password; a worker with settings of its own keeps them; no process list
//! or log shows a secret of those settings.

mod common;

use std::path::{Path, PathBuf};

use common::fleet::Worker;
use common::juicefs::{
    app, cli_ok, controlplane, juicefs_processes, required, write_on_a_read_on_b, MetaRedis,
    MountCleanup,
};

/// The one `storage.juicefs` key a worker keeps of its own whatever it is
/// sent: where its image has the binary (the worker image has it on PATH).
fn binary_only() -> Vec<(String, String)> {
    vec![(
        "LEVERS9_JUICEFS_BINARY".into(),
        required("LEVERS9_TEST_JUICEFS"),
    )]
}

#[tokio::test]
async fn workers_without_storage_settings_mount_the_controlplanes_file_system() {
    let redis = MetaRedis::start();
    let juicefs = redis.juicefs_env(3);
    let cp = controlplane(juicefs.clone());
    let admin = cp.admin_token().await;
    let a = Worker::start_with_env(&cp, &admin, "a", &binary_only()).await;
    let b = Worker::start_with_env(&cp, &admin, "b", &binary_only()).await;
    let _cleanup = MountCleanup(vec![
        cp.dir.path().to_owned(),
        a.state_dir.path().to_owned(),
        b.state_dir.path().to_owned(),
    ]);
    let logs = || {
        format!(
            "--- controlplane ---\n{}\n--- worker a ---\n{}\n--- worker b ---\n{}",
            cp.log(),
            a.log(),
            b.log()
        )
    };

    cli_ok(&cp, &admin, &["volume", "create", "shared"]);
    // Written in a function's container on worker a, read in one on
    // worker b: both bound the volume from the file system they were sent.
    write_on_a_read_on_b(&cp, &admin, &logs);
    // The controlplane's own mount has the file: the workers wrote into
    // its file system, not into a directory of their own.
    let listed = cli_ok(&cp, &admin, &["volume", "ls", "shared"]);
    assert!(listed.contains("hello.txt"), "{listed}\n{}", logs());
    for worker in [&a, &b] {
        assert!(
            worker
                .log()
                .contains("volumes from the controlplane's storage settings"),
            "{}",
            worker.log()
        );
        let dir = worker.state_dir.path();
        let mounts = juicefs_processes(&[dir]);
        assert!(
            mounts.iter().any(|(_, cmdline)| cmdline.contains(" mount ")
                && cmdline.contains(&*dir.join("juicefs/mnt").to_string_lossy())),
            "the worker mounts it under its state dir: {mounts:?}"
        );
    }

    // A worker with settings of its own keeps them, even wrong ones: its
    // metadata password is refused and the call says so.
    let wrong: Vec<(String, String)> = juicefs
        .iter()
        .map(|(k, v)| (k.clone(), v.replace(&redis.password, "not-the-password")))
        .collect();
    let c = Worker::start_with_env(&cp, &admin, "c", &wrong).await;
    let _cleanup_c = MountCleanup(vec![c.state_dir.path().to_owned()]);
    let failed = app(&cp, &admin, "read_on_c", r#"["hello.txt"]"#);
    let message = failed["error"].as_str().unwrap_or_else(|| {
        panic!(
            "a worker with its own settings took the controlplane's: {failed}\n{}",
            c.log()
        )
    });
    assert!(message.contains("WRONGPASS"), "{message}\n{}", c.log());
    assert!(
        !c.log()
            .contains("volumes from the controlplane's storage settings"),
        "{}",
        c.log()
    );

    // The settings held the metadata password and the bucket keys: no
    // juicefs process shows them, and no log line of anyone has them.
    let secrets = [
        redis.password.clone(),
        required("LEVERS9_TEST_S3_SECRET_ACCESS_KEY"),
        required("LEVERS9_TEST_S3_ACCESS_KEY_ID"),
    ];
    let owned = [
        cp.dir.path().to_owned(),
        a.state_dir.path().to_owned(),
        b.state_dir.path().to_owned(),
    ];
    let dirs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    let processes = juicefs_processes(&dirs);
    assert!(processes.len() >= 3, "{processes:?}");
    for (pid, cmdline) in &processes {
        for secret in &secrets {
            assert!(
                !cmdline.contains(secret.as_str()),
                "/proc/{pid}/cmdline shows a secret: {cmdline}"
            );
        }
    }
    let all_logs = logs();
    for secret in &secrets {
        assert!(
            !all_logs.contains(secret.as_str()),
            "a log shows a secret of the storage settings"
        );
    }
    drop(c);
}
