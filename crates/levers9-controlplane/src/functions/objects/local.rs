//! Objects in a local directory: `<root>/sha256/<hex>`, written aside and
//! renamed into place. The embedded default (`<controlplane.dataDir>/objects`).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{ObjectBackend, ObjectStorageError};

/// A directory of blobs named by digest.
#[derive(Debug, Clone)]
pub struct LocalObjects {
    root: PathBuf,
}

impl LocalObjects {
    /// Blobs under `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, hex: &str) -> PathBuf {
        self.root.join("sha256").join(hex)
    }
}

fn local_error(path: &Path) -> impl FnOnce(std::io::Error) -> ObjectStorageError + '_ {
    move |source| ObjectStorageError::Local {
        path: path.to_owned(),
        source,
    }
}

#[async_trait]
impl ObjectBackend for LocalObjects {
    fn location(&self) -> String {
        format!("local directory {}", self.root.display())
    }

    async fn check(&self) -> Result<(), ObjectStorageError> {
        // The directory is made on first write; nothing to prove before.
        Ok(())
    }

    async fn put(&self, hex: &str, data: &[u8]) -> Result<(), ObjectStorageError> {
        let path = self.path(hex);
        let dir = path.parent().unwrap_or(Path::new("."));
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(local_error(dir))?;
        // Write aside, then rename: readers never see half a blob.
        let temp = dir.join(format!(".{hex}.{}", uuid::Uuid::now_v7().simple()));
        tokio::fs::write(&temp, data)
            .await
            .map_err(local_error(&temp))?;
        if let Err(e) = tokio::fs::rename(&temp, &path).await {
            let _ = tokio::fs::remove_file(&temp).await;
            return Err(local_error(&path)(e));
        }
        Ok(())
    }

    async fn get(&self, hex: &str) -> Result<Option<Vec<u8>>, ObjectStorageError> {
        let path = self.path(hex);
        match tokio::fs::read(&path).await {
            Ok(data) => Ok(Some(data)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(local_error(&path)(e)),
        }
    }

    async fn exists(&self, hex: &str) -> Result<bool, ObjectStorageError> {
        Ok(tokio::fs::try_exists(self.path(hex)).await.unwrap_or(false))
    }
}
