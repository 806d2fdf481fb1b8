//! Helpers for the worker's tests on real runc: a busybox root filesystem
//! and a runtime with a private state dir and cgroup prefix. Needs root,
//! runc and a static busybox (`scripts/install-test-packages.sh`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use levers9_runtime::{ContainerSpec, Exit, Runc, Runtime, RuntimeConfig, Stream};

/// A busybox root filesystem under `dir` with `applets` linked.
pub fn busybox_rootfs(dir: &Path, name: &str, applets: &[&str]) -> PathBuf {
    let rootfs = dir.join(name);
    for d in ["bin", "proc", "sys", "dev", "tmp"] {
        std::fs::create_dir_all(rootfs.join(d)).expect("mkdir");
    }
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox")).expect("busybox");
    for applet in applets {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).expect("link");
    }
    rootfs
}

/// runc with its state under `dir` and cgroups named `<prefix><id>`.
pub fn runc(dir: &Path, prefix: &str) -> Runc {
    let mut config = RuntimeConfig::new(dir.join("state"));
    config.cgroup_prefix = prefix.to_owned();
    Runc::new(config)
}

/// Runs `spec` to its end; its exit and standard output.
pub async fn run(runc: &Runc, spec: &ContainerSpec) -> (Exit, String) {
    let container = runc.start(spec).await.expect("start");
    let exit = tokio::time::timeout(Duration::from_secs(20), container.wait())
        .await
        .expect("exits in time")
        .expect("exit");
    (exit, container.logs().text(Stream::Stdout))
}
