//! Volumes end to end on real JuiceFS over the test S3 server, with its
//! metadata in a Redis that wants a password: functions on two workers
//! share files, workspaces are kept apart, `volume cp` moves a 200 MB file
//! both ways, and no juicefs process shows a password or key.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fleet::Worker;
use common::juicefs::{
    app, cli_ok, controlplane, juicefs_processes, kill_mount_and_wait, ok, required,
    write_on_a_read_on_b, MetaRedis, MountCleanup,
};
use common::{backend_env, text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::CreateWorkspaceRequest;

#[tokio::test]
async fn functions_on_two_workers_share_a_volume_that_other_workspaces_cannot_reach() {
    let redis = MetaRedis::start();
    let juicefs = redis.juicefs_env(1);
    let mut cp = controlplane(juicefs.clone());
    let admin = cp.admin_token().await;
    let mut a = Worker::start_with_env(&cp, &admin, "a", &juicefs).await;
    let mut b = Worker::start_with_env(&cp, &admin, "b", &juicefs).await;
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
    // Written on worker a (pool a), read on worker b (pool b).
    write_on_a_read_on_b(&cp, &admin, &logs);

    // Concurrent writers of different files on a, each read back on b.
    let written = ok(
        app(&cp, &admin, "write_blobs", "[0, 1, 2, 3, 4, 5, 6, 7]"),
        &logs,
    );
    let written = written.as_array().expect("a list").clone();
    assert_eq!(written.len(), 8);
    for (i, sha) in written.iter().enumerate() {
        let read = ok(
            app(&cp, &admin, "sha256_of", &format!(r#"["blob-{i}.bin"]"#)),
            &logs,
        );
        assert_eq!(&read, sha, "blob-{i}.bin");
    }
    let listed = cli_ok(&cp, &admin, &["volume", "ls", "shared"]);
    assert!(
        listed.contains("hello.txt") && listed.contains("blob-7.bin"),
        "{listed}"
    );

    // A worker whose metadata password is wrong cannot mount: the call
    // fails naming the volume and the cause, without the password.
    let wrong: Vec<(String, String)> = juicefs
        .iter()
        .map(|(k, v)| (k.clone(), v.replace(&redis.password, "not-the-password")))
        .collect();
    let c = Worker::start_with_env(&cp, &admin, "c", &wrong).await;
    let failed = app(&cp, &admin, "read_on_c", r#"["hello.txt"]"#);
    let message = failed["error"].as_str().unwrap_or_else(|| {
        panic!("a worker without the metadata password read the volume: {failed}")
    });
    assert!(
        message.contains(r#"cannot mount volume "shared": juicefs format failed"#)
            && message.contains("WRONGPASS"),
        "{message}\n{}",
        c.log()
    );
    assert!(!message.contains("not-the-password"), "{message}");
    drop(c);

    // Another workspace: no volume of that name, and its own volume of
    // the same name is empty.
    let other = cp
        .workspaces()
        .await
        .create_workspace(with_token(
            CreateWorkspaceRequest {
                name: "other".into(),
            },
            &admin,
        ))
        .await
        .expect("create workspace")
        .into_inner()
        .admin_token;
    let refused = app(&cp, &other, "read_text", r#"["hello.txt"]"#);
    let message = refused["error"]
        .as_str()
        .unwrap_or_else(|| panic!("workspace B read A's volume: {refused}"));
    assert!(
        message.contains(r#"volume "shared" does not exist in this workspace"#),
        "{message}"
    );
    let out = cp.cli_as(&other, &["volume", "ls", "shared"], None);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    cli_ok(&cp, &other, &["volume", "create", "shared"]);
    assert_eq!(
        ok(app(&cp, &other, "listing", "[]"), &logs),
        serde_json::json!([])
    );

    // Every juicefs process (the controlplane's and both workers' mounts)
    // shows neither the metadata password nor a bucket key.
    let owned = [
        cp.dir.path().to_owned(),
        a.state_dir.path().to_owned(),
        b.state_dir.path().to_owned(),
    ];
    let dirs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    let processes = juicefs_processes(&dirs);
    assert!(
        processes.len() >= 3,
        "three mounts, one per process: {processes:?}"
    );
    let secrets = [
        redis.password.clone(),
        required("LEVERS9_TEST_S3_SECRET_ACCESS_KEY"),
        required("LEVERS9_TEST_S3_ACCESS_KEY_ID"),
    ];
    for (pid, cmdline) in &processes {
        assert!(
            cmdline.contains("--no-usage-report") || !cmdline.contains(" mount "),
            "{cmdline}"
        );
        for secret in &secrets {
            assert!(
                !cmdline.contains(secret.as_str()),
                "/proc/{pid}/cmdline shows a secret: {cmdline}"
            );
        }
    }

    // Worker b's juicefs dies: the worker mounts it again and replaces
    // its warm container, so the next call reads through a live mount
    // rather than a dead or empty directory.
    kill_mount_and_wait(
        &b,
        "/juicefs/mnt",
        "stopping a container whose volume mount died",
    )
    .await;
    assert_eq!(
        ok(app(&cp, &admin, "read_text", r#"["hello.txt"]"#), &logs),
        "from a"
    );
    assert!(b.log().contains("mounting it again"), "{}", b.log());

    // Workers and the controlplane unmount on their way out.
    a.terminate();
    b.terminate();
    cp.terminate();
    let left = juicefs_processes(&dirs);
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let still: Vec<&str> = mounts
        .lines()
        .filter(|l| dirs.iter().any(|d| l.contains(&*d.to_string_lossy())))
        .collect();
    assert!(still.is_empty(), "still mounted after stopping: {still:?}");
    // A daemon may take a moment to exit after its unmount.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !juicefs_processes(&dirs).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        juicefs_processes(&dirs).is_empty(),
        "juicefs still running: {left:?}"
    );
}

fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    let mut file = std::fs::File::open(path).expect("open");
    std::io::copy(&mut file, &mut hash).expect("read");
    hex::encode(hash.finalize())
}

/// 200 MB of bytes that do not compress (a xorshift stream).
fn write_random_file(path: &Path, bytes: usize) {
    use std::io::Write;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..bytes / block.len() {
        for word in block.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        file.write_all(&block).expect("write");
    }
}

#[tokio::test]
async fn a_200_mb_file_round_trips_through_volume_cp_with_its_sha256() {
    let redis = MetaRedis::start();
    let mut all = backend_env(Backend::Embedded);
    all.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    all.extend(redis.juicefs_env(2));
    let mut cp = Controlplane::start_with(all);
    let _cleanup = MountCleanup(vec![cp.dir.path().to_owned()]);
    let admin = cp.admin_token().await;
    let files = tempfile::tempdir().expect("dir");
    let original = files.path().join("big.bin");
    write_random_file(&original, 200 << 20);
    let sha = sha256_file(&original);

    cli_ok(&cp, &admin, &["volume", "create", "data"]);
    // An upload killed part way keeps what arrived; the next run resumes.
    let home = tempfile::tempdir().expect("home");
    let mut first = Command::new(common::BIN)
        .args(["volume", "cp", &original.to_string_lossy(), "data:/in/"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("LEVERS9_TOKEN", &admin)
        .env("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
        .env("LEVERS9_CONTROLPLANE_PORT", cp.grpc_port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn levers9 volume cp");
    let workspaces = cp.dir.path().join("data/juicefs/mnt/workspaces");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let held = std::fs::read_dir(&workspaces)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|ws| {
                std::fs::metadata(ws.path().join("data/in/.levers9-upload.big.bin")).ok()
            })
            .map(|m| m.len())
            .max()
            .unwrap_or(0);
        if held >= 20 << 20 {
            break;
        }
        assert!(Instant::now() < deadline, "the upload never got 20 MiB in");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = first.kill();
    let _ = first.wait();
    let said = cli_ok(
        &cp,
        &admin,
        &["volume", "cp", &original.to_string_lossy(), "data:/in/"],
    );
    assert!(said.contains("resuming at"), "{said}");
    assert!(said.contains(&format!("sha256 {sha}")), "{said}");
    let listed = cli_ok(&cp, &admin, &["volume", "ls", "data", "in"]);
    assert!(
        listed.contains("in/big.bin") && listed.contains("209715200"),
        "{listed}"
    );
    let back = files.path().join("back.bin");
    cli_ok(
        &cp,
        &admin,
        &["volume", "cp", "data:/in/big.bin", &back.to_string_lossy()],
    );
    assert_eq!(sha256_file(&back), sha);

    // A download cut short resumes from its part file.
    let part = files.path().join("again.bin.levers9-part");
    std::fs::write(
        &part,
        &std::fs::read(&original).expect("read")[..(50 << 20)],
    )
    .expect("part");
    let again = files.path().join("again.bin");
    let said = cli_ok(
        &cp,
        &admin,
        &["volume", "cp", "data:in/big.bin", &again.to_string_lossy()],
    );
    assert!(said.contains("resuming at 50.0 MiB"), "{said}");
    assert_eq!(sha256_file(&again), sha);
    assert!(!part.exists());

    cli_ok(&cp, &admin, &["volume", "rm", "data", "in/big.bin"]);
    cli_ok(&cp, &admin, &["volume", "delete", "data"]);
    let listed = cli_ok(&cp, &admin, &["volume", "list"]);
    assert!(!listed.contains("data"), "{listed}");
    cp.terminate();
}

#[tokio::test]
async fn a_wrong_bucket_key_stops_the_controlplane_with_a_clear_error() {
    let redis = MetaRedis::start();
    let wrong_key = "wrong-secret-key-0123456789";
    let mut env: Vec<(String, String)> = redis
        .juicefs_env(3)
        .into_iter()
        .filter(|(k, _)| k != "LEVERS9_JUICEFS_SECRET_KEY")
        .collect();
    env.push(("LEVERS9_JUICEFS_SECRET_KEY".into(), wrong_key.into()));
    let mut cp = Controlplane::spawn_with(env);
    let _cleanup = MountCleanup(vec![cp.dir.path().to_owned()]);
    let log = cp.wait_exit(Duration::from_secs(120));
    assert!(
        log.contains("storage.juicefs: juicefs format failed"),
        "{log}"
    );
    assert!(log.contains("SignatureDoesNotMatch"), "{log}");
    assert!(
        !log.contains(wrong_key) && !log.contains(&redis.password),
        "{log}"
    );
}

#[tokio::test]
async fn without_juicefs_volumes_are_local_directories_with_the_same_api() {
    let volumes = tempfile::tempdir().expect("volumes");
    let local = vec![(
        "LEVERS9_VOLUMES_LOCAL_DIR".to_owned(),
        volumes.path().display().to_string(),
    )];
    let cp = controlplane(local.clone());
    let admin = cp.admin_token().await;
    let a = Worker::start_with_env(&cp, &admin, "a", &local).await;
    let b = Worker::start_with_env(&cp, &admin, "b", &local).await;
    let logs = || format!("{}\n{}\n{}", cp.log(), a.log(), b.log());
    cli_ok(&cp, &admin, &["volume", "create", "shared"]);
    assert_eq!(
        ok(
            app(&cp, &admin, "write_text", r#"["local.txt", "on disk"]"#),
            &logs
        ),
        7
    );
    assert_eq!(
        ok(app(&cp, &admin, "read_text", r#"["local.txt"]"#), &logs),
        "on disk"
    );
    let files = tempfile::tempdir().expect("dir");
    let back = files.path().join("local.txt");
    cli_ok(
        &cp,
        &admin,
        &["volume", "cp", "shared:local.txt", &back.to_string_lossy()],
    );
    assert_eq!(std::fs::read_to_string(&back).expect("read"), "on disk");

    // The REST mapping lists the same volumes.
    let listed = reqwest::Client::new()
        .get(cp.http("/api/v1/controlplane/volumes"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("GET volumes");
    assert_eq!(listed.status(), 200);
    let body: serde_json::Value = listed.json().await.expect("json");
    assert_eq!(body, serde_json::json!({"names": ["shared"]}));
}
