//! `levers9 worker`: run a worker, or list the workers.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand, ValueEnum};
use levers9_api::v1::ListWorkersRequest;
use levers9_worker::{detect_capacity, RuntimeKind, WorkerOptions};

use crate::output;

/// `levers9 worker`: without a subcommand, runs a worker process.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WorkerArgs {
    #[command(subcommand)]
    command: Option<WorkerCommand>,
    #[command(flatten)]
    run: RunArgs,
}

/// Worker subcommands.
#[derive(Debug, Subcommand)]
enum WorkerCommand {
    /// List workers: pool, capacity, free capacity, status, last heartbeat.
    List,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RuntimeArg {
    Runc,
    Gvisor,
}

/// Options of a worker process. The token comes from LEVERS9_TOKEN (a
/// worker token: levers9 token create --type worker), never from a flag.
#[derive(Debug, Args)]
struct RunArgs {
    /// The pool this worker serves.
    #[arg(long, env = "LEVERS9_WORKER_POOL", default_value = "default")]
    pool: String,
    /// The controlplane's gRPC address (host:port or a URL).
    #[arg(long, env = "LEVERS9_CONTROLPLANE", default_value = "127.0.0.1:1993")]
    controlplane: String,
    /// Use TLS to reach the controlplane (always on port 443).
    #[arg(long, env = "LEVERS9_CONTROLPLANE_TLS")]
    tls: bool,
    /// Container runtime.
    #[arg(long, value_enum, default_value = "runc")]
    runtime: RuntimeArg,
    /// CPU to offer, in millicores (default: all of the machine's).
    #[arg(long)]
    cpu_millicores: Option<u64>,
    /// Memory to offer, in MiB (default: all of the machine's).
    #[arg(long)]
    memory_mib: Option<u64>,
    /// A GPU type and its device ids, e.g. L40S:0,1 (repeatable). Used where
    /// NVML is not available to detect them.
    #[arg(long = "gpu")]
    gpus: Vec<String>,
    /// Runtime state and the image cache.
    #[arg(long, default_value = "/var/lib/levers9/worker")]
    state_dir: PathBuf,
    /// Registries to reach over plain HTTP (loopback ones always are).
    #[arg(long = "insecure-registry")]
    insecure_registries: Vec<String>,
    /// Size bound of the image layer cache, in GiB.
    #[arg(long, default_value_t = 20)]
    image_cache_gib: u64,
    /// This worker's id (default: host name and a random suffix).
    #[arg(long)]
    worker_id: Option<String>,
}

impl WorkerArgs {
    /// Whether this runs a worker process (rather than a user command).
    pub fn is_process(&self) -> bool {
        self.command.is_none()
    }
}

/// Runs `levers9 worker …`.
pub async fn run(args: WorkerArgs, context: Option<&str>) -> Result<()> {
    match args.command {
        Some(WorkerCommand::List) => list(context).await,
        None => run_worker(args.run).await,
    }
}

async fn list(context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    let workers = client
        .workers()
        .list_workers(ListWorkersRequest {})
        .await?
        .into_inner()
        .workers;
    let rows: Vec<Vec<String>> = workers
        .into_iter()
        .map(|w| {
            let capacity = w.capacity.unwrap_or_default();
            let free = w.free.unwrap_or_default();
            let gpus: Vec<String> = capacity
                .gpus
                .iter()
                .map(|g| format!("{}x{}", g.device_ids.len(), g.gpu_type))
                .collect();
            vec![
                w.worker_id,
                w.pool,
                w.hostname,
                w.runtime,
                format!("{}m/{}m", free.cpu_millicores, capacity.cpu_millicores),
                format!("{}/{} MiB", free.memory_mib, capacity.memory_mib),
                output::or_dash(&gpus.join(",")),
                w.status,
                w.last_heartbeat_at,
            ]
        })
        .collect();
    output::table(
        &[
            "ID",
            "POOL",
            "HOST",
            "RUNTIME",
            "CPU FREE",
            "MEMORY FREE",
            "GPUS",
            "STATUS",
            "LAST HEARTBEAT",
        ],
        &rows,
    );
    Ok(())
}

fn parse_gpu(text: &str) -> Result<(String, Vec<String>)> {
    let Some((gpu_type, ids)) = text.split_once(':') else {
        bail!("--gpu {text:?} must be TYPE:ID[,ID…], e.g. L40S:0,1");
    };
    let ids: Vec<String> = ids
        .split(',')
        .filter(|i| !i.is_empty())
        .map(str::to_owned)
        .collect();
    if gpu_type.is_empty() || ids.is_empty() {
        bail!("--gpu {text:?} must be TYPE:ID[,ID…], e.g. L40S:0,1");
    }
    Ok((gpu_type.to_owned(), ids))
}

async fn run_worker(args: RunArgs) -> Result<()> {
    let token = std::env::var("LEVERS9_TOKEN").ok().filter(|t| !t.is_empty()).context(
        "LEVERS9_TOKEN is not set: give the worker a worker token (levers9 token create --type worker)",
    )?;
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    let mut capacity = detect_capacity();
    if let Some(cpu) = args.cpu_millicores {
        capacity.cpu_millicores = cpu;
    }
    if let Some(memory) = args.memory_mib {
        capacity.memory_mib = memory;
    }
    capacity.gpus = args
        .gpus
        .iter()
        .map(|g| parse_gpu(g))
        .collect::<Result<_>>()?;
    let url = if args.controlplane.contains("://") {
        args.controlplane.clone()
    } else {
        let scheme = if args.tls || args.controlplane.ends_with(":443") {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", args.controlplane)
    };
    let worker_id = args.worker_id.unwrap_or_else(|| {
        format!(
            "{hostname}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        )
    });
    let options = WorkerOptions {
        controlplane_url: url,
        token,
        pool: args.pool,
        worker_id,
        hostname,
        capacity,
        runtime: match args.runtime {
            RuntimeArg::Runc => RuntimeKind::Runc,
            RuntimeArg::Gvisor => RuntimeKind::Gvisor,
        },
        state_dir: args.state_dir,
        insecure_registries: args.insecure_registries,
        image_cache_bytes: args.image_cache_gib << 30,
    };
    tracing::info!(?options, "starting worker");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let signal = tokio::spawn(async move {
        let _ = super::shutdown_signal().await;
        let _ = stop.send(true);
    });
    levers9_worker::run(options, stopped).await?;
    signal.abort();
    Ok(())
}
