//! `levers9 worker`: run a worker, or list the workers.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand, ValueEnum};
use levers9_api::v1::{ListWorkersRequest, WorkerStatus};
use levers9_api::Words;
use levers9_image::credentials::HostCredentials;
use levers9_worker::security::PoolOrigin;
use levers9_worker::{
    detect_capacity, detect_gpus, RegistryCredentials, RuntimeKind, WorkerOptions,
};
use serde::Deserialize;

use crate::output;

mod job;
mod parent;
mod schedulable;

/// `levers9 worker`: without a subcommand, runs a worker process.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WorkerArgs {
    #[command(subcommand)]
    command: Option<WorkerCommand>,
    // Boxed: the worker's many flags would make every Command as large.
    #[command(flatten)]
    run: Box<RunArgs>,
}

/// Worker subcommands.
#[derive(Debug, Subcommand)]
enum WorkerCommand {
    /// List workers: pool, capacity, free capacity, status, last heartbeat.
    List,
    /// Place nothing new on a worker; what runs goes on.
    Cordon {
        /// The worker's id (levers9 worker list).
        worker_id: String,
    },
    /// Lift a cordon or a drain.
    Uncordon {
        /// The worker's id.
        worker_id: String,
    },
    /// Cordon a worker and move its function inputs elsewhere: its function
    /// containers finish what they hold and stop; waits until nothing runs
    /// there (other containers run to their end).
    Drain(DrainArgs),
    /// Print the Kubernetes Job (JSON, for `kubectl apply -f -`) that runs
    /// one worker of a pool: its nodeSelector and tolerations, and with
    /// worker.jobResourcesEnforced its resources (nvidia.com/gpu).
    Job(JobArgs),
}

/// `levers9 worker job`.
#[derive(Debug, Args)]
struct JobArgs {
    /// The pool (a key of worker.pools).
    pool: String,
    /// The YAML config file with worker.pools.
    #[arg(long, env = "LEVERS9_CONFIG")]
    config: Option<PathBuf>,
    /// The worker image.
    #[arg(long)]
    image: String,
    /// The controlplane's gRPC address as the worker pods reach it.
    #[arg(long, default_value = "levers9-controlplane:1993")]
    controlplane: String,
    /// The Secret with the worker token under the key `token`.
    #[arg(long, default_value = "levers9-worker-token")]
    token_secret: String,
}

/// `levers9 worker drain`.
#[derive(Debug, Args)]
struct DrainArgs {
    /// The worker's id.
    worker_id: String,
    /// Give up waiting after this many seconds (the drain goes on).
    #[arg(long, default_value_t = 300)]
    timeout_seconds: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum RuntimeArg {
    Runc,
    Gvisor,
}

/// Options of a worker process. The token comes from LEVERS9_TOKEN (a
/// worker token: levers9 token create --type worker), never from a flag.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The pool this worker serves.
    #[arg(long, env = "LEVERS9_WORKER_POOL", default_value = "default")]
    pub(crate) pool: String,
    /// The controlplane's gRPC address (host:port or a URL).
    #[arg(long, env = "LEVERS9_CONTROLPLANE", default_value = "127.0.0.1:1993")]
    pub(crate) controlplane: String,
    /// Use TLS to reach the controlplane on a port other than 443 (443
    /// and https:// URLs always use TLS).
    #[arg(long, env = "LEVERS9_CONTROLPLANE_TLS")]
    pub(crate) tls: bool,
    /// A PEM file of CA certificates to trust besides the system's, for a
    /// controlplane certificate a private CA signed.
    #[arg(long, env = "LEVERS9_CONTROLPLANE_CA")]
    pub(crate) ca_file: Option<PathBuf>,
    /// Container runtime.
    #[arg(long, value_enum, default_value = "runc")]
    pub(crate) runtime: RuntimeArg,
    /// CPU to offer, in millicores (default: all of the machine's).
    #[arg(long)]
    cpu_millicores: Option<u64>,
    /// Memory to offer, in MiB (default: all of the machine's).
    #[arg(long)]
    memory_mib: Option<u64>,
    /// A GPU type and its device ids, e.g. L40S:0,1 (repeatable). Without
    /// it, GPUs are detected with nvidia-smi (NVML) where it is installed.
    #[arg(long = "gpu")]
    gpus: Vec<String>,
    /// Runtime state and the image cache.
    #[arg(long, default_value = "/var/lib/levers9/worker")]
    pub(crate) state_dir: PathBuf,
    /// Registries to reach over plain HTTP (loopback ones always are).
    #[arg(long = "insecure-registry")]
    insecure_registries: Vec<String>,
    /// Registry credentials: a docker config JSON file (`~/.docker/config.json`
    /// or the `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson`
    /// Secret), or the older TOML file with one table per registry host
    /// (`username` and `password`, or `token`). ECR registries without an
    /// entry get tokens with the worker's AWS credentials. Keep it readable
    /// by root only.
    #[arg(long, env = "LEVERS9_REGISTRY_CREDENTIALS")]
    registry_credentials: Option<PathBuf>,
    /// Size bound of the image layer cache, in GiB.
    #[arg(long, default_value_t = 20)]
    image_cache_gib: u64,
    /// This worker's id (default: host name and a random suffix).
    #[arg(long)]
    pub(crate) worker_id: Option<String>,
    /// YAML config file, as for `levers9 controlplane`: the worker reads
    /// its `worker.*` keys (container hardening; see docs/security.md).
    #[arg(long, env = "LEVERS9_CONFIG")]
    config: Option<PathBuf>,
    /// The pool is an attached cluster's, built in code: it takes the
    /// worker-wide hardening values, never a worker.pools override.
    #[arg(long, env = "LEVERS9_ATTACHED_CLUSTER")]
    attached_cluster: bool,
    /// Serve Prometheus metrics on this address (e.g. 0.0.0.0:1995).
    #[arg(long, env = "LEVERS9_WORKER_METRICS_ADDRESS")]
    metrics_address: Option<std::net::SocketAddr>,
    /// On SIGTERM the worker drains: running containers get this long to
    /// finish before they are stopped and their inputs run elsewhere.
    #[arg(long, env = "LEVERS9_WORKER_DRAIN_GRACE_SECONDS", default_value_t = 30)]
    drain_grace_seconds: u64,
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
        Some(WorkerCommand::Cordon { worker_id }) => schedulable::cordon(context, worker_id).await,
        Some(WorkerCommand::Uncordon { worker_id }) => {
            schedulable::uncordon(context, worker_id).await
        }
        Some(WorkerCommand::Job(args)) => {
            let env = |name: &str| std::env::var(name).ok();
            let (config, _) = levers9_config::load(args.config.as_deref(), &env)?;
            let target = job::JobTarget {
                image: &args.image,
                controlplane: &args.controlplane,
                token_secret: &args.token_secret,
            };
            let manifest = job::manifest(&config, &args.pool, &target)?;
            println!("{}", serde_json::to_string_pretty(&manifest)?);
            Ok(())
        }
        Some(WorkerCommand::Drain(args)) => {
            schedulable::drain(
                context,
                args.worker_id,
                std::time::Duration::from_secs(args.timeout_seconds),
            )
            .await
        }
        None => run_process(*args.run).await,
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
                .map(|g| {
                    let free = free
                        .gpus
                        .iter()
                        .find(|f| f.gpu_type == g.gpu_type)
                        .map_or(0, |f| f.count);
                    format!("{free}/{} {}", g.count, g.gpu_type)
                })
                .collect();
            let status = if w.cordoned && w.status == i32::from(WorkerStatus::Ready) {
                "cordoned".to_owned()
            } else {
                WorkerStatus::word_of(w.status)
            };
            vec![
                w.worker_id,
                w.pool,
                w.hostname,
                w.runtime,
                format!("{}m/{}m", free.cpu_millicores, capacity.cpu_millicores),
                format!("{}/{} MiB", free.memory_mib, capacity.memory_mib),
                output::or_dash(&gpus.join(",")),
                status,
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
            "GPUS FREE",
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

/// One registry's entry in the credentials file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsEntry {
    username: Option<String>,
    password: Option<String>,
    token: Option<String>,
}

fn read_registry_credentials(path: &Path) -> Result<HashMap<String, RegistryCredentials>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if text.trim_start().starts_with('{') {
        // Docker config JSON. ECR hosts get their tokens whether listed
        // (credHelpers ecr-login) or not, so only fixed entries are kept.
        let hosts = levers9_image::credentials::read_docker_config_file(path)?;
        return Ok(hosts
            .into_iter()
            .filter_map(|(host, credentials)| match credentials {
                HostCredentials::Static(credentials) => Some((host, credentials)),
                HostCredentials::Ecr => None,
            })
            .collect());
    }
    let mode = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(file = %path.display(), "the registry credentials file is readable by others: chmod 600 it");
    }
    let entries: HashMap<String, CredentialsEntry> = toml::from_str(&text).with_context(|| {
        format!(
            "{} is not a valid registry credentials file",
            path.display()
        )
    })?;
    entries
        .into_iter()
        .map(|(host, entry)| {
            let credentials = match entry {
                CredentialsEntry {
                    token: Some(token),
                    username: None,
                    password: None,
                } => RegistryCredentials::Bearer { token },
                CredentialsEntry {
                    username: Some(username),
                    password: Some(password),
                    token: None,
                } => RegistryCredentials::Basic { username, password },
                _ => bail!(
                    "{}: registry {host:?} needs either username and password, or token",
                    path.display()
                ),
            };
            Ok((host, credentials))
        })
        .collect()
}

/// Runs the worker process (`levers9 worker`, `levers9-worker`) with the
/// worker token in LEVERS9_TOKEN, until SIGINT or SIGTERM.
pub async fn run_process(args: RunArgs) -> Result<()> {
    parent::exit_with_parent()?;
    let token = std::env::var("LEVERS9_TOKEN").ok().filter(|t| !t.is_empty()).context(
        "LEVERS9_TOKEN is not set: give the worker a worker token (levers9 token create --type worker)",
    )?;
    run_worker_with(args, token).await
}

/// This machine's host name.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the worker process with this token until SIGINT or SIGTERM: the
/// one worker loop, for `levers9 worker` and `levers9 agent` alike.
pub(crate) async fn run_worker_with(args: RunArgs, token: String) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let (config, _) = levers9_config::load(args.config.as_deref(), &env)?;
    let hostname = hostname();
    let mut capacity = detect_capacity();
    // The pool's per-worker resources, where configured, unless a flag
    // says otherwise.
    let resources = config
        .worker
        .pools
        .get(&args.pool)
        .map(|p| p.resources.clone())
        .unwrap_or_default();
    if let Some(cpu) = args
        .cpu_millicores
        .or((resources.cpu_millicores > 0).then_some(resources.cpu_millicores))
    {
        capacity.cpu_millicores = cpu;
    }
    if let Some(memory) = args
        .memory_mib
        .or((resources.memory_mib > 0).then_some(resources.memory_mib))
    {
        capacity.memory_mib = memory;
    }
    capacity.gpus = if args.gpus.is_empty() {
        detect_gpus().await
    } else {
        args.gpus
            .iter()
            .map(|g| parse_gpu(g))
            .collect::<Result<_>>()?
    };
    let controlplane = levers9_api::dial::Controlplane {
        address: args.controlplane,
        tls: args.tls,
        ca_file: args.ca_file,
    };
    // Refuse a bad address or CA file now rather than retry it forever.
    controlplane.endpoint()?;
    let worker_id = args.worker_id.unwrap_or_else(|| {
        format!(
            "{hostname}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        )
    });
    // Workers only create a missing file system: the controlplane owns
    // its settings, and a worker with stale keys must not overwrite them.
    let volumes = levers9_volumes::Volumes::new(
        &config,
        &args.state_dir,
        levers9_volumes::FormatMode::CreateOnly,
    );
    let options = WorkerOptions {
        controlplane,
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
        registry_credentials: match &args.registry_credentials {
            Some(path) => read_registry_credentials(path)?,
            None => HashMap::new(),
        },
        storage: config.storage,
        config: config.worker,
        pool_origin: if args.attached_cluster {
            PoolOrigin::AttachedCluster
        } else {
            PoolOrigin::Configured
        },
        metrics_address: args.metrics_address,
        drain_grace: std::time::Duration::from_secs(args.drain_grace_seconds),
        volumes,
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// The `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson`
    /// Secret, as worker Jobs mount it.
    #[test]
    fn registry_credentials_are_read_from_docker_config_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".dockerconfigjson");
        std::fs::write(
            &path,
            r#"{"auths":{"registry.internal:5000":{"username":"levers9","password":"pw","auth":"bGV2ZXJzOTpwdw=="},"https://ghcr.io":{"auth":"Y2k6dG9rZW4="}},"credHelpers":{"123456789012.dkr.ecr.eu-west-1.amazonaws.com":"ecr-login"}}"#,
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let read = read_registry_credentials(&path).unwrap();
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(
            read["registry.internal:5000"],
            RegistryCredentials::Basic {
                username: "levers9".into(),
                password: "pw".into()
            }
        );
        assert_eq!(
            read["ghcr.io"],
            RegistryCredentials::Basic {
                username: "ci".into(),
                password: "token".into()
            }
        );
        std::fs::write(&path, r#"{"auths":{"r.io":{"password":"secretish"}}}"#).unwrap();
        let error = read_registry_credentials(&path).unwrap_err().to_string();
        assert!(
            error.contains("the entry of registry \"r.io\" has none of"),
            "{error}"
        );
        assert!(!error.contains("secretish"), "{error}");
    }

    #[test]
    fn registry_credentials_are_basic_or_bearer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registries.toml");
        std::fs::write(
            &path,
            "[\"registry.example.com\"]\nusername = \"ci\"\npassword = \"pw\"\n[\"ghcr.io\"]\ntoken = \"t\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let read = read_registry_credentials(&path).unwrap();
        assert!(matches!(
            read["registry.example.com"],
            RegistryCredentials::Basic { .. }
        ));
        assert!(matches!(
            read["ghcr.io"],
            RegistryCredentials::Bearer { .. }
        ));
        std::fs::write(&path, "[\"r\"]\nusername = \"only\"\n").unwrap();
        let error = read_registry_credentials(&path).unwrap_err().to_string();
        assert!(
            error.contains("needs either username and password, or token"),
            "{error}"
        );
    }
}
