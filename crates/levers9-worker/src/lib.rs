//! The levers9 worker: it dials out to the controlplane and keeps one stream
//! open (registering, heartbeating, reporting container events and output),
//! and runs the containers it is sent with runc or gVisor from images pulled
//! by digest. Containers keep running while the controlplane is away; the
//! worker reconnects with backoff and reports them again.
#![forbid(unsafe_code)]

mod capacity;
pub mod cdi;
mod container_server;
mod drain;
mod exec;
#[cfg(test)]
mod fake_runtime;
mod metrics;
mod objects;
pub mod security;
mod session;
mod settings;
mod storage_settings;
mod supervisor;
#[cfg(test)]
mod test_log;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use levers9_ids::ContainerId;
use levers9_image::{ImageStore, ImageStoreConfig};
use levers9_runtime::{Runc, Runsc, Runtime, RuntimeConfig};
use tokio::sync::watch;

pub use capacity::{detect_capacity, detect_gpus, Capacity};
#[doc(hidden)]
pub use container_server::fuzzing;
pub use container_server::{
    BindError, ContainerServer, InitError, RunnerOutcome, ServerAuth, StopContainer,
    CREDENTIAL_VARIABLE, MAX_BODY_BYTES, MAX_HEADER_BYTES,
};
pub use levers9_image::RegistryCredentials;
pub use objects::{GrpcObjectSource, GrpcSourceError, ObjectCache, ObjectError, ObjectSource};
pub use supervisor::{SpareOptions, Supervisor, SupervisorOptions};

/// Which runtime runs the containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    /// runc: namespaces and cgroups.
    Runc,
    /// gVisor's runsc: a user-space kernel in between.
    Gvisor,
}

impl RuntimeKind {
    /// The name the controlplane and users see.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Runc => "runc",
            RuntimeKind::Gvisor => "gvisor",
        }
    }
}

/// Everything a worker needs to run.
#[derive(Clone)]
pub struct WorkerOptions {
    /// The controlplane: its address, whether TLS is used, the CA to trust.
    pub controlplane: levers9_api::dial::Controlplane,
    /// A worker (or admin) token.
    pub token: String,
    /// The pool it serves.
    pub pool: String,
    /// Stable for the life of this process.
    pub worker_id: String,
    /// Reported to users.
    pub hostname: String,
    /// What it offers.
    pub capacity: Capacity,
    /// runc or gVisor.
    pub runtime: RuntimeKind,
    /// Runtime state, bundles and the image cache live under it.
    pub state_dir: PathBuf,
    /// Registries reached over plain HTTP (loopback ones always are).
    pub insecure_registries: Vec<String>,
    /// Size bound of the image layer cache.
    pub image_cache_bytes: u64,
    /// Credentials per registry host; anonymous for the others.
    pub registry_credentials: std::collections::HashMap<String, RegistryCredentials>,
    /// The `worker.*` configuration: the hardening keys are read from it.
    pub config: levers9_config::WorkerConfig,
    /// Whether `pool` is an attached cluster's, which takes the worker-wide
    /// hardening values (see [`security`]).
    pub pool_origin: security::PoolOrigin,
    /// Where to serve `/metrics`; `None` serves nothing.
    pub metrics_address: Option<SocketAddr>,
    /// On stop, how long running containers get to finish before they are
    /// stopped and their inputs handed back (0: stop them at once).
    pub drain_grace: Duration,
    /// The workspaces' volumes (JuiceFS or a local directory), until the
    /// controlplane's file system replaces them (see [`Self::storage`]).
    pub volumes: levers9_volumes::Volumes,
    /// The worker's own `storage` section: whether it says where volumes
    /// live, in which case the controlplane's `storage.juicefs` is not
    /// taken, and its JuiceFS `cacheSizeMib` and `binary`, which are.
    pub storage: levers9_config::StorageConfig,
}

impl std::fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("controlplane", &self.controlplane)
            .field("token", &"<redacted>")
            .field("pool", &self.pool)
            .field("worker_id", &self.worker_id)
            .field("runtime", &self.runtime)
            .field("pool_origin", &self.pool_origin)
            .field("metrics_address", &self.metrics_address)
            .field("drain_grace", &self.drain_grace)
            .field("volumes", &self.volumes.location())
            .finish()
    }
}

/// Why the worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The image cache could not be opened.
    #[error("cannot open the image cache: {0}")]
    Images(#[from] levers9_image::ImageError),
    /// The runtime could not clean up after a previous life.
    #[error("cannot clean up containers of a previous run: {0}")]
    Runtime(#[from] levers9_runtime::RuntimeError),
    /// The controlplane address is not a URL.
    #[error("invalid controlplane address {0:?}")]
    Address(String),
    /// The client for objects could not be set up.
    #[error("{0}")]
    ObjectSource(#[from] GrpcSourceError),
    /// The object cache could not be opened.
    #[error("cannot open the object cache: {0}")]
    Objects(#[from] ObjectError),
    /// The metrics address could not be bound.
    #[error("cannot serve metrics on {address}: {source}")]
    Metrics {
        /// The `--metrics-address` it was given.
        address: SocketAddr,
        /// Why the bind failed (in use, not a local address).
        source: std::io::Error,
    },
    /// Leftovers of a previous run could not be removed.
    #[error("cannot clear {path} of a previous run: {source}")]
    RunDir {
        /// The directory of container servers or of spares.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

/// How often a worker checks that its JuiceFS mount is alive.
const VOLUME_CHECK: Duration = Duration::from_secs(5);

/// Runs the worker until `stopped` turns true: cleans up what a previous
/// run left, then keeps a session with the controlplane, reconnecting with
/// backoff. On `stopped` it drains (see [`WorkerOptions::drain_grace`])
/// and stops what still runs.
pub async fn run(
    options: WorkerOptions,
    stopped: watch::Receiver<bool>,
) -> Result<(), WorkerError> {
    let mut runtime_config = RuntimeConfig::new(options.state_dir.join("runtime"));
    // Reaping removes every cgroup with the prefix. One prefix per process
    // would make a crashed run's leftovers unfindable, one per host would
    // reap the containers of other workers on it: one per state dir finds
    // exactly this worker's.
    runtime_config.cgroup_prefix = cgroup_prefix(&options.state_dir);
    let container_cgroups = runtime_config.cgroup_prefix.clone();
    let runtime: Arc<dyn Runtime> = match options.runtime {
        RuntimeKind::Runc => Arc::new(Runc::new(runtime_config)),
        RuntimeKind::Gvisor => Arc::new(Runsc::new(runtime_config)),
    };
    let reaped = runtime.reap_leftovers().await?;
    if !reaped.is_empty() {
        tracing::info!(
            count = reaped.len(),
            "removed containers left by a previous run"
        );
    }
    let mut image_config = ImageStoreConfig::new(options.state_dir.join("images"));
    image_config.insecure_registries = options.insecure_registries.clone();
    image_config.max_cache_bytes = options.image_cache_bytes;
    image_config.credentials = options.registry_credentials.clone();
    let images = ImageStore::open(image_config)?;
    // The containers those servers (and spares' code directories)
    // belonged to were reaped above.
    for leftover in ["run", "spares"] {
        let path = options.state_dir.join(leftover);
        match std::fs::remove_dir_all(&path) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                return Err(WorkerError::RunDir { path, source })
            }
            _ => {}
        }
    }
    let security =
        security::SecurityPolicy::resolve(&options.config, &options.pool, options.pool_origin);
    log_security(&options, &security);
    let metrics = security::SecurityMetrics::default();
    if let Some(address) = options.metrics_address {
        let bound = metrics::serve(address, metrics.clone())
            .await
            .map_err(|source| WorkerError::Metrics { address, source })?;
        tracing::info!(address = %bound, "serving metrics");
    }
    let source = GrpcObjectSource::new(&options.controlplane, &options.token)?;
    let objects = ObjectCache::open(options.state_dir.join("objects"), Arc::new(source))?;
    let named = container_server::NamedForwarder::new(&options.controlplane, &options.token)?;
    let (supervisor, events) = Supervisor::new(
        runtime,
        images,
        objects,
        SupervisorOptions {
            worker_id: options.worker_id.clone(),
            state_dir: options.state_dir.clone(),
            gpus: options.capacity.gpus.clone(),
            security,
            metrics: metrics.clone(),
            volumes: options.volumes.clone(),
            cdi_spec_dirs: options
                .config
                .cdi_spec_dirs
                .iter()
                .map(PathBuf::from)
                .collect(),
            named: Some(Arc::new(named)),
            spares: SpareOptions {
                count: options.config.spares,
                cpu_millicores: options.capacity.cpu_millicores,
                memory_mib: options.capacity.memory_mib,
            },
        },
    );
    // Mounted ahead of the first container that needs it; a failure is
    // only logged here, since each container asking for a volume tries
    // again and fails with the cause. Watched whatever they are now: the
    // controlplane's file system may replace a local directory on attach.
    tokio::spawn(watch_volumes(supervisor.clone(), stopped.clone()));
    // gVisor applies seccomp in its own kernel, which logs nothing to the
    // host's: only runc containers can be observed.
    if options.runtime == RuntimeKind::Runc {
        let held = supervisor.clone();
        security::follow_seccomp_log(
            container_cgroups,
            options.pool.clone(),
            Arc::new(move |id: &ContainerId| held.held_as(id)),
            metrics.clone(),
        );
    }
    let (end_session, session_ended) = watch::channel(false);
    tokio::spawn(drain::on_stop(
        options.clone(),
        supervisor.clone(),
        stopped,
        end_session,
    ));
    session::run(options, supervisor.clone(), events, session_ended).await;
    // Only left running when the drain task is gone (it stops them first).
    supervisor.stop_all(Duration::from_secs(10)).await;
    // After the containers: they hold the mount busy.
    supervisor.volumes().close().await;
    Ok(())
}

/// Mounts the volumes ahead of the first container that needs them, then
/// checks the mount every [`VOLUME_CHECK`]: a dead one (its juicefs daemon
/// crashed or was killed) is mounted again and the containers bound to it
/// are replaced. A failure is only logged: each container asking for a
/// volume tries again and fails with the cause.
async fn watch_volumes(supervisor: Supervisor, mut stopped: watch::Receiver<bool>) {
    let volumes = supervisor.volumes();
    if volumes.is_juicefs() {
        if let Err(error) = volumes.root().await {
            tracing::warn!(%error, "volumes are not available yet");
        }
    }
    loop {
        tokio::select! {
            _ = tokio::time::sleep(VOLUME_CHECK) => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
        // Local directories heal as a no-op.
        match supervisor.volumes().heal().await {
            Ok(true) => supervisor.stop_volume_users(Duration::from_secs(5)),
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "cannot mount the volumes again"),
        }
    }
}

/// Says at start what the containers will get, and that an attached
/// cluster's pool ignores a `worker.pools` entry of its name.
fn log_security(options: &WorkerOptions, policy: &security::SecurityPolicy) {
    if options.pool_origin == security::PoolOrigin::AttachedCluster
        && options.config.pools.contains_key(&options.pool)
    {
        tracing::warn!(pool = %options.pool, "worker.pools.{}.security and containerServerAuth are ignored: an attached cluster's pool takes the worker-wide values", options.pool);
    }
    tracing::info!(pool = %policy.pool, profile = ?policy.profile, server_auth = ?policy.server_auth, volume_mounts = ?policy.mounts, "container hardening");
}

/// `levers9-<hash of the state dir>-`: stable across restarts and versions
/// (FNV-1a, not the std hasher, whose output may change between releases).
fn cgroup_prefix(state_dir: &std::path::Path) -> String {
    let hash = state_dir
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
        });
    format!("levers9-{hash:08x}-")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn each_state_dir_gets_its_own_stable_cgroup_prefix() {
        let a = super::cgroup_prefix(Path::new("/var/lib/levers9/worker"));
        assert_eq!(
            a,
            super::cgroup_prefix(Path::new("/var/lib/levers9/worker"))
        );
        assert_ne!(
            a,
            super::cgroup_prefix(Path::new("/var/lib/levers9/worker-2"))
        );
        assert!(a.starts_with("levers9-") && a.ends_with('-') && a.len() == 17);
    }
}
