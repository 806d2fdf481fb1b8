//! Object storage for code: content-addressed blobs in a local directory
//! (`<controlplane.dataDir>/objects`). Which workspace holds which object
//! is a record in the store; the bytes are shared, since equal digests are
//! equal bytes.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// Objects larger than this are refused.
pub const MAX_OBJECT_BYTES: usize = 256 * 1024 * 1024;

/// A directory of blobs named by digest.
#[derive(Debug, Clone)]
pub struct ObjectStorage {
    root: PathBuf,
}

/// The hex part of a `sha256:<64 hex>` digest, checked.
pub fn digest_hex(digest: &str) -> Result<&str, ApiError> {
    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return Err(ApiError::InvalidArgument(format!(
            "{digest:?} is not a digest: expected sha256: and 64 lowercase hex digits"
        )));
    }
    Ok(hex)
}

impl ObjectStorage {
    /// Blobs under `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, hex: &str) -> PathBuf {
        self.root.join("sha256").join(hex)
    }

    /// Stores `data` if its sha256 is `digest`.
    pub async fn put(&self, digest: &str, data: &[u8]) -> Result<(), ApiError> {
        let hex = digest_hex(digest)?;
        if data.len() > MAX_OBJECT_BYTES {
            return Err(ApiError::InvalidArgument(format!(
                "the object is {} bytes, more than the limit of {MAX_OBJECT_BYTES}: add large \
                 files to .levers9ignore and put data in a volume",
                data.len()
            )));
        }
        let actual = hex::encode(Sha256::digest(data));
        if actual != hex {
            return Err(ApiError::InvalidArgument(format!(
                "the data's sha256 is {actual}, not the digest given ({digest}): upload again"
            )));
        }
        let path = self.path(hex);
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Ok(());
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        tokio::fs::create_dir_all(dir).await.map_err(io_error)?;
        // Write aside, then rename: readers never see half a blob.
        let temp = dir.join(format!(".{hex}.{}", uuid::Uuid::now_v7().simple()));
        tokio::fs::write(&temp, data).await.map_err(io_error)?;
        tokio::fs::rename(&temp, &path).await.map_err(io_error)?;
        Ok(())
    }

    /// The bytes of an object; NotFound if it was never stored here.
    pub async fn get(&self, digest: &str) -> Result<Vec<u8>, ApiError> {
        let hex = digest_hex(digest)?;
        match tokio::fs::read(self.path(hex)).await {
            Ok(data) => Ok(data),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ApiError::NotFound(format!(
                "no object {digest}: the caller uploads it before using it"
            ))),
            Err(e) => Err(io_error(e)),
        }
    }

    /// Whether the bytes are here.
    pub async fn exists(&self, digest: &str) -> Result<bool, ApiError> {
        let hex = digest_hex(digest)?;
        Ok(tokio::fs::try_exists(self.path(hex)).await.unwrap_or(false))
    }
}

fn io_error(e: std::io::Error) -> ApiError {
    ApiError::Unavailable(format!("object storage: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stores_by_digest_and_refuses_wrong_ones() {
        let dir = tempfile::tempdir().unwrap();
        let storage = ObjectStorage::new(dir.path());
        let data = b"print('hi')";
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(data)));
        assert!(!storage.exists(&digest).await.unwrap());
        storage.put(&digest, data).await.unwrap();
        storage.put(&digest, data).await.unwrap();
        assert_eq!(storage.get(&digest).await.unwrap(), data);
        let wrong = format!("sha256:{}", "0".repeat(64));
        assert!(storage.put(&wrong, data).await.is_err());
        assert!(matches!(
            storage.get(&wrong).await,
            Err(ApiError::NotFound(_))
        ));
        assert!(storage.get("sha256:../../etc/passwd").await.is_err());
    }
}
