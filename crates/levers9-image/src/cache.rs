//! The on-disk layout of the cache, the index of unpacked layers with their
//! sizes and last use, pins held by prepared root file systems, and
//! least-recently-used eviction.
//!
//! Layout under the cache root:
//!
//! ```text
//! blobs/sha256/<hex>         verified blobs: layers as downloaded, manifests, configs
//! layers/sha256/<hex>/       an unpacked layer (complete iff it exists)
//! layers/sha256/<hex>.size   its disk usage in bytes; the mtime records the last use
//! l/<12 hex>                 short symlink to the layer dir, for overlay lowerdir
//! containers/<id>/           upper/, work/, merged/ and record.json per rootfs
//! tmp/                       downloads and unpacks in progress (wiped on open)
//! lock                       flock'ed while a store has the cache open
//! ```
//!
//! Everything enters `blobs/` and `layers/` by `rename` from `tmp/` after it
//! has been verified and flushed, so a crash never leaves something that
//! looks complete but is not.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use levers9_ids::ContainerId;
use levers9_sync::Lock;

use crate::error::{ImageError, Result};
use crate::reference::Digest;

/// Paths inside the cache root.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: PathBuf) -> Self {
        Layout { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob(&self, d: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(d.hex())
    }

    pub fn layers_dir(&self) -> PathBuf {
        self.root.join("layers/sha256")
    }

    pub fn layer(&self, d: &Digest) -> PathBuf {
        self.layers_dir().join(d.hex())
    }

    pub fn layer_size_file(&self, d: &Digest) -> PathBuf {
        self.layers_dir().join(format!("{}.size", d.hex()))
    }

    pub fn links_dir(&self) -> PathBuf {
        self.root.join("l")
    }

    pub fn link(&self, d: &Digest) -> PathBuf {
        self.links_dir().join(&d.hex()[..12])
    }

    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub fn containers(&self) -> PathBuf {
        self.root.join("containers")
    }

    pub fn container(&self, id: &ContainerId) -> PathBuf {
        self.containers().join(id)
    }

    pub fn empty_layer(&self) -> PathBuf {
        self.root.join("empty")
    }

    pub fn lock_file(&self) -> PathBuf {
        self.root.join("lock")
    }

    /// Creates the directories and empties `tmp/` (leftovers of a crash).
    pub fn prepare(&self) -> Result<()> {
        let tmp = self.tmp();
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(ImageError::io("could not clear", &tmp))?;
        }
        for dir in [
            self.root.join("blobs/sha256"),
            self.layers_dir(),
            self.links_dir(),
            tmp,
            self.containers(),
            self.empty_layer(),
        ] {
            fs::create_dir_all(&dir).map_err(ImageError::io("could not create directory", &dir))?;
        }
        Ok(())
    }
}

/// Per-key async mutexes, so that work on one digest (a download, an
/// unpack, an eviction) happens once at a time while other digests proceed.
#[derive(Default)]
pub(crate) struct KeyedLocks {
    map: Lock<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl KeyedLocks {
    pub async fn lock(&self, key: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let mutex = {
            let mut map = self.map.lock();
            // Drop the entries nobody holds or waits for.
            map.retain(|_, m| Arc::strong_count(m) > 1);
            map.entry(key.to_owned()).or_default().clone()
        };
        mutex.lock_owned().await
    }
}

#[derive(Clone, Copy, Debug)]
struct LayerEntry {
    bytes: u64,
    last_used: SystemTime,
}

#[derive(Default)]
struct State {
    layers: HashMap<Digest, LayerEntry>,
    pins: HashMap<Digest, usize>,
}

/// Figures about the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Bytes used by cached layers (unpacked plus compressed blob).
    pub bytes: u64,
    /// Number of unpacked layers.
    pub layers: usize,
    /// Number of those in use by a prepared root file system.
    pub pinned_layers: usize,
}

/// The index of unpacked layers.
pub(crate) struct Cache {
    pub layout: Layout,
    max_bytes: u64,
    state: Lock<State>,
    pub locks: KeyedLocks,
}

impl Cache {
    /// Indexes the layers already on disk; their last use is the mtime of
    /// their `.size` file, so LRU order survives a restart.
    pub fn open(layout: Layout, max_bytes: u64) -> Result<Self> {
        let mut state = State::default();
        let dir = layout.layers_dir();
        for entry in fs::read_dir(&dir).map_err(ImageError::io("could not list", &dir))? {
            let entry = entry.map_err(ImageError::io("could not list", &dir))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let Ok(digest) = Digest::parse(&format!("sha256:{name}")) else {
                continue;
            };
            let size_file = layout.layer_size_file(&digest);
            let meta = fs::metadata(&size_file).ok();
            let bytes = match fs::read_to_string(&size_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                Some(b) => b,
                None => {
                    // Crashed between rename and size file: measure again.
                    let b = crate::unpack::disk_usage(&entry.path()).unwrap_or(0)
                        + fs::metadata(layout.blob(&digest))
                            .map(|m| m.len())
                            .unwrap_or(0);
                    write_size_file(&size_file, b)?;
                    b
                }
            };
            let last_used = meta
                .and_then(|m| m.modified().ok())
                .unwrap_or_else(SystemTime::now);
            state.layers.insert(digest, LayerEntry { bytes, last_used });
        }
        Ok(Cache {
            layout,
            max_bytes,
            state: Lock::new(state),
            locks: KeyedLocks::default(),
        })
    }

    pub fn has_layer(&self, d: &Digest) -> bool {
        self.state.lock().layers.contains_key(d)
    }

    /// Records a newly unpacked layer (its `.size` file already written).
    pub fn insert_layer(&self, d: &Digest, bytes: u64) {
        self.state.lock().layers.insert(
            d.clone(),
            LayerEntry {
                bytes,
                last_used: SystemTime::now(),
            },
        );
    }

    /// Marks layers as used now, in memory and on disk.
    pub fn touch(&self, digests: &[Digest]) {
        let now = SystemTime::now();
        let present: Vec<&Digest> = {
            let mut st = self.state.lock();
            digests
                .iter()
                .filter(|d| st.layers.get_mut(*d).map(|e| e.last_used = now).is_some())
                .collect()
        };
        for d in present {
            let path = self.layout.layer_size_file(d);
            // Best effort: a lost mtime only makes the LRU order after a
            // restart less exact.
            if let Err(e) = fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(now))
            {
                tracing::warn!(path = %path.display(), error = %e, "could not record layer use");
            }
        }
    }

    /// Protects layers from eviction until [`Cache::unpin`].
    pub fn pin(&self, digests: &[Digest]) {
        let mut st = self.state.lock();
        for d in digests {
            *st.pins.entry(d.clone()).or_default() += 1;
        }
    }

    pub fn unpin(&self, digests: &[Digest]) {
        {
            let mut st = self.state.lock();
            for d in digests {
                if let Some(n) = st.pins.get_mut(d) {
                    *n -= 1;
                    if *n == 0 {
                        st.pins.remove(d);
                    }
                }
            }
        }
        self.touch(digests);
    }

    pub fn usage(&self) -> CacheUsage {
        let st = self.state.lock();
        CacheUsage {
            bytes: st.layers.values().map(|e| e.bytes).sum(),
            layers: st.layers.len(),
            pinned_layers: st
                .layers
                .keys()
                .filter(|d| st.pins.contains_key(*d))
                .count(),
        }
    }

    /// Evicts unpinned layers, least recently used first, until the cache
    /// fits its bound or only pinned layers remain. Returns what was evicted.
    pub async fn evict(&self) -> Result<Vec<Digest>> {
        let mut evicted = Vec::new();
        loop {
            let victim = {
                let st = self.state.lock();
                let total: u64 = st.layers.values().map(|e| e.bytes).sum();
                if total <= self.max_bytes {
                    break;
                }
                st.layers
                    .iter()
                    .filter(|(d, _)| !st.pins.contains_key(*d))
                    .min_by_key(|(_, e)| e.last_used)
                    .map(|(d, _)| d.clone())
            };
            let Some(victim) = victim else {
                tracing::warn!(
                    max_bytes = self.max_bytes,
                    "image cache is over its bound, but every layer is in use"
                );
                break;
            };
            // The digest lock keeps a concurrent pull of this layer from
            // seeing it half deleted; the re-check under the state lock
            // catches a pin taken meanwhile.
            let _guard = self.locks.lock(victim.as_str()).await;
            {
                let mut st = self.state.lock();
                if st.pins.contains_key(&victim) || st.layers.remove(&victim).is_none() {
                    continue;
                }
            }
            let layout = self.layout.clone();
            let d = victim.clone();
            tokio::task::spawn_blocking(move || remove_layer(&layout, &d))
                .await
                .map_err(|e| ImageError::Io {
                    action: "could not evict layer in",
                    path: self.layout.layers_dir(),
                    source: io::Error::other(e),
                })??;
            tracing::info!(layer = %victim, "evicted layer from the image cache");
            evicted.push(victim);
        }
        Ok(evicted)
    }
}

pub(crate) fn write_size_file(path: &Path, bytes: u64) -> Result<()> {
    fs::write(path, format!("{bytes}\n")).map_err(ImageError::io("could not write", path))
}

/// Deletes a layer: first renamed into `tmp/` so it never looks complete
/// while half deleted, then removed with its blob, size file and link.
fn remove_layer(layout: &Layout, d: &Digest) -> Result<()> {
    let dir = layout.layer(d);
    let trash = layout.tmp().join(format!("evict-{}", d.hex()));
    if dir.exists() {
        fs::rename(&dir, &trash).map_err(ImageError::io("could not move aside", &dir))?;
    }
    let link = layout.link(d);
    if fs::read_link(&link).is_ok_and(|t| t == link_target(d)) {
        remove_if_exists(&link)?;
    }
    remove_if_exists(&layout.layer_size_file(d))?;
    remove_if_exists(&layout.blob(d))?;
    if trash.exists() {
        fs::remove_dir_all(&trash).map_err(ImageError::io("could not remove", &trash))?;
    }
    Ok(())
}

/// What `l/<short>` points at: relative, so the cache root can move.
pub(crate) fn link_target(d: &Digest) -> PathBuf {
    Path::new("../layers/sha256").join(d.hex())
}

pub(crate) fn remove_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(ImageError::io("could not remove", path)(e))
        }
        _ => Ok(()),
    }
}
