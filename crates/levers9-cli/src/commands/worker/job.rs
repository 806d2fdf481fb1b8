//! `levers9 worker job POOL`: the Kubernetes Job that runs one worker of a
//! pool, from its `worker.pools.<name>` keys: the node selector and
//! tolerations pin it to the pool's node group, and with
//! `worker.jobResourcesEnforced` it requests the pool's resources, so the
//! NVIDIA device plugin hands it its GPUs.

use anyhow::{bail, Result};
use levers9_config::{PoolConfig, WorkerConfig};
use serde_json::{json, Value};

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
pub fn manifest(worker: &WorkerConfig, pool_name: &str, target: &JobTarget) -> Result<Value> {
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
    let mut args = vec![
        "worker".to_owned(),
        "--pool".to_owned(),
        pool_name.to_owned(),
        "--runtime".to_owned(),
        pool.runtime.as_str().to_owned(),
        "--controlplane".to_owned(),
        target.controlplane.to_owned(),
    ];
    if pool.resources.cpu_millicores > 0 {
        args.extend([
            "--cpu-millicores".into(),
            pool.resources.cpu_millicores.to_string(),
        ]);
    }
    if pool.resources.memory_mib > 0 {
        args.extend(["--memory-mib".into(), pool.resources.memory_mib.to_string()]);
    }
    let mut container = json!({
        "name": "worker",
        "image": target.image,
        "args": args,
        "env": [{
            "name": "LEVERS9_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": target.token_secret, "key": "token"}},
        }],
        "securityContext": {"privileged": true},
    });
    if worker.job_resources_enforced {
        container["resources"] = resources(pool);
    }
    Ok(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": format!("levers9-worker-{pool_name}-"),
            "labels": {"app.kubernetes.io/name": "levers9-worker", "levers9.dev/pool": pool_name},
        },
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"levers9.dev/pool": pool_name}},
                "spec": {
                    "restartPolicy": "Never",
                    // The worker drains on SIGTERM (30 s by default): give it that.
                    "terminationGracePeriodSeconds": 40,
                    "nodeSelector": pool.node_selector,
                    "tolerations": pool.tolerations,
                    "containers": [container],
                },
            },
        },
    }))
}

/// The requests and limits of one worker pod: the pool's resources, with
/// `nvidia.com/gpu` on a GPU pool (one GPU when the count is left open).
fn resources(pool: &PoolConfig) -> Value {
    let mut requests = serde_json::Map::new();
    let mut limits = serde_json::Map::new();
    if pool.resources.cpu_millicores > 0 {
        requests.insert(
            "cpu".into(),
            json!(format!("{}m", pool.resources.cpu_millicores)),
        );
    }
    if pool.resources.memory_mib > 0 {
        let memory = json!(format!("{}Mi", pool.resources.memory_mib));
        requests.insert("memory".into(), memory.clone());
        limits.insert("memory".into(), memory);
    }
    if !pool.gpu_type.is_empty() {
        let gpus = json!(pool.resources.gpu_count.max(1).to_string());
        // Extended resources are requested through their limit.
        requests.insert("nvidia.com/gpu".into(), gpus.clone());
        limits.insert("nvidia.com/gpu".into(), gpus);
    }
    json!({"requests": requests, "limits": limits})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(enforced: bool) -> WorkerConfig {
        let l40s = PoolConfig {
            gpu_type: "L40S".into(),
            resources: levers9_config::PoolResources {
                gpu_count: 2,
                memory_mib: 8192,
                ..Default::default()
            },
            node_selector: [("levers9.dev/pool".to_owned(), "gpu-l40s".to_owned())].into(),
            tolerations: vec![levers9_config::Toleration {
                key: "nvidia.com/gpu".into(),
                operator: "Exists".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }],
            ..PoolConfig::default()
        };
        WorkerConfig {
            pools: [("l40s".to_owned(), l40s)].into(),
            job_resources_enforced: enforced,
            ..WorkerConfig::default()
        }
    }

    const TARGET: JobTarget = JobTarget {
        image: "registry.example.com/levers9/worker:1",
        controlplane: "levers9-controlplane:1993",
        token_secret: "levers9-worker-token",
    };

    #[test]
    fn enforced_jobs_request_the_pools_gpus_on_its_nodes() {
        let job = manifest(&config(true), "l40s", &TARGET).expect("manifest");
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"]["levers9.dev/pool"], "gpu-l40s");
        assert_eq!(pod["tolerations"][0]["key"], "nvidia.com/gpu");
        let resources = &pod["containers"][0]["resources"];
        assert_eq!(resources["limits"]["nvidia.com/gpu"], "2");
        assert_eq!(resources["requests"]["memory"], "8192Mi");
        let args = pod["containers"][0]["args"].to_string();
        assert!(args.contains("\"--pool\",\"l40s\""), "{args}");
    }

    #[test]
    fn without_enforcement_the_pod_asks_for_no_gpu() {
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
