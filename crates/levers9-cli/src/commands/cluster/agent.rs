//! `levers9 cluster agent --pool NAME`: runs inside an attached cluster.

use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use levers9_api::v1::{GetWorkersWantedRequest, PoolScaling};
use levers9_config::PoolConfig;
use levers9_kube::{Reconciler, WorkerJob};

use super::pool::PoolArgs;
use crate::client::{Client, Target};

/// How often the agent asks and reconciles.
const PERIOD: Duration = Duration::from_secs(10);

/// `levers9 cluster agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The pool the cluster's workers join.
    #[arg(long)]
    pool: String,
    /// The namespace of the worker Jobs (the agent's own).
    #[arg(long)]
    namespace: String,
    /// The worker image.
    #[arg(long)]
    worker_image: String,
    /// The Secret with the worker token under `token`.
    #[arg(long, default_value = levers9_kube::attach::TOKEN_SECRET)]
    token_secret: String,
    /// Use TLS to reach the controlplane on a port other than 443.
    #[arg(long, env = "LEVERS9_CONTROLPLANE_TLS")]
    tls: bool,
    /// A PEM file of CA certificates to trust besides the system's.
    #[arg(long, env = "LEVERS9_CONTROLPLANE_CA")]
    ca_file: Option<std::path::PathBuf>,
    /// The pool's hardware, placement and scaling.
    #[command(flatten)]
    pool_args: PoolArgs,
    /// Write the worker Job this agent creates as JSON to stdout and exit
    /// (needs no token and no cluster).
    #[arg(long)]
    print_job: bool,
}

/// The worker Job this agent keeps as many of as the controlplane wants:
/// built by the code that builds the controlplane's own Jobs, from the
/// pool's flags and the Job options (`PoolArgs::access`).
fn worker_job<'a>(args: &'a AgentArgs, pool: &'a PoolConfig) -> WorkerJob<'a> {
    WorkerJob {
        pool: &args.pool,
        config: pool,
        // The agent owns its cluster: pods always ask for their GPUs.
        request_resources: true,
        image: &args.worker_image,
        controlplane: &args.pool_args.controlplane,
        token_secret: &args.token_secret,
        attached_cluster: true,
    }
}

/// Asks for the workers wanted and reconciles, every [`PERIOD`], until
/// SIGTERM. A failed round is logged and the next one starts afresh.
pub async fn run(args: AgentArgs) -> Result<()> {
    let pool = args.pool_args.pool()?;
    let wide = args.pool_args.access.worker_wide();
    if args.print_job {
        let job = worker_job(&args, &pool).job_with(&wide);
        println!("{}", serde_json::to_string_pretty(&job)?);
        return Ok(());
    }
    let token = std::env::var("LEVERS9_TOKEN").context(
        "LEVERS9_TOKEN is not set: the agent reads its worker token from it (levers9 cluster \
         join puts it in the levers9-worker-token Secret)",
    )?;
    let (host, port) = crate::context::parse_address(&args.pool_args.controlplane)?;
    let controlplane = Client::new(&Target {
        host,
        port,
        tls: args.tls,
        ca_file: args.ca_file.clone(),
        token,
    })?;
    let kube = levers9_kube::default_client()
        .await
        .context("cannot make an in-cluster Kubernetes client")?;
    let reconciler =
        Reconciler::with_worker_wide(kube, &args.namespace, &worker_job(&args, &pool), &wide);
    let scaling = args.pool_args.scaling();
    let request = GetWorkersWantedRequest {
        pool: args.pool.clone(),
        scaling: Some(PoolScaling {
            min_workers: scaling.min_workers,
            max_workers: scaling.max_workers,
            requests_per_worker: scaling.requests_per_worker,
        }),
    };
    tracing::info!(pool = %args.pool, namespace = %args.namespace, "cluster agent started");
    let stop = super::super::shutdown_signal();
    tokio::pin!(stop);
    loop {
        match controlplane
            .clusters()
            .get_workers_wanted(request.clone())
            .await
        {
            Ok(answer) => {
                let answer = answer.into_inner();
                tracing::debug!(
                    wanted = answer.wanted,
                    waiting = answer.waiting,
                    present = answer.present,
                    "workers wanted"
                );
                if let Err(error) = reconciler.reconcile(answer.wanted as usize).await {
                    tracing::warn!(%error, "cannot reconcile the worker Jobs");
                }
            }
            Err(status) => {
                tracing::warn!(code = ?status.code(), message = status.message(), "cannot ask the controlplane for the workers wanted");
            }
        }
        tokio::select! {
            result = &mut stop => {
                result?;
                tracing::info!("cluster agent stopping; its worker Jobs stay");
                return Ok(());
            }
            _ = tokio::time::sleep(PERIOD) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use serde_json::{json, Value};

    use super::*;

    /// `cluster join`'s pool flags, as a user types them.
    #[derive(Parser)]
    struct JoinFlags {
        #[command(flatten)]
        pool: PoolArgs,
    }

    #[derive(Parser)]
    struct Agent {
        #[command(flatten)]
        agent: AgentArgs,
    }

    /// The Job of the agent that `cluster join` with `flags` deploys: the
    /// flags go through the agent's command line as `join` writes it.
    fn job(flags: &[&str]) -> Value {
        let mut join = vec!["join", "--controlplane", "levers9-grpc.example.com:443"];
        join.extend(flags);
        let pool = JoinFlags::try_parse_from(join).expect("join's flags").pool;
        let mut argv: Vec<String> = [
            "agent",
            "--pool",
            "gke-l4",
            "--namespace",
            "levers9-workers",
            "--worker-image",
            "registry.example.com/levers9/worker:9",
        ]
        .map(str::to_owned)
        .into();
        argv.extend(pool.to_args());
        let args = Agent::try_parse_from(argv)
            .expect("the agent's flags")
            .agent;
        let config = args.pool_args.pool().expect("a pool");
        let job = worker_job(&args, &config).job_with(&args.pool_args.access.worker_wide());
        serde_json::to_value(job).expect("serialises")
    }

    const EVERY_OPTION: [&str; 12] = [
        "--insecure-registry",
        "registry.internal:5000",
        "--registry-credentials-secret",
        "levers9-registry",
        "--image-pull-secret",
        "regcred",
        "--juicefs-secret",
        "levers9-worker-juicefs",
        "--juicefs-bucket",
        "https://volumes.s3.us-east-2.amazonaws.com",
        "--juicefs-name",
        "levers9-gke",
    ];

    #[test]
    fn an_attached_clusters_jobs_get_the_options_the_charts_jobs_get() {
        let job = job(&EVERY_OPTION);

        let pod = &job["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        let args: Vec<&str> = container["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let after = |flag: &str| args[args.iter().position(|a| *a == flag).expect(flag) + 1];
        assert_eq!(after("--insecure-registry"), "registry.internal:5000");
        assert_eq!(
            after("--registry-credentials"),
            "/etc/levers9/registry/.dockerconfigjson"
        );
        assert!(args.contains(&"--attached-cluster"), "{args:?}");
        assert_eq!(pod["imagePullSecrets"], json!([{"name": "regcred"}]));
        let volumes: Vec<&Value> = pod["volumes"].as_array().expect("volumes").iter().collect();
        assert_eq!(*volumes[0], json!({"name": "state", "emptyDir": {}}));
        assert_eq!(volumes[1]["secret"]["secretName"], "levers9-registry");
        let mounts = container["volumeMounts"].as_array().expect("mounts");
        assert_eq!(mounts[0]["mountPath"], "/var/lib/levers9/worker");
        assert_eq!(mounts[1]["readOnly"], true);
        let env: std::collections::BTreeMap<&str, &Value> = container["env"]
            .as_array()
            .expect("env")
            .iter()
            .map(|e| (e["name"].as_str().expect("name"), e))
            .collect();
        assert_eq!(
            env["LEVERS9_JUICEFS_META_URL"]["valueFrom"]["secretKeyRef"],
            json!({"name": "levers9-worker-juicefs", "key": "meta-url", "optional": false})
        );
        assert_eq!(
            env["LEVERS9_JUICEFS_SECRET_KEY"]["valueFrom"]["secretKeyRef"]["name"],
            "levers9-worker-juicefs"
        );
        assert_eq!(
            env["LEVERS9_JUICEFS_BUCKET"]["value"],
            "https://volumes.s3.us-east-2.amazonaws.com"
        );
        assert_eq!(env["LEVERS9_JUICEFS_NAME"]["value"], "levers9-gke");
        assert_eq!(env["LEVERS9_JUICEFS_STORAGE"]["value"], "s3");
        assert_eq!(
            env["LEVERS9_TOKEN"]["valueFrom"]["secretKeyRef"]["name"],
            "levers9-worker-token"
        );
    }

    #[test]
    fn without_options_a_job_has_its_pool_token_and_state_only() {
        let job = job(&[]);

        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["volumes"], json!([{"name": "state", "emptyDir": {}}]));
        assert!(pod.get("imagePullSecrets").is_none(), "{pod}");
        let container = &pod["containers"][0];
        // The volumes' file system comes from the controlplane on attach.
        assert_eq!(container["env"].as_array().expect("env").len(), 1);
        let args = container["args"].to_string();
        assert!(
            !args.contains("insecure") && !args.contains("credentials"),
            "{args}"
        );
    }

    #[test]
    fn a_juicefs_secret_needs_the_bucket_it_is_for() {
        let refused = JoinFlags::try_parse_from([
            "join",
            "--controlplane",
            "cp:443",
            "--juicefs-secret",
            "levers9-worker-juicefs",
        ]);
        let error = refused.err().expect("refused").to_string();
        assert!(error.contains("--juicefs-bucket"), "{error}");
    }
}
