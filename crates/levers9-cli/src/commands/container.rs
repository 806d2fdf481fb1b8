//! `levers9 container`.

pub(super) mod exec;
pub(super) mod tty;

use std::io::Write;

use anyhow::{bail, Context as _, Result};
use clap::Subcommand;
use futures::StreamExt;
use levers9_api::v1::{
    container_log_event, Container, ContainerState, GetContainerRequest, ListContainersRequest,
    RunContainerRequest, StopContainerRequest, StreamContainerLogsRequest,
};
use levers9_api::Words;

use crate::client::Client;
use crate::output::{self, ExitWith};

/// Container commands.
#[derive(Debug, Subcommand)]
pub enum ContainerCommand {
    /// Run a container, print its output, and exit with its exit code.
    Run {
        /// Image reference, e.g. registry.example.com/team/app@sha256:….
        image: String,
        /// Pool to run in (default: any pool that does not require its name,
        /// highest priority first).
        #[arg(long, default_value = "")]
        pool: String,
        /// CPU: cores (1, 0.5) or millicores (500m).
        #[arg(long, default_value = "1")]
        cpu: String,
        /// Memory: 512Mi, 2Gi or MiB as a number.
        #[arg(long, default_value = "512Mi")]
        memory: String,
        /// Environment variable NAME=value (repeatable).
        #[arg(long = "env", short = 'e')]
        env: Vec<String>,
        /// A workspace secret to pass as the environment variable of its
        /// name (repeatable); opened only as the container starts.
        #[arg(long = "secret")]
        secrets: Vec<String>,
        /// GPU types it accepts, in order of preference: H100,A100.
        #[arg(long = "gpu", value_delimiter = ',')]
        gpu_types: Vec<String>,
        /// How many GPUs (all of one type, on one worker).
        #[arg(long, default_value_t = 1)]
        gpu_count: u32,
        /// Return as soon as it is scheduled; print its id.
        #[arg(long, short = 'd')]
        detach: bool,
        /// The command, after --; the image's own command if omitted.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// List your containers, recent ended ones included.
    List,
    /// Stop a container.
    Stop {
        /// Container id.
        id: String,
    },
    /// Run a command in a running container, e.g.
    /// `levers9 container exec ID -- ls -l /` or, on a terminal,
    /// `levers9 container exec -it ID -- bash`; exits with its exit code.
    Exec {
        /// Pass our stdin to the command (otherwise it reads EOF).
        #[arg(long, short = 'i')]
        interactive: bool,
        /// Run it on a terminal in the container (stdout and stderr come
        /// as one); with -i our stdin must be a terminal, which is put in
        /// raw mode, and our window size follows.
        #[arg(long, short = 't')]
        tty: bool,
        /// Environment variable NAME=VALUE added for the command (repeatable).
        #[arg(long = "env", short = 'e')]
        env: Vec<String>,
        /// Working directory (default: the container's).
        #[arg(long, short = 'w')]
        workdir: Option<String>,
        /// Container id.
        id: String,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Print a container's output.
    Logs {
        /// Follow the output until the container ends.
        #[arg(long, short = 'f')]
        follow: bool,
        /// Container id.
        id: String,
    },
}

/// `500m` → 500, `0.5` → 500, `2` → 2000.
pub(super) fn parse_cpu(text: &str) -> Result<u64> {
    let invalid = || format!("--cpu {text:?} must be cores (1, 0.5) or millicores (500m)");
    let millicores = match text.strip_suffix('m') {
        Some(m) => m.parse::<u64>().with_context(invalid)?,
        None => {
            let cores: f64 = text.parse().with_context(invalid)?;
            (cores * 1000.0).round() as u64
        }
    };
    if millicores == 0 {
        bail!("--cpu must be more than 0");
    }
    Ok(millicores)
}

/// `512Mi` → 512, `2Gi` → 2048, `300` → 300.
pub(super) fn parse_memory(text: &str) -> Result<u64> {
    let invalid = || format!("--memory {text:?} must be like 512Mi, 2Gi or a number of MiB");
    let mib = if let Some(gi) = text.strip_suffix("Gi") {
        gi.parse::<u64>().with_context(invalid)? * 1024
    } else {
        text.strip_suffix("Mi")
            .unwrap_or(text)
            .parse::<u64>()
            .with_context(invalid)?
    };
    if mib == 0 {
        bail!("--memory must be more than 0");
    }
    Ok(mib)
}

/// Runs a container command.
pub async fn run(command: ContainerCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    match command {
        ContainerCommand::Run {
            image,
            pool,
            cpu,
            memory,
            env,
            secrets,
            gpu_types,
            gpu_count,
            detach,
            command,
        } => {
            let env = env
                .iter()
                .map(|kv| {
                    kv.split_once('=')
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .with_context(|| format!("--env {kv:?} must be NAME=value"))
                })
                .collect::<Result<_>>()?;
            let container = client
                .containers()
                .run_container(RunContainerRequest {
                    image,
                    args: command,
                    env,
                    pool,
                    cpu_millicores: parse_cpu(&cpu)?,
                    memory_mib: parse_memory(&memory)?,
                    secrets,
                    gpu_count: if gpu_types.is_empty() { 0 } else { gpu_count },
                    gpu_types,
                })
                .await?
                .into_inner()
                .container
                .context("the controlplane sent no container")?;
            if detach {
                println!("{}", container.container_id);
                return Ok(());
            }
            eprintln!("container {}", container.container_id);
            let ended = print_logs(&client, &container.container_id, true).await?;
            finish(ended)
        }
        ContainerCommand::List => {
            let containers = client
                .containers()
                .list_containers(ListContainersRequest {})
                .await?
                .into_inner()
                .containers;
            let rows: Vec<Vec<String>> = containers
                .into_iter()
                .map(|c| {
                    let exit = if c.state() == ContainerState::Exited {
                        c.exit_code.to_string()
                    } else {
                        "-".into()
                    };
                    vec![
                        c.container_id,
                        c.image,
                        output::or_dash(&c.pool),
                        output::or_dash(&c.worker_id),
                        ContainerState::word_of(c.state),
                        exit,
                        c.created_at,
                    ]
                })
                .collect();
            output::table(
                &["ID", "IMAGE", "POOL", "WORKER", "STATE", "EXIT", "CREATED"],
                &rows,
            );
            Ok(())
        }
        ContainerCommand::Stop { id } => {
            client
                .containers()
                .stop_container(StopContainerRequest {
                    container_id: id.clone(),
                })
                .await?;
            eprintln!("Stopping container {id}");
            Ok(())
        }
        ContainerCommand::Exec {
            interactive,
            tty,
            env,
            workdir,
            id,
            command,
        } => {
            let env = env
                .iter()
                .map(|pair| match pair.split_once('=') {
                    Some((name, value)) if !name.is_empty() => {
                        Ok((name.to_owned(), value.to_owned()))
                    }
                    _ => bail!("--env {pair:?} must be NAME=VALUE"),
                })
                .collect::<Result<Vec<_>>>()?;
            let exec = exec::Exec {
                container_id: id,
                command,
                env,
                workdir,
                interactive,
                tty,
            };
            exec::exec(&client, exec).await
        }
        ContainerCommand::Logs { follow, id } => {
            client
                .containers()
                .get_container(GetContainerRequest {
                    container_id: id.clone(),
                })
                .await?;
            print_logs(&client, &id, follow).await?;
            Ok(())
        }
    }
}

/// Copies the container's output to ours; returns the container if it ended.
async fn print_logs(client: &Client, id: &str, follow: bool) -> Result<Option<Container>> {
    let mut stream = client
        .containers()
        .stream_container_logs(StreamContainerLogsRequest {
            container_id: id.to_owned(),
            follow,
        })
        .await?
        .into_inner();
    let mut ended = None;
    while let Some(event) = stream.next().await {
        match event?.kind {
            Some(container_log_event::Kind::Log(chunk)) => {
                if chunk.stream == "stderr" {
                    std::io::stderr().write_all(&chunk.data)?;
                } else {
                    std::io::stdout().write_all(&chunk.data)?;
                }
            }
            Some(container_log_event::Kind::Exited(container)) => ended = Some(container),
            None => {}
        }
    }
    std::io::stdout().flush()?;
    Ok(ended)
}

/// Exits like the container did: its exit code, or 125 when it never ran
/// (docker's convention), with the reason on stderr.
fn finish(ended: Option<Container>) -> Result<()> {
    let Some(container) = ended else {
        bail!("the log stream ended before the container did: see levers9 container list");
    };
    match container.state() {
        ContainerState::Exited if container.exit_code == 0 => Ok(()),
        ContainerState::Exited => {
            if container.oom_killed {
                eprintln!(
                    "container {}: {}",
                    container.container_id, container.message
                );
            }
            Err(ExitWith(u8::try_from(container.exit_code).unwrap_or(1)).into())
        }
        _ => {
            eprintln!(
                "container {} {}: {}",
                container.container_id,
                ContainerState::word_of(container.state),
                container.message
            );
            Err(ExitWith(125).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_cpu, parse_memory};

    #[test]
    fn resources_parse_like_kubernetes_quantities() {
        assert_eq!(parse_cpu("500m").unwrap(), 500);
        assert_eq!(parse_cpu("0.5").unwrap(), 500);
        assert_eq!(parse_cpu("2").unwrap(), 2000);
        assert!(parse_cpu("lots").is_err());
        assert_eq!(parse_memory("512Mi").unwrap(), 512);
        assert_eq!(parse_memory("2Gi").unwrap(), 2048);
        assert_eq!(parse_memory("300").unwrap(), 300);
        assert!(parse_memory("1TB").is_err());
    }
}
