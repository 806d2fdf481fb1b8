//! The command line: processes and user commands.

mod agent;
mod cluster;
mod config;
mod container;
mod controlplane;
mod deploy;
mod image;
mod logs;
mod machine;
mod objects;
mod pool;
mod run;
mod schedule;
mod secret;
mod shell;
mod stub;
mod task;
mod token;
mod up;
mod volume;
pub mod worker;
mod workspace;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// levers9 runs Python functions on a fleet of machines, each call in its
/// own sandboxed container. This one binary is the controlplane process and
/// every user command.
///
/// On a machine with no CLI config yet, any command asks for the
/// controlplane address and a token; leave the token empty with
/// LEVERS9_BOOTSTRAP_SECRET set to get the first admin token of a new
/// install.
#[derive(Debug, Parser)]
#[command(name = "levers9", version, propagate_version = true)]
pub struct Cli {
    /// The CLI context to use instead of the current one.
    #[arg(long, global = true, env = "LEVERS9_CONTEXT")]
    context: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controlplane: gRPC on 1993, HTTP (health, metrics, REST) on 1994.
    Controlplane(controlplane::ControlplaneArgs),
    /// Run the whole stack on this machine (controlplane on the embedded
    /// state and a worker process it keeps in pool default; root) and
    /// select a CLI context for it.
    Up(up::UpArgs),
    /// Manage CLI contexts (~/.levers9/config.toml): which controlplane, which token.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Manage the tokens of your workspace.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Manage workspaces.
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCommand),
    /// Manage the secrets of your workspace (values sealed at rest, never shown).
    #[command(subcommand)]
    Secret(secret::SecretCommand),
    /// List or delete the named dicts of your workspace (levers9.Dict).
    #[command(subcommand)]
    Dict(objects::DictCommand),
    /// List or delete the named queues of your workspace (levers9.Queue).
    #[command(subcommand)]
    Queue(objects::QueueCommand),
    /// Run a worker (levers9 worker --pool NAME; the worker image runs the
    /// same process as levers9-worker); list, cordon, uncordon or drain workers.
    Worker(worker::WorkerArgs),
    /// Run, list, stop containers and read their output.
    #[command(subcommand)]
    Container(container::ContainerCommand),
    /// Open an interactive shell in a new container of an image or of a
    /// deployed function: levers9 shell IMAGE | APP/FUNCTION [-- CMD].
    Shell(shell::ShellArgs),
    /// Build, list, show and remove images: levers9 image build file.py::image.
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// Call a function once from the shell: levers9 run path/file.py::fn [args].
    Run(run::RunArgs),
    /// Deploy a file's functions as an app, callable by name from anywhere
    /// in the workspace: levers9 deploy path/file.py [--name APP].
    Deploy(deploy::DeployArgs),
    /// List deployed apps and their functions.
    #[command(subcommand)]
    Deployment(deploy::DeploymentCommand),
    /// List the schedules of deployed functions (@function(schedule=…)):
    /// levers9 schedule list.
    #[command(subcommand)]
    Schedule(schedule::ScheduleCommand),
    /// List, show and cancel the calls of your functions.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Show what tasks printed, kept after their caller has gone: levers9
    /// logs TASK_ID | APP/FUNCTION | APP [-f] [--since 10m] [--tail N].
    Logs(logs::LogsArgs),
    /// List and show your functions as stored (stubs): app, image, resources.
    #[command(subcommand)]
    Stub(stub::StubCommand),
    /// Manage your workspace's volumes and copy files in and out of them.
    #[command(subcommand)]
    Volume(volume::VolumeCommand),
    /// Make, list and delete pools (next to the config's worker.pools);
    /// join this machine to one (pool join NAME [--dev]).
    #[command(subcommand)]
    Pool(pool::PoolCommand),
    /// Bring your own machines: machine create --pool NAME writes a join
    /// command to ~/.levers9/machines/ID.sh; list, drain and delete them.
    #[command(subcommand)]
    Machine(machine::MachineCommand),
    /// Run on a machine brought to a pool (the join command starts it):
    /// redeem the join token once, then run as the machine's worker. The
    /// worker flags apply as to `levers9 worker`, except --pool, --worker-id
    /// and --runtime, which come from the machine.
    Agent(agent::AgentArgs),
    /// Attach a Kubernetes cluster you already run as a pool: levers9
    /// cluster join --pool NAME; its agent runs as levers9 cluster agent.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
}

impl Command {
    /// Whether this runs a long-lived process (which logs at info).
    pub fn is_process(&self) -> bool {
        match self {
            Command::Controlplane(_) | Command::Up(_) | Command::Agent(_) => true,
            Command::Worker(args) => args.is_process(),
            Command::Cluster(command) => command.is_process(),
            _ => false,
        }
    }
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> Result<()> {
    let context = cli.context.as_deref();
    match cli.command {
        Command::Controlplane(args) => controlplane::run(args).await,
        Command::Up(args) => up::run(args).await,
        Command::Config(command) => config::run(command, context).await,
        Command::Token(command) => token::run(command, context).await,
        Command::Workspace(command) => workspace::run(command, context).await,
        Command::Secret(command) => secret::run(command, context).await,
        Command::Dict(command) => objects::run_dict(command, context).await,
        Command::Queue(command) => objects::run_queue(command, context).await,
        Command::Worker(args) => worker::run(args, context).await,
        Command::Container(command) => container::run(command, context).await,
        Command::Shell(args) => shell::run(args, context).await,
        Command::Image(command) => image::run(command, context).await,
        Command::Run(args) => run::run(args, context).await,
        Command::Deploy(args) => deploy::deploy(args, context).await,
        Command::Deployment(command) => deploy::run(command, context).await,
        Command::Schedule(command) => schedule::run(command, context).await,
        Command::Task(command) => task::run(command, context).await,
        Command::Logs(args) => logs::run(args, context).await,
        Command::Stub(command) => stub::run(command, context).await,
        Command::Volume(command) => volume::run(command, context).await,
        Command::Pool(command) => pool::run(command, context).await,
        Command::Machine(command) => machine::run(command, context).await,
        Command::Agent(args) => agent::run(args).await,
        Command::Cluster(command) => cluster::run(command, context).await,
    }
}

/// A client for the context the user picked (first run if there is none).
async fn connect(context: Option<&str>) -> Result<crate::client::Client> {
    let target = crate::first_run::resolve(context).await?;
    crate::client::Client::new(&target)
}

/// Waits for SIGINT or SIGTERM.
async fn shutdown_signal() -> Result<()> {
    use anyhow::Context as _;
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("cannot watch SIGINT")?,
        _ = terminate.recv() => {}
    }
    Ok(())
}
