//! The file systems of workspaces with storage credentials of their own
//! (`levers9 workspace storage set`): one JuiceFS file system each, its
//! data in the workspace's bucket under the workspace's keys, its metadata
//! in tables of its own (`table_prefix`) of a SQL engine
//! (`storage.juicefs.workspaceMetaUrl`, else `metaUrl`).
//!
//! The keys come with each call that needs the mount and are dropped
//! (zeroed) once it is mounted: from then on only the juicefs daemon has
//! them, in its environment. A call with other keys than the mount's (the
//! workspace's credentials were set again) mounts it afresh with them; the
//! containers bound to the old mount keep it until they end.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use levers9_config::JuiceFsConfig;
use levers9_sync::Lock;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use zeroize::Zeroizing;

use crate::juicefs::{FormatMode, JuiceFs, MountState};
use crate::meta_url::{with_table_prefix, MetaUrl};
use crate::VolumeError;

/// A workspace's object storage, opened from the sealed store for one
/// call. The keys are zeroed when it is dropped.
pub struct WorkspaceStorage {
    endpoint: String,
    bucket: String,
    access_key_id: Zeroizing<String>,
    secret_access_key: Zeroizing<String>,
}

impl std::fmt::Debug for WorkspaceStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceStorage")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("access_key_id", &"<redacted>")
            .field("secret_access_key", &"<redacted>")
            .finish()
    }
}

impl WorkspaceStorage {
    /// The bucket `bucket` at `endpoint` (e.g. `https://s3.us-east-2.amazonaws.com`),
    /// with these keys. Takes the strings, so no copy of a key is left.
    pub fn new(
        endpoint: String,
        bucket: String,
        access_key_id: String,
        secret_access_key: String,
    ) -> WorkspaceStorage {
        WorkspaceStorage {
            endpoint,
            bucket,
            access_key_id: Zeroizing::new(access_key_id),
            secret_access_key: Zeroizing::new(secret_access_key),
        }
    }

    /// The bucket as a URL, path style, as juicefs takes it.
    pub fn bucket_url(&self) -> String {
        format!("{}/{}", self.endpoint.trim_end_matches('/'), self.bucket)
    }

    /// Tells these credentials from others without keeping the keys.
    fn fingerprint(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        for part in [
            self.endpoint.as_str(),
            self.bucket.as_str(),
            self.access_key_id.as_str(),
            self.secret_access_key.as_str(),
        ] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        hash.finalize().into()
    }
}

/// The mount of one workspace's file system: without its keys.
struct Mounted {
    fs: JuiceFs,
    fingerprint: [u8; 32],
}

type Slot = Arc<Mutex<Option<Mounted>>>;

/// The workspaces' own file systems that this process has mounted.
pub(crate) struct WorkspaceMounts {
    /// The shared file system, whose binary and cache size they take.
    base: JuiceFs,
    /// The SQL metadata engine they share, tables apart; `None` without one.
    meta_url: Option<String>,
    work_dir: PathBuf,
    mode: FormatMode,
    /// One lock per workspace: a slow mount (refused keys are retried for
    /// seconds) holds up only its own workspace.
    slots: Lock<HashMap<String, Slot>>,
}

impl WorkspaceMounts {
    /// Mounts under `work_dir/<workspace id>/`.
    pub(crate) fn new(
        config: &JuiceFsConfig,
        base: JuiceFs,
        work_dir: &Path,
        mode: FormatMode,
    ) -> WorkspaceMounts {
        let meta_url = [&config.workspace_meta_url, &config.meta_url]
            .into_iter()
            .find(|url| !url.is_empty())
            .map(|url| url.expose().to_owned());
        WorkspaceMounts {
            base,
            meta_url,
            work_dir: work_dir.to_owned(),
            mode,
            slots: Lock::default(),
        }
    }

    fn slot(&self, workspace_id: &str) -> Slot {
        let mut slots = self.slots.lock();
        slots.entry(workspace_id.to_owned()).or_default().clone()
    }

    fn all(&self) -> Vec<Slot> {
        let slots = self.slots.lock();
        slots.values().cloned().collect()
    }

    /// The root of the workspace's file system, mounted with `storage`'s
    /// keys: formatted and mounted the first time, mounted again when its
    /// daemon died or the keys changed. `storage` is dropped (zeroed) on
    /// return.
    pub(crate) async fn root(
        &self,
        workspace_id: &str,
        storage: WorkspaceStorage,
    ) -> Result<PathBuf, VolumeError> {
        let fingerprint = storage.fingerprint();
        let slot = self.slot(workspace_id);
        let mut mounted = slot.lock().await;
        if let Some(current) = mounted.as_ref() {
            if current.fingerprint == fingerprint && current.fs.state().await == MountState::Mounted
            {
                return Ok(current.fs.mount_point().to_owned());
            }
        }
        if let Some(old) = mounted.take() {
            tracing::info!(%workspace_id, "mounting the workspace's file system again: its storage credentials changed or its daemon is gone");
            old.fs.unmount().await;
        }
        let bucket = storage.bucket_url();
        let mut fs = self.file_system(workspace_id, storage)?;
        // One left by an earlier run of this process: its keys are unknown.
        if fs.state().await != MountState::NotMounted {
            fs.unmount().await;
        }
        let outcome = async {
            fs.format(self.mode).await?;
            fs.mount().await?;
            if fs.state().await != MountState::Mounted {
                return Err(VolumeError::NotMounted(fs.mount_point().to_owned()));
            }
            Ok(())
        }
        .await;
        fs.forget_keys();
        outcome.map_err(|cause| VolumeError::WorkspaceStorage {
            bucket,
            cause: Box::new(cause),
        })?;
        tracing::info!(%workspace_id, meta = %fs.shown_meta_url(), mount_point = %fs.mount_point().display(), "the workspace's own file system is mounted");
        let point = fs.mount_point().to_owned();
        *mounted = Some(Mounted { fs, fingerprint });
        Ok(point)
    }

    fn file_system(
        &self,
        workspace_id: &str,
        storage: WorkspaceStorage,
    ) -> Result<JuiceFs, VolumeError> {
        let meta = self
            .meta_url
            .as_deref()
            .and_then(|url| with_table_prefix(url, &table_prefix(workspace_id)))
            .ok_or(VolumeError::NoWorkspaceMeta)?;
        let bucket = storage.bucket_url();
        let WorkspaceStorage {
            access_key_id,
            secret_access_key,
            ..
        } = storage;
        Ok(self.base.handing_keys(
            MetaUrl::parse(&meta),
            bucket,
            access_key_id,
            secret_access_key,
            &self.work_dir.join(workspace_id),
        ))
    }

    /// Detaches the mounts whose daemon died; whether there was one. The
    /// next call for that workspace mounts it again with the keys it
    /// brings.
    pub(crate) async fn heal(&self) -> bool {
        let mut healed = false;
        for slot in self.all() {
            let mut mounted = slot.lock().await;
            let dead = match mounted.as_ref() {
                Some(current) => current.fs.state().await == MountState::Dead,
                None => false,
            };
            // Taken only when dead: a live mount stays for the next container.
            if let Some(dead) = mounted.take_if(|_| dead) {
                tracing::warn!(mount_point = %dead.fs.mount_point().display(), "a workspace's JuiceFS mount is dead (its daemon is gone); it is mounted again by the next container that needs it");
                dead.fs.unmount().await;
                healed = true;
            }
        }
        healed
    }

    /// Unmounts them all, for a process on its way out.
    pub(crate) async fn close(&self) {
        for slot in self.all() {
            if let Some(mounted) = slot.lock().await.take() {
                mounted.fs.unmount().await;
            }
        }
    }
}

/// The prefix of a workspace's tables: `ws` and 32 hex digits of the
/// sha256 of its id, so any id makes a valid, short table name
/// (`jfs_ws…_delegation_token` stays under Postgres's 63 bytes).
fn table_prefix(workspace_id: &str) -> String {
    let digest = Sha256::digest(workspace_id.as_bytes());
    format!("ws{}", hex::encode(&digest[..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show_and_other_keys_are_told_apart() {
        let storage = |secret: &str| {
            WorkspaceStorage::new(
                "http://s3.local:8333/".into(),
                "team-a".into(),
                "AKIDEXAMPLE".into(),
                secret.into(),
            )
        };
        let a = storage("s3cr3t-value");
        assert_eq!(a.bucket_url(), "http://s3.local:8333/team-a");
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("s3cr3t-value") && !shown.contains("AKIDEXAMPLE"),
            "{shown}"
        );
        assert_eq!(a.fingerprint(), storage("s3cr3t-value").fingerprint());
        assert_ne!(a.fingerprint(), storage("rotated").fingerprint());
    }

    #[test]
    fn table_prefixes_are_short_distinct_names() {
        let a = table_prefix("0b6f3c52-9a57-4c52-8d0e-6d1e1c1f0a11");
        assert_eq!(a.len(), 34);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, table_prefix("another-workspace"));
    }

    /// Healing looks at every mount and lets go of dead ones only: one
    /// that is not dead stays, and the next container uses it as it is.
    #[tokio::test]
    async fn healing_keeps_a_mount_that_is_not_dead() {
        let config = JuiceFsConfig {
            meta_url: levers9_config::Secret::new("redis://h:6379/1"),
            ..JuiceFsConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let mounts = WorkspaceMounts::new(
            &config,
            JuiceFs::new(&config, dir.path()),
            dir.path(),
            FormatMode::Update,
        );
        // A mount point that is a plain directory: not mounted, not dead.
        let fs = JuiceFs::new(&config, &dir.path().join("ws-1"));
        std::fs::create_dir_all(fs.mount_point()).unwrap();
        *mounts.slot("ws-1").lock().await = Some(Mounted {
            fs,
            fingerprint: [1; 32],
        });
        assert!(!mounts.heal().await);
        assert!(
            mounts.slot("ws-1").lock().await.is_some(),
            "healing forgot a mount that was not dead"
        );
    }

    #[tokio::test]
    async fn without_a_sql_engine_it_says_which_key_to_set() {
        let config = JuiceFsConfig {
            meta_url: levers9_config::Secret::new("redis://h:6379/1"),
            ..JuiceFsConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let base = JuiceFs::new(&config, dir.path());
        let mounts = WorkspaceMounts::new(&config, base, dir.path(), FormatMode::Update);
        let storage = WorkspaceStorage::new("http://h".into(), "b".into(), "a".into(), "s".into());
        let error = mounts.root("ws-1", storage).await.unwrap_err().to_string();
        assert!(
            error.contains("storage.juicefs.workspaceMetaUrl"),
            "{error}"
        );
    }
}
