//! `levers9 pool`: pools made at run time next to the config's
//! `worker.pools`, and joining this machine to one.

use anyhow::{bail, Context as _, Result};
use clap::Subcommand;
use levers9_api::v1::{CreatePoolRequest, DeletePoolRequest, ListPoolsRequest};

use crate::output::{self, or_dash};

/// Pool commands.
#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// Make a pool (admin token). Pools of the config (worker.pools) stay
    /// authoritative: their names cannot be taken.
    Create {
        /// Its name: lower-case letters, digits and '-'.
        name: String,
        /// The container runtime of its machines: runc or gvisor.
        #[arg(long, default_value = "runc")]
        runtime: String,
        /// The GPU type of its machines, e.g. L40S.
        #[arg(long, default_value = "")]
        gpu_type: String,
    },
    /// List pools: from the config and made at run time, with their machines.
    List,
    /// Delete a pool made with `levers9 pool create` that has no machines.
    Delete {
        /// Its name.
        name: String,
    },
    /// Join this machine to a pool: `levers9 machine create` and run its
    /// join command here, in the foreground (root).
    Join {
        /// The pool.
        pool: String,
        /// Have the controlplane build the agent from its source (needs
        /// LEVERS9_AGENT_DEV_BUILDS=true on the controlplane).
        #[arg(long)]
        dev: bool,
        /// The controlplane's gRPC address as this machine reaches it.
        #[arg(long)]
        controlplane: Option<String>,
        /// Where to download the agent (default: http://HOST:1994/agent).
        #[arg(long)]
        download_url: Option<String>,
    },
}

/// Runs a pool command.
pub async fn run(command: PoolCommand, context: Option<&str>) -> Result<()> {
    match command {
        PoolCommand::Create {
            name,
            runtime,
            gpu_type,
        } => {
            let client = super::connect(context).await?;
            let pool = client
                .machines()
                .create_pool(CreatePoolRequest {
                    name,
                    runtime,
                    gpu_type,
                })
                .await?
                .into_inner()
                .pool
                .context("the controlplane sent no pool")?;
            println!(
                "Created pool {} ({}). Add a machine with: levers9 machine create --pool {}",
                pool.name, pool.runtime, pool.name
            );
            Ok(())
        }
        PoolCommand::List => {
            let client = super::connect(context).await?;
            let pools = client
                .machines()
                .list_pools(ListPoolsRequest {})
                .await?
                .into_inner()
                .pools;
            let rows: Vec<Vec<String>> = pools
                .into_iter()
                .map(|p| {
                    vec![
                        p.name,
                        p.source,
                        p.runtime,
                        or_dash(&p.gpu_type),
                        p.machines.to_string(),
                        or_dash(&p.created_at),
                    ]
                })
                .collect();
            output::table(
                &[
                    "NAME", "SOURCE", "RUNTIME", "GPU TYPE", "MACHINES", "CREATED",
                ],
                &rows,
            );
            Ok(())
        }
        PoolCommand::Delete { name } => {
            let client = super::connect(context).await?;
            client
                .machines()
                .delete_pool(DeletePoolRequest { name: name.clone() })
                .await?;
            println!("Deleted pool {name}.");
            Ok(())
        }
        PoolCommand::Join {
            pool,
            dev,
            controlplane,
            download_url,
        } => {
            let args = super::machine::CreateArgs {
                pool,
                ttl: 600,
                controlplane,
                download_url,
                dev,
            };
            let (path, _) = super::machine::create(args, context).await?;
            eprintln!("Running {} here.", path.display());
            let status = tokio::process::Command::new("sh")
                .arg(&path)
                .status()
                .await
                .context("cannot run sh")?;
            if !status.success() {
                bail!("the join command {} failed ({status})", path.display());
            }
            Ok(())
        }
    }
}
