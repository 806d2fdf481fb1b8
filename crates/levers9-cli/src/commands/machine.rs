//! `levers9 machine`: bring your own machines to a pool.

pub(crate) mod join_file;

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use levers9_api::v1::{
    CreateMachineRequest, DeleteMachineRequest, DrainMachineRequest, ListMachinesRequest,
    MachineState,
};
use levers9_api::Words;

use crate::output::{self, or_dash};
use join_file::JoinCommand;

/// Machine commands.
#[derive(Debug, Subcommand)]
pub enum MachineCommand {
    /// Make a machine of a pool (admin token): writes its join command, with
    /// a single-use join token, to ~/.levers9/machines/ID.sh (readable by
    /// you only) and shows it with the secrets hidden. Copy the file to the
    /// box and run it there as root.
    Create(CreateArgs),
    /// List machines: pool, state, host, whether their worker is connected.
    List,
    /// Drain a machine's worker: nothing new lands there, its function
    /// containers finish what they hold and stop.
    Drain {
        /// The machine's id (levers9 machine list).
        id: String,
    },
    /// Delete a machine: its credential is revoked at once and its worker
    /// drained. Stop the agent on the box (systemctl stop levers9-agent).
    Delete {
        /// The machine's id.
        id: String,
    },
}

/// `levers9 machine create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The pool it joins (levers9 pool list).
    #[arg(long)]
    pub(crate) pool: String,
    /// How long the join token works, e.g. 30m, 1h, 2d (at most 7d).
    #[arg(long, default_value = "1h", value_parser = parse_ttl)]
    pub(crate) ttl: u32,
    /// The controlplane's gRPC address as the box reaches it (default: the
    /// one this CLI uses).
    #[arg(long)]
    pub(crate) controlplane: Option<String>,
    /// Where the box downloads the agent (default: http://HOST:1994/agent
    /// on the controlplane's host).
    #[arg(long)]
    pub(crate) download_url: Option<String>,
    /// Have the controlplane build the agent from its source (needs
    /// LEVERS9_AGENT_DEV_BUILDS=true on the controlplane).
    #[arg(long)]
    pub(crate) dev: bool,
}

/// `30m`, `1h`, `2d`, or plain seconds.
fn parse_ttl(text: &str) -> Result<u32, String> {
    let bad = || format!("{text:?} is not a duration: use e.g. 90s, 30m, 1h or 2d");
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let n: u32 = number.parse().map_err(|_| bad())?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    match n.checked_mul(scale) {
        Some(0) | None => Err(bad()),
        Some(seconds) => Ok(seconds),
    }
}

/// Runs a machine command.
pub async fn run(command: MachineCommand, context: Option<&str>) -> Result<()> {
    match command {
        MachineCommand::Create(args) => {
            let (path, _) = create(args, context).await?;
            eprintln!(
                "Copy {} to the box and run it there as root: sh {}",
                path.display(),
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            Ok(())
        }
        MachineCommand::List => list(context).await,
        MachineCommand::Drain { id } => {
            let client = super::connect(context).await?;
            let answer = client
                .machines()
                .drain_machine(DrainMachineRequest {
                    machine_id: id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "Machine {id} is draining; {} container(s) still running.",
                answer.containers
            );
            Ok(())
        }
        MachineCommand::Delete { id } => {
            let client = super::connect(context).await?;
            client
                .machines()
                .delete_machine(DeleteMachineRequest {
                    machine_id: id.clone(),
                })
                .await?;
            println!("Deleted machine {id}; its credential is revoked.");
            Ok(())
        }
    }
}

/// Makes the machine, writes its join file and prints the command with the
/// secrets hidden; the file's path and the command.
pub(crate) async fn create(
    args: CreateArgs,
    context: Option<&str>,
) -> Result<(PathBuf, JoinCommand)> {
    let target = crate::first_run::resolve(context).await?;
    let client = crate::client::Client::new(&target)?;
    let answer = client
        .machines()
        .create_machine(CreateMachineRequest {
            pool: args.pool,
            ttl_seconds: args.ttl,
        })
        .await?
        .into_inner();
    let machine = answer.machine.context("the controlplane sent no machine")?;
    let tls = levers9_api::dial::uses_tls(target.port, target.tls);
    // A controlplane that speaks TLS does so on its HTTP port too.
    let scheme = if tls { "https" } else { "http" };
    let download_url = args
        .download_url
        .unwrap_or_else(|| format!("{scheme}://{}/agent", host_port(&target.host, 1994)));
    let command = JoinCommand {
        machine_id: machine.machine_id.clone(),
        pool: machine.pool.clone(),
        expires_at: machine.join_expires_at.clone(),
        controlplane: args.controlplane.unwrap_or_else(|| target.address()),
        tls,
        download_url: download_url.trim_end_matches('/').to_owned(),
        dev: args.dev,
    };
    let path = join_file::write(
        &join_file::machines_dir()?,
        &machine.machine_id,
        &command.script(&answer.join_token),
    )?;
    println!(
        "Machine {} of pool {}: its join token works once, until {}.",
        machine.machine_id, machine.pool, machine.join_expires_at
    );
    println!(
        "Wrote its join command to {} (readable by you only). The command, with its secrets hidden:\n",
        path.display()
    );
    println!("{}", command.shown());
    Ok((path, command))
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

async fn list(context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    let machines = client
        .machines()
        .list_machines(ListMachinesRequest {})
        .await?
        .into_inner()
        .machines;
    let rows: Vec<Vec<String>> = machines
        .into_iter()
        .map(|m| {
            let capacity = m.capacity.unwrap_or_default();
            let gpus: Vec<String> = capacity
                .gpus
                .iter()
                .map(|g| format!("{} {}", g.count, g.gpu_type))
                .collect();
            vec![
                m.machine_id,
                m.pool,
                MachineState::word_of(m.state),
                or_dash(&m.hostname),
                if capacity.cpu_millicores > 0 {
                    format!("{}m/{} MiB", capacity.cpu_millicores, capacity.memory_mib)
                } else {
                    "-".into()
                },
                or_dash(&gpus.join(",")),
                if m.connected { "yes" } else { "no" }.into(),
                m.created_at,
                or_dash(&m.joined_at),
            ]
        })
        .collect();
    output::table(
        &[
            "ID",
            "POOL",
            "STATE",
            "HOST",
            "CPU/MEMORY",
            "GPUS",
            "CONNECTED",
            "CREATED",
            "JOINED",
        ],
        &rows,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_ttl;

    #[test]
    fn join_token_lifetimes_read_as_durations() {
        assert_eq!(parse_ttl("1h"), Ok(3600));
        assert_eq!(parse_ttl("30m"), Ok(1800));
        assert_eq!(parse_ttl("2d"), Ok(172_800));
        assert_eq!(parse_ttl("5"), Ok(5));
        for bad in ["", "0", "h", "1w", "-1h"] {
            assert!(parse_ttl(bad).is_err(), "{bad:?}");
        }
    }
}
