//! Helpers for the integration tests: a busybox rootfs, a runtime with a
//! private state dir and cgroup prefix, and a check for leftovers.
//!
//! The tests need root, cgroups, `runc`, `runsc` and a static busybox
//! (`scripts/install-test-packages.sh`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use levers9_runtime::{
    ContainerId, ContainerSpec, Exit, Runc, Runsc, Runtime, RuntimeConfig, Stream,
};

/// Applets linked into the test rootfs.
const APPLETS: &[&str] = &[
    "sh", "echo", "cat", "sleep", "yes", "dd", "head", "mkdir", "seq", "true", "false", "env",
    "pwd", "id", "hostname", "unshare", "grep", "ls", "wc", "ps", "stty", "tty",
];

/// One `#[tokio::test]` per runtime for an `async fn(Harness)`.
macro_rules! on_both {
    ($check:ident) => {
        mod $check {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn runc() {
                super::$check(Harness::new(Kind::Runc)).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn runsc() {
                super::$check(Harness::new(Kind::Runsc)).await
            }
        }
    };
}

/// Which runtime a check runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Runc,
    Runsc,
}

/// A runtime with its own temp state dir and cgroup prefix.
pub struct Harness {
    pub kind: Kind,
    pub rt: Arc<dyn Runtime>,
    pub config: RuntimeConfig,
    pub dir: tempfile::TempDir,
    rootfs_count: AtomicU32,
}

fn make(kind: Kind, config: RuntimeConfig) -> Arc<dyn Runtime> {
    match kind {
        Kind::Runc => Arc::new(Runc::new(config)),
        Kind::Runsc => Arc::new(Runsc::new(config)),
    }
}

impl Harness {
    pub fn new(kind: Kind) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = RuntimeConfig::new(dir.path().join("state"));
        config.cgroup_prefix = format!(
            "l9t-{}-{}-",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Harness {
            kind,
            rt: make(kind, config.clone()),
            config,
            dir,
            rootfs_count: AtomicU32::new(0),
        }
    }

    /// A fresh instance of the same runtime (a restarted worker).
    pub fn another_instance(&self) -> Arc<dyn Runtime> {
        make(self.kind, self.config.clone())
    }

    /// A new busybox rootfs: bin/busybox and applet links, empty proc, sys,
    /// dev, tmp, etc.
    pub fn rootfs(&self) -> PathBuf {
        let n = self.rootfs_count.fetch_add(1, Ordering::Relaxed);
        let root = self.dir.path().join(format!("rootfs{n}"));
        for d in ["bin", "proc", "sys", "dev", "tmp", "etc"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir rootfs");
        }
        std::fs::copy("/bin/busybox", root.join("bin/busybox")).expect("copy busybox");
        for applet in APPLETS {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).expect("symlink");
        }
        root
    }

    /// A spec running `args` in a new rootfs.
    pub fn spec(&self, id: &str, args: &[&str]) -> ContainerSpec {
        ContainerSpec::new(
            self::id(id),
            self.rootfs(),
            args.iter().map(|a| a.to_string()).collect(),
        )
    }

    fn binary(&self) -> &'static str {
        match self.kind {
            Kind::Runc => "runc",
            Kind::Runsc => "runsc",
        }
    }

    /// What is left of container `id`: runtime state, cgroup directories,
    /// bundle. Empty when clean.
    pub fn leftovers(&self, id: &str) -> Vec<String> {
        let mut left = Vec::new();
        let root = self.config.state_dir.join(self.binary());
        let out = std::process::Command::new(self.binary())
            .arg("--root")
            .arg(&root)
            .arg("list")
            .output()
            .expect("runtime list");
        // A table with the id first (runsc has no `-q`).
        let listed = String::from_utf8_lossy(&out.stdout);
        if listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(id))
        {
            left.push(format!("{} list: {id}", self.binary()));
        }
        let cgroup = format!("{}{id}", self.config.cgroup_prefix);
        find_dirs(Path::new("/sys/fs/cgroup"), &cgroup, 4, &mut left);
        let bundle = self.config.state_dir.join("bundles").join(id);
        if bundle.exists() {
            left.push(bundle.display().to_string());
        }
        left
    }
}

impl Drop for Harness {
    /// Best effort: remove whatever a failed test left.
    fn drop(&mut self) {
        let rt = self.another_instance();
        let _ = std::thread::spawn(move || {
            let Ok(tokio) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let _ = tokio.block_on(rt.reap_leftovers());
        })
        .join();
    }
}

/// Directories named `name` under `dir`, at most `depth` levels down.
fn find_dirs(dir: &Path, name: &str, depth: u32, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        if entry.file_name().to_string_lossy() == name {
            found.push(path.display().to_string());
        } else if depth > 1 {
            find_dirs(&path, name, depth - 1, found);
        }
    }
}

/// Whether host process `pid` is gone (or a zombie).
/// A container id a test names.
pub fn id(id: &str) -> ContainerId {
    ContainerId::parse(id).expect("a valid container id")
}

pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// Polls `f` until true or `limit` passed.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Generous bound for a short container's whole life.
pub const LIFE: Duration = Duration::from_secs(20);

pub async fn run_to_exit(h: &Harness, spec: &ContainerSpec) -> (Exit, String, String) {
    let c = h.rt.start(spec).await.expect("start");
    let exit = tokio::time::timeout(LIFE, c.wait())
        .await
        .expect("exits in time")
        .expect("exit reported");
    (
        exit,
        c.logs().text(Stream::Stdout),
        c.logs().text(Stream::Stderr),
    )
}
