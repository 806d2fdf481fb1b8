//! `levers9 shell`: an interactive shell in a fresh container of an image
//! or of a deployed function, on a terminal, the container stopped when
//! the shell ends.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use levers9_api::v1::{
    ContainerState, GetContainerRequest, GetDeploymentRequest, GetStubRequest, RunContainerRequest,
    StopContainerRequest,
};
use levers9_api::Words;

use super::container::exec::{self, Exec, NOT_A_TERMINAL};
use super::container::tty::TerminatingSignals;
use super::container::{parse_cpu, parse_memory};
use crate::client::Client;
use crate::output::ExitWith;

/// How long a container may take to run (an image pull included).
const START_WAIT: Duration = Duration::from_secs(300);
/// How often its state is read meanwhile.
const START_POLL: Duration = Duration::from_millis(500);
/// The command when none is given: bash where the image has it.
const DEFAULT_SHELL: &str = "command -v bash >/dev/null 2>&1 && exec bash || exec sh";
/// The container's own command, given the seconds as `$1`: it sleeps with
/// whatever the image has (a minimal image may have only busybox, or
/// python3).
const KEEP_ALIVE: &str = "if command -v sleep >/dev/null 2>&1; then exec sleep \"$1\"; \
     elif command -v busybox >/dev/null 2>&1; then exec busybox sleep \"$1\"; \
     else exec python3 -c 'import sys, time; time.sleep(int(sys.argv[1]))' \"$1\"; fi";

/// Open an interactive shell in a new container: `levers9 shell IMAGE` or
/// `levers9 shell APP/FUNCTION` (a deployed function's image, environment,
/// secrets, pool and resources). Needs a terminal; exits with the shell's
/// exit code and stops the container.
#[derive(Debug, Args)]
#[command(after_help = "\
TARGET is an image when it has a tag or digest (':' or '@'), or no '/' or more than one;
APP/FUNCTION otherwise, e.g. myapp/handler. The container's own command sleeps TIMEOUT
seconds (with sleep, busybox sleep or python3: the image needs sh and one of them), and the
shell is exec'd in it on a terminal; Ctrl-C, Ctrl-Z and job control work there. To run a
command with piped input instead, use levers9 container exec -i ID -- CMD.

Examples:
  levers9 shell registry.example.com/python@sha256:...
  levers9 shell myapp/handler -- python3
  levers9 shell --pool gpu --cpu 2 --memory 4Gi registry.example.com/train:1")]
pub struct ShellArgs {
    /// An image reference, or APP/FUNCTION of a deployed function.
    target: String,
    /// Pool to run in (default: the function's, or any pool that does not
    /// require its name).
    #[arg(long)]
    pool: Option<String>,
    /// CPU: cores (1, 0.5) or millicores (500m); default: the function's,
    /// or 1.
    #[arg(long)]
    cpu: Option<String>,
    /// Memory: 512Mi, 2Gi or MiB as a number; default: the function's, or
    /// 512Mi.
    #[arg(long)]
    memory: Option<String>,
    /// Seconds the container lives at most, should we fail to stop it.
    #[arg(long, default_value_t = 3600)]
    timeout: u64,
    /// The command, after --; default: bash if the image has it, else sh.
    #[arg(last = true)]
    command: Vec<String>,
}

/// What to open a shell in.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Image(String),
    Function { app: String, function: String },
}

impl Target {
    fn parse(text: &str) -> Target {
        match text.split_once('/') {
            Some((app, function))
                if !app.is_empty()
                    && !function.is_empty()
                    && !function.contains('/')
                    && !text.contains([':', '@']) =>
            {
                Target::Function {
                    app: app.to_owned(),
                    function: function.to_owned(),
                }
            }
            _ => Target::Image(text.to_owned()),
        }
    }
}

/// Runs `levers9 shell`.
pub async fn run(args: ShellArgs, context: Option<&str>) -> Result<()> {
    if !std::io::stdin().is_terminal() {
        bail!("levers9 shell {NOT_A_TERMINAL}");
    }
    let client = super::connect(context).await?;
    let request = container_request(&client, &args).await?;
    let mut signals = TerminatingSignals::watch()?;
    let container = client
        .containers()
        .run_container(request)
        .await?
        .into_inner()
        .container
        .context("the controlplane sent no container")?;
    let id = container.container_id;
    eprintln!("levers9 shell: container {id} (exit the shell to stop it)");
    let command = if args.command.is_empty() {
        vec!["sh".into(), "-c".into(), DEFAULT_SHELL.into()]
    } else {
        args.command
    };
    let session = async {
        wait_running(&client, &id).await?;
        let exec = Exec {
            container_id: id.clone(),
            command,
            env: Vec::new(),
            workdir: None,
            interactive: true,
            tty: true,
        };
        exec::exec(&client, exec).await
    };
    // A signal while the container starts ends us too, the container
    // stopped; during the exec, its own watch restores the terminal.
    let ended = tokio::select! {
        ended = session => ended,
        number = signals.next() => Err(ExitWith(128 + number as u8).into()),
    };
    let stop = StopContainerRequest {
        container_id: id.clone(),
    };
    if let Err(error) = client.containers().stop_container(stop).await {
        eprintln!(
            "levers9 shell: cannot stop container {id} ({}): stop it with levers9 container stop {id}",
            error.message()
        );
    }
    ended
}

/// The container to run: the image's, or the function's.
async fn container_request(client: &Client, args: &ShellArgs) -> Result<RunContainerRequest> {
    let mut request = match Target::parse(&args.target) {
        Target::Image(image) => RunContainerRequest {
            image,
            cpu_millicores: parse_cpu("1")?,
            memory_mib: parse_memory("512Mi")?,
            ..RunContainerRequest::default()
        },
        Target::Function { app, function } => function_request(client, &app, &function).await?,
    };
    request.args = ["sh", "-c", KEEP_ALIVE, "levers9-shell"]
        .into_iter()
        .map(String::from)
        .chain([args.timeout.to_string()])
        .collect();
    if let Some(pool) = &args.pool {
        request.pool = pool.clone();
    }
    if let Some(cpu) = &args.cpu {
        request.cpu_millicores = parse_cpu(cpu)?;
    }
    if let Some(memory) = &args.memory {
        request.memory_mib = parse_memory(memory)?;
    }
    Ok(request)
}

/// A container of the deployed function's current version: its image,
/// environment, secrets, pool, resources and GPUs (not its volumes).
async fn function_request(
    client: &Client,
    app: &str,
    function: &str,
) -> Result<RunContainerRequest> {
    let deployment = client
        .functions()
        .get_deployment(GetDeploymentRequest {
            app_name: app.to_owned(),
            function_name: function.to_owned(),
        })
        .await
        .with_context(|| format!("looking up the deployed function {app}/{function}"))?
        .into_inner()
        .deployment
        .context("the controlplane sent no deployment")?;
    let stub = client
        .functions()
        .get_stub(GetStubRequest {
            stub_id: deployment.stub_id,
        })
        .await?
        .into_inner()
        .stub
        .context("the controlplane sent no stub")?;
    let config = stub.config.unwrap_or_default();
    if config.image.is_empty() {
        bail!(
            "{app}/{function} runs on the controlplane's base Python image, which levers9 shell \
             cannot name yet: give the image reference instead (levers9 stub show {})",
            stub.stub_id
        );
    }
    if !config.volumes.is_empty() {
        eprintln!("levers9 shell: {app}/{function}'s volumes are not mounted in the shell");
    }
    Ok(RunContainerRequest {
        image: config.image,
        env: config.env,
        pool: config.pool,
        cpu_millicores: config.cpu_millicores,
        memory_mib: config.memory_mib,
        secrets: config.secrets,
        gpu_types: config.gpu_types,
        gpu_count: config.gpu_count,
        ..RunContainerRequest::default()
    })
}

/// Waits until the container runs; fails when it ends first or takes too
/// long.
async fn wait_running(client: &Client, id: &str) -> Result<()> {
    let deadline = Instant::now() + START_WAIT;
    let mut said = false;
    loop {
        let container = client
            .containers()
            .get_container(GetContainerRequest {
                container_id: id.to_owned(),
            })
            .await?
            .into_inner()
            .container
            .context("the controlplane sent no container")?;
        match container.state() {
            ContainerState::Running => return Ok(()),
            state @ (ContainerState::Exited | ContainerState::Failed | ContainerState::Lost) => {
                bail!("container {id} is {}: {}", state.word(), container.message)
            }
            // Pending or scheduled (placed, the image on its way).
            _ if Instant::now() < deadline => {
                if !said {
                    eprintln!("levers9 shell: waiting for it to start");
                    said = true;
                }
                tokio::time::sleep(START_POLL).await;
            }
            _ => bail!(
                "container {id} did not start within {} s: see levers9 container get {id}",
                START_WAIT.as_secs()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn a_target_is_a_function_only_as_app_slash_function_without_tag() {
        let function = |app: &str, function: &str| Target::Function {
            app: app.into(),
            function: function.into(),
        };
        assert_eq!(Target::parse("myapp/handler"), function("myapp", "handler"));
        for image in [
            "python",
            "python:3.12",
            "team/app:1",
            "registry.example.com/team/app",
            "127.0.0.1:5000/python@sha256:ab",
            "library/python@sha256:ab",
            "/handler",
            "app/",
        ] {
            assert_eq!(Target::parse(image), Target::Image(image.into()), "{image}");
        }
    }
}
