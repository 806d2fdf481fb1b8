//! The errors of this crate.
//!
//! Every message says what failed and, where there is something to do about
//! it, what to do. No message ever contains registry credentials: they are
//! only handed to `oci-client`, whose errors carry URLs and server replies but
//! never the `Authorization` header.

use std::io;
use std::path::PathBuf;

use crate::reference::Digest;

/// What can go wrong while pulling, caching or mounting images.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The image reference could not be parsed.
    #[error(
        "invalid image reference {reference:?}: {reason}; expected REGISTRY/REPOSITORY[:TAG][@sha256:HEX]"
    )]
    InvalidReference {
        /// The reference as given.
        reference: String,
        /// Why it was rejected.
        reason: String,
    },

    /// A digest was not a well-formed sha256 digest.
    #[error(
        "{digest:?} is not a sha256 digest: expected \"sha256:\" followed by 64 lowercase hex characters"
    )]
    InvalidDigest {
        /// The digest as found.
        digest: String,
    },

    /// The registry does not have the image (or one of its blobs).
    #[error(
        "image {reference} not found in registry {registry}: check the name and that it was pushed"
    )]
    NotFound {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The registry that was asked.
        registry: String,
    },

    /// The registry refused the credentials (or their absence).
    #[error(
        "registry {registry} refused access to {reference}: check the credentials configured for {registry}"
    )]
    Unauthorized {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The registry that refused.
        registry: String,
    },

    /// The credentials for the registry could not be had (an ECR token
    /// that cannot be fetched).
    #[error("cannot pull {reference}: {reason}")]
    Credentials {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The registry as the reference names it, e.g. `docker.io`.
        registry: String,
        /// Why (never a secret).
        reason: String,
    },

    /// A downloaded blob did not hash to its digest. Nothing of it was kept.
    #[error(
        "blob {digest} of {reference} does not match its digest: the registry served corrupt or tampered data"
    )]
    Corrupt {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The digest the blob should have had.
        digest: Digest,
    },

    /// A registry request took longer than the configured timeout.
    #[error(
        "{what} of {reference} from registry {registry} timed out after {seconds}s: check that the registry is reachable and responsive"
    )]
    Timeout {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The registry that was asked.
        registry: String,
        /// What was being fetched.
        what: String,
        /// The timeout that expired.
        seconds: u64,
    },

    /// Any other registry or network failure.
    #[error(
        "fetching the {what} of {reference} from registry {registry} failed: {message}; check that the registry is reachable"
    )]
    Registry {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The registry that was asked.
        registry: String,
        /// What was being fetched.
        what: String,
        /// oci-client's error as text (network, HTTP status or protocol).
        message: String,
    },

    /// The image exists but cannot be run here (media type, platform, ...).
    #[error("image {reference} cannot be used: {reason}")]
    UnsupportedImage {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// Why.
        reason: String,
    },

    /// A layer archive is malformed or tries to write outside its directory.
    #[error(
        "layer {digest} of {reference} is unsafe or malformed: {reason}; the image cannot be used and must be rebuilt"
    )]
    InvalidLayer {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// The layer's digest.
        digest: Digest,
        /// What is wrong with it.
        reason: String,
    },

    /// A local file-system operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "could not create directory".
        action: &'static str,
        /// The file or directory `action` was done to.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// The overlay mount of a container's root file system failed.
    #[error(
        "could not mount the root filesystem of container {container_id} at {}: {reason}", path.display()
    )]
    Mount {
        /// The id of the container the root file system is for.
        container_id: String,
        /// `containers/<id>/merged` under the cache root.
        path: PathBuf,
        /// Why.
        reason: String,
    },

    /// Unmounting a container's root file system failed.
    #[error(
        "could not unmount the root filesystem of container {container_id} at {}: {reason}", path.display()
    )]
    Unmount {
        /// The id of the container the root file system was for.
        container_id: String,
        /// `containers/<id>/merged` under the cache root.
        path: PathBuf,
        /// Why.
        reason: String,
    },

    /// The image has more layers than one overlay mount can take.
    #[error(
        "image {reference} has {layers} layers, too many for one overlay mount (the mount options would take {length} bytes, the kernel allows {limit}): flatten the image or use a shorter cache root"
    )]
    TooManyLayers {
        /// As the caller wrote it, or `…@sha256:…` once its tag was resolved.
        reference: String,
        /// How many layers it has.
        layers: usize,
        /// The length of the mount options.
        length: usize,
        /// The kernel's limit (the page size).
        limit: usize,
    },

    /// `prepare_rootfs` was called twice for one container id.
    #[error("container {id} already has a root filesystem: release it first")]
    ContainerExists {
        /// The id given again while the root file system prepared for it is
        /// still there.
        id: String,
    },

    /// The local image storage (an OCI image layout) cannot be read or
    /// written.
    #[error("the local image storage at {}: {reason}; remove it to build it again", path.display())]
    Layout {
        /// The layout's directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A blob pushed to the local image storage was refused; nothing of it
    /// was kept.
    #[error("the pushed blob was refused: {reason}")]
    UploadRejected {
        /// Why.
        reason: String,
    },

    /// A base image could not be built from the host's packages.
    #[error("cannot build the base image: {reason}")]
    BaseImage {
        /// Why, and what to do.
        reason: String,
    },

    /// The store's configuration cannot be used.
    #[error("invalid image store configuration: {reason}")]
    InvalidConfig {
        /// Why.
        reason: String,
    },

    /// Another process holds the cache directory.
    #[error(
        "the image cache at {} is in use by another process: give each worker its own cache directory", path.display()
    )]
    CacheLocked {
        /// The cache root, whose lock file another process holds locked.
        path: PathBuf,
    },
}

impl ImageError {
    /// Returns a closure that wraps an `io::Error` with what was being done
    /// and on which path, for use with `map_err`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> ImageError {
        let path = path.into();
        move |source| ImageError::Io {
            action,
            path,
            source,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = ImageError> = std::result::Result<T, E>;
