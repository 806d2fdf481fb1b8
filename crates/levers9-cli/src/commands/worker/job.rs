//! `levers9 worker job POOL`: the Kubernetes Job that runs one worker of a
//! pool, from its `worker.pools.<name>` keys (levers9_kube::WorkerJob).

use anyhow::{bail, Result};
use levers9_config::WorkerConfig;
use levers9_kube::{WorkerJob, WorkerWide};

/// What the Job runs and where it reports.
pub struct JobTarget<'a> {
    /// The worker image.
    pub image: &'a str,
    /// The controlplane's gRPC address as workers reach it.
    pub controlplane: &'a str,
    /// The Secret holding the worker token under the key `token`.
    pub token_secret: &'a str,
}

/// The Job manifest (JSON, which `kubectl apply -f -` takes as it is).
pub fn manifest(
    worker: &WorkerConfig,
    pool_name: &str,
    target: &JobTarget,
) -> Result<serde_json::Value> {
    let Some(pool) = worker.pools.get(pool_name) else {
        let known: Vec<&str> = worker.pools.keys().map(String::as_str).collect();
        bail!(
            "pool {pool_name:?} is not in worker.pools (configured: {}): add it to the config \
             file first",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    };
    let job = WorkerJob {
        pool: pool_name,
        config: pool,
        request_resources: worker.job_resources_enforced,
        image: target.image,
        controlplane: target.controlplane,
        token_secret: target.token_secret,
        attached_cluster: false,
    };
    // The worker section has no storage keys: the JuiceFS variables are
    // the controlplane's to add (WorkerWide::from_config).
    let wide = WorkerWide {
        insecure_registries: worker.insecure_registries.clone(),
        juicefs: None,
    };
    Ok(serde_json::to_value(job.job_with(&wide))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: JobTarget = JobTarget {
        image: "registry.example.com/levers9/worker:1",
        controlplane: "levers9-controlplane:1993",
        token_secret: "levers9-worker-token",
    };

    fn config(enforced: bool) -> WorkerConfig {
        WorkerConfig {
            pools: [(
                "l40s".to_owned(),
                levers9_config::PoolConfig {
                    gpu_type: "L40S".into(),
                    ..Default::default()
                },
            )]
            .into(),
            job_resources_enforced: enforced,
            ..WorkerConfig::default()
        }
    }

    #[test]
    fn the_config_decides_whether_gpus_are_requested() {
        let job = manifest(&config(true), "l40s", &TARGET).expect("manifest");
        let container = &job["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], "1");
        let job = manifest(&config(false), "l40s", &TARGET).expect("manifest");
        let container = &job["spec"]["template"]["spec"]["containers"][0];
        assert!(container.get("resources").is_none(), "{container}");
    }

    #[test]
    fn an_unknown_pool_names_the_configured_ones() {
        let error = manifest(&config(true), "h100", &TARGET)
            .expect_err("refused")
            .to_string();
        assert!(error.contains("configured: l40s"), "{error}");
    }
}
