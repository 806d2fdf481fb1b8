//! Layered loading: shipped defaults < config file < environment.

use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::schema::Config;

/// Where the configuration came from, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// No file: shipped defaults and the environment.
    Defaults,
    /// This file, over the shipped defaults, under the environment.
    File(PathBuf),
}

/// Loads the configuration: the shipped defaults, then `file` if given (a key
/// it leaves out keeps its default; an unknown key or a wrong type is an
/// error naming the key and the file), then the `LEVERS9_*` variables that
/// `env` returns.
pub fn load(
    file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Config, ConfigSource), ConfigError> {
    let (config, source) = match file {
        None => (Config::default(), ConfigSource::Defaults),
        Some(path) => (read_file(path)?, ConfigSource::File(path.to_owned())),
    };
    let config = crate::env::apply(config, env)?;
    validate(&config)?;
    Ok((config, source))
}

fn read_file(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_owned(),
        source,
    })?;
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    let deserializer = serde_yaml::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| ConfigError::File {
        file: path.to_owned(),
        key: error.path().to_string(),
        message: error.inner().to_string(),
    })
}

fn validate(config: &Config) -> Result<(), ConfigError> {
    let cp = &config.controlplane;
    if cp.grpc.port != 0 && cp.grpc.port == cp.http.port {
        return Err(ConfigError::Invalid {
            key: "controlplane.http.port",
            message: format!(
                "the gRPC and HTTP listeners both use port {}: give them different ports",
                cp.grpc.port
            ),
        });
    }
    if config.database.postgres.encryption_key.is_empty() {
        return Err(ConfigError::Invalid {
            key: "database.postgres.encryptionKey",
            message: "is empty: set a key (see docs/configuration.md)".into(),
        });
    }
    if config.worker.heartbeat_ttl_seconds < 2 {
        return Err(ConfigError::Invalid {
            key: "worker.heartbeatTtlSeconds",
            message: "must be at least 2 seconds: workers send a heartbeat every quarter of it"
                .into(),
        });
    }
    config
        .worker
        .container_security
        .validate("worker.containerSecurity")?;
    for (name, pool) in &config.worker.pools {
        pool.security
            .validate(&format!("worker.pools.{name}.security"))?;
        crate::pools::validate(name, pool)?;
        crate::pool_provider::validate(name, pool)?;
        crate::pool_provider::validate_volumes(name, pool, config.storage.juicefs.is_configured())?;
    }
    if cp.key_rotation.batch_size == 0 {
        return Err(ConfigError::Invalid {
            key: "controlplane.keyRotation.batchSize",
            message: "is 0: rotation would never progress; use at least 1".into(),
        });
    }
    if cp.auth.token_cache_seconds > 300 {
        return Err(ConfigError::Invalid {
            key: "controlplane.auth.tokenCacheSeconds",
            message: "is over 300: a revoked token would keep working that long".into(),
        });
    }
    crate::registries::validate_insecure(&config.worker.insecure_registries)?;
    config.storage.workspace.validate()?;
    config.storage.juicefs.validate()?;
    Ok(())
}

#[cfg(test)]
mod tests;
