//! `storage.juicefs.*` and `storage.volumes.*`: where volumes live. With a
//! metadata URL, in one JuiceFS file system over an S3-compatible bucket,
//! mounted by the controlplane and every worker; without one, in a local
//! directory (the embedded default of `levers9 up`).

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::secret::Secret;

/// `storage.juicefs.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct JuiceFsConfig {
    /// The metadata engine, e.g. `redis://:PASSWORD@host:6379/1`. A password
    /// in it is handed to juicefs in its environment, never on its command
    /// line. Empty keeps volumes in local directories.
    pub meta_url: Secret,
    /// The metadata engine of the file systems of workspaces that have
    /// their own storage credentials: a SQL URL (`postgres://`, `mysql://`,
    /// `sqlite3://`), in which each such workspace gets tables of its own.
    /// Empty means `meta_url` when that is SQL.
    pub workspace_meta_url: Secret,
    /// JuiceFS's object storage type (`s3` for any S3-compatible server).
    pub storage: String,
    /// The bucket URL, e.g. `http://127.0.0.1:8333/volumes` or
    /// `https://BUCKET.s3.us-east-2.amazonaws.com`.
    pub bucket: String,
    /// The bucket's access key id.
    pub access_key: Secret,
    /// The bucket's secret access key.
    pub secret_key: Secret,
    /// The file system's name (the prefix of its objects in the bucket).
    pub name: String,
    /// Local cache of each mount, in MiB.
    pub cache_size_mib: u64,
    /// The juicefs binary: a path, or a name looked up on `PATH`.
    pub binary: String,
}

impl Default for JuiceFsConfig {
    fn default() -> Self {
        Self {
            meta_url: Secret::default(),
            workspace_meta_url: Secret::default(),
            storage: "s3".into(),
            bucket: String::new(),
            access_key: Secret::default(),
            secret_key: Secret::default(),
            name: "levers9".into(),
            cache_size_mib: 10 * 1024,
            binary: "juicefs".into(),
        }
    }
}

impl JuiceFsConfig {
    /// Whether volumes live in JuiceFS (otherwise in local directories).
    pub fn is_configured(&self) -> bool {
        !self.meta_url.is_empty()
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !self.is_configured() {
            return Ok(());
        }
        let invalid = |key: &'static str, message: &str| ConfigError::Invalid {
            key,
            message: message.into(),
        };
        if !self.meta_url.expose().contains("://") {
            return Err(invalid(
                "storage.juicefs.metaUrl",
                "is not a URL: use e.g. redis://:PASSWORD@host:6379/1",
            ));
        }
        if self.bucket.is_empty() {
            return Err(invalid(
                "storage.juicefs.bucket",
                "is empty: set the bucket URL the file system keeps its data in \
                 (e.g. http://127.0.0.1:8333/volumes), or LEVERS9_JUICEFS_BUCKET",
            ));
        }
        let valid_name = (3..=63).contains(&self.name.len())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid_name {
            return Err(invalid(
                "storage.juicefs.name",
                "must be 3 to 63 lowercase letters, digits or dashes",
            ));
        }
        Ok(())
    }
}

/// `storage.volumes.*`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct LocalVolumesConfig {
    /// Where volumes live when `storage.juicefs.metaUrl` is empty; empty
    /// means `<controlplane.dataDir>/volumes`. The controlplane and its
    /// workers must see the same directory.
    pub local_dir: String,
}
