//! `storage.juicefs` as the controlplane hands it to a worker when it
//! attaches (`Registered.worker_storage_json`), so that workers started with
//! no config file (Kubernetes Jobs, machine and cluster agents) mount the
//! volumes' file system without `LEVERS9_JUICEFS_*` of their own.
//!
//! Unlike the hardening keys this holds secrets (the metadata URL with its
//! password, the bucket keys): it travels only on the authenticated stream
//! of a worker of this install, and nothing here puts a value in an error.

use serde_json::Value;

use crate::error::ConfigError;
use crate::juicefs::JuiceFsConfig;
use crate::storage::StorageConfig;

/// The keys of `storage.juicefs` that name the file system and reach it.
/// `cacheSizeMib` and `binary` are left out: they describe the worker's
/// own disk and image, not the file system.
const SENT_KEYS: [&str; 7] = [
    "metaUrl",
    "workspaceMetaUrl",
    "storage",
    "bucket",
    "accessKey",
    "secretKey",
    "name",
];

impl JuiceFsConfig {
    /// The keys of [`SENT_KEYS`] as a JSON `storage.juicefs` section, or an
    /// empty string while volumes are local directories (nothing to send).
    /// The result holds secrets: never log it.
    pub fn delivered_json(&self) -> String {
        if !self.is_configured() {
            return String::new();
        }
        let mut document = serde_json::to_value(self).unwrap_or_default();
        if let Value::Object(keys) = &mut document {
            keys.retain(|key, _| SENT_KEYS.contains(&key.as_str()));
        }
        document.to_string()
    }

    /// Reads what [`JuiceFsConfig::delivered_json`] wrote, taking the keys it
    /// leaves out (`cacheSizeMib`, `binary`) from `own`, and checks it as
    /// a config file's section is checked.
    ///
    /// # Errors
    /// `json` is no `storage.juicefs` section, or an invalid one. The
    /// message names the key or the place, never a value (it may be a
    /// secret).
    pub fn from_delivered_json(json: &str, own: &JuiceFsConfig) -> Result<Self, ConfigError> {
        let mut delivered: JuiceFsConfig =
            serde_json::from_str(json).map_err(|e| ConfigError::Invalid {
                key: "storage.juicefs",
                // serde's message can quote the value it refused: only
                // where it stopped is safe to show.
                message: format!(
                    "the controlplane's section is not one (line {}, column {})",
                    e.line(),
                    e.column()
                ),
            })?;
        delivered.cache_size_mib = own.cache_size_mib;
        delivered.binary = own.binary.clone();
        delivered.validate()?;
        Ok(delivered)
    }
}

impl StorageConfig {
    /// Whether this config says where volumes live: a JuiceFS metadata URL
    /// or a local directory of its own. A worker whose config does keeps it
    /// over what the controlplane sends.
    pub fn names_volume_location(&self) -> bool {
        self.juicefs.is_configured() || !self.volumes.local_dir.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::{JuiceFsConfig, Secret, StorageConfig};

    fn controlplanes() -> JuiceFsConfig {
        JuiceFsConfig {
            meta_url: Secret::new("redis://:meta-pw@redis:6379/1"),
            bucket: "http://s3.test/volumes".into(),
            access_key: Secret::new("AKID"),
            secret_key: Secret::new("SK-secret"),
            name: "levers9-volumes".into(),
            cache_size_mib: 99,
            binary: "/opt/controlplane/juicefs".into(),
            ..JuiceFsConfig::default()
        }
    }

    #[test]
    fn local_volumes_send_nothing() {
        assert_eq!(JuiceFsConfig::default().delivered_json(), "");
    }

    #[test]
    fn the_file_system_travels_and_the_workers_own_disk_keys_stay() {
        let json = controlplanes().delivered_json();
        let document: serde_json::Value = serde_json::from_str(&json).expect("json");
        let mut keys: Vec<&String> = document.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "accessKey",
                "bucket",
                "metaUrl",
                "name",
                "secretKey",
                "storage",
                "workspaceMetaUrl"
            ]
        );
        let own = JuiceFsConfig {
            cache_size_mib: 512,
            binary: "/usr/local/bin/juicefs".into(),
            ..JuiceFsConfig::default()
        };

        let read = JuiceFsConfig::from_delivered_json(&json, &own).expect("valid");

        assert_eq!(read.meta_url.expose(), "redis://:meta-pw@redis:6379/1");
        assert_eq!(read.secret_key.expose(), "SK-secret");
        assert_eq!(read.name, "levers9-volumes");
        assert_eq!(read.cache_size_mib, 512);
        assert_eq!(read.binary, "/usr/local/bin/juicefs");
    }

    #[test]
    fn a_bad_section_is_refused_without_showing_a_value() {
        let own = JuiceFsConfig::default();
        let error = JuiceFsConfig::from_delivered_json(r#"{"metaUrl": 7, "x": "SK-1"}"#, &own)
            .unwrap_err()
            .to_string();
        assert!(error.contains("storage.juicefs"), "{error}");
        let error = JuiceFsConfig::from_delivered_json(
            r#"{"metaUrl": "redis://:pw@h/1", "bucket": "", "secretKey": "SK-2"}"#,
            &own,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("storage.juicefs.bucket"), "{error}");
        assert!(!error.contains("SK-2") && !error.contains("pw@"), "{error}");
    }

    #[test]
    fn a_metadata_url_or_a_local_directory_names_where_volumes_live() {
        let mut storage = StorageConfig::default();
        assert!(!storage.names_volume_location());
        storage.volumes.local_dir = "/srv/volumes".into();
        assert!(storage.names_volume_location());
        let storage = StorageConfig {
            juicefs: controlplanes(),
            ..StorageConfig::default()
        };
        assert!(storage.names_volume_location());
    }
}
