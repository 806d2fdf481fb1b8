//! Seccomp observe mode end to end on real runc: a container calls `sync`,
//! which the hardened rules only log in observe mode; the worker reads the
//! kernel's record and counts it. Needs root, runc and a static busybox
//! (`scripts/install-test-packages.sh`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use levers9_runtime::{ContainerSpec, Exit, Runc, Runtime, RuntimeConfig, SeccompMode, Stream};
use levers9_worker::security::{follow_seccomp_log, Check, SecurityMetrics};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observed_call_is_logged_and_counted_and_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rootfs = dir.path().join("rootfs");
    for d in ["bin", "proc", "sys", "dev", "tmp"] {
        std::fs::create_dir_all(rootfs.join(d)).expect("mkdir");
    }
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox")).expect("busybox");
    for applet in ["sh", "sync", "sleep", "echo"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).expect("link");
    }
    let mut config = RuntimeConfig::new(dir.path().join("state"));
    config.cgroup_prefix = format!("l9w-{}-", std::process::id());
    let metrics = SecurityMetrics::default();
    follow_seccomp_log(
        config.cgroup_prefix.clone(),
        "pool-x".into(),
        Arc::new(|_: &str| Some("stub-x".into())),
        metrics.clone(),
    );
    // The follower starts at the end of the log: let it get there first.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let runc = Runc::new(config);
    let mut spec = ContainerSpec::new(
        "observed",
        &rootfs,
        vec![
            "sh".into(),
            "-c".into(),
            "sync && echo synced; sleep 1".into(),
        ],
    );
    spec.security.seccomp = SeccompMode::Observe;
    let container = runc.start(&spec).await.expect("start");
    let exit = tokio::time::timeout(Duration::from_secs(20), container.wait())
        .await
        .expect("exits in time")
        .expect("exit");
    assert_eq!(exit, Exit::Code(0));
    assert_eq!(container.logs().text(Stream::Stdout), "synced\n", "allowed");

    let deadline = Instant::now() + Duration::from_secs(5);
    while metrics.count(Check::Seccomp, "observe", "pool-x") == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        metrics.count(Check::Seccomp, "observe", "pool-x") >= 1,
        "counted: {}",
        metrics.render()
    );
}
