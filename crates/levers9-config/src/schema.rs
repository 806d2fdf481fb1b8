//! The configuration schema. Keys are the camelCase YAML names of the product
//! documentation; every struct takes its defaults for keys a file leaves out
//! and refuses keys it does not know.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::pools::{PoolProvider, PoolResources, Toleration};
use crate::secret::Secret;
use crate::security::{
    ContainerSecurityConfig, ContainerServerAuthMode, SeccompSetting, SecurityProfileName,
    VolumeMountValidationMode,
};
use crate::shipped::{SHIPPED_ENCRYPTION_KEY, SHIPPED_POSTGRES_PASSWORD};

/// The whole configuration of a levers9 process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// `controlplane.*`: its listeners, TLS, authentication, data directory,
    /// key rotation, result and object limits, and the agent binaries.
    pub controlplane: ControlplaneConfig,
    /// Durable records (Postgres or embedded SQLite) and hot state (Redis or in-process).
    pub database: DatabaseConfig,
    /// Workers.
    pub worker: WorkerConfig,
    /// `imageService.*`: the runner base image, local image storage and image
    /// builds.
    pub image_service: ImageServiceConfig,
    /// Object storage and volumes.
    pub storage: StorageConfig,
}

/// `controlplane.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ControlplaneConfig {
    /// Address both listeners bind to.
    pub bind_address: String,
    /// The gRPC listener.
    pub grpc: ListenerConfig,
    /// The HTTP listener: health, metrics and the REST mapping.
    pub http: ListenerConfig,
    /// TLS on both listeners; off while no certificate is set.
    pub tls: TlsConfig,
    /// Authentication.
    pub auth: AuthConfig,
    /// Where the embedded default keeps its files; empty means `~/.levers9/data`.
    pub data_dir: String,
    /// Re-sealing stored values onto the current encryption key at start.
    pub key_rotation: KeyRotationConfig,
    /// How long a task's result is kept after it ends.
    pub task_result_ttl_seconds: u64,
    /// Prebuilt agent binaries served on the HTTP port, named
    /// `levers9-<os>-<arch>`; empty serves only this controlplane's own
    /// executable, for its own platform.
    pub agent_binaries_dir: String,
    /// Build the agent from this controlplane's source (`cargo build`) for
    /// `levers9 pool join --dev` or a platform with no prebuilt binary. For
    /// development only: the download link asks for no token.
    pub agent_dev_builds: bool,
    /// Limits of the named dicts and queues of workspaces.
    pub objects: ObjectsConfig,
}

/// `controlplane.objects.*`: limits of named dicts and queues. They live in
/// the hot state, in memory, so every limit bounds what one workspace can
/// make Redis (or the embedded controlplane) hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ObjectsConfig {
    /// The largest dict key plus value, or queue item, in bytes (pickled).
    pub max_value_bytes: u64,
    /// Entries one dict may hold.
    pub max_dict_entries: u64,
    /// Items one queue may hold.
    pub max_queue_items: u64,
    /// Dicts, and queues, one workspace may have (each kind on its own).
    pub max_per_workspace: u64,
}

impl Default for ObjectsConfig {
    fn default() -> Self {
        Self {
            max_value_bytes: 1024 * 1024,
            max_dict_entries: 100_000,
            max_queue_items: 100_000,
            max_per_workspace: 1000,
        }
    }
}

/// `controlplane.keyRotation.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KeyRotationConfig {
    /// Rows re-sealed per batch.
    pub batch_size: u32,
}

impl Default for KeyRotationConfig {
    fn default() -> Self {
        Self { batch_size: 500 }
    }
}

impl Default for ControlplaneConfig {
    fn default() -> Self {
        Self {
            bind_address: "0.0.0.0".into(),
            grpc: ListenerConfig { port: 1993 },
            http: ListenerConfig { port: 1994 },
            tls: TlsConfig::default(),
            auth: AuthConfig::default(),
            data_dir: String::new(),
            key_rotation: KeyRotationConfig::default(),
            task_result_ttl_seconds: 24 * 3600,
            agent_binaries_dir: String::new(),
            agent_dev_builds: false,
            objects: ObjectsConfig::default(),
        }
    }
}

impl ControlplaneConfig {
    /// The data directory with `~/.levers9/data` filled in for an empty value.
    pub fn data_dir(&self) -> PathBuf {
        if !self.data_dir.is_empty() {
            return PathBuf::from(&self.data_dir);
        }
        let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
        PathBuf::from(home).join(".levers9").join("data")
    }
}

/// A listener's port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListenerConfig {
    /// TCP port; 0 picks a free one.
    pub port: u16,
}

/// `controlplane.tls.*`: the certificate both listeners serve. Both files
/// are PEM; the certificate file holds the chain, leaf first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain; empty serves plain gRPC and HTTP.
    pub cert_file: String,
    /// The private key of the certificate.
    pub key_file: String,
}

impl TlsConfig {
    /// Whether TLS is configured (both files are checked at start).
    pub fn enabled(&self) -> bool {
        !self.cert_file.is_empty() || !self.key_file.is_empty()
    }
}

/// `controlplane.auth.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AuthConfig {
    /// The secret a caller must send to get the first admin token of an
    /// empty install. Empty turns bootstrap off.
    pub bootstrap_secret: Secret,
    /// How long a token check is cached, in seconds: a revoked token stops
    /// working on every replica within this time.
    pub token_cache_seconds: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            bootstrap_secret: Secret::default(),
            token_cache_seconds: 5,
        }
    }
}

/// `database.*`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// Postgres; used when `host` is set.
    pub postgres: PostgresConfig,
    /// Redis; used when `addrs` is not empty.
    pub redis: RedisConfig,
    /// The embedded SQLite file, used when Postgres is not configured.
    pub sqlite: SqliteConfig,
}

/// `database.postgres.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PostgresConfig {
    /// Host name; empty means "use the embedded SQLite file".
    pub host: String,
    /// Port.
    pub port: u16,
    /// Database name.
    pub name: String,
    /// User.
    pub user: String,
    /// Password.
    pub password: Secret,
    /// libpq `sslmode`: disable, prefer or require.
    pub ssl_mode: String,
    /// Connections per controlplane replica.
    pub max_connections: u32,
    /// Key that seals workspace storage credentials and secrets at rest.
    pub encryption_key: Secret,
    /// Older keys still accepted while values are re-sealed with the new one.
    pub previous_encryption_keys: Vec<Secret>,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        Self {
            host: String::new(),
            port: 5432,
            name: "levers9".into(),
            user: "levers9".into(),
            password: Secret::new(SHIPPED_POSTGRES_PASSWORD),
            ssl_mode: "disable".into(),
            max_connections: 20,
            encryption_key: Secret::new(SHIPPED_ENCRYPTION_KEY),
            previous_encryption_keys: Vec::new(),
        }
    }
}

impl PostgresConfig {
    /// Whether Postgres is configured (otherwise the embedded SQLite is used).
    pub fn is_configured(&self) -> bool {
        !self.host.is_empty()
    }
}

/// `database.redis.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RedisConfig {
    /// `host:port` addresses; empty means the in-process hot state.
    pub addrs: Vec<String>,
    /// Password; empty means none.
    pub password: Secret,
    /// Database number.
    pub db: i64,
    /// Prefix of every key and channel, so installs can share a server.
    pub key_prefix: String,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            addrs: Vec::new(),
            password: Secret::default(),
            db: 0,
            key_prefix: "levers9:".into(),
        }
    }
}

impl RedisConfig {
    /// Whether Redis is configured (otherwise the in-process hot state is used).
    pub fn is_configured(&self) -> bool {
        !self.addrs.is_empty()
    }
}

/// `database.sqlite.*`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SqliteConfig {
    /// The database file; empty means `<controlplane.dataDir>/levers9.db`.
    pub path: String,
}

/// `worker.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// Registry that built images are pushed to and workers pull from.
    pub image_registry: String,
    /// Registries (`host[:port]`, as written in image references) reached
    /// over plain HTTP: by the controlplane resolving tags and by worker
    /// Jobs (`--insecure-registry`), e.g. k3d's local registry. Loopback
    /// registries always are; every other one is HTTPS.
    pub insecure_registries: Vec<String>,
    /// A worker that has not sent a heartbeat for this long is lost; workers
    /// send one every quarter of it.
    pub heartbeat_ttl_seconds: u64,
    /// Pools by name: one per hardware class.
    pub pools: BTreeMap<String, PoolConfig>,
    /// Hardening of the containers workers start, unless their pool says
    /// otherwise (attached-cluster pools always take this value).
    pub container_security: ContainerSecurityConfig,
    /// Whether container servers ask the runner for its credential.
    pub container_server_auth: ContainerServerAuthMode,
    /// Checking the mount targets of volumes.
    pub volume_mount_validation: VolumeMountValidationMode,
    /// Kubernetes worker Jobs request their pool's resources
    /// (`nvidia.com/gpu` on GPU pools), so the device plugin hands them GPUs.
    pub job_resources_enforced: bool,
    /// Where workers look for CDI spec files (`nvidia-ctk cdi generate`):
    /// a container's GPUs get the device nodes, environment and mounts the
    /// `nvidia.com/gpu` spec lists for them. Later directories win.
    pub cdi_spec_dirs: Vec<String>,
    /// How many spare function containers a worker keeps started, each
    /// waiting to become the next cold start of a function of the same
    /// image, SDK, resources and hardening (0: none). They use memory and
    /// CPU while they wait, and are stopped first when a container needs
    /// the room. The controlplane sends its value to each worker as it
    /// attaches; a worker whose own is above 0 keeps its own.
    pub spares: u32,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            image_registry: String::new(),
            insecure_registries: Vec::new(),
            heartbeat_ttl_seconds: 10,
            pools: BTreeMap::new(),
            // Today's behaviour, observing what the hardened rules would
            // refuse; written out so the printed config shows it.
            container_security: ContainerSecurityConfig {
                profile: Some(SecurityProfileName::Default),
                seccomp: Some(SeccompSetting::Observe),
                ..ContainerSecurityConfig::default()
            },
            container_server_auth: ContainerServerAuthMode::Observe,
            volume_mount_validation: VolumeMountValidationMode::Log,
            job_resources_enforced: false,
            cdi_spec_dirs: vec!["/etc/cdi".into(), "/var/run/cdi".into()],
            spares: 0,
        }
    }
}

/// `worker.pools.<name>.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PoolConfig {
    /// The container runtime of the pool's workers: `runc` or `gvisor`.
    pub runtime: PoolRuntime,
    /// Overrides of `worker.containerSecurity`, key by key.
    pub security: ContainerSecurityConfig,
    /// Override of `worker.containerServerAuth`.
    pub container_server_auth: Option<ContainerServerAuthMode>,
    /// The GPU type the pool's workers have (e.g. `L40S`); empty for none.
    pub gpu_type: String,
    /// Node labels a Kubernetes worker pod must match.
    pub node_selector: BTreeMap<String, String>,
    /// Taints a Kubernetes worker pod tolerates.
    pub tolerations: Vec<Toleration>,
    /// Pools are tried highest first for a request that names none.
    pub priority: i32,
    /// Only requests that name this pool land in it.
    pub requires_pool_selector: bool,
    /// What each worker of the pool offers.
    pub resources: PoolResources,
    /// Where its workers come from.
    pub provider: PoolProvider,
    /// How many workers it may have.
    pub scaling: crate::PoolScaling,
    /// With `provider: kubernetes`: the cluster its worker Jobs run on.
    pub kubernetes: crate::PoolKubernetes,
    /// With `provider: process`: how its worker processes are started.
    pub process: crate::PoolProcess,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            runtime: PoolRuntime::Runc,
            security: ContainerSecurityConfig::default(),
            container_server_auth: None,
            gpu_type: String::new(),
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            priority: 0,
            requires_pool_selector: false,
            resources: PoolResources::default(),
            provider: PoolProvider::Local,
            scaling: crate::PoolScaling::default(),
            kubernetes: crate::PoolKubernetes::default(),
            process: crate::PoolProcess::default(),
        }
    }
}

/// A pool's container runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolRuntime {
    /// runc: namespaces, cgroups, seccomp.
    Runc,
    /// gVisor (runsc): a user-space kernel between the container and the host.
    Gvisor,
}

impl PoolRuntime {
    /// The name workers report.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolRuntime::Runc => "runc",
            PoolRuntime::Gvisor => "gvisor",
        }
    }
}

/// `imageService.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ImageServiceConfig {
    /// The runner base image.
    pub runner: RunnerConfig,
    /// Local image storage: a directory holding an OCI image layout that
    /// the controlplane serves as a registry at `/v2/` on its HTTP port. `levers9 up` keeps its base image there; empty is off.
    pub local_images: String,
    /// The local image storage also takes pushes, so image builds can push
    /// there. Pushes ask for no token, so the controlplane refuses to start
    /// with this unless `controlplane.bindAddress` is a loopback address.
    /// `levers9 up` sets it.
    pub local_images_writable: bool,
    /// The pool image builds run in.
    pub build_pool_selector: String,
    /// A build still running after this long is stopped and fails.
    pub build_timeout_seconds: u64,
    /// The Debian mirror and suite `add_apt_packages` fetches from.
    pub apt_mirror: String,
    /// See `apt_mirror`.
    pub apt_suite: String,
    /// A docker config JSON file of registry credentials (`auths` per
    /// registry host, as `~/.docker/config.json` or a
    /// `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`), used
    /// to resolve base image tags, read built images and, for the registry
    /// hosts of a build, handed to the build container to push with. Empty
    /// is anonymous; ECR registries get tokens with the controlplane's AWS
    /// credentials either way.
    pub registry_credentials_file: String,
}

impl Default for ImageServiceConfig {
    fn default() -> Self {
        Self {
            runner: RunnerConfig::default(),
            local_images: String::new(),
            local_images_writable: false,
            build_pool_selector: "build".into(),
            build_timeout_seconds: 1800,
            apt_mirror: "http://deb.debian.org/debian".into(),
            apt_suite: "bookworm".into(),
            registry_credentials_file: String::new(),
        }
    }
}

/// `imageService.runner.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RunnerConfig {
    /// Registry that base images come from.
    pub base_image_registry: String,
    /// The Python base image of functions that name no image, inside
    /// `baseImageRegistry`.
    pub base_image: String,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            base_image_registry: String::new(),
            base_image: "levers9/python:3.11".into(),
        }
    }
}

impl RunnerConfig {
    /// The full reference of the Python base image, if a registry is set.
    pub fn base_image_reference(&self) -> Option<String> {
        if self.base_image_registry.is_empty() || self.base_image.is_empty() {
            return None;
        }
        Some(format!(
            "{}/{}",
            self.base_image_registry.trim_end_matches('/'),
            self.base_image
        ))
    }
}

pub use crate::storage::StorageConfig;
