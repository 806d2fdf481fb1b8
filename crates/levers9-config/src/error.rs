use std::path::PathBuf;

/// Why a configuration could not be loaded. Each message names the file or
/// environment variable and the key, so the operator knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {file}: {source}")]
    Read {
        /// The config file, as given (`--config` or `LEVERS9_CONFIG`).
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The config file has an unknown key, a wrong type or bad YAML.
    #[error("config file {file}: key `{key}`: {message}")]
    File {
        /// The config file, as given (`--config` or `LEVERS9_CONFIG`).
        file: PathBuf,
        /// The dotted key path, e.g. `database.postgres.port`.
        key: String,
        /// What is wrong, with the line and column where known.
        message: String,
    },
    /// An environment variable holds a value of the wrong type.
    #[error("environment variable {variable} (key `{key}`): {message}")]
    Env {
        /// The variable, e.g. `LEVERS9_GRPC_PORT`.
        variable: &'static str,
        /// The key it sets.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The layers loaded but the result is not usable.
    #[error("invalid config: key `{key}`: {message}")]
    Invalid {
        /// The dotted key path at fault, e.g. `worker.pools`; the message names
        /// any key under it.
        key: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
}
