//! The scheduling side of `worker.pools.<name>`: what hardware a pool's
//! workers offer, where their pods land on Kubernetes, and which requests
//! the pool takes.

use serde::{Deserialize, Serialize};

/// Where a pool's workers come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolProvider {
    /// Workers started by hand or by a service manager (`levers9 worker`),
    /// or by an attached cluster's agent.
    #[default]
    Local,
    /// Worker Jobs on a Kubernetes cluster, pinned with `nodeSelector` and
    /// `tolerations`.
    Kubernetes,
    /// `levers9 worker` child processes the controlplane starts on its own
    /// machine (`levers9 up`, tests, one-box installs).
    Process,
}

/// What each worker of a pool offers, `worker.pools.<name>.resources`. A
/// zero leaves the amount to the worker (all of its machine, the GPUs it
/// detects); on Kubernetes these are the worker pod's requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PoolResources {
    /// CPU per worker, in millicores.
    pub cpu_millicores: u64,
    /// Memory per worker, in MiB.
    pub memory_mib: u64,
    /// GPUs of the pool's `gpuType` per worker.
    pub gpu_count: u32,
}

/// A Kubernetes toleration, as the pod spec writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Toleration {
    /// The taint key, e.g. `nvidia.com/gpu`.
    pub key: String,
    /// `Exists` or `Equal`.
    pub operator: String,
    /// The taint value, with `Equal`.
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty for all.
    pub effect: String,
}

/// Checks the scheduling keys of pool `name`.
pub(crate) fn validate(name: &str, pool: &crate::PoolConfig) -> Result<(), crate::ConfigError> {
    if pool.resources.gpu_count > 0 && pool.gpu_type.is_empty() {
        return Err(crate::ConfigError::Invalid {
            key: "worker.pools",
            message: format!(
                "worker.pools.{name}.resources.gpuCount is {} but worker.pools.{name}.gpuType \
                 is empty: name the GPU type its workers have, e.g. L40S",
                pool.resources.gpu_count
            ),
        });
    }
    Ok(())
}
