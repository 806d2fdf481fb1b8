//! `levers9 cluster agent --pool NAME`: runs inside an attached cluster.

use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use levers9_api::v1::{GetWorkersWantedRequest, PoolScaling};
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
}

/// Asks for the workers wanted and reconciles, every [`PERIOD`], until
/// SIGTERM. A failed round is logged and the next one starts afresh.
pub async fn run(args: AgentArgs) -> Result<()> {
    let token = std::env::var("LEVERS9_TOKEN").context(
        "LEVERS9_TOKEN is not set: the agent reads its worker token from it (levers9 cluster \
         join puts it in the levers9-worker-token Secret)",
    )?;
    let pool = args.pool_args.pool()?;
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
    let worker = WorkerJob {
        pool: &args.pool,
        config: &pool,
        // The agent owns its cluster: pods always ask for their GPUs.
        request_resources: true,
        image: &args.worker_image,
        controlplane: &args.pool_args.controlplane,
        token_secret: &args.token_secret,
        attached_cluster: true,
    };
    let reconciler = Reconciler::new(kube, &args.namespace, &worker);
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
