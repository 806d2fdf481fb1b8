//! The pool of an attached cluster, built in code from flags: `cluster
//! join` takes them and writes them into the agent's arguments, the agent
//! parses them back. Its workers run with `--attached-cluster`, so they
//! take the worker-wide hardening values (docs/security.md).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use levers9_config::{PoolConfig, PoolResources, PoolRuntime, PoolScaling, Toleration};

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
        args
    }
}
