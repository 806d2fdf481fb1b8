//! levers9 configuration: the schema with the product's camelCase keys,
//! layered loading (shipped defaults < file < `LEVERS9_*` environment),
//! redaction for printing, and detection of the shipped, public defaults.
#![forbid(unsafe_code)]

mod delivered_storage;
mod env;
mod error;
mod hardening;
mod juicefs;
mod load;
mod pool_provider;
mod pools;
mod registries;
mod schema;
mod secret;
mod security;
mod shipped;
mod storage;

pub use env::ENV_OVERRIDES;
pub use error::ConfigError;
pub use juicefs::{JuiceFsConfig, LocalVolumesConfig};
pub use load::{load, ConfigSource};
pub use pool_provider::{PoolKubernetes, PoolProcess, PoolScaling};
pub use pools::{PoolProvider, PoolResources, Toleration};
pub use schema::{
    AuthConfig, Config, ControlplaneConfig, DatabaseConfig, ImageServiceConfig, KeyRotationConfig,
    ListenerConfig, ObjectsConfig, PoolConfig, PoolRuntime, PostgresConfig, RedisConfig,
    RunnerConfig, SqliteConfig, StorageConfig, TlsConfig, WorkerConfig,
};
pub use secret::Secret;
pub use security::{
    CapabilitiesSetting, ContainerSecurityConfig, ContainerServerAuthMode, SeccompSetting,
    SecurityProfileName, VolumeMountValidationMode,
};
pub use shipped::{ShippedDefault, SHIPPED_ENCRYPTION_KEY, SHIPPED_POSTGRES_PASSWORD};
pub use storage::WorkspaceStorageConfig;

/// The configuration as YAML, as `--print-config` shows it.
pub fn to_yaml(config: &Config) -> Result<String, serde_yaml::Error> {
    serde_yaml::to_string(config)
}
