//! Container runtimes: run one command in a fresh sandboxed container with
//! [`Runc`] (namespaces + cgroups + seccomp) or [`Runsc`] (gVisor: the same,
//! plus a user-space kernel between the code and the host).
//!
//! Both drive the runtime's command-line tool with a `config.json` generated
//! from a [`ContainerSpec`] (see `spec.rs`). Each container is run with the
//! foreground `run` verb as a child process whose stdout/stderr are our pipes:
//! the child's exit is the container's exit, the runtime needs no detached
//! shim, and nothing of ours has to guess when the container ended.
//!
//! Layout on disk, all under [`RuntimeConfig::state_dir`]:
//! `<state_dir>/<runtime>/` is the runtime's `--root` (its own state),
//! `<state_dir>/bundles/<id>/` the bundle (`config.json`, pid file).
//! Cgroups are named `<cgroup_prefix><id>` in every hierarchy, so a restarted
//! worker can find what a previous life left behind
//! ([`Runtime::reap_leftovers`]).
//!
//! Needs root and cgroups (tested on v1 hybrid; see `MACHINE-NOTES.md`).
//! [`ContainerFeed`] makes a [`Container`] with neither, for a stand-in
//! runtime in the tests of code that drives one.

mod cgroups;
mod container;
mod error;
mod exec;
mod feed;
mod logs;
mod oci_cli;
mod oci_runtime;
mod runc;
mod runsc;
mod seccomp;
mod security;
mod spec;
mod terminal;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;

pub use container::{Container, ExitWatch};
pub use error::RuntimeError;
pub use exec::{ExecProcess, ExecSpec};
pub use feed::ContainerFeed;
pub use logs::{LogChunk, LogHandle, Stream};
pub use oci_cli::{ExecTty, Flavor};
pub use oci_runtime::OciRuntime;
pub use runc::{Runc, RuncFlavor};
pub use runsc::{
    Runsc, RunscFlavor, RUNSC_MEMORY_OVERHEAD_MIB, RUNSC_PIDS_OVERHEAD, RUNSC_PLATFORM,
};
pub use security::{
    CapabilitySet, ProfileField, SeccompMode, SecurityProfile, HARDENED_MASKED_PATHS,
    USER_NAMESPACE_HOST_ID, USER_NAMESPACE_SIZE,
};
pub use terminal::{Terminal, WindowSize};

/// The id of every container here: parsed once where it comes in, so
/// holding one means it is safe as a file name, cgroup name and argument.
pub use levers9_ids::ContainerId;

/// What to run, and with which limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// Unique among this runtime's live containers.
    pub id: ContainerId,
    /// Root filesystem, a directory the caller prepared (not a symlink to
    /// one; it is canonicalized because runc rejects symlinked roots).
    pub rootfs: PathBuf,
    /// Command and its arguments; `args[0]` is looked up in `PATH`.
    pub args: Vec<String>,
    /// Environment. A default `PATH` is added when none is given.
    pub env: Vec<(String, String)>,
    /// Working directory inside the container.
    pub cwd: String,
    /// Hostname inside the container's UTS namespace.
    pub hostname: String,
    /// User and group the process runs as (0 = root, the default).
    pub uid: u32,
    /// See `uid`.
    pub gid: u32,
    /// cgroup limits of the user's code (runtime overheads are added on top,
    /// see [`Capabilities::memory_overhead_mib`]).
    pub resources: Resources,
    /// Extra bind mounts (volumes).
    pub mounts: Vec<BindMount>,
    /// Device nodes beyond the runtime's defaults (GPUs).
    pub devices: Vec<DeviceNode>,
    /// Size in MiB of a tmpfs mounted at `/tmp`; `None` leaves `/tmp` to the
    /// rootfs, unless the root is read-only: then the tmpfs is as large as
    /// the memory limit.
    pub tmp_mib: Option<u64>,
    /// Which network it has: none (the default), or an existing network
    /// namespace it joins.
    pub network: Network,
    /// Hardening: seccomp, capabilities, read-only root, user namespace.
    pub security: SecurityProfile,
}

impl ContainerSpec {
    /// A spec with defaults: cwd `/`, hostname = id, root, default
    /// [`Resources`], no mounts, no network, today's baseline
    /// [`SecurityProfile`].
    pub fn new(id: ContainerId, rootfs: impl Into<PathBuf>, args: Vec<String>) -> Self {
        ContainerSpec {
            hostname: id.to_string(),
            id,
            rootfs: rootfs.into(),
            args,
            env: Vec::new(),
            cwd: "/".into(),
            uid: 0,
            gid: 0,
            resources: Resources::default(),
            mounts: Vec::new(),
            devices: Vec::new(),
            tmp_mib: None,
            network: Network::None,
            security: SecurityProfile::default(),
        }
    }
}

/// cgroup limits. Memory has no swap (the swap limit equals the memory
/// limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// CPU the container is guaranteed, in thousandths of a core: its
    /// proportional shares (1024 per core), which decide under contention.
    pub cpu_millicores: u64,
    /// The most CPU it may use when the machine has idle CPU: quota =
    /// millicores × period / 1000. Below `cpu_millicores` (0 included) it
    /// is `cpu_millicores`.
    pub cpu_limit_millicores: u64,
    /// Memory limit in MiB (also the size of `/dev/shm`).
    pub memory_mib: u64,
    /// Maximum number of processes and threads.
    pub pids: u64,
}

impl Default for Resources {
    /// One core (guaranteed and at most), 512 MiB, 512 pids.
    fn default() -> Self {
        Resources {
            cpu_millicores: 1000,
            cpu_limit_millicores: 1000,
            memory_mib: 512,
            pids: 512,
        }
    }
}

/// A device node created in the container and allowed by its cgroup
/// (a GPU from a CDI spec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceNode {
    /// Path inside the container, e.g. `/dev/nvidia0`.
    pub path: String,
    /// `c` (character) or `b` (block).
    pub kind: String,
    /// Major number.
    pub major: i64,
    /// Minor number.
    pub minor: i64,
    /// Permission bits of the node.
    pub file_mode: u32,
}

/// A host directory or file bind-mounted into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindMount {
    /// Host path.
    pub source: PathBuf,
    /// Path inside the container.
    pub destination: String,
    /// Mount read-only.
    pub read_only: bool,
}

/// Network namespace of a container.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// A fresh network namespace with only a loopback device.
    #[default]
    None,
    /// Join an existing namespace, e.g. `/var/run/netns/x` (made by the
    /// caller, with its veth). On runsc this uses `--network=host`, i.e. the
    /// host kernel's stack confined to that namespace.
    Path(PathBuf),
}

/// What a runtime offers, so a scheduler can choose and size containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// `"runc"` or `"runsc"`.
    pub name: &'static str,
    /// User code runs against a user-space kernel (gVisor), not the host's.
    pub sandboxed: bool,
    /// [`SeccompMode::Default`] is enforced.
    pub supports_seccomp: bool,
    /// An OOM kill is reported as [`Exit::OomKilled`] (needs a memory cgroup
    /// whose counters we can read after the exit).
    pub detects_oom: bool,
    /// MiB added to the memory limit for the runtime's own processes, which
    /// share the container's cgroup.
    pub memory_overhead_mib: u64,
    /// Pids added to the pids limit, likewise.
    pub pids_overhead: u64,
    /// [`Network::Path`] is supported.
    pub supports_netns_path: bool,
}

/// How a container ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal. runc and runsc report a signal death as exit
    /// code 128+N, so an explicit `exit 137` is also reported as
    /// `Signal(9)`.
    Signal(i32),
    /// The memory cgroup recorded an OOM kill and the container did not exit
    /// with 0. (On runsc the whole sandbox is killed.) A container whose child
    /// was OOM-killed but which itself exited 0 reports `Code(0)`.
    OomKilled,
}

/// Resource usage of a running container, read from its cgroups. On runsc it
/// includes the sandbox's own processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// CPU time used so far.
    pub cpu: Duration,
    /// Memory in use now, in bytes.
    pub memory_bytes: u64,
}

/// Output kept per container unless [`RuntimeConfig::log_buffer_bytes`]
/// says otherwise: 1 MiB.
const DEFAULT_LOG_BUFFER_BYTES: usize = 1 << 20;

/// Where a runtime keeps its state and how it names things.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// The runtime's binary; `None` looks up `runc`/`runsc` in `PATH`.
    pub binary: Option<PathBuf>,
    /// Root of our state: `<state_dir>/<runtime>` is the runtime's `--root`,
    /// `<state_dir>/bundles/<id>` the bundles.
    pub state_dir: PathBuf,
    /// Prefix of our cgroup names (`<prefix><id>`); give each worker on a
    /// host its own, since [`Runtime::reap_leftovers`] removes them all.
    pub cgroup_prefix: String,
    /// Limit for each short runtime command (`kill`, `delete`, `list`).
    pub command_timeout: Duration,
    /// Limit from spawning `run` until the container's process exists.
    pub start_timeout: Duration,
    /// Bytes of output kept in memory per container (oldest dropped first).
    pub log_buffer_bytes: usize,
}

impl RuntimeConfig {
    /// Defaults: binary from `PATH`, prefix `levers9-`, 10 s per command,
    /// 30 s to start, 1 MiB of logs.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        RuntimeConfig {
            binary: None,
            state_dir: state_dir.into(),
            cgroup_prefix: "levers9-".into(),
            command_timeout: Duration::from_secs(10),
            start_timeout: Duration::from_secs(30),
            log_buffer_bytes: DEFAULT_LOG_BUFFER_BYTES,
        }
    }
}

/// Runs containers from a [`ContainerSpec`]: start, stop, clean up, exec,
/// usage. [`Runc`] and [`Runsc`] implement it (the worker's tests have a fake).
#[async_trait]
pub trait Runtime: Send + Sync {
    /// What this runtime offers.
    fn capabilities(&self) -> Capabilities;

    /// Starts a container and returns once its process exists. Output is
    /// captured from the start; the exit is reported by
    /// [`Container::wait`], after everything of the container was removed.
    async fn start(&self, spec: &ContainerSpec) -> Result<Container, RuntimeError>;

    /// Sends SIGTERM to every process of the container, then SIGKILL after
    /// `grace`, and waits (bounded) for it to end. Not running is not an
    /// error.
    async fn stop(&self, id: &ContainerId, grace: Duration) -> Result<(), RuntimeError>;

    /// Force-removes everything of a container: runtime state (killing it
    /// if it runs), cgroups, bundle. Idempotent.
    async fn cleanup(&self, id: &ContainerId) -> Result<(), RuntimeError>;

    /// Removes the containers, cgroups and bundles of a previous life of
    /// this runtime (same state dir and cgroup prefix) and returns their
    /// ids. Call it at startup, before starting containers: it removes
    /// everything it finds.
    async fn reap_leftovers(&self) -> Result<Vec<ContainerId>, RuntimeError>;

    /// Current resource usage of a running container.
    async fn usage(&self, id: &ContainerId) -> Result<Usage, RuntimeError>;

    /// Starts a further command in the running container `id`, its stdio
    /// piped. [`RuntimeError::NotRunning`] when the container is not
    /// running.
    async fn exec(&self, id: &ContainerId, spec: &ExecSpec) -> Result<ExecProcess, RuntimeError>;
}
