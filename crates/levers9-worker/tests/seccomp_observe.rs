//! Seccomp observe mode end to end on real runc: a container calls `sync`,
//! which the hardened rules only log in observe mode; the worker reads the
//! kernel's record and counts it. Needs root, runc and a static busybox
//! (`scripts/install-test-packages.sh`).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use levers9_runtime::{ContainerId, ContainerSpec, Exit, SeccompMode};
use levers9_worker::security::{follow_seccomp_log, Check, SecurityMetrics};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observed_call_is_logged_and_counted_and_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rootfs = common::busybox_rootfs(dir.path(), "rootfs", &["sh", "sync", "sleep", "echo"]);
    let prefix = format!("l9w-{}-", std::process::id());
    let metrics = SecurityMetrics::default();
    let following = follow_seccomp_log(
        prefix.clone(),
        "pool-x".into(),
        Arc::new(|id: &ContainerId| Some((id.clone(), "stub-x".into()))),
        metrics.clone(),
    );
    // The follower starts at the end of the log: the call must come after.
    let at_end = tokio::time::timeout(Duration::from_secs(30), following.at_end())
        .await
        .expect("the follower reached the end of the kernel log within 30 s");
    assert!(at_end, "cannot follow /dev/kmsg (the test runs as root)");

    let runc = common::runc(dir.path(), &prefix);
    let mut spec = ContainerSpec::new(
        ContainerId::parse("observed").expect("a valid container id"),
        &rootfs,
        vec![
            "sh".into(),
            "-c".into(),
            "sync && echo synced; sleep 1".into(),
        ],
    );
    spec.security.seccomp = SeccompMode::Observe;
    let (exit, out) = common::run(&runc, &spec).await;
    assert_eq!(exit, Exit::Code(0));
    assert_eq!(out, "synced\n", "allowed");

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
