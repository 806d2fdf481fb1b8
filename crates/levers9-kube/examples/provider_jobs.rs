//! Prints the worker Job of every `provider: kubernetes` pool of a config
//! file, as the controlplane creates it (the pool's keys and the
//! worker-wide ones, `WorkerWide::from_config`), one YAML document each.
//! `scripts/test-deploy.sh` runs it on the chart's rendered configs and
//! validates the Jobs against the Kubernetes schemas: no API server runs
//! on the test machines.
//!
//! `cargo run -p levers9-kube --example provider_jobs -- CONFIG_FILE`, with
//! the controlplane's `LEVERS9_*` environment.

use levers9_config::PoolProvider;
use levers9_kube::remote::provider_worker;
use levers9_kube::WorkerWide;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(file) = std::env::args().nth(1) else {
        return Err("usage: provider_jobs CONFIG_FILE".into());
    };
    let env = |name: &str| std::env::var(name).ok();
    let (config, _) = levers9_config::load(Some(file.as_ref()), &env)?;
    let wide = WorkerWide::from_config(&config);
    for (name, pool) in &config.worker.pools {
        if pool.provider != PoolProvider::Kubernetes {
            continue;
        }
        let job = provider_worker(name, pool, config.worker.job_resources_enforced).job_with(&wide);
        print!("---\n{}", serde_yaml::to_string(&job)?);
    }
    Ok(())
}
