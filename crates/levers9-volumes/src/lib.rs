//! Volumes: one directory per workspace and volume name, under a root that
//! is a JuiceFS mount (`storage.juicefs`) or a local directory (the
//! embedded default). The controlplane creates, lists and fills them; a
//! worker binds one into each container that asks for it. A container only
//! ever gets `<root>/workspaces/<its workspace>/<name>`, so it cannot reach
//! another workspace's volumes.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod juicefs;
mod meta_url;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use levers9_config::Config;
use tokio::sync::Mutex;

pub use juicefs::{FormatMode, JuiceFs, MountState};
pub use meta_url::MetaUrl;

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

/// The volumes of every workspace. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Volumes {
    root: Root,
    /// Held while the mount is checked and, if need be, (re)mounted, so
    /// concurrent container starts mount once.
    mounting: Arc<Mutex<()>>,
}

impl Volumes {
    /// The volumes of `config`. With JuiceFS, this process mounts it under
    /// `work_dir` (the controlplane's data dir or the worker's state dir)
    /// on first use; `mode` says whether its `format` may update settings.
    pub fn new(config: &Config, work_dir: &Path, mode: FormatMode) -> Volumes {
        let juicefs = &config.storage.juicefs;
        let root = if juicefs.is_configured() {
            Root::JuiceFs(
                Box::new(JuiceFs::new(juicefs, &work_dir.join("juicefs"))),
                mode,
            )
        } else if config.storage.volumes.local_dir.is_empty() {
            Root::Local(config.controlplane.data_dir().join("volumes"))
        } else {
            Root::Local(PathBuf::from(&config.storage.volumes.local_dir))
        };
        Volumes {
            root,
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
        let _held = self.mounting.lock().await;
        if fs.state().await != MountState::Dead {
            return Ok(false);
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
        if let Root::JuiceFs(fs, _) = &self.root {
            let _held = self.mounting.lock().await;
            if fs.state().await != MountState::NotMounted {
                fs.unmount().await;
            }
        }
    }

    async fn workspace_dir(&self, workspace_id: &str) -> Result<PathBuf, VolumeError> {
        // Workspace ids are uuids the controlplane made; check anyway, as
        // this becomes a path.
        validate_name(workspace_id)?;
        Ok(self.root().await?.join("workspaces").join(workspace_id))
    }

    /// The directory of an existing volume.
    pub async fn dir(&self, workspace_id: &str, name: &str) -> Result<PathBuf, VolumeError> {
        validate_name(name)?;
        let dir = self.workspace_dir(workspace_id).await?.join(name);
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

    /// Creates a volume.
    pub async fn create(&self, workspace_id: &str, name: &str) -> Result<(), VolumeError> {
        validate_name(name)?;
        let parent = self.workspace_dir(workspace_id).await?;
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
    pub async fn list(&self, workspace_id: &str) -> Result<Vec<String>, VolumeError> {
        let dir = self.workspace_dir(workspace_id).await?;
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
    pub async fn delete(&self, workspace_id: &str, name: &str) -> Result<(), VolumeError> {
        let dir = self.dir(workspace_id, name).await?;
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
        volumes.create("ws-a", "data").await.unwrap();
        assert!(matches!(
            volumes.create("ws-a", "data").await,
            Err(VolumeError::AlreadyExists(_))
        ));
        assert_eq!(volumes.list("ws-a").await.unwrap(), ["data"]);
        assert!(volumes.list("ws-b").await.unwrap().is_empty());
        let error = volumes.dir("ws-b", "data").await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "volume \"data\" does not exist in this workspace: create it with `levers9 volume create data`"
        );
        volumes.delete("ws-a", "data").await.unwrap();
        assert!(volumes.list("ws-a").await.unwrap().is_empty());
    }
}
