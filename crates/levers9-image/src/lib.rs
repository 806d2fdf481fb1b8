//! OCI images for levers9 workers: pull by digest, verify, cache, unpack,
//! and mount per-container root file systems.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use levers9_image::{ContainerId, ImageStore, ImageStoreConfig};
//! let store = ImageStore::open(ImageStoreConfig::new("/var/lib/levers9/images"))?;
//! let image = store.pull("127.0.0.1:5000/levers9/busybox@sha256:6aae34…").await?;
//! let id = ContainerId::parse("c1")?;
//! let rootfs = store.prepare_rootfs(&image, &id).await?;
//! // ... run the container with rootfs.path as its root and image.config ...
//! store.release(&id).await?;
//! # Ok(()) }
//! ```
//!
//! # What is guaranteed
//!
//! * **Pulls are by digest.** A tag is resolved to its manifest digest once;
//!   from then on the digest identifies the image ([`Image::digest`]).
//! * **Every blob is verified** (manifest, config, each layer) against its
//!   sha256 before it enters the cache, and each layer's uncompressed content
//!   against its `diff_id`. A mismatch is [`ImageError::Corrupt`] and leaves
//!   nothing in the cache.
//! * **Transport:** plain HTTP only for loopback registries (127.0.0.0/8,
//!   ::1, localhost) and registries listed in
//!   [`ImageStoreConfig::insecure_registries`]; HTTPS otherwise. Every
//!   request has a connect timeout and a request timeout, and every read of
//!   a download the request timeout.
//! * **One download per digest:** concurrent pulls of an image, or of images
//!   sharing layers, wait for one another ([`ImageStore::blob_downloads`]
//!   counts what really went over the network).
//! * **Layers are unpacked once** into `layers/sha256/<hex>/` and shared
//!   read-only by all containers; each container gets its own overlay upper
//!   dir. Writes go through `tmp/` and a rename, so a crash never leaves a
//!   half-unpacked layer looking complete.
//! * **Whiteouts** are converted at unpack time into overlayfs's own format:
//!   `.wh.NAME` becomes a character device 0/0 named `NAME`, and
//!   `.wh..wh..opq` becomes the `trusted.overlay.opaque=y` xattr on its
//!   directory, so the kernel hides lower files itself. (This needs root and
//!   a file system with `trusted.*` xattrs, e.g. ext4 or xfs.)
//! * **Layers cannot escape** their directory: absolute paths, `..`, and
//!   writes or hard links through symlinks are rejected
//!   ([`ImageError::InvalidLayer`]); device nodes are not created.
//! * **Bounded cache:** over [`ImageStoreConfig::max_cache_bytes`], layers no
//!   prepared rootfs uses are evicted least recently used first. Last use is
//!   kept in memory and as the mtime of `layers/sha256/<hex>.size`, so the
//!   order survives restarts; prepared root file systems are recorded on
//!   disk and stay pinned across restarts too.
//!
//! * **Credentials** come from a [`RegistryKeychain`]: docker config JSON
//!   entries per registry host ([`credentials`]), ECR tokens for ECR hosts
//!   ([`ecr`]), anonymous otherwise. No error message or `Debug` output
//!   carries a secret.
//!
//! See the `cache` and `overlay` module sources for the on-disk layout and
//! for how many layers fit one overlay mount (short `l/` symlinks).

mod cache;
pub mod credentials;
pub mod debian;
pub mod ecr;
mod error;
// Unsafe code is denied in the workspace but in `fill`, `overlay` and
// `unpack`: libc calls nix does not wrap (malloc_trim, sysconf,
// lsetxattr), each with its SAFETY comment.
#[allow(unsafe_code)]
mod fill;
mod image;
pub mod layout;
#[allow(unsafe_code)]
mod overlay;
mod pull;
mod reference;
mod store;
mod tags;
#[allow(unsafe_code)]
mod unpack;
mod uploads;

pub use cache::CacheUsage;
pub use credentials::{
    normalize_registry_host, CredentialsError, RegistryCredentials, RegistryKeychain,
};
pub use error::{ImageError, Result};
pub use image::{Image, ImageConfig, Layer};
/// The id [`ImageStore::prepare_rootfs`] and [`ImageStore::release`] take.
pub use levers9_ids::ContainerId;
pub use overlay::is_mounted;
pub use reference::{is_loopback_host, Digest, ImageReference};
pub use store::{ImageStore, ImageStoreConfig, Rootfs};

/// The layer unpacker, for the fuzz targets in `fuzz/` (not an API: the
/// store is how layers are unpacked).
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::unpack::{unpack_layer, UnpackError};
}
