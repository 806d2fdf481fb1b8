//! The worker's cache of workspace objects (a function's code, the SDK):
//! fetched from the controlplane once per digest, verified against the
//! digest, and kept as a file or as an unpacked zip for read-only bind
//! mounts.
//!
//! Layout under the cache root:
//! - `blobs/<hex>`: verified objects mounted as they are;
//! - `unpacked/<hex>/`: verified zips, unpacked;
//! - `tmp/`: staging; everything lands there first and is renamed into
//!   place, so a crash never leaves half a tree where a later run would
//!   trust it. Emptied when the cache is opened.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use levers9_api::v1::{function_service_client::FunctionServiceClient, GetObjectRequest};
use levers9_sync::Lock;
use sha2::{Digest, Sha256};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::Channel;

/// Where objects come from: the controlplane in production, a fake in tests.
#[async_trait]
pub trait ObjectSource: Send + Sync {
    /// The object's bytes, unverified; the error says why it could not be had.
    async fn fetch(&self, workspace_id: &str, digest: &str) -> Result<Vec<u8>, String>;
}

/// The largest object the worker downloads: code and SDK zips are far
/// smaller; data belongs in volumes.
const MAX_OBJECT_BYTES: usize = 256 << 20;
/// A download gets this long, connection included.
const FETCH_DEADLINE: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// What one zip may unpack to: bounds a zip bomb's damage to the disk.
const MAX_UNPACKED_BYTES: u64 = 2 << 30;

/// Why the gRPC object source could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum GrpcSourceError {
    /// The controlplane address or its TLS settings are unusable.
    #[error(transparent)]
    Dial(#[from] levers9_api::dial::DialError),
    /// The token cannot travel in a header.
    #[error("the worker token is not valid ASCII: check the token the worker was given")]
    Token,
}

/// Fetches objects with `FunctionService.GetObject`, authenticated with the
/// worker's own token.
pub struct GrpcObjectSource {
    channel: Channel,
    bearer: MetadataValue<Ascii>,
}

impl GrpcObjectSource {
    /// A source reaching `controlplane`. Connects on first use, so it must
    /// be created inside a Tokio runtime.
    pub fn new(
        controlplane: &levers9_api::dial::Controlplane,
        token: &str,
    ) -> Result<Self, GrpcSourceError> {
        let channel = controlplane
            .endpoint()?
            .connect_timeout(CONNECT_TIMEOUT)
            .connect_lazy();
        let bearer = format!("Bearer {token}")
            .parse()
            .map_err(|_| GrpcSourceError::Token)?;
        Ok(Self { channel, bearer })
    }
}

#[async_trait]
impl ObjectSource for GrpcObjectSource {
    async fn fetch(&self, workspace_id: &str, digest: &str) -> Result<Vec<u8>, String> {
        let mut client = FunctionServiceClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_OBJECT_BYTES);
        let mut request = tonic::Request::new(GetObjectRequest {
            digest: digest.to_owned(),
            workspace_id: workspace_id.to_owned(),
        });
        request
            .metadata_mut()
            .insert("authorization", self.bearer.clone());
        request.set_timeout(FETCH_DEADLINE);
        match tokio::time::timeout(FETCH_DEADLINE, client.get_object(request)).await {
            Ok(Ok(response)) => Ok(response.into_inner().data),
            Ok(Err(status)) => Err(format!(
                "the controlplane answered {:?}: {}",
                status.code(),
                status.message()
            )),
            Err(_) => Err(format!(
                "no answer from the controlplane within {} s",
                FETCH_DEADLINE.as_secs()
            )),
        }
    }
}

/// Why an object could not be made available.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The digest is not one the cache can name a file after.
    #[error("{0:?} is not an object digest: expected sha256:<64 hex digits>")]
    BadDigest(String),
    /// The [`ObjectSource`] did not hand the bytes over (or the worker shut
    /// down first); the text says why.
    #[error("{0}")]
    Fetch(String),
    /// The bytes are not the object asked for.
    #[error("the data received does not match the digest (its sha256 is {actual}): the controlplane's copy is damaged")]
    Mismatch {
        /// The sha256 of what arrived, hex.
        actual: String,
    },
    /// The object should be a zip and is not.
    #[error("the object is not a valid zip: {0}")]
    Zip(String),
    /// An entry would land outside the directory.
    #[error("the zip entry {0:?} points outside its directory (an absolute path or ..); such zips are refused")]
    Escapes(String),
    /// Links could point anywhere once mounted.
    #[error("the zip entry {0:?} is a symbolic link; zips with links are refused")]
    Symlink(String),
    /// A zip bomb, or data that belongs in a volume.
    #[error("the zip unpacks to more than {} GiB; put large data in a volume", MAX_UNPACKED_BYTES >> 30)]
    TooLarge,
    /// The cache's disk.
    #[error("cannot write the object cache at {path}: {source}")]
    Io {
        /// What was being written.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ObjectError + '_ {
    move |source| ObjectError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Verified objects on local disk. Cheap to clone.
#[derive(Clone)]
pub struct ObjectCache {
    root: PathBuf,
    source: Arc<dyn ObjectSource>,
    /// One lock per object being made, so concurrent callers for the same
    /// digest wait for one fetch instead of each downloading it.
    in_flight: Arc<Lock<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl ObjectCache {
    /// A cache under `root` (created if missing), fed by `source`. Leftover
    /// staging from a crash is removed.
    pub fn open(
        root: impl Into<PathBuf>,
        source: Arc<dyn ObjectSource>,
    ) -> Result<Self, ObjectError> {
        let root = root.into();
        let tmp = root.join("tmp");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(io_error(&tmp))?;
        }
        for dir in ["tmp", "blobs", "unpacked"] {
            let path = root.join(dir);
            std::fs::create_dir_all(&path).map_err(io_error(&path))?;
        }
        Ok(Self {
            root,
            source,
            in_flight: Arc::default(),
        })
    }

    /// The object `digest` of `workspace_id` as a file, fetched and
    /// verified on first use.
    pub async fn file(&self, workspace_id: &str, digest: &str) -> Result<PathBuf, ObjectError> {
        let hex = parse_digest(digest)?;
        let path = self.root.join("blobs").join(&hex);
        let _turn = self.wait_turn(&format!("blob:{hex}")).await;
        if path.is_file() {
            return Ok(path);
        }
        let data = self.fetch_verified(workspace_id, digest, &hex).await?;
        let staging = self.staging(&hex);
        let target = path.clone();
        blocking(move || {
            write_synced(&staging, &data)?;
            std::fs::rename(&staging, &target).map_err(io_error(&target))
        })
        .await?;
        Ok(path)
    }

    /// The zip object `digest` of `workspace_id` unpacked into a directory,
    /// fetched, verified and unpacked on first use.
    pub async fn unpacked(&self, workspace_id: &str, digest: &str) -> Result<PathBuf, ObjectError> {
        let hex = parse_digest(digest)?;
        let path = self.root.join("unpacked").join(&hex);
        let _turn = self.wait_turn(&format!("unpacked:{hex}")).await;
        if path.is_dir() {
            return Ok(path);
        }
        let data = self.fetch_verified(workspace_id, digest, &hex).await?;
        let staging = self.staging(&hex);
        let target = path.clone();
        blocking(move || {
            let unpacked = unpack_zip(&data, &staging)
                .and_then(|()| std::fs::rename(&staging, &target).map_err(io_error(&target)));
            if unpacked.is_err() {
                // Best effort: the next open clears tmp/ anyway.
                let _ = std::fs::remove_dir_all(&staging);
            }
            unpacked
        })
        .await?;
        Ok(path)
    }

    fn staging(&self, hex: &str) -> PathBuf {
        self.root
            .join("tmp")
            .join(format!("{hex}.{}", uuid::Uuid::new_v4().simple()))
    }

    async fn fetch_verified(
        &self,
        workspace_id: &str,
        digest: &str,
        hex: &str,
    ) -> Result<Vec<u8>, ObjectError> {
        let data = self
            .source
            .fetch(workspace_id, digest)
            .await
            .map_err(ObjectError::Fetch)?;
        let actual = hex::encode(Sha256::digest(&data));
        if actual != hex {
            return Err(ObjectError::Mismatch { actual });
        }
        Ok(data)
    }

    /// Waits until no other caller is making `key`; the guard ends the turn.
    async fn wait_turn(&self, key: &str) -> Turn {
        let lock = {
            let mut in_flight = self.in_flight.lock();
            in_flight.entry(key.to_owned()).or_default().clone()
        };
        let guard = lock.clone().lock_owned().await;
        Turn {
            key: key.to_owned(),
            lock,
            guard: Some(guard),
            in_flight: self.in_flight.clone(),
        }
    }
}

/// A caller's exclusive turn at making one object.
struct Turn {
    key: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    in_flight: Arc<Lock<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.guard.take();
        let mut in_flight = self.in_flight.lock();
        // Only the map and this turn hold the lock: nobody waits, so the
        // entry can go (new callers clone it only under the map's lock).
        if Arc::strong_count(&self.lock) == 2 {
            in_flight.remove(&self.key);
        }
    }
}

/// `sha256:<hex>` → the lowercase hex, which names files in the cache (so
/// it must be exactly hex digits).
fn parse_digest(digest: &str) -> Result<String, ObjectError> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(hex.to_ascii_lowercase())
        }
        _ => Err(ObjectError::BadDigest(digest.to_owned())),
    }
}

/// Runs filesystem work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ObjectError> + Send + 'static,
) -> Result<T, ObjectError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Only when the runtime shuts down, and with it the worker.
        Err(error) => Err(ObjectError::Fetch(format!(
            "the worker is shutting down: {error}"
        ))),
    }
}

/// Writes and syncs a file, so a power loss after the rename into place
/// cannot leave an empty file the cache then trusts.
fn write_synced(path: &Path, data: &[u8]) -> Result<(), ObjectError> {
    let mut file = std::fs::File::create(path).map_err(io_error(path))?;
    file.write_all(data).map_err(io_error(path))?;
    file.sync_all().map_err(io_error(path))
}

/// The entry's path below the directory, or why it has none: only plain
/// names (and `.`) are allowed, never `..`, a root or a prefix.
fn entry_path(name: &str) -> Result<PathBuf, ObjectError> {
    let mut path = PathBuf::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ObjectError::Escapes(name.to_owned()))
            }
        }
    }
    Ok(path)
}

/// Unpacks `data` (a zip) into `dest`, which must not exist. Files are
/// 0644, or 0755 when the zip marks them executable; directories 0755.
fn unpack_zip(data: &[u8], dest: &Path) -> Result<(), ObjectError> {
    use std::os::unix::fs::PermissionsExt;

    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(data))
        .map_err(|e| ObjectError::Zip(e.to_string()))?;
    make_dirs(dest, Path::new(""))?;
    let mut budget = MAX_UNPACKED_BYTES;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| ObjectError::Zip(e.to_string()))?;
        let name = entry.name().to_owned();
        let relative = entry_path(&name)?;
        if entry.is_symlink() {
            return Err(ObjectError::Symlink(name));
        }
        if entry.is_dir() {
            make_dirs(dest, &relative)?;
            continue;
        }
        make_dirs(dest, relative.parent().unwrap_or(Path::new("")))?;
        let path = dest.join(&relative);
        let executable = entry.unix_mode().is_some_and(|mode| mode & 0o111 != 0);
        let mut file = std::fs::File::create(&path).map_err(io_error(&path))?;
        // Read one byte past the budget to tell "exactly fits" from "too big";
        // the sizes in the zip's directory could lie.
        let written =
            std::io::copy(&mut (&mut entry).take(budget + 1), &mut file).map_err(|source| {
                match source.kind() {
                    std::io::ErrorKind::InvalidData => {
                        ObjectError::Zip(format!("{name}: {source}"))
                    }
                    _ => ObjectError::Io {
                        path: path.clone(),
                        source,
                    },
                }
            })?;
        if written > budget {
            return Err(ObjectError::TooLarge);
        }
        budget -= written;
        file.sync_all().map_err(io_error(&path))?;
        // Set, not created with: the worker's umask must not decide what
        // the container's user may read.
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(io_error(&path))?;
    }
    Ok(())
}

/// Creates `dest/relative` and the directories between, each 0755 whatever
/// the umask, so any user in the container can read the tree.
fn make_dirs(dest: &Path, relative: &Path) -> Result<(), ObjectError> {
    use std::os::unix::fs::PermissionsExt;

    let mut path = dest.to_owned();
    let mut steps = vec![path.clone()];
    for part in relative.components() {
        path.push(part);
        steps.push(path.clone());
    }
    for dir in steps {
        if !dir.is_dir() {
            std::fs::create_dir(&dir).map_err(io_error(&dir))?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .map_err(io_error(&dir))?;
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
