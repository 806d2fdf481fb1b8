//! The volumes' JuiceFS file system the controlplane hands a worker when it
//! attaches (`Registered.worker_storage_json`). A worker started with no
//! config file (a Kubernetes Job, a machine or cluster agent) would
//! otherwise keep volumes in a local directory nobody else sees.
//!
//! # Precedence
//! A worker whose own config says where volumes live
//! (`storage.juicefs.metaUrl` or `storage.volumes.localDir`, from its file
//! or `LEVERS9_JUICEFS_*` / `LEVERS9_VOLUMES_*` variables) keeps that,
//! whatever the controlplane sends: its operator chose it. The others take
//! the controlplane's file system whole (two file systems' keys are never
//! mixed), with their own `cacheSizeMib` and `binary`, which describe the
//! worker's disk and image. The volumes are swapped before the session
//! takes its first request, so no container of the session sees the old
//! ones.

use std::path::Path;
use std::sync::Arc;

use levers9_config::{ConfigError, JuiceFsConfig, StorageConfig};
use levers9_sync::Lock;
use levers9_volumes::{FormatMode, Volumes};

/// The file system a worker with `own` storage settings mounts, given what
/// the controlplane sent (`json`, empty when it sends none): `None` keeps
/// the volumes the worker has.
///
/// # Errors
/// `json` is not a valid `storage.juicefs` section (the message names no
/// value: it may be a secret).
pub(crate) fn storage_to_adopt(
    own: &StorageConfig,
    json: &str,
) -> Result<Option<JuiceFsConfig>, ConfigError> {
    if json.is_empty() || own.names_volume_location() {
        return Ok(None);
    }
    JuiceFsConfig::from_delivered_json(json, &own.juicefs).map(Some)
}

/// The volumes containers are bound to now, which the controlplane's file
/// system replaces on attach. Cheap to clone.
#[derive(Clone)]
pub(crate) struct SwappableVolumes(Arc<Lock<Current>>);

struct Current {
    volumes: Volumes,
    /// The controlplane's file system, once adopted.
    adopted: Option<JuiceFsConfig>,
}

impl SwappableVolumes {
    pub(crate) fn new(volumes: Volumes) -> Self {
        Self(Arc::new(Lock::new(Current {
            volumes,
            adopted: None,
        })))
    }

    /// The volumes containers start with now.
    pub(crate) fn get(&self) -> Volumes {
        self.0.lock().volumes.clone()
    }

    /// Puts the file system `juicefs` in place, mounted under `state_dir`
    /// (as the worker's own would be), unless it is there already. Returns
    /// the volumes put in place and those they replace.
    pub(crate) fn adopt(&self, juicefs: JuiceFsConfig, state_dir: &Path) -> Option<Replaced> {
        let mut current = self.0.lock();
        if current.adopted.as_ref() == Some(&juicefs) {
            return None;
        }
        // Workers only create a missing file system: the controlplane owns
        // its settings.
        let new = Volumes::juicefs(&juicefs, state_dir, FormatMode::CreateOnly);
        let old = std::mem::replace(&mut current.volumes, new.clone());
        current.adopted = Some(juicefs);
        Some(Replaced { new, old })
    }
}

/// What [`SwappableVolumes::adopt`] changed.
pub(crate) struct Replaced {
    /// In place now.
    pub(crate) new: Volumes,
    /// No longer given to containers.
    pub(crate) old: Volumes,
}

#[cfg(test)]
mod tests {
    use levers9_config::{Config, Secret};

    use super::*;

    fn controlplanes() -> JuiceFsConfig {
        JuiceFsConfig {
            meta_url: Secret::new("redis://:meta-pw@redis:6379/1"),
            bucket: "http://s3.test/volumes".into(),
            access_key: Secret::new("AKID"),
            secret_key: Secret::new("SK-secret"),
            cache_size_mib: 99,
            ..JuiceFsConfig::default()
        }
    }

    #[test]
    fn a_worker_with_no_storage_of_its_own_takes_the_controlplanes() {
        let own = StorageConfig::default();

        let adopted = storage_to_adopt(&own, &controlplanes().delivered_json())
            .expect("valid")
            .expect("adopted");

        assert_eq!(adopted.meta_url.expose(), "redis://:meta-pw@redis:6379/1");
        assert_eq!(adopted.secret_key.expose(), "SK-secret");
        assert_eq!(adopted.cache_size_mib, own.juicefs.cache_size_mib);
    }

    #[test]
    fn a_workers_own_juicefs_wins_over_the_controlplanes() {
        let mut own = StorageConfig::default();
        own.juicefs.meta_url = Secret::new("redis://:own-pw@near:6379/1");
        own.juicefs.bucket = "http://s3.near/volumes".into();

        let adopted = storage_to_adopt(&own, &controlplanes().delivered_json()).expect("valid");

        assert!(adopted.is_none());
    }

    #[test]
    fn a_workers_own_local_directory_wins_over_the_controlplanes() {
        let mut own = StorageConfig::default();
        own.volumes.local_dir = "/mnt/shared-volumes".into();

        let adopted = storage_to_adopt(&own, &controlplanes().delivered_json()).expect("valid");

        assert!(adopted.is_none());
    }

    #[test]
    fn nothing_sent_keeps_the_workers_volumes() {
        assert!(storage_to_adopt(&StorageConfig::default(), "")
            .expect("valid")
            .is_none());
    }

    #[test]
    fn a_bad_section_is_an_error_and_adopts_nothing() {
        let error = storage_to_adopt(&StorageConfig::default(), r#"{"metaUrl": "nope"}"#)
            .expect_err("refused")
            .to_string();
        assert!(error.contains("storage.juicefs.metaUrl"), "{error}");
    }

    #[test]
    fn the_same_file_system_is_adopted_once_and_a_changed_one_replaces_it() {
        let dir = tempfile::tempdir().expect("dir");
        let mut config = Config::default();
        config.storage.volumes.local_dir = dir.path().join("local").display().to_string();
        let volumes =
            SwappableVolumes::new(Volumes::new(&config, dir.path(), FormatMode::CreateOnly));
        assert!(!volumes.get().is_juicefs());

        let first = volumes
            .adopt(controlplanes(), dir.path())
            .expect("replaced the local directory");
        assert!(first.new.is_juicefs() && !first.old.is_juicefs());
        assert!(volumes.get().is_juicefs());
        assert!(volumes.adopt(controlplanes(), dir.path()).is_none());

        let mut moved = controlplanes();
        moved.name = "levers9-moved".into();
        let second = volumes.adopt(moved, dir.path()).expect("a changed one");
        assert!(second.old.is_juicefs());
    }
}
