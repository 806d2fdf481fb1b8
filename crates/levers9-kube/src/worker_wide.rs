//! What a worker Job carries besides its pool's keys: the registries it
//! reaches over plain HTTP (`worker.insecureRegistries`), the credential it
//! pulls functions' images with, and the keys of the volumes' JuiceFS file
//! system (`storage.juicefs`). Nothing secret is written into the Job: the
//! registry credential is a mounted Secret, and the JuiceFS metadata URL
//! (which holds its password) and bucket keys come from a Secret by
//! `secretKeyRef`, so they are in no pod spec, argument or process list.

use k8s_openapi::api::core::v1::{
    EnvVar, EnvVarSource, KeyToPath, SecretKeySelector, SecretVolumeSource, Volume, VolumeMount,
};
use levers9_config::{Config, JuiceFsConfig};

/// The key of a `kubernetes.io/dockerconfigjson` Secret, and the name of
/// the file the worker reads.
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";
/// Where the registry credential Secret is mounted in a worker pod.
pub const REGISTRY_CREDENTIALS_DIR: &str = "/etc/levers9/registry";
const REGISTRY_CREDENTIALS_VOLUME: &str = "registry-credentials";

/// The keys of a pool's `juicefsSecret`.
pub mod juicefs_keys {
    /// The metadata URL (with its password): required.
    pub const META_URL: &str = "meta-url";
    /// The SQL metadata engine of workspaces with storage of their own.
    pub const WORKSPACE_META_URL: &str = "workspace-meta-url";
    /// The bucket's access key id; absent where the node's role serves.
    pub const ACCESS_KEY: &str = "access-key";
    /// The bucket's secret access key.
    pub const SECRET_KEY: &str = "secret-key";
}

/// The environment variables of `storage.juicefs` a worker pod gets, each
/// one the config's environment layer reads (a test holds them to
/// `levers9_config::ENV_OVERRIDES`).
pub mod juicefs_env {
    /// `storage.juicefs.metaUrl`.
    pub const META_URL: &str = "LEVERS9_JUICEFS_META_URL";
    /// `storage.juicefs.workspaceMetaUrl`.
    pub const WORKSPACE_META_URL: &str = "LEVERS9_JUICEFS_WORKSPACE_META_URL";
    /// `storage.juicefs.accessKey`.
    pub const ACCESS_KEY: &str = "LEVERS9_JUICEFS_ACCESS_KEY";
    /// `storage.juicefs.secretKey`.
    pub const SECRET_KEY: &str = "LEVERS9_JUICEFS_SECRET_KEY";
    /// `storage.juicefs.storage`.
    pub const STORAGE: &str = "LEVERS9_JUICEFS_STORAGE";
    /// `storage.juicefs.bucket`.
    pub const BUCKET: &str = "LEVERS9_JUICEFS_BUCKET";
    /// `storage.juicefs.name`.
    pub const NAME: &str = "LEVERS9_JUICEFS_NAME";
    /// `storage.juicefs.cacheSizeMib`.
    pub const CACHE_SIZE_MIB: &str = "LEVERS9_JUICEFS_CACHE_SIZE_MIB";
}

/// The worker-wide part of every worker Job of the controlplane.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerWide {
    /// `worker.insecureRegistries`: one `--insecure-registry` each.
    pub insecure_registries: Vec<String>,
    /// The keys of `storage.juicefs` that are no secret, when volumes live
    /// in JuiceFS.
    pub juicefs: Option<JuiceFsKeys>,
}

/// `storage.juicefs` without its secrets (the metadata URL and the keys).
/// `binary` is left out: the worker image has `juicefs` on its `PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JuiceFsKeys {
    /// `storage`, e.g. `s3`.
    pub storage: String,
    /// `bucket`.
    pub bucket: String,
    /// `name`.
    pub name: String,
    /// `cacheSizeMib`.
    pub cache_size_mib: u64,
}

impl WorkerWide {
    /// From the controlplane's configuration.
    pub fn from_config(config: &Config) -> Self {
        let juicefs: &JuiceFsConfig = &config.storage.juicefs;
        Self {
            insecure_registries: config.worker.insecure_registries.clone(),
            juicefs: juicefs.is_configured().then(|| JuiceFsKeys {
                storage: juicefs.storage.clone(),
                bucket: juicefs.bucket.clone(),
                name: juicefs.name.clone(),
                cache_size_mib: juicefs.cache_size_mib,
            }),
        }
    }

    /// `--insecure-registry HOST` for each.
    pub(crate) fn registry_args(&self) -> impl Iterator<Item = String> + '_ {
        self.insecure_registries
            .iter()
            .flat_map(|r| ["--insecure-registry".to_owned(), r.clone()])
    }

    /// The JuiceFS variables of a pod whose pool's JuiceFS Secret is
    /// `secret`; none while volumes are local or no Secret is named
    /// (the config refuses a `provider: kubernetes` pool without one while
    /// `storage.juicefs.metaUrl` is set).
    pub(crate) fn juicefs_env(&self, secret: &str) -> Vec<EnvVar> {
        let Some(keys) = &self.juicefs else {
            return Vec::new();
        };
        if secret.is_empty() {
            return Vec::new();
        }
        vec![
            secret_env(juicefs_env::META_URL, secret, juicefs_keys::META_URL, false),
            secret_env(
                juicefs_env::WORKSPACE_META_URL,
                secret,
                juicefs_keys::WORKSPACE_META_URL,
                true,
            ),
            secret_env(
                juicefs_env::ACCESS_KEY,
                secret,
                juicefs_keys::ACCESS_KEY,
                true,
            ),
            secret_env(
                juicefs_env::SECRET_KEY,
                secret,
                juicefs_keys::SECRET_KEY,
                true,
            ),
            plain_env(juicefs_env::STORAGE, &keys.storage),
            plain_env(juicefs_env::BUCKET, &keys.bucket),
            plain_env(juicefs_env::NAME, &keys.name),
            plain_env(
                juicefs_env::CACHE_SIZE_MIB,
                &keys.cache_size_mib.to_string(),
            ),
        ]
    }
}

/// The registry credential Secret `secret` as a read-only volume holding
/// only its docker config, where it is mounted, and the worker's argument.
pub(crate) fn registry_credentials(secret: &str) -> (Volume, VolumeMount, [String; 2]) {
    let volume = Volume {
        name: REGISTRY_CREDENTIALS_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            items: Some(vec![KeyToPath {
                key: DOCKER_CONFIG_KEY.into(),
                path: DOCKER_CONFIG_KEY.into(),
                mode: None,
            }]),
            // Read by the worker (root) only.
            default_mode: Some(0o400),
            optional: Some(false),
        }),
        ..Volume::default()
    };
    let mount = VolumeMount {
        name: REGISTRY_CREDENTIALS_VOLUME.into(),
        mount_path: REGISTRY_CREDENTIALS_DIR.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    let arg = [
        "--registry-credentials".to_owned(),
        format!("{REGISTRY_CREDENTIALS_DIR}/{DOCKER_CONFIG_KEY}"),
    ];
    (volume, mount, arg)
}

fn plain_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// `name` from key `key` of Secret `secret`; an optional key may be absent
/// (the variable is then unset), a required one keeps the pod from starting.
fn secret_env(name: &str, secret: &str, key: &str, optional: bool) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_owned(),
                key: key.into(),
                optional: Some(optional),
            }),
            ..EnvVarSource::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_juicefs_variable_is_one_the_config_reads() {
        let read: Vec<&str> = levers9_config::ENV_OVERRIDES
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let wide = WorkerWide {
            juicefs: Some(JuiceFsKeys {
                storage: "s3".into(),
                bucket: "https://b.s3.amazonaws.com".into(),
                name: "levers9".into(),
                cache_size_mib: 1024,
            }),
            ..WorkerWide::default()
        };
        let env = wide.juicefs_env("levers9-worker-juicefs");
        assert_eq!(env.len(), 8);
        for var in env {
            assert!(
                read.contains(&var.name.as_str()),
                "{} is read by nothing",
                var.name
            );
        }
    }

    #[test]
    fn local_volumes_give_no_juicefs_variables() {
        let mut config = Config::default();
        assert_eq!(WorkerWide::from_config(&config), WorkerWide::default());
        config.storage.juicefs.meta_url = levers9_config::Secret::new("redis://:pw@r:6379/1");
        config.storage.juicefs.bucket = "http://s3:8333/volumes".into();
        config.worker.insecure_registries = vec!["r.test:5000".into()];
        let wide = WorkerWide::from_config(&config);
        assert_eq!(wide.insecure_registries, ["r.test:5000"]);
        let keys = wide.juicefs.as_ref().expect("JuiceFS is configured");
        assert_eq!(keys.bucket, "http://s3:8333/volumes");
        assert!(wide.juicefs_env("").is_empty(), "no Secret, no variables");
        assert!(
            !format!("{wide:?}").contains("pw@"),
            "no secret in the worker-wide keys"
        );
    }
}
