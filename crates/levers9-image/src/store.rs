//! [`ImageStore`]: pulls images into the cache (once per digest, even when
//! asked concurrently) and prepares and releases container root file systems.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use levers9_ids::ContainerId;
use levers9_sync::Lock;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::cache::{Cache, CacheUsage, KeyedLocks, Layout};
use crate::credentials::{RegistryCredentials, RegistryKeychain};
use crate::error::{ImageError, Result};
use crate::fill::{join_error, Pins};
use crate::image::{build_image, parse_manifest, Image, Manifest};
use crate::overlay::{self, ContainerRecord};
use crate::pull::{Registries, RegistrySettings};
use crate::reference::{Digest, ImageReference};
use crate::tags::ResolvedTags;

/// How an [`ImageStore`] is set up.
#[derive(Clone, Debug)]
pub struct ImageStoreConfig {
    /// The cache root (see the crate docs for its layout). Must be on a file
    /// system that supports overlayfs upper dirs and `trusted.*` xattrs
    /// (ext4, xfs), and its path must not contain `,`, `:` or `\`, which
    /// overlay mount options cannot carry.
    pub root: PathBuf,
    /// Cache size bound in bytes (unpacked layers plus their blobs). Layers
    /// not used by a prepared rootfs are evicted, least recently used first,
    /// while the cache is larger. Layers in use are never evicted, so the
    /// cache can exceed the bound while they are.
    pub max_cache_bytes: u64,
    /// Registries (`host` or `host:port`, as written in references) to reach
    /// over plain HTTP. Loopback registries always are; all others use HTTPS.
    pub insecure_registries: Vec<String>,
    /// Credentials per registry (`host` or `host:port`, see
    /// [`crate::normalize_registry_host`]); ECR registries without an entry
    /// get ECR tokens (see [`RegistryKeychain`]); anonymous otherwise.
    pub credentials: HashMap<String, RegistryCredentials>,
    /// A ready keychain instead of `credentials` (shares its ECR token
    /// cache); `credentials` is ignored when set.
    pub keychain: Option<RegistryKeychain>,
    /// Timeout for establishing a connection to a registry.
    pub connect_timeout: Duration,
    /// Timeout for each registry request, and for each read of a download.
    pub request_timeout: Duration,
    /// How long a tag's digest is reused: pulls of the tag within it ask the
    /// registry nothing (an image pushed under the tag meanwhile is seen
    /// once it passed). Zero resolves the tag at every pull.
    pub tag_ttl: Duration,
}

impl ImageStoreConfig {
    /// Defaults: 10 GiB cache, no insecure registries, anonymous access,
    /// 10 s connect and 60 s request timeouts, tags reused for 10 s.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ImageStoreConfig {
            root: root.into(),
            max_cache_bytes: 10 << 30,
            insecure_registries: Vec::new(),
            credentials: HashMap::new(),
            keychain: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            tag_ttl: Duration::from_secs(10),
        }
    }
}

/// A container's root file system, mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rootfs {
    /// The container it belongs to.
    pub container_id: ContainerId,
    /// The merged overlay directory, to use as the container's root.
    pub path: PathBuf,
    /// The image it was made from.
    pub image: Digest,
}

/// Pulls images into a local content-addressed cache and assembles
/// container root file systems from them. Cheap to clone; clones share
/// the cache, the registry clients and the counters.
#[derive(Clone)]
pub struct ImageStore {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) cache: Cache,
    pub(crate) registries: Registries,
    tags: ResolvedTags,
    image_locks: KeyedLocks,
    /// Prepared root file systems; `None` while one is being prepared.
    containers: Lock<HashMap<ContainerId, Option<ContainerRecord>>>,
    _lock: Flock<fs::File>,
}

impl ImageStore {
    /// Opens (creating if needed) the cache at `config.root`, indexes the
    /// layers already there and re-adopts root file systems prepared before
    /// a restart. Fails if another process has the cache open.
    pub fn open(config: ImageStoreConfig) -> Result<Self> {
        fs::create_dir_all(&config.root)
            .map_err(ImageError::io("could not create directory", &config.root))?;
        let root = fs::canonicalize(&config.root)
            .map_err(ImageError::io("could not resolve", &config.root))?;
        if root.to_string_lossy().contains([',', ':', '\\']) {
            return Err(ImageError::InvalidConfig {
                reason: format!(
                    "the cache root {} contains ',', ':' or '\\', which overlay mount options cannot carry",
                    root.display()
                ),
            });
        }
        let layout = Layout::new(root);
        let lock_path = layout.lock_file();
        let lock_file = fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(ImageError::io("could not open", &lock_path))?;
        let lock = match Flock::lock(lock_file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((_, Errno::EWOULDBLOCK)) => {
                return Err(ImageError::CacheLocked {
                    path: layout.root().to_path_buf(),
                })
            }
            Err((_, e)) => return Err(ImageError::io("could not lock", &lock_path)(e.into())),
        };
        layout.prepare()?;
        let cache = Cache::open(layout.clone(), config.max_cache_bytes)?;
        let mut containers = HashMap::new();
        for (id, record) in overlay::read_records(&layout)? {
            cache.pin(&record.layers);
            containers.insert(id, Some(record));
        }
        let keychain = config
            .keychain
            .unwrap_or_else(|| RegistryKeychain::new(config.credentials));
        let registries = Registries::new(RegistrySettings {
            keychain,
            insecure_registries: config.insecure_registries,
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
        });
        Ok(ImageStore {
            inner: Arc::new(Inner {
                cache,
                registries,
                tags: ResolvedTags::new(config.tag_ttl),
                image_locks: KeyedLocks::default(),
                containers: Lock::new(containers),
                _lock: lock,
            }),
        })
    }

    /// The cache root (canonical).
    pub fn root(&self) -> &Path {
        self.inner.cache.layout.root()
    }

    /// Where the layer `digest` is (or would be) unpacked.
    pub fn layer_dir(&self, digest: &Digest) -> PathBuf {
        self.inner.cache.layout.layer(digest)
    }

    /// Whether the layer `digest` is unpacked in the cache.
    pub fn has_layer(&self, digest: &Digest) -> bool {
        self.inner.cache.has_layer(digest)
    }

    /// How many blobs (configs and layers) were downloaded from registries
    /// since this store was opened. Manifests are counted separately.
    pub fn blob_downloads(&self) -> u64 {
        self.inner.registries.blob_downloads()
    }

    /// How many manifest requests (tag resolutions and manifest downloads)
    /// went to registries since this store was opened.
    pub fn manifest_fetches(&self) -> u64 {
        self.inner.registries.manifest_fetches()
    }

    /// Size and counts of the cached layers.
    pub fn usage(&self) -> CacheUsage {
        self.inner.cache.usage()
    }

    /// Evicts unused layers, least recently used first, until the cache fits
    /// its bound. Runs by itself after pulls and releases.
    pub async fn evict(&self) -> Result<Vec<Digest>> {
        self.inner.cache.evict().await
    }

    /// Pulls an image by digest (`registry/repo@sha256:…`) or by tag (which
    /// is resolved to a digest first) and makes sure all its layers are
    /// unpacked in the cache. Concurrent pulls of one image share one
    /// download; an image whose blobs are all cached needs no network when
    /// pulled by digest, or by a tag resolved less than
    /// [`ImageStoreConfig::tag_ttl`] ago.
    pub async fn pull(&self, reference: &str) -> Result<Image> {
        let r = ImageReference::parse(reference)?;
        let requested = match r.digest() {
            Some(d) => d.clone(),
            None => match self.inner.tags.get(&r) {
                Some(digest) => digest,
                None => {
                    let digest = self.inner.registries.resolve_digest(&r).await?;
                    self.inner.tags.put(&r, &digest);
                    digest
                }
            },
        };
        let guard = self.inner.image_locks.lock(requested.as_str()).await;
        let mut digest = requested;
        let mut seen_index = false;
        let (config_ref, layer_refs) = loop {
            let bytes = self.manifest_bytes(&r, &digest).await?;
            match parse_manifest(&r, &bytes)? {
                Manifest::Image { config, layers } => break (config, layers),
                Manifest::Index { platform_manifest } if !seen_index => {
                    seen_index = true;
                    digest = platform_manifest;
                }
                Manifest::Index { .. } => {
                    return Err(ImageError::UnsupportedImage {
                        reference: r.to_string(),
                        reason: "its index points at another index".to_owned(),
                    })
                }
            }
        };
        let config = self.blob_bytes(&r, &config_ref).await?;
        let image = build_image(&r, digest, &config_ref, &layer_refs, &config)?;
        let pins = Pins::new(&self.inner.cache, &image);
        self.ensure_layers(&image).await?;
        drop(pins);
        drop(guard);
        self.evict_logged().await;
        Ok(image)
    }

    /// Mounts a private, writable root file system for `container_id`: the
    /// image's layers (re-fetched if they were evicted) under an upper dir
    /// of its own. Its layers are not evicted until [`ImageStore::release`].
    pub async fn prepare_rootfs(
        &self,
        image: &Image,
        container_id: &ContainerId,
    ) -> Result<Rootfs> {
        let reservation = Reservation::new(&self.inner, container_id)?;
        let pins = Pins::new(&self.inner.cache, image);
        self.ensure_layers(image).await?;
        let record = ContainerRecord {
            image: image.digest.clone(),
            layers: image.layers.iter().map(|l| l.digest.clone()).collect(),
        };
        let layout = self.inner.cache.layout.clone();
        let (id, reference, rec) = (
            container_id.clone(),
            image.reference.to_string(),
            record.clone(),
        );
        let path = tokio::task::spawn_blocking(move || {
            overlay::mount_rootfs(&layout, &id, &reference, &rec)
        })
        .await
        .map_err(|e| join_error(&self.inner.cache.layout, e))??;
        // The pins now belong to the record, until release.
        pins.keep();
        reservation.commit(record);
        Ok(Rootfs {
            container_id: container_id.clone(),
            path,
            image: image.digest.clone(),
        })
    }

    /// Unmounts the root file system of `container_id` and removes its
    /// directory (upper layer included). Releasing an unknown or already
    /// released id does nothing.
    pub async fn release(&self, container_id: &ContainerId) -> Result<()> {
        let layout = self.inner.cache.layout.clone();
        let id = container_id.clone();
        tokio::task::spawn_blocking(move || overlay::unmount_rootfs(&layout, &id))
            .await
            .map_err(|e| join_error(&self.inner.cache.layout, e))??;
        let record = self.inner.containers.lock().remove(container_id).flatten();
        if let Some(record) = record {
            self.inner.cache.unpin(&record.layers);
        }
        self.evict_logged().await;
        Ok(())
    }

    async fn evict_logged(&self) {
        if let Err(e) = self.inner.cache.evict().await {
            tracing::warn!(error = %e, "image cache eviction failed");
        }
    }
}

/// A container id taken while its rootfs is prepared; freed on drop unless
/// committed, so a failed or cancelled prepare can be retried.
struct Reservation<'a> {
    inner: &'a Inner,
    id: ContainerId,
    committed: bool,
}

impl<'a> Reservation<'a> {
    fn new(inner: &'a Inner, id: &ContainerId) -> Result<Self> {
        let mut map = inner.containers.lock();
        if map.contains_key(id) {
            return Err(ImageError::ContainerExists { id: id.to_string() });
        }
        map.insert(id.clone(), None);
        Ok(Reservation {
            inner,
            id: id.clone(),
            committed: false,
        })
    }

    fn commit(mut self, record: ContainerRecord) {
        self.inner
            .containers
            .lock()
            .insert(self.id.clone(), Some(record));
        self.committed = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.committed {
            self.inner.containers.lock().remove(&self.id);
        }
    }
}
