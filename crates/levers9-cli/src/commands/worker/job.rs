//! `levers9 worker job POOL`: the Kubernetes Job that runs one worker of a
//! pool, from its `worker.pools.<name>` keys (levers9_kube::WorkerJob).

use anyhow::{bail, Result};
use levers9_config::Config;
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
pub fn manifest(config: &Config, pool_name: &str, target: &JobTarget) -> Result<serde_json::Value> {
    let worker = &config.worker;
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
    // As the controlplane builds its Jobs: the insecure registries, and the
    // JuiceFS keys that are no secret (the pool's juicefsSecret holds the rest).
    let wide = WorkerWide::from_config(config);
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

    fn config(enforced: bool) -> Config {
        Config {
            worker: levers9_config::WorkerConfig {
                pools: [(
                    "l40s".to_owned(),
                    levers9_config::PoolConfig {
                        gpu_type: "L40S".into(),
                        ..Default::default()
                    },
                )]
                .into(),
                job_resources_enforced: enforced,
                ..levers9_config::WorkerConfig::default()
            },
            ..Config::default()
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

    #[test]
    fn the_job_carries_the_juicefs_keys_as_the_controlplanes_jobs_do() {
        let mut config = config(false);
        config.storage.juicefs.meta_url = levers9_config::Secret::new("redis://:pw@r:6379/1");
        config.storage.juicefs.bucket = "http://s3.test/volumes".into();
        if let Some(pool) = config.worker.pools.get_mut("l40s") {
            pool.kubernetes.juicefs_secret = "levers9-worker-juicefs".into();
        }

        let job = manifest(&config, "l40s", &TARGET).expect("manifest");

        let env = job["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .expect("env");
        let named = |name: &str| env.iter().find(|e| e["name"] == name).cloned();
        let bucket = named("LEVERS9_JUICEFS_BUCKET").expect("the bucket");
        assert_eq!(bucket["value"], "http://s3.test/volumes");
        let meta = named("LEVERS9_JUICEFS_META_URL").expect("the metadata URL");
        assert_eq!(
            meta["valueFrom"]["secretKeyRef"]["name"],
            "levers9-worker-juicefs"
        );
        assert!(!job.to_string().contains(":pw@"), "no secret in the Job");
    }
}
