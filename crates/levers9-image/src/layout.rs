//! Local image storage: an OCI image layout directory (`oci-layout`,
//! `index.json`, `blobs/sha256/<hex>`), written by `levers9 up` and served
//! read-only by a controlplane as a registry, so a machine with no registry
//! still has its base image.
//!
//! Tags live in `index.json` as the `org.opencontainers.image.ref.name`
//! annotation, `<repository>:<tag>`, as `skopeo` and `umoci` write them.
//! Blobs are written through a temporary file and a rename, and named by
//! their sha256, so a reader never sees a partial blob.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use levers9_sync::Lock;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::{ImageError, Result};

/// The annotation that names an image in `index.json`.
pub(crate) const REF_NAME: &str = "org.opencontainers.image.ref.name";
/// OCI media types written here.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI media types written here.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// OCI media types written here.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// A blob's media type, digest and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What it is.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Bytes.
    pub size: u64,
    /// Annotations (the tag, in the index).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Index {
    schema_version: u32,
    #[serde(default)]
    pub(crate) manifests: Vec<Descriptor>,
}

/// An OCI image layout directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub(crate) root: PathBuf,
    /// Held while `index.json` is read, changed and written back, so two
    /// pushes tagging at once both keep their tag.
    index_lock: std::sync::Arc<Lock<()>>,
}

impl Layout {
    /// The layout at `root`, created if missing.
    pub fn open(root: &Path) -> Result<Self> {
        let blobs = root.join("blobs").join("sha256");
        std::fs::create_dir_all(&blobs).map_err(|e| io(&blobs, e))?;
        let marker = root.join("oci-layout");
        if !marker.exists() {
            std::fs::write(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)
                .map_err(|e| io(&marker, e))?;
        }
        Ok(Self {
            root: root.to_owned(),
            index_lock: Default::default(),
        })
    }

    /// Stores `bytes` as a blob; its descriptor.
    pub fn put_blob(&self, media_type: &str, bytes: &[u8]) -> Result<Descriptor> {
        let hex = hex::encode(Sha256::digest(bytes));
        let path = self.root.join("blobs").join("sha256").join(&hex);
        if !path.exists() {
            let dir = path.parent().unwrap_or(&self.root);
            let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io(dir, e))?;
            tmp.write_all(bytes).map_err(|e| io(&path, e))?;
            tmp.persist(&path).map_err(|e| io(&path, e.error))?;
        }
        Ok(Descriptor {
            media_type: media_type.to_owned(),
            digest: format!("sha256:{hex}"),
            size: bytes.len() as u64,
            annotations: Default::default(),
        })
    }

    /// Where the blob `digest` is, if stored; None for a digest that is not
    /// a sha256 one (so no path can be made of anything else).
    pub fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let path = self.root.join("blobs").join("sha256").join(hex);
        path.is_file().then_some(path)
    }

    /// Names the manifest `manifest` `<repository>:<tag>`, replacing what
    /// had that name.
    pub fn tag(&self, name: &str, manifest: &Descriptor) -> Result<()> {
        let _held = self.index_lock.lock();
        let mut index = self.index()?;
        index
            .manifests
            .retain(|m| m.annotations.get(REF_NAME).map(String::as_str) != Some(name));
        let mut named = manifest.clone();
        named.annotations.insert(REF_NAME.into(), name.to_owned());
        index.manifests.push(named);
        index.schema_version = 2;
        let bytes = serde_json::to_vec_pretty(&index).map_err(|e| ImageError::Layout {
            path: self.root.clone(),
            reason: format!("cannot write index.json: {e}"),
        })?;
        let path = self.root.join("index.json");
        let mut tmp = tempfile::NamedTempFile::new_in(&self.root).map_err(|e| io(&path, e))?;
        tmp.write_all(&bytes).map_err(|e| io(&path, e))?;
        tmp.persist(&path).map_err(|e| io(&path, e.error))?;
        Ok(())
    }

    /// The manifest `reference` (a tag or a digest) of `repository` names.
    pub fn resolve(&self, repository: &str, reference: &str) -> Result<Option<Descriptor>> {
        let index = self.index()?;
        let found = if reference.starts_with("sha256:") {
            index
                .manifests
                .into_iter()
                .find(|m| m.digest == reference && self.blob_path(&m.digest).is_some())
        } else {
            let name = format!("{repository}:{reference}");
            index
                .manifests
                .into_iter()
                .find(|m| m.annotations.get(REF_NAME) == Some(&name))
        };
        Ok(found.map(|mut m| {
            m.annotations.clear();
            m
        }))
    }

    pub(crate) fn index(&self) -> Result<Index> {
        let path = self.root.join("index.json");
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| ImageError::Layout {
                path: self.root.clone(),
                reason: format!("index.json is not an OCI index: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::default()),
            Err(e) => Err(io(&path, e)),
        }
    }
}

pub(crate) fn io(path: &Path, source: std::io::Error) -> ImageError {
    ImageError::Io {
        action: "local image storage: cannot write or read",
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_manifest_resolves_by_tag_and_digest_and_retagging_replaces_it() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout::open(dir.path()).expect("open");
        let first = layout.put_blob(MANIFEST_MEDIA_TYPE, b"{}").expect("blob");
        let second = layout.put_blob(MANIFEST_MEDIA_TYPE, b"{ }").expect("blob");
        layout.tag("levers9/python:3.11", &first).expect("tag");
        layout.tag("levers9/python:3.11", &second).expect("retag");

        let by_tag = layout.resolve("levers9/python", "3.11").expect("resolve");
        let by_digest = layout
            .resolve("levers9/python", &second.digest)
            .expect("resolve");

        assert_eq!(by_tag, Some(second.clone()));
        assert_eq!(by_digest, Some(second));
        assert_eq!(layout.resolve("levers9/python", "3.12").expect("ok"), None);
        assert_eq!(
            layout.resolve("levers9/python", &first.digest).expect("ok"),
            None,
            "an untagged manifest is not served"
        );
    }

    #[test]
    fn only_stored_sha256_blobs_have_a_path() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout::open(dir.path()).expect("open");
        let blob = layout.put_blob(LAYER_MEDIA_TYPE, b"layer").expect("blob");
        assert!(layout.blob_path(&blob.digest).is_some());
        assert!(layout.blob_path("sha256:../../etc/passwd").is_none());
        assert!(layout
            .blob_path(&format!("sha256:{}", "0".repeat(64)))
            .is_none());
        assert!(layout.blob_path("md5:abc").is_none());
    }
}
