//! The hardening keys of `worker`, as the controlplane hands them to a
//! worker when it attaches: workers started with no config file (Kubernetes
//! Jobs, machine and cluster agents) get them this way, and none of the
//! rest of the config (which holds the database's secrets) leaves it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{PoolConfig, WorkerConfig};

/// The keys of `worker` that [`WorkerConfig::hardening_json_for`] sends.
const WORKER_KEYS: [&str; 4] = [
    "containerSecurity",
    "containerServerAuth",
    "volumeMountValidation",
    "pools",
];
/// The keys of a pool that it sends.
const POOL_KEYS: [&str; 3] = ["runtime", "security", "containerServerAuth"];

impl WorkerConfig {
    /// The keys that decide how the containers of `pool` are hardened, and
    /// nothing else: `containerSecurity`, `containerServerAuth`,
    /// `volumeMountValidation` and, when `pool` is configured, its own
    /// `security` and `containerServerAuth` (other pools left out).
    pub fn hardening_for(&self, pool: &str) -> WorkerConfig {
        let pools: BTreeMap<String, PoolConfig> = self
            .pools
            .get(pool)
            .map(|own| {
                let keys = PoolConfig {
                    runtime: own.runtime,
                    security: own.security.clone(),
                    container_server_auth: own.container_server_auth,
                    ..PoolConfig::default()
                };
                (pool.to_owned(), keys)
            })
            .into_iter()
            .collect();
        WorkerConfig {
            pools,
            container_security: self.container_security.clone(),
            container_server_auth: self.container_server_auth,
            volume_mount_validation: self.volume_mount_validation,
            ..WorkerConfig::default()
        }
    }

    /// [`WorkerConfig::hardening_for`] as a JSON `worker` section holding
    /// only those keys, so a worker of an older release, which refuses keys
    /// of `worker` it does not know, still reads it.
    pub fn hardening_json_for(&self, pool: &str) -> String {
        let mut document = serde_json::to_value(self.hardening_for(pool)).unwrap_or_default();
        if let Value::Object(worker) = &mut document {
            worker.retain(|key, _| WORKER_KEYS.contains(&key.as_str()));
            if let Some(Value::Object(pools)) = worker.get_mut("pools") {
                for pool in pools.values_mut() {
                    if let Value::Object(pool) = pool {
                        pool.retain(|key, _| POOL_KEYS.contains(&key.as_str()));
                    }
                }
            }
        }
        document.to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        ContainerServerAuthMode, PoolConfig, PoolKubernetes, PoolProvider, SeccompSetting,
        VolumeMountValidationMode, WorkerConfig,
    };

    #[test]
    fn a_workers_hardening_names_only_its_own_pool_and_no_provider() {
        let mut config = WorkerConfig {
            container_server_auth: ContainerServerAuthMode::Enforce,
            volume_mount_validation: VolumeMountValidationMode::Enforce,
            image_registry: "registry.test/images".into(),
            ..WorkerConfig::default()
        };
        let mut gpu = PoolConfig {
            provider: PoolProvider::Kubernetes,
            container_server_auth: Some(ContainerServerAuthMode::Observe),
            ..PoolConfig::default()
        };
        gpu.security.seccomp = Some(SeccompSetting::Enforce);
        gpu.kubernetes.namespace = "levers9-gpu-workers".into();
        config.pools.insert("gpu".into(), gpu);
        config.pools.insert("build".into(), PoolConfig::default());

        let sent = config.hardening_for("gpu");

        assert_eq!(sent.pools.keys().collect::<Vec<_>>(), ["gpu"]);
        let own = &sent.pools["gpu"];
        assert_eq!(own.security.seccomp, Some(SeccompSetting::Enforce));
        assert_eq!(
            own.container_server_auth,
            Some(ContainerServerAuthMode::Observe)
        );
        assert_eq!(own.provider, PoolProvider::Local, "no provider settings");
        assert_eq!(own.kubernetes, PoolKubernetes::default());
        assert_eq!(sent.container_server_auth, ContainerServerAuthMode::Enforce);
        assert_eq!(
            sent.volume_mount_validation,
            VolumeMountValidationMode::Enforce
        );
        assert!(sent.image_registry.is_empty());
        assert!(config.hardening_for("elsewhere").pools.is_empty());
    }

    #[test]
    fn the_json_a_worker_gets_holds_only_the_hardening_keys_and_loads_back() {
        let mut config = WorkerConfig {
            container_server_auth: ContainerServerAuthMode::Enforce,
            image_registry: "registry.test/images".into(),
            ..WorkerConfig::default()
        };
        let mut gpu = PoolConfig::default();
        gpu.security.seccomp = Some(SeccompSetting::Enforce);
        config.pools.insert("gpu".into(), gpu);

        let json = config.hardening_json_for("gpu");

        let document: serde_json::Value = serde_json::from_str(&json).expect("json");
        let mut keys: Vec<&String> = document.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "containerSecurity",
                "containerServerAuth",
                "pools",
                "volumeMountValidation"
            ]
        );
        let pool = document["pools"]["gpu"].as_object().expect("pool");
        let mut pool_keys: Vec<&String> = pool.keys().collect();
        pool_keys.sort();
        assert_eq!(pool_keys, ["containerServerAuth", "runtime", "security"]);
        let back: WorkerConfig = serde_json::from_str(&json).expect("a worker section");
        assert_eq!(
            back.pools["gpu"].security.seccomp,
            Some(SeccompSetting::Enforce)
        );
        assert_eq!(back.container_server_auth, ContainerServerAuthMode::Enforce);
    }
}
