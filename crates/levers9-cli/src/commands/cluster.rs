//! `levers9 cluster`: attach a Kubernetes cluster you already run. `join`
//! writes the agent into it; `agent` is that agent, which dials out to the
//! controlplane, asks for the workers wanted for its pool and keeps that
//! many worker Jobs, with the cluster's own credentials. The controlplane
//! needs no key for the cluster and no way in.

mod agent;
mod join;
mod pool;

use anyhow::Result;
use clap::Subcommand;

/// `levers9 cluster …`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Attach the cluster of your kubeconfig as pool NAME: creates a worker
    /// token and applies a namespace, a service account with a Role limited
    /// to worker Jobs and their pods there, a Secret with the token and the
    /// agent's Deployment. With --print, writes them as YAML to stdout
    /// instead (it holds the token: keep it out of version control).
    Join(join::JoinArgs),
    /// The agent that `join` deploys: keeps the pool's worker Jobs at the
    /// number the controlplane wants, with in-cluster credentials. Its token
    /// comes from LEVERS9_TOKEN.
    Agent(agent::AgentArgs),
}

impl ClusterCommand {
    /// Whether this runs a long-lived process (which logs at info).
    pub fn is_process(&self) -> bool {
        matches!(self, ClusterCommand::Agent(_))
    }
}

/// Runs a cluster command.
pub async fn run(command: ClusterCommand, context: Option<&str>) -> Result<()> {
    match command {
        ClusterCommand::Join(args) => join::run(args, context).await,
        ClusterCommand::Agent(args) => agent::run(args).await,
    }
}
