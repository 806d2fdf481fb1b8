//! Object storage for code: content-addressed blobs (the code and SDK zips
//! the SDK uploads). Which workspace holds which object is a record in the
//! store; the bytes are shared, since equal digests are equal bytes.
//!
//! The bytes live behind [`ObjectBackend`]: a local directory
//! (`<controlplane.dataDir>/objects`, the embedded default, [`local`]) or an
//! S3-compatible bucket when `storage.workspace.bucket` is set ([`s3`]).
//! Only the controlplane talks to it; workers fetch objects over gRPC.

pub mod local;
pub mod s3;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use levers9_config::Config;
use sha2::{Digest, Sha256};

use crate::functions::FunctionError;

pub use local::LocalObjects;
pub use s3::S3Objects;

/// Objects larger than this are refused.
pub const MAX_OBJECT_BYTES: usize = 256 * 1024 * 1024;

/// Where object bytes live. Implementations see only checked digests (64
/// lowercase hex digits) and, in `put`, bytes whose sha256 was verified.
#[async_trait]
pub trait ObjectBackend: fmt::Debug + Send + Sync {
    /// Where the objects are, for the start-up log; never a key.
    fn location(&self) -> String;

    /// Proves the storage answers and is usable (bucket there, keys
    /// accepted), so a bad configuration stops the start, not the first upload.
    async fn check(&self) -> Result<(), ObjectStorageError>;

    /// Stores the object `hex`. Readers never see part of it: it appears
    /// under its final name whole or not at all.
    async fn put(&self, hex: &str, data: &[u8]) -> Result<(), ObjectStorageError>;

    /// The bytes of `hex`, or `None` if it is not stored.
    async fn get(&self, hex: &str) -> Result<Option<Vec<u8>>, ObjectStorageError>;

    /// Whether `hex` is stored.
    async fn exists(&self, hex: &str) -> Result<bool, ObjectStorageError>;
}

/// Why object storage failed. Messages name the setting to check and never
/// carry a key.
#[derive(Debug, thiserror::Error)]
pub enum ObjectStorageError {
    /// The S3 endpoint did not answer, or answered with an error.
    #[error("cannot reach the object storage at {endpoint}: {detail}; check storage.workspace")]
    Unreachable {
        /// The S3 endpoint: `storage.workspace.endpoint`, or
        /// `https://s3.<region>.amazonaws.com` when that is empty.
        endpoint: String,
        /// What failed (keys removed).
        detail: String,
    },
    /// The S3 endpoint refused the keys.
    #[error(
        "the object storage at {endpoint} refused the keys for bucket {bucket}: {detail}; check \
         storage.workspace.accessKeyId and storage.workspace.secretAccessKey"
    )]
    Refused {
        /// As in [`ObjectStorageError::Unreachable`].
        endpoint: String,
        /// `storage.workspace.bucket`.
        bucket: String,
        /// What the server said (keys removed).
        detail: String,
    },
    /// The bucket does not exist.
    #[error(
        "the bucket {bucket} does not exist at {endpoint}: create it, or check \
         storage.workspace.bucket"
    )]
    NoBucket {
        /// As in [`ObjectStorageError::Unreachable`].
        endpoint: String,
        /// `storage.workspace.bucket`.
        bucket: String,
    },
    /// `storage.workspace` cannot be turned into a client.
    #[error("storage.workspace is not usable: {0}")]
    Config(String),
    /// The local directory failed.
    #[error("object storage directory {}: {source}; check that controlplane.dataDir is writable", path.display())]
    Local {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The hex part of a `sha256:<64 hex>` digest, checked.
pub fn digest_hex(digest: &str) -> Result<&str, FunctionError> {
    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(FunctionError::InvalidDigest(digest.to_owned()));
    }
    Ok(hex)
}

/// Content-addressed objects over one [`ObjectBackend`].
#[derive(Debug, Clone)]
pub struct ObjectStorage {
    backend: Arc<dyn ObjectBackend>,
}

impl ObjectStorage {
    /// Blobs in the local directory `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::with_backend(Arc::new(LocalObjects::new(root)))
    }

    /// Objects in `backend`.
    pub fn with_backend(backend: Arc<dyn ObjectBackend>) -> Self {
        Self { backend }
    }

    /// The storage `storage.workspace` names: the S3 bucket when one is set
    /// (checked now), else `<controlplane.dataDir>/objects`.
    ///
    /// # Errors
    /// The bucket is unreachable, missing or refuses the keys.
    pub async fn open(config: &Config) -> Result<Self, ObjectStorageError> {
        let workspace = &config.storage.workspace;
        if !workspace.is_s3() {
            return Ok(Self::new(config.controlplane.data_dir().join("objects")));
        }
        let backend = S3Objects::new(workspace)?;
        backend.check().await?;
        Ok(Self::with_backend(Arc::new(backend)))
    }

    /// Where the objects are, for the start-up log.
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// Stores `data` if its sha256 is `digest`; nothing is stored otherwise.
    /// Storing an object that is already there does nothing.
    pub async fn put(&self, digest: &str, data: &[u8]) -> Result<(), FunctionError> {
        let hex = digest_hex(digest)?;
        if data.len() > MAX_OBJECT_BYTES {
            return Err(FunctionError::ObjectTooLarge(data.len()));
        }
        let actual = hex::encode(Sha256::digest(data));
        if actual != hex {
            return Err(FunctionError::DigestMismatch {
                actual,
                digest: digest.to_owned(),
            });
        }
        if self.backend.exists(hex).await? {
            return Ok(());
        }
        Ok(self.backend.put(hex, data).await?)
    }

    /// The bytes of an object; NotFound if it was never stored here.
    pub async fn get(&self, digest: &str) -> Result<Vec<u8>, FunctionError> {
        let hex = digest_hex(digest)?;
        self.backend
            .get(hex)
            .await?
            .ok_or_else(|| FunctionError::ObjectNotFound(digest.to_owned()))
    }

    /// Whether the bytes are here.
    pub async fn exists(&self, digest: &str) -> Result<bool, FunctionError> {
        let hex = digest_hex(digest)?;
        Ok(self.backend.exists(hex).await?)
    }
}

#[cfg(test)]
mod tests;
