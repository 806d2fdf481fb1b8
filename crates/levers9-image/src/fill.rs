//! Filling the cache: manifests and configs from the registry (or the
//! cache), and layers downloaded, verified, unpacked and renamed into place
//! once per digest, with the layers pinned while that happens.

use std::fs;
use std::path::Path;

use crate::cache::{Cache, Layout};
use crate::error::{ImageError, Result};
use crate::image::{BlobRef, Image, Layer};
use crate::reference::{Digest, ImageReference};
use crate::store::ImageStore;
use crate::unpack::{unpack_layer, UnpackError};

impl ImageStore {
    /// The manifest blob `digest`, from the cache or the registry.
    pub(crate) async fn manifest_bytes(
        &self,
        r: &ImageReference,
        digest: &Digest,
    ) -> Result<Vec<u8>> {
        let path = self.inner.cache.layout.blob(digest);
        if let Ok(bytes) = fs::read(&path) {
            return Ok(bytes);
        }
        let bytes = self.inner.registries.fetch_manifest(r, digest).await?;
        let tmp = tempfile::NamedTempFile::new_in(self.inner.cache.layout.tmp()).map_err(
            ImageError::io(
                "could not create a temporary file in",
                self.inner.cache.layout.tmp(),
            ),
        )?;
        fs::write(tmp.path(), &bytes).map_err(ImageError::io("could not write", tmp.path()))?;
        tmp.persist(&path)
            .map_err(|e| ImageError::io("could not store", &path)(e.error))?;
        Ok(bytes)
    }

    /// A small blob (the config), from the cache or the registry.
    pub(crate) async fn blob_bytes(&self, r: &ImageReference, blob: &BlobRef) -> Result<Vec<u8>> {
        let path = self.inner.cache.layout.blob(&blob.digest);
        if !path.exists() {
            let _guard = self.inner.cache.locks.lock(blob.digest.as_str()).await;
            if !path.exists() {
                let tmp = self
                    .inner
                    .registries
                    .download_blob(r, blob, &self.inner.cache.layout.tmp())
                    .await?;
                tmp.persist(&path)
                    .map_err(|e| ImageError::io("could not store", &path)(e.error))?;
            }
        }
        fs::read(&path).map_err(ImageError::io("could not read", &path))
    }

    pub(crate) async fn ensure_layers(&self, image: &Image) -> Result<()> {
        futures::future::try_join_all(
            image
                .layers
                .iter()
                .map(|l| self.ensure_layer(&image.reference, l)),
        )
        .await?;
        self.inner.cache.touch(
            &image
                .layers
                .iter()
                .map(|l| l.digest.clone())
                .collect::<Vec<_>>(),
        );
        Ok(())
    }

    /// Makes sure one layer is unpacked: downloaded (verified) if its blob
    /// is missing, then unpacked into `tmp/` and renamed into place. The
    /// digest lock makes concurrent callers wait for one another.
    pub(crate) async fn ensure_layer(&self, r: &ImageReference, layer: &Layer) -> Result<()> {
        let cache = &self.inner.cache;
        let d = &layer.digest;
        if cache.has_layer(d) {
            return Ok(());
        }
        let _guard = cache.locks.lock(d.as_str()).await;
        if cache.has_layer(d) {
            return Ok(());
        }
        let layout = &cache.layout;
        if layout.layer(d).is_dir() {
            // Finished by an unpack whose caller went away before indexing it.
            let bytes = fs::read_to_string(layout.layer_size_file(d))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            cache.insert_layer(d, bytes);
            return Ok(());
        }
        let blob_path = layout.blob(d);
        if !blob_path.exists() {
            let blob = BlobRef {
                digest: d.clone(),
                size: layer.size,
                media_type: layer.media_type.clone(),
            };
            let tmp = self
                .inner
                .registries
                .download_blob(r, &blob, &layout.tmp())
                .await?;
            tmp.persist(&blob_path)
                .map_err(|e| ImageError::io("could not store", &blob_path)(e.error))?;
        }
        let (layout2, d2, diff_id) = (layout.clone(), d.clone(), layer.diff_id.clone());
        let started = std::time::Instant::now();
        let unpacked =
            tokio::task::spawn_blocking(move || unpack_into_cache(&layout2, &d2, &diff_id))
                .await
                .map_err(|e| join_error(layout, e))?;
        let bytes = match unpacked {
            Ok(bytes) => bytes,
            Err(UnpackError::Invalid(reason)) => {
                // The blob is authentic but unusable: do not keep it around.
                let _ = fs::remove_file(&blob_path);
                return Err(ImageError::InvalidLayer {
                    reference: r.to_string(),
                    digest: d.clone(),
                    reason,
                });
            }
            Err(UnpackError::Io {
                action,
                path,
                source,
            }) => {
                return Err(ImageError::Io {
                    action,
                    path,
                    source,
                })
            }
        };
        tracing::debug!(layer = %d, bytes, elapsed = ?started.elapsed(), "unpacked layer");
        cache.insert_layer(d, bytes);
        Ok(())
    }
}

/// Unpacks the cached blob of `d` into a temporary directory, flushes it,
/// writes its size file and renames it to `layers/sha256/<hex>`.
fn unpack_into_cache(layout: &Layout, d: &Digest, diff_id: &Digest) -> Result<u64, UnpackError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| UnpackError::Io {
            action,
            path,
            source,
        }
    };
    let tmp = tempfile::Builder::new()
        .prefix("unpack-")
        .tempdir_in(layout.tmp())
        .map_err(io(
            "could not create a temporary directory in",
            &layout.tmp(),
        ))?;
    let dest = tmp.path().join("layer");
    fs::create_dir(&dest).map_err(io("could not create directory", &dest))?;
    let blob = layout.blob(d);
    let unpacked = unpack_layer(&blob, &dest, diff_id)?;
    let blob_len = fs::metadata(&blob)
        .map(|m| m.len())
        .map_err(io("could not inspect", &blob))?;
    let bytes = unpacked + blob_len;
    let size_file = layout.layer_size_file(d);
    fs::write(&size_file, format!("{bytes}\n")).map_err(io("could not write", &size_file))?;
    // One syncfs flushes every file just written, so the rename below can
    // never expose a layer whose data did not reach the disk.
    let dir = fs::File::open(&dest).map_err(io("could not open", &dest))?;
    nix::unistd::syncfs(&dir).map_err(|e| io("could not flush", &dest)(e.into()))?;
    let final_dir = layout.layer(d);
    fs::rename(&dest, &final_dir).map_err(io("could not move into place", &final_dir))?;
    Ok(bytes)
}

pub(crate) fn join_error(layout: &Layout, e: tokio::task::JoinError) -> ImageError {
    ImageError::Io {
        action: "a background task failed in",
        path: layout.root().to_path_buf(),
        source: std::io::Error::other(e),
    }
}

/// Layers pinned for the duration of a pull or a prepare; unpinned on drop
/// (also when the future is cancelled) unless kept.
pub(crate) struct Pins<'a> {
    cache: &'a Cache,
    layers: Vec<Digest>,
}

impl<'a> Pins<'a> {
    pub(crate) fn new(cache: &'a Cache, image: &Image) -> Self {
        let layers: Vec<Digest> = image.layers.iter().map(|l| l.digest.clone()).collect();
        cache.pin(&layers);
        Pins { cache, layers }
    }

    /// Hands the pins over to a container record.
    pub(crate) fn keep(mut self) {
        self.layers.clear();
    }
}

impl Drop for Pins<'_> {
    fn drop(&mut self) {
        if !self.layers.is_empty() {
            self.cache.unpin(&self.layers);
        }
    }
}
