//! `levers9 agent`: a box brought to a pool. It redeems its join token once
//! for a worker credential (kept in a private file, so a restarted agent
//! reuses it), then runs the same worker loop as `levers9 worker`, as the
//! machine's worker in the machine's pool.

mod credential;
mod systemd;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use levers9_api::v1::JoinMachineRequest;

use super::worker::{RunArgs, RuntimeArg};
use crate::client::{Client, Target};
use credential::Credential;

/// Where the join command puts the agent, its token and its state.
const DEFAULT_AGENT_DIR: &str = "/var/lib/levers9/agent";

/// `levers9 agent`: join (once) and run as the machine's worker. The
/// worker flags below apply as to `levers9 worker`, except --pool,
/// --worker-id and --runtime, which come from the machine.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The file holding the join token (the join command writes it; it is
    /// removed once redeemed). LEVERS9_JOIN_TOKEN works too. Never pass the
    /// token itself on the command line.
    #[arg(long)]
    join_token_file: Option<PathBuf>,
    /// Where the machine's worker credential is kept (mode 0600) once
    /// joined; default: credential next to the join token file, or in
    /// /var/lib/levers9/agent.
    #[arg(long, env = "LEVERS9_AGENT_CREDENTIAL_FILE")]
    credential_file: Option<PathBuf>,
    /// Join if not joined yet, write a systemd unit that runs this agent
    /// (with the credential file, never a token) and exit.
    #[arg(long)]
    install_systemd: bool,
    /// Where --install-systemd writes the unit.
    #[arg(long, default_value = "/etc/systemd/system/levers9-agent.service")]
    systemd_unit: PathBuf,
    #[command(flatten)]
    worker: RunArgs,
}

impl AgentArgs {
    fn credential_path(&self) -> PathBuf {
        if let Some(path) = &self.credential_file {
            return path.clone();
        }
        let dir = self
            .join_token_file
            .as_deref()
            .and_then(Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new(DEFAULT_AGENT_DIR));
        dir.join("credential")
    }
}

/// Runs the agent.
pub async fn run(mut args: AgentArgs) -> Result<()> {
    let credential_path = args.credential_path();
    let credential = match Credential::read(&credential_path)? {
        Some(credential) => {
            tracing::info!(machine_id = %credential.machine_id, pool = %credential.pool, file = %credential_path.display(), "already joined: using the saved credential");
            credential
        }
        None => {
            let credential = join(&args).await?;
            credential.write(&credential_path)?;
            if let Some(file) = &args.join_token_file {
                // Redeemed: it can never work again, so keep no copy.
                let _ = std::fs::remove_file(file);
            }
            tracing::info!(machine_id = %credential.machine_id, pool = %credential.pool, file = %credential_path.display(), "joined; the worker credential is saved");
            credential
        }
    };
    if args.install_systemd {
        let exe = std::env::current_exe().context("cannot find this executable")?;
        let unit = systemd::unit(&systemd::UnitSettings {
            exe: &exe,
            credential_file: &credential_path,
            state_dir: &args.worker.state_dir,
            controlplane: &args.worker.controlplane,
            tls: args.worker.tls,
        });
        systemd::install(&args.systemd_unit, &unit)?;
        println!(
            "Wrote {}. Start the agent with: systemctl daemon-reload && systemctl enable --now {}",
            args.systemd_unit.display(),
            args.systemd_unit
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
        );
        return Ok(());
    }
    args.worker.pool = credential.pool.clone();
    args.worker.worker_id = Some(credential.machine_id.clone());
    args.worker.runtime = match credential.runtime.as_str() {
        "gvisor" => RuntimeArg::Gvisor,
        _ => RuntimeArg::Runc,
    };
    super::worker::run_worker_with(args.worker, credential.token).await
}

/// The join token from its file or LEVERS9_JOIN_TOKEN.
fn join_token(file: Option<&Path>) -> Result<String> {
    let token = match file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the join token file {}", path.display()))?,
        None => std::env::var("LEVERS9_JOIN_TOKEN").unwrap_or_default(),
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!(
            "no join token: run the join command `levers9 machine create --pool NAME` wrote, or \
             give the agent --join-token-file FILE (or LEVERS9_JOIN_TOKEN)"
        );
    }
    Ok(token)
}

/// The controlplane of `--controlplane` (host:port or a URL) as a target.
fn target(worker: &RunArgs, token: String) -> Result<Target> {
    let text = worker.controlplane.as_str();
    let (tls, address) = if let Some(rest) = text.strip_prefix("https://") {
        (true, rest)
    } else {
        (false, text.strip_prefix("http://").unwrap_or(text))
    };
    let (host, port) = crate::context::parse_address(address.trim_end_matches('/'))?;
    Ok(Target {
        host,
        port,
        tls: tls || worker.tls,
        ca_file: worker.ca_file.clone(),
        token,
    })
}

/// Redeems the join token with what this box has.
async fn join(args: &AgentArgs) -> Result<Credential> {
    let token = join_token(args.join_token_file.as_deref())?;
    let target = target(&args.worker, token)?;
    let mut detected = levers9_worker::detect_capacity();
    detected.gpus = levers9_worker::detect_gpus().await;
    let capacity = detected.to_wire();
    tracing::info!(controlplane = %target.address(), cpu_millicores = capacity.cpu_millicores, memory_mib = capacity.memory_mib, gpus = ?capacity.gpus, "joining");
    let answer = Client::new(&target)?
        .machines()
        .join_machine(JoinMachineRequest {
            hostname: super::worker::hostname(),
            capacity: Some(capacity),
        })
        .await
        .map_err(|status| anyhow::anyhow!("cannot join: {}", status.message()))?
        .into_inner();
    Ok(Credential {
        machine_id: answer.machine_id,
        pool: answer.pool,
        runtime: answer.runtime,
        token: answer.worker_token,
    })
}
