//! Blob uploads into the local image storage: the push half of the registry
//! a `levers9 up` controlplane serves, so its image builds have somewhere to
//! push to.
//!
//! An upload is a file under `uploads/` named by a random id; the bytes are
//! appended to it as they arrive (one request or several) and it becomes a
//! blob only once it hashes to the digest the pusher names. Nothing under
//! `blobs/` is ever partial or unverified.

use std::io::Read as _;
use std::path::PathBuf;

use sha2::{Digest as _, Sha256};

use crate::error::{ImageError, Result};
use crate::layout::{io, Descriptor, Layout, REF_NAME};

const UPLOADS: &str = "uploads";

fn rejected(reason: impl Into<String>) -> ImageError {
    ImageError::UploadRejected {
        reason: reason.into(),
    }
}

impl Layout {
    /// Starts an upload; its id.
    pub fn start_upload(&self) -> Result<String> {
        let dir = self.root.join(UPLOADS);
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let file = tempfile::Builder::new()
            .prefix("u")
            .rand_bytes(16)
            .tempfile_in(&dir)
            .map_err(|e| io(&dir, e))?;
        let (_, path) = file.keep().map_err(|e| io(&dir, e.error))?;
        path.file_name()
            .and_then(|name| name.to_str())
            .map(str::to_owned)
            .ok_or_else(|| rejected("the upload got no name"))
    }

    /// The file of the upload `id`, if it is one: ids are only ever the
    /// names `start_upload` made, so no path can be made of anything else.
    pub fn upload_path(&self, id: &str) -> Option<PathBuf> {
        let well_formed =
            id.len() > 1 && id.starts_with('u') && id.bytes().all(|b| b.is_ascii_alphanumeric());
        let path = self.root.join(UPLOADS).join(id);
        (well_formed && path.is_file()).then_some(path)
    }

    /// Turns the upload `id` into the blob `digest` when its bytes hash to
    /// it; the upload is gone either way.
    pub fn finish_upload(&self, id: &str, digest: &str) -> Result<Descriptor> {
        let path = self
            .upload_path(id)
            .ok_or_else(|| rejected(format!("no upload {id:?}: start it again")))?;
        let outcome = self.verify_and_store(&path, digest);
        if outcome.is_err() {
            let _ = std::fs::remove_file(&path);
        }
        outcome
    }

    fn verify_and_store(&self, path: &std::path::Path, digest: &str) -> Result<Descriptor> {
        let expected = digest
            .strip_prefix("sha256:")
            .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| rejected(format!("{digest:?} is not a sha256 digest")))?;
        let mut file = std::fs::File::open(path).map_err(|e| io(path, e))?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            let read = file.read(&mut buffer).map_err(|e| io(path, e))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            size += read as u64;
        }
        let actual = hex::encode(hasher.finalize());
        if actual != expected {
            return Err(rejected(format!(
                "its bytes hash to sha256:{actual}, not {digest}"
            )));
        }
        let blob = self.root.join("blobs").join("sha256").join(expected);
        std::fs::rename(path, &blob).map_err(|e| io(&blob, e))?;
        Ok(Descriptor {
            media_type: "application/octet-stream".into(),
            digest: digest.to_owned(),
            size,
            annotations: Default::default(),
        })
    }

    /// The tags of `repository`, sorted.
    pub fn tags(&self, repository: &str) -> Result<Vec<String>> {
        let prefix = format!("{repository}:");
        let mut tags: Vec<String> = self
            .index()?
            .manifests
            .iter()
            .filter_map(|m| m.annotations.get(REF_NAME))
            .filter_map(|name| name.strip_prefix(&prefix))
            .map(str::to_owned)
            .collect();
        tags.sort();
        Ok(tags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::MANIFEST_MEDIA_TYPE;

    fn digest_of(bytes: &[u8]) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
    }

    #[test]
    fn an_upload_becomes_a_blob_only_under_its_own_digest() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout::open(dir.path()).expect("open");

        let good = layout.start_upload().expect("start");
        std::fs::write(layout.upload_path(&good).expect("path"), b"layer").expect("write");
        let blob = layout
            .finish_upload(&good, &digest_of(b"layer"))
            .expect("finish");
        assert_eq!(blob.size, 5);
        assert!(layout.blob_path(&blob.digest).is_some());
        assert!(layout.upload_path(&good).is_none(), "the upload is gone");

        let bad = layout.start_upload().expect("start");
        std::fs::write(layout.upload_path(&bad).expect("path"), b"other").expect("write");
        let error = layout
            .finish_upload(&bad, &digest_of(b"layer!"))
            .expect_err("wrong digest");
        assert!(error.to_string().contains("hash to"), "{error}");
        assert!(
            layout.upload_path(&bad).is_none(),
            "a refused upload is gone"
        );
        assert!(layout.blob_path(&digest_of(b"other")).is_none());
    }

    #[test]
    fn upload_ids_name_nothing_but_uploads() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout::open(dir.path()).expect("open");
        assert!(layout.upload_path("../index.json").is_none());
        assert!(layout.upload_path("u").is_none());
        assert!(layout.upload_path("unknown1").is_none());
        assert!(layout.finish_upload("uX", &digest_of(b"")).is_err());
    }

    #[test]
    fn tags_are_listed_per_repository() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout::open(dir.path()).expect("open");
        let manifest = layout.put_blob(MANIFEST_MEDIA_TYPE, b"{}").expect("blob");
        layout.tag("images:b", &manifest).expect("tag");
        layout.tag("images:a", &manifest).expect("tag");
        layout.tag("images-other:c", &manifest).expect("tag");
        assert_eq!(layout.tags("images").expect("tags"), ["a", "b"]);
        assert!(layout.tags("none").expect("tags").is_empty());
    }
}
