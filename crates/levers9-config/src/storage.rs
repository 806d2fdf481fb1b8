//! `storage.*`: where the controlplane keeps workspace objects (the code and
//! SDK zips the SDK uploads). A section of its own so the rest of the schema
//! stays untouched by storage work.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::secret::Secret;

/// `storage.*`: object storage and volumes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Workspace object storage: code and SDK zips, by digest.
    pub workspace: WorkspaceStorageConfig,
    /// The JuiceFS file system volumes live in; without a metadata URL,
    /// volumes are local directories.
    pub juicefs: crate::juicefs::JuiceFsConfig,
    /// Volumes on the embedded default.
    pub volumes: crate::juicefs::LocalVolumesConfig,
}

/// `storage.workspace.*`: an S3-compatible bucket, or (with no bucket) the
/// local directory `<controlplane.dataDir>/objects`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct WorkspaceStorageConfig {
    /// Base URL of the S3 API, e.g. `http://127.0.0.1:8333`; empty means AWS
    /// S3 itself (`https://s3.<region>.amazonaws.com`).
    pub endpoint: String,
    /// Signing region.
    pub region: String,
    /// The bucket; empty keeps objects in the local directory.
    pub bucket: String,
    /// Key prefix inside the bucket; objects are `<prefix>sha256/<hex>`.
    pub prefix: String,
    /// Path-style URLs (`<endpoint>/<bucket>/<key>`), as most S3-compatible
    /// servers want; false uses virtual-hosted style (`<bucket>.<endpoint>`).
    pub path_style: bool,
    /// Access key id.
    pub access_key_id: Secret,
    /// Secret access key.
    pub secret_access_key: Secret,
}

impl Default for WorkspaceStorageConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            region: "us-east-1".into(),
            bucket: String::new(),
            prefix: "objects/".into(),
            path_style: true,
            access_key_id: Secret::default(),
            secret_access_key: Secret::default(),
        }
    }
}

impl WorkspaceStorageConfig {
    /// Whether an S3 bucket is configured (otherwise the local directory is used).
    pub fn is_s3(&self) -> bool {
        !self.bucket.is_empty()
    }

    /// The prefix as a key path: no leading or doubled `/`, and ending in `/`
    /// unless empty.
    pub fn normalized_prefix(&self) -> String {
        let parts: Vec<&str> = self.prefix.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("{}/", parts.join("/"))
        }
    }

    /// Checks a configured bucket has what it needs; nothing to check for the
    /// local directory.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !self.is_s3() {
            return Ok(());
        }
        let invalid = |key: &'static str, message: &str| ConfigError::Invalid {
            key,
            message: message.into(),
        };
        if !self.endpoint.is_empty()
            && !self.endpoint.starts_with("http://")
            && !self.endpoint.starts_with("https://")
        {
            return Err(invalid(
                "storage.workspace.endpoint",
                "must start with http:// or https:// (e.g. http://127.0.0.1:8333)",
            ));
        }
        if self.region.is_empty() {
            return Err(invalid(
                "storage.workspace.region",
                "is empty: set the bucket's region (us-east-1 for most S3-compatible servers)",
            ));
        }
        if self.access_key_id.is_empty() || self.secret_access_key.is_empty() {
            return Err(invalid(
                "storage.workspace.accessKeyId",
                "a bucket is set but its keys are not: set storage.workspace.accessKeyId and \
                 storage.workspace.secretAccessKey (or LEVERS9_WORKSPACE_ACCESS_KEY_ID and \
                 LEVERS9_WORKSPACE_SECRET_ACCESS_KEY)",
            ));
        }
        if self.prefix.split('/').any(|p| p == "." || p == "..") {
            return Err(invalid(
                "storage.workspace.prefix",
                "must not contain . or .. segments",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
