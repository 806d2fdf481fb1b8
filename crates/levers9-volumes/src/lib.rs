//! Volumes: one directory per workspace and volume name, under a root that
//! is a JuiceFS mount (`storage.juicefs`) or a local directory (the
//! embedded default). The controlplane creates, lists and fills them; a
//! worker binds one into each container that asks for it. A container only
//! ever gets `<root>/workspaces/<its workspace>/<name>`, so it cannot reach
//! another workspace's volumes. A workspace with storage credentials of its
//! own has its volumes in a file system of its own instead, in its bucket
//! (`<its root>/volumes/<name>`; see [`WorkspaceStorage`]).
#![forbid(unsafe_code)]

mod juicefs;
mod meta_url;
mod workspace_fs;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use levers9_config::{Config, JuiceFsConfig};
use tokio::sync::Mutex;

pub use juicefs::{FormatMode, JuiceFs, MountState};
pub use meta_url::MetaUrl;
pub use workspace_fs::WorkspaceStorage;

use workspace_fs::WorkspaceMounts;

const MAX_NAME_LEN: usize = 63;

/// Why a volume operation failed. Messages never hold a secret.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// A volume name that cannot be one.
    #[error("invalid volume name {0:?}: use 1 to 63 letters, digits, `-`, `_` or `.`, starting with a letter or digit")]
    InvalidName(String),
    /// The workspace has no volume of that name.
    #[error(
        "volume {0:?} does not exist in this workspace: create it with `levers9 volume create {0}`"
    )]
    NotFound(String),
    /// It exists already.
    #[error("volume {0:?} already exists")]
    AlreadyExists(String),
    /// The juicefs binary could not be started.
    #[error("cannot run {binary} (storage.juicefs.binary): {source}")]
    Spawn {
        /// The binary as configured.
        binary: String,
        /// Why not.
        source: std::io::Error,
    },
    /// A juicefs command failed.
    #[error("juicefs {what} failed: {cause}")]
    JuiceFs {
        /// format, mount or umount.
        what: &'static str,
        /// What juicefs said, secrets removed.
        cause: String,
    },
    /// The mount answered the mount command but is not there.
    #[error(
        "the JuiceFS mount at {0} is not there after mounting: see its log beside it (juicefs.log)"
    )]
    NotMounted(PathBuf),
    /// The workspace's own storage could not be mounted.
    #[error(
        "the workspace's storage {bucket} cannot be mounted: {cause}. Check the endpoint and \
         bucket with `levers9 workspace storage show`, and set the right keys with \
         `levers9 workspace storage set`"
    )]
    WorkspaceStorage {
        /// The bucket URL (no key).
        bucket: String,
        /// Why not.
        cause: Box<VolumeError>,
    },
    /// A workspace has its own storage, but there is no SQL metadata
    /// engine to keep its file system in.
    #[error(
        "this workspace has its own storage credentials, and its volumes need a file system of \
         their own in a SQL metadata engine: set storage.juicefs.workspaceMetaUrl (or \
         LEVERS9_JUICEFS_WORKSPACE_META_URL) to a postgres:// or mysql:// URL on the \
         controlplane and every worker (storage.juicefs.metaUrl is not SQL)"
    )]
    NoWorkspaceMeta,
    /// A file operation failed.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was tried.
        what: String,
        /// Why not.
        source: std::io::Error,
    },
}

/// Where the root of the volumes is.
#[derive(Debug, Clone)]
enum Root {
    Local(PathBuf),
    JuiceFs(Box<JuiceFs>, FormatMode),
}

/// Whose volumes: a workspace, and its storage credentials when it has
/// some (opened by the caller for this one call; dropped and zeroed with
/// it).
#[derive(Debug)]
pub struct Owner<'a> {
    /// The workspace's id.
    pub workspace_id: &'a str,
    /// Its own object storage, if it has one.
    pub storage: Option<WorkspaceStorage>,
}

impl<'a> Owner<'a> {
    /// A workspace without storage of its own: the shared file system.
    pub fn shared(workspace_id: &'a str) -> Owner<'a> {
        Owner {
            workspace_id,
            storage: None,
        }
    }
}

/// The volumes of every workspace. Cheap to clone.
#[derive(Clone)]
pub struct Volumes {
    root: Root,
    /// The file systems of workspaces with their own storage (JuiceFS only).
    workspaces: Option<Arc<WorkspaceMounts>>,
    /// Held while the mount is checked and, if need be, (re)mounted, so
    /// concurrent container starts mount once.
    mounting: Arc<Mutex<()>>,
}

impl std::fmt::Debug for Volumes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Volumes")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Volumes {
    /// The volumes of `config`. With JuiceFS, this process mounts it under
    /// `work_dir` (the controlplane's data dir or the worker's state dir)
    /// on first use; `mode` says whether its `format` may update settings.
    pub fn new(config: &Config, work_dir: &Path, mode: FormatMode) -> Volumes {
        let juicefs = &config.storage.juicefs;
        if juicefs.is_configured() {
            return Volumes::juicefs(juicefs, work_dir, mode);
        }
        let dir = if config.storage.volumes.local_dir.is_empty() {
            config.controlplane.data_dir().join("volumes")
        } else {
            PathBuf::from(&config.storage.volumes.local_dir)
        };
        Volumes {
            root: Root::Local(dir),
            workspaces: None,
            mounting: Arc::default(),
        }
    }

    /// The volumes of the JuiceFS file system `juicefs` (configured: it has
    /// a metadata URL), mounted as [`Volumes::new`] mounts it. A worker
    /// takes this way the file system the controlplane hands it on attach.
    pub fn juicefs(juicefs: &JuiceFsConfig, work_dir: &Path, mode: FormatMode) -> Volumes {
        let work_dir = work_dir.join("juicefs");
        let shared = JuiceFs::new(juicefs, &work_dir);
        let workspaces = Some(Arc::new(WorkspaceMounts::new(
            juicefs,
            shared.clone(),
            &work_dir.join("workspaces"),
            mode,
        )));
        Volumes {
            root: Root::JuiceFs(Box::new(shared), mode),
            workspaces,
            mounting: Arc::default(),
        }
    }

    /// Where volumes live, for a log line (never holds a password).
    pub fn location(&self) -> String {
        match &self.root {
            Root::Local(dir) => format!("local directory {}", dir.display()),
            Root::JuiceFs(fs, _) => format!(
                "JuiceFS {} mounted at {}",
                fs.shown_meta_url(),
                fs.mount_point().display()
            ),
        }
    }

    /// Whether volumes live in JuiceFS (rather than a local directory).
    pub fn is_juicefs(&self) -> bool {
        matches!(self.root, Root::JuiceFs(..))
    }

    /// The root, mounted and alive: formats and mounts JuiceFS the first
    /// time, and mounts it again when its daemon has died, so a caller
    /// never gets a stale or empty directory. A local root is created by
    /// the first volume, not here.
    pub async fn root(&self) -> Result<PathBuf, VolumeError> {
        let (fs, mode) = match &self.root {
            Root::Local(dir) => return Ok(dir.clone()),
            Root::JuiceFs(fs, mode) => (fs, *mode),
        };
        let _held = self.mounting.lock().await;
        match fs.state().await {
            MountState::Mounted => return Ok(fs.mount_point().to_owned()),
            MountState::Dead => Self::detach_dead(fs).await,
            MountState::NotMounted => fs.format(mode).await?,
        }
        self.mount(fs).await
    }

    /// Mounts JuiceFS again if its daemon has died; whether it had. A
    /// worker calls this every few seconds, and replaces the containers
    /// that hold the dead mount when it had.
    pub async fn heal(&self) -> Result<bool, VolumeError> {
        let Root::JuiceFs(fs, _) = &self.root else {
            return Ok(false);
        };
        let workspaces_healed = match &self.workspaces {
            Some(workspaces) => workspaces.heal().await,
            None => false,
        };
        let _held = self.mounting.lock().await;
        if fs.state().await != MountState::Dead {
            return Ok(workspaces_healed);
        }
        Self::detach_dead(fs).await;
        self.mount(fs).await?;
        Ok(true)
    }

    async fn detach_dead(fs: &JuiceFs) {
        tracing::warn!(mount_point = %fs.mount_point().display(), "the JuiceFS mount is dead (its daemon is gone); mounting it again");
        fs.unmount().await;
    }

    async fn mount(&self, fs: &JuiceFs) -> Result<PathBuf, VolumeError> {
        fs.mount().await?;
        if fs.state().await != MountState::Mounted {
            return Err(VolumeError::NotMounted(fs.mount_point().to_owned()));
        }
        tracing::info!(location = %self.location(), "volumes mounted");
        Ok(fs.mount_point().to_owned())
    }

    /// Unmounts JuiceFS, for a process on its way out.
    pub async fn close(&self) {
        if let Some(workspaces) = &self.workspaces {
            workspaces.close().await;
        }
        if let Root::JuiceFs(fs, _) = &self.root {
            let _held = self.mounting.lock().await;
            if fs.state().await != MountState::NotMounted {
                fs.unmount().await;
            }
        }
    }

    /// Where the owner's volumes are: in its own file system when it has
    /// storage credentials and volumes live in JuiceFS, else in the shared
    /// root.
    pub async fn workspace_dir(&self, owner: Owner<'_>) -> Result<PathBuf, VolumeError> {
        // Workspace ids are uuids the controlplane made; check anyway, as
        // this becomes a path.
        validate_name(owner.workspace_id)?;
        match (&self.workspaces, owner.storage) {
            (Some(workspaces), Some(storage)) => Ok(workspaces
                .root(owner.workspace_id, storage)
                .await?
                .join("volumes")),
            _ => Ok(self
                .root()
                .await?
                .join("workspaces")
                .join(owner.workspace_id)),
        }
    }

    /// The directory of an existing volume.
    pub async fn dir(&self, owner: Owner<'_>, name: &str) -> Result<PathBuf, VolumeError> {
        let workspace_dir = self.workspace_dir(owner).await?;
        volume_in(&workspace_dir, name).await
    }

    /// Creates a volume.
    pub async fn create(&self, owner: Owner<'_>, name: &str) -> Result<(), VolumeError> {
        validate_name(name)?;
        let parent = self.workspace_dir(owner).await?;
        create_dir(&parent).await?;
        match tokio::fs::create_dir(parent.join(name)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(VolumeError::AlreadyExists(name.to_owned()))
            }
            Err(source) => Err(VolumeError::Io {
                what: format!("create volume {name:?}"),
                source,
            }),
        }
    }

    /// The workspace's volume names, sorted.
    pub async fn list(&self, owner: Owner<'_>) -> Result<Vec<String>, VolumeError> {
        let dir = self.workspace_dir(owner).await?;
        let mut names = Vec::new();
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(source) => {
                return Err(VolumeError::Io {
                    what: "list volumes".into(),
                    source,
                })
            }
        };
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|source| VolumeError::Io {
                what: "list volumes".into(),
                source,
            })?
        {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Deletes a volume and everything in it.
    pub async fn delete(&self, owner: Owner<'_>, name: &str) -> Result<(), VolumeError> {
        let dir = self.dir(owner, name).await?;
        tokio::fs::remove_dir_all(&dir)
            .await
            .map_err(|source| VolumeError::Io {
                what: format!("delete volume {name:?}"),
                source,
            })
    }
}

async fn create_dir(dir: &Path) -> Result<(), VolumeError> {
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|source| VolumeError::Io {
            what: format!("create {}", dir.display()),
            source,
        })
}

/// The directory of an existing volume in a workspace's directory (from
/// [`Volumes::workspace_dir`]).
pub async fn volume_in(workspace_dir: &Path, name: &str) -> Result<PathBuf, VolumeError> {
    validate_name(name)?;
    let dir = workspace_dir.join(name);
    match tokio::fs::metadata(&dir).await {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(VolumeError::NotFound(name.to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(VolumeError::NotFound(name.to_owned()))
        }
        Err(source) => Err(VolumeError::Io {
            what: format!("read volume {name:?}"),
            source,
        }),
    }
}

/// Volume names become directory names: no separators, no dot names.
pub fn validate_name(name: &str) -> Result<(), VolumeError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(VolumeError::InvalidName(name.to_owned()))
    }
}

/// A path inside a volume as the CLI gives it (`dir/file.txt`, leading `/`
/// allowed), checked so it cannot leave the volume.
pub fn relative_path(path: &str) -> Result<PathBuf, VolumeError> {
    let mut out = PathBuf::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return Err(VolumeError::Io {
                what: format!("use the path {path:?}"),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "`..` would leave the volume",
                ),
            });
        }
        out.push(part);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_become_other_paths() {
        for good in ["data", "my-vol_1", "v.2"] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in ["", "..", ".hidden", "a/b", "-x", &"x".repeat(64)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
        assert_eq!(relative_path("/a/./b/").unwrap(), PathBuf::from("a/b"));
        assert!(relative_path("a/../../etc").is_err());
    }

    #[tokio::test]
    async fn local_volumes_are_created_listed_and_deleted_per_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.volumes.local_dir = dir.path().display().to_string();
        let volumes = Volumes::new(&config, dir.path(), FormatMode::Update);
        let (a, b) = (|| Owner::shared("ws-a"), || Owner::shared("ws-b"));
        volumes.create(a(), "data").await.unwrap();
        assert!(matches!(
            volumes.create(a(), "data").await,
            Err(VolumeError::AlreadyExists(_))
        ));
        assert_eq!(volumes.list(a()).await.unwrap(), ["data"]);
        assert!(volumes.list(b()).await.unwrap().is_empty());
        let error = volumes.dir(b(), "data").await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "volume \"data\" does not exist in this workspace: create it with `levers9 volume create data`"
        );
        volumes.delete(a(), "data").await.unwrap();
        assert!(volumes.list(a()).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn local_volumes_ignore_a_workspaces_own_storage() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.volumes.local_dir = dir.path().display().to_string();
        let volumes = Volumes::new(&config, dir.path(), FormatMode::Update);
        let owner = Owner {
            workspace_id: "ws-a",
            storage: Some(WorkspaceStorage::new(
                "http://127.0.0.1:1".into(),
                "b".into(),
                "a".into(),
                "s".into(),
            )),
        };
        volumes.create(owner, "data").await.unwrap();
        assert!(dir.path().join("workspaces/ws-a/data").is_dir());
    }
}
