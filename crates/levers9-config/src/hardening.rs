//! The hardening keys of `worker`, as the controlplane hands them to a
//! worker when it attaches: workers started with no config file (Kubernetes
//! Jobs, machine and cluster agents) get them this way, and none of the
//! rest of the config (which holds the database's secrets) leaves it.

use std::collections::BTreeMap;

use crate::{PoolConfig, WorkerConfig};

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
}
