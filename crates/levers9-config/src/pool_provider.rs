//! How many workers a pool may have (`worker.pools.<name>.scaling`) and,
//! for `provider: kubernetes`, the cluster its worker Jobs run on
//! (`worker.pools.<name>.kubernetes`), for `provider: process`, how its
//! worker processes start (`worker.pools.<name>.process`).

use serde::{Deserialize, Serialize};

/// `worker.pools.<name>.scaling`: the bounds of the demand rule (see
/// docs/scheduling.md, "Workers wanted").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PoolScaling {
    /// Workers kept while the pool is idle.
    pub min_workers: u32,
    /// Workers never exceeded, whatever waits.
    pub max_workers: u32,
    /// Waiting requests one new worker is expected to take.
    pub requests_per_worker: u32,
}

impl Default for PoolScaling {
    fn default() -> Self {
        // One worker at most until asked for more: a GPU worker costs money.
        Self {
            min_workers: 0,
            max_workers: 1,
            requests_per_worker: 1,
        }
    }
}

/// `worker.pools.<name>.kubernetes`: where the controlplane creates the
/// worker Jobs of a `provider: kubernetes` pool, and with what credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PoolKubernetes {
    /// The cluster's API server, `https://HOST[:PORT]`; empty is the
    /// controlplane's own cluster, with its own service account.
    pub api_server: String,
    /// PEM file of the CA that signed the API server's certificate; empty
    /// trusts the system's roots.
    pub ca_cert_file: String,
    /// File holding the service account's token (mounted from a Secret);
    /// read again when it changes, never logged. Required with `apiServer`.
    pub token_file: String,
    /// The namespace of the worker Jobs.
    pub namespace: String,
    /// Reference of the image the worker Jobs' pods run, e.g. `levers9/worker`
    /// built from `docker/worker.Dockerfile`: its entry point must be the
    /// `levers9` binary, as the pod's arguments start with `worker`. Required.
    pub worker_image: String,
    /// The controlplane's gRPC address as the workers there reach it.
    pub controlplane_address: String,
    /// The Secret in `namespace` holding the worker token under `token`.
    pub worker_token_secret: String,
    /// Secrets in `namespace` (type `kubernetes.io/dockerconfigjson`) the
    /// kubelet pulls the worker image with: the pod's `imagePullSecrets`.
    pub image_pull_secrets: Vec<String>,
    /// A Secret in `namespace` of type `kubernetes.io/dockerconfigjson`,
    /// mounted read-only into worker pods: the workers pull functions'
    /// images and push built ones with it (`--registry-credentials`).
    /// Empty: anonymous.
    pub registry_credentials_secret: String,
    /// The Secret in `namespace` worker pods mount volumes' JuiceFS file
    /// system with, by `secretKeyRef`: the metadata URL under `meta-url`,
    /// and, when used, `workspace-meta-url`, `access-key` and `secret-key`.
    /// Required while `storage.juicefs.metaUrl` is set.
    pub juicefs_secret: String,
}

impl Default for PoolKubernetes {
    fn default() -> Self {
        Self {
            api_server: String::new(),
            ca_cert_file: String::new(),
            token_file: String::new(),
            namespace: "levers9-workers".into(),
            worker_image: String::new(),
            controlplane_address: String::new(),
            worker_token_secret: "levers9-worker-token".into(),
            image_pull_secrets: Vec::new(),
            registry_credentials_secret: String::new(),
            juicefs_secret: String::new(),
        }
    }
}

/// `worker.pools.<name>.process`: how the controlplane starts the worker
/// processes of a `provider: process` pool on its own machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PoolProcess {
    /// The `levers9` executable; empty is the controlplane's own.
    pub binary: String,
    /// Where each worker gets its state directory; empty is
    /// `<controlplane.dataDir>/workers/<pool>`.
    pub state_dir: String,
    /// The controlplane's gRPC address as the workers reach it; empty is
    /// its own listener on loopback.
    pub controlplane_address: String,
    /// Seconds a stopped worker's containers get to finish (the worker's
    /// `--drain-grace-seconds`).
    pub drain_grace_seconds: u64,
}

impl Default for PoolProcess {
    fn default() -> Self {
        Self {
            binary: String::new(),
            state_dir: String::new(),
            controlplane_address: String::new(),
            // The worker's own default.
            drain_grace_seconds: 30,
        }
    }
}

/// Checks the scaling keys of pool `name`, and its `kubernetes` keys when
/// its provider is `kubernetes`.
pub(crate) fn validate(name: &str, pool: &crate::PoolConfig) -> Result<(), crate::ConfigError> {
    let invalid = |message: String| crate::ConfigError::Invalid {
        key: "worker.pools",
        message,
    };
    let scaling = &pool.scaling;
    if scaling.max_workers < scaling.min_workers {
        return Err(invalid(format!(
            "worker.pools.{name}.scaling.maxWorkers ({}) is below minWorkers ({}): raise \
             maxWorkers or lower minWorkers",
            scaling.max_workers, scaling.min_workers
        )));
    }
    if scaling.requests_per_worker == 0 {
        return Err(invalid(format!(
            "worker.pools.{name}.scaling.requestsPerWorker is 0: use at least 1"
        )));
    }
    if pool.provider != crate::PoolProvider::Kubernetes {
        return Ok(());
    }
    let k = &pool.kubernetes;
    let remote = !k.api_server.is_empty();
    let mut required = vec![
        ("namespace", &k.namespace),
        ("workerImage", &k.worker_image),
        ("controlplaneAddress", &k.controlplane_address),
        ("workerTokenSecret", &k.worker_token_secret),
    ];
    if remote {
        required.push(("tokenFile", &k.token_file));
    }
    let missing: Vec<String> = required
        .iter()
        .filter(|(_, value)| value.is_empty())
        .map(|(key, _)| format!("worker.pools.{name}.kubernetes.{key}"))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "pool {name} has provider: kubernetes but {} not set: see docs/gke.md",
            missing.join(", ")
        )));
    }
    if remote && !k.api_server.starts_with("https://") {
        return Err(invalid(format!(
            "worker.pools.{name}.kubernetes.apiServer is {:?}: it must be an https:// URL, \
             e.g. https://203.0.113.10",
            k.api_server
        )));
    }
    Ok(())
}

/// Checks that the worker Jobs of `provider: kubernetes` pool `name` can
/// mount volumes: with `storage.juicefs.metaUrl` set, volumes live in
/// JuiceFS, and a worker pod without its keys would bind empty local
/// directories instead.
pub(crate) fn validate_volumes(
    name: &str,
    pool: &crate::PoolConfig,
    juicefs_configured: bool,
) -> Result<(), crate::ConfigError> {
    if pool.provider != crate::PoolProvider::Kubernetes
        || !juicefs_configured
        || !pool.kubernetes.juicefs_secret.is_empty()
    {
        return Ok(());
    }
    Err(crate::ConfigError::Invalid {
        key: "worker.pools",
        message: format!(
            "pool {name} has provider: kubernetes and storage.juicefs.metaUrl is set, but \
             worker.pools.{name}.kubernetes.juicefsSecret is empty: its worker pods could not \
             mount volumes. Name a Secret in {} with the metadata URL under meta-url (and the \
             bucket keys under access-key and secret-key); the Helm chart makes one",
            pool.kubernetes.namespace
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PoolConfig, PoolProvider};

    #[test]
    fn a_kubernetes_pool_needs_the_juicefs_secret_while_volumes_are_in_juicefs() {
        let mut pool = PoolConfig {
            provider: PoolProvider::Kubernetes,
            ..PoolConfig::default()
        };
        validate_volumes("default", &pool, false).expect("no JuiceFS, nothing to mount");
        let error = validate_volumes("default", &pool, true)
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("worker.pools.default.kubernetes.juicefsSecret is empty")
                && error.contains("Secret in levers9-workers"),
            "{error}"
        );
        pool.kubernetes.juicefs_secret = "levers9-worker-juicefs".into();
        validate_volumes("default", &pool, true).expect("valid");
        validate_volumes("local", &PoolConfig::default(), true).expect("not a Job");
    }

    #[test]
    fn a_kubernetes_pool_names_the_keys_it_lacks() {
        let pool = PoolConfig {
            provider: PoolProvider::Kubernetes,
            kubernetes: PoolKubernetes {
                api_server: "https://203.0.113.10".into(),
                ..PoolKubernetes::default()
            },
            ..PoolConfig::default()
        };
        let error = validate("gke", &pool).expect_err("refused").to_string();
        assert!(
            error.contains("worker.pools.gke.kubernetes.tokenFile")
                && error.contains("worker.pools.gke.kubernetes.workerImage")
                && !error.contains("apiServer"),
            "{error}"
        );
    }

    #[test]
    fn max_below_min_is_refused() {
        let pool = PoolConfig {
            scaling: PoolScaling {
                min_workers: 3,
                max_workers: 2,
                requests_per_worker: 1,
            },
            ..PoolConfig::default()
        };
        let error = validate("l40s", &pool).expect_err("refused").to_string();
        assert!(
            error.contains("maxWorkers (2) is below minWorkers (3)"),
            "{error}"
        );
    }

    #[test]
    fn the_controlplanes_own_cluster_needs_no_token_file() {
        let pool = PoolConfig {
            provider: PoolProvider::Kubernetes,
            kubernetes: PoolKubernetes {
                worker_image: "registry.example.com/levers9/worker:1".into(),
                controlplane_address: "levers9-controlplane:1993".into(),
                ..PoolKubernetes::default()
            },
            ..PoolConfig::default()
        };
        validate("eks", &pool).expect("valid");
    }

    #[test]
    fn a_process_pool_reads_its_keys_and_keeps_the_workers_drain_default() {
        let pool: PoolConfig = serde_yaml::from_str(
            "provider: process\nprocess: {binary: /usr/local/bin/levers9, stateDir: /srv/w}\n",
        )
        .expect("parses");
        assert_eq!(pool.provider, PoolProvider::Process);
        assert_eq!(pool.process.binary, "/usr/local/bin/levers9");
        assert_eq!(pool.process.state_dir, "/srv/w");
        assert_eq!(pool.process.drain_grace_seconds, 30);
        validate("default", &pool).expect("valid");
        let unknown = serde_yaml::from_str::<PoolConfig>("process: {workerImage: x}\n")
            .expect_err("refused")
            .to_string();
        assert!(unknown.contains("unknown field `workerImage`"), "{unknown}");
    }

    #[test]
    fn local_pools_need_no_cluster() {
        validate("default", &PoolConfig::default()).expect("valid");
    }
}
