//! The pool of an attached cluster, built in code from flags: `cluster
//! join` takes them and writes them into the agent's arguments, the agent
//! parses them back. Its workers run with `--attached-cluster`, so they
//! take the worker-wide hardening values (docs/security.md).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use levers9_config::{
    PoolConfig, PoolKubernetes, PoolResources, PoolRuntime, PoolScaling, Toleration,
};
use levers9_kube::worker_wide::JuiceFsKeys;
use levers9_kube::WorkerWide;

/// The container runtime of the pool's workers.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RuntimeArg {
    /// runc.
    Runc,
    /// gVisor (runsc).
    Gvisor,
}

/// The pool's hardware, placement and scaling.
#[derive(Debug, Args)]
pub struct PoolArgs {
    /// The controlplane's gRPC address as the cluster reaches it, e.g.
    /// levers9-grpc.example.com:443 (TLS on port 443).
    #[arg(long)]
    pub controlplane: String,
    /// Container runtime of the workers.
    #[arg(long, value_enum, default_value = "runc")]
    pub runtime: RuntimeArg,
    /// The GPU type of the pool's nodes, e.g. L4; requests nvidia.com/gpu
    /// and tolerates the nvidia.com/gpu taint.
    #[arg(long, default_value = "")]
    pub gpu_type: String,
    /// GPUs per worker (with --gpu-type).
    #[arg(long, default_value_t = 1)]
    pub gpu_count: u32,
    /// CPU per worker pod, in millicores (0: not requested).
    #[arg(long, default_value_t = 0)]
    pub cpu_millicores: u64,
    /// Memory per worker pod, in MiB (0: not requested).
    #[arg(long, default_value_t = 0)]
    pub memory_mib: u64,
    /// A node label worker pods must match, KEY=VALUE (repeatable).
    #[arg(long = "node-selector")]
    pub node_selector: Vec<String>,
    /// Workers kept while the pool is idle.
    #[arg(long, default_value_t = 0)]
    pub min_workers: u32,
    /// Workers never exceeded.
    #[arg(long, default_value_t = 1)]
    pub max_workers: u32,
    /// Waiting requests one new worker is expected to take.
    #[arg(long, default_value_t = 1)]
    pub requests_per_worker: u32,
    /// What the worker Jobs get besides the pool: registries, credentials
    /// and the volumes' file system.
    #[command(flatten)]
    pub access: JobAccessArgs,
}

/// The options the chart gives its own worker Jobs (`worker.pools.<name>.kubernetes`
/// and `worker.insecureRegistries`), for an attached cluster's. Each Secret
/// is named, never read: it must exist in the agent's namespace, and the
/// kubelet hands it to the pod.
#[derive(Debug, Args)]
pub struct JobAccessArgs {
    /// A registry the workers reach over plain HTTP, HOST[:PORT]
    /// (repeatable).
    #[arg(long = "insecure-registry")]
    pub insecure_registries: Vec<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret whose credentials the
    /// workers pull functions' images with (mounted read-only, passed as
    /// --registry-credentials).
    #[arg(long, default_value = "")]
    pub registry_credentials_secret: String,
    /// A Secret the kubelet pulls the worker and agent image with
    /// (repeatable).
    #[arg(long = "image-pull-secret")]
    pub image_pull_secrets: Vec<String>,
    /// A Secret with the volumes' JuiceFS keys (meta-url; optional
    /// workspace-meta-url, access-key, secret-key), given to the workers
    /// by secretKeyRef. Without it the workers take the controlplane's
    /// storage.juicefs when they attach.
    #[arg(long, requires = "juicefs_bucket")]
    pub juicefs_secret: Option<String>,
    /// With --juicefs-secret: the bucket URL of the file system.
    #[arg(long, requires = "juicefs_secret")]
    pub juicefs_bucket: Option<String>,
    /// With --juicefs-secret: JuiceFS's object storage type.
    #[arg(long, default_value = "s3")]
    pub juicefs_storage: String,
    /// With --juicefs-secret: the file system's name.
    #[arg(long, default_value = "levers9")]
    pub juicefs_name: String,
    /// With --juicefs-secret: each worker's JuiceFS cache, in MiB.
    #[arg(long, default_value_t = 10 * 1024)]
    pub juicefs_cache_size_mib: u64,
}

impl JobAccessArgs {
    /// Sets the pool's Job keys, as `worker.pools.<name>.kubernetes` would.
    fn apply_to(&self, keys: &mut PoolKubernetes) {
        keys.registry_credentials_secret = self.registry_credentials_secret.clone();
        keys.image_pull_secrets = self.image_pull_secrets.clone();
        keys.juicefs_secret = self.juicefs_secret.clone().unwrap_or_default();
    }

    /// The worker-wide keys of the Jobs, as the controlplane takes them
    /// from its config ([`WorkerWide::from_config`]).
    pub fn worker_wide(&self) -> WorkerWide {
        WorkerWide {
            insecure_registries: self.insecure_registries.clone(),
            // The Secret names the file system: without one the workers
            // take the controlplane's on attach, and carry no JuiceFS keys.
            juicefs: self
                .juicefs_secret
                .as_ref()
                .and(self.juicefs_bucket.as_ref())
                .map(|bucket| JuiceFsKeys {
                    storage: self.juicefs_storage.clone(),
                    bucket: bucket.clone(),
                    name: self.juicefs_name.clone(),
                    cache_size_mib: self.juicefs_cache_size_mib,
                }),
        }
    }

    /// The same flags, for the agent's command line (Secret names only).
    fn to_args(&self, args: &mut Vec<String>) {
        for registry in &self.insecure_registries {
            args.extend(["--insecure-registry".to_owned(), registry.clone()]);
        }
        for secret in &self.image_pull_secrets {
            args.extend(["--image-pull-secret".to_owned(), secret.clone()]);
        }
        if !self.registry_credentials_secret.is_empty() {
            args.extend([
                "--registry-credentials-secret".to_owned(),
                self.registry_credentials_secret.clone(),
            ]);
        }
        if let (Some(secret), Some(bucket)) = (&self.juicefs_secret, &self.juicefs_bucket) {
            args.extend([
                "--juicefs-secret".to_owned(),
                secret.clone(),
                "--juicefs-bucket".to_owned(),
                bucket.clone(),
                "--juicefs-storage".to_owned(),
                self.juicefs_storage.clone(),
                "--juicefs-name".to_owned(),
                self.juicefs_name.clone(),
                "--juicefs-cache-size-mib".to_owned(),
                self.juicefs_cache_size_mib.to_string(),
            ]);
        }
    }
}

impl PoolArgs {
    /// The pool's config, checked.
    pub fn pool(&self) -> Result<PoolConfig> {
        let mut node_selector = BTreeMap::new();
        for pair in &self.node_selector {
            let Some((key, value)) = pair.split_once('=') else {
                bail!("--node-selector {pair:?} is not KEY=VALUE, e.g. cloud.google.com/gke-accelerator=nvidia-l4");
            };
            node_selector.insert(key.to_owned(), value.to_owned());
        }
        let scaling = self.scaling();
        if scaling.max_workers < scaling.min_workers || scaling.requests_per_worker == 0 {
            bail!(
                "--max-workers ({}) must be at least --min-workers ({}), and \
                 --requests-per-worker at least 1",
                scaling.max_workers,
                scaling.min_workers
            );
        }
        let gpus = !self.gpu_type.is_empty();
        let mut kubernetes = PoolKubernetes::default();
        self.access.apply_to(&mut kubernetes);
        Ok(PoolConfig {
            runtime: match self.runtime {
                RuntimeArg::Runc => PoolRuntime::Runc,
                RuntimeArg::Gvisor => PoolRuntime::Gvisor,
            },
            gpu_type: self.gpu_type.clone(),
            resources: PoolResources {
                cpu_millicores: self.cpu_millicores,
                memory_mib: self.memory_mib,
                gpu_count: if gpus { self.gpu_count.max(1) } else { 0 },
            },
            node_selector,
            // GKE and the NVIDIA operator taint GPU nodes so that only
            // pods asking for GPUs land there.
            tolerations: if gpus {
                vec![Toleration {
                    key: "nvidia.com/gpu".into(),
                    operator: "Exists".into(),
                    effect: "NoSchedule".into(),
                    ..Toleration::default()
                }]
            } else {
                Vec::new()
            },
            scaling,
            kubernetes,
            ..PoolConfig::default()
        })
    }

    /// The scaling bounds proposed to the controlplane.
    pub fn scaling(&self) -> PoolScaling {
        PoolScaling {
            min_workers: self.min_workers,
            max_workers: self.max_workers,
            requests_per_worker: self.requests_per_worker,
        }
    }

    /// The same flags, for the agent's command line.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--controlplane".to_owned(),
            self.controlplane.clone(),
            "--runtime".to_owned(),
            match self.runtime {
                RuntimeArg::Runc => "runc",
                RuntimeArg::Gvisor => "gvisor",
            }
            .to_owned(),
        ];
        if !self.gpu_type.is_empty() {
            args.extend([
                "--gpu-type".to_owned(),
                self.gpu_type.clone(),
                "--gpu-count".to_owned(),
                self.gpu_count.to_string(),
            ]);
        }
        for (flag, value) in [
            ("--cpu-millicores", self.cpu_millicores),
            ("--memory-mib", self.memory_mib),
        ] {
            if value > 0 {
                args.extend([flag.to_owned(), value.to_string()]);
            }
        }
        for pair in &self.node_selector {
            args.extend(["--node-selector".to_owned(), pair.clone()]);
        }
        args.extend([
            "--min-workers".to_owned(),
            self.min_workers.to_string(),
            "--max-workers".to_owned(),
            self.max_workers.to_string(),
            "--requests-per-worker".to_owned(),
            self.requests_per_worker.to_string(),
        ]);
        self.access.to_args(&mut args);
        args
    }
}
