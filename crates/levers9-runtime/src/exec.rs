//! A further command in a running container: `runc exec` / `runsc exec` in
//! the foreground, as our child, its stdio our pipes, its exit status the
//! command's (a signal death as 128+N), as `run` is for the container.
//! With a terminal ([`ExecSpec::tty`]) its stdio is a terminal of ours
//! instead (see `terminal.rs`).

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::error::RuntimeError;
use crate::oci_cli::{Cli, ExecTty, Flavor};
use crate::terminal::{self, Terminal, WindowSize};
use crate::ContainerId;

/// How long [`ExecProcess::kill`] gives the command between SIGTERM and the
/// SIGKILL of the runtime's exec process.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// What to run in a running container.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecSpec {
    /// Command and its arguments; `args[0]` is looked up in the container's
    /// `PATH`.
    pub args: Vec<String>,
    /// Added to the container's environment.
    pub env: Vec<(String, String)>,
    /// Working directory; `None` keeps the container's.
    pub cwd: Option<String>,
    /// Run it on a terminal of this size instead of pipes.
    pub tty: Option<WindowSize>,
}

/// A command started in a container. Its pipes (or terminal) are taken by
/// the caller; dropping it kills the runtime's exec process.
#[derive(Debug)]
pub struct ExecProcess {
    /// The command's terminal, with [`ExecSpec::tty`]; the pipes are then
    /// `None`.
    pub terminal: Option<Terminal>,
    /// The command's stdin (close it by dropping it).
    pub stdin: Option<ChildStdin>,
    /// The command's stdout.
    pub stdout: Option<ChildStdout>,
    /// The command's stderr (and the runtime's own messages).
    pub stderr: Option<ChildStderr>,
    child: Child,
    _process_file: Option<ProcessFile>,
}

impl ExecProcess {
    /// Waits for the command to end and returns its exit code: 128+N for a
    /// death by signal N, as a shell reports it.
    pub async fn wait(&mut self) -> Result<i32, RuntimeError> {
        let status = self
            .child
            .wait()
            .await
            .map_err(|e| RuntimeError::io("waiting for an exec", e))?;
        Ok(status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
    }

    /// Ends the exec: SIGTERM to the runtime's exec process, which runc
    /// forwards to the command, then after a grace period SIGKILL to the
    /// exec process. runsc does not forward it: there the command itself
    /// runs on until its container ends.
    pub async fn kill(&mut self) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            if tokio::time::timeout(KILL_GRACE, self.child.wait())
                .await
                .is_ok()
            {
                return;
            }
        }
        let _ = self.child.kill().await;
    }
}

/// Starts `spec` in the container `id`, whose bundle is `bundle`, with the
/// runtime's `exec` verb.
pub(crate) fn start<F: Flavor>(
    cli: &Cli<F>,
    id: &ContainerId,
    bundle: &Path,
    spec: &ExecSpec,
) -> Result<ExecProcess, RuntimeError> {
    if spec.args.is_empty() || spec.args[0].is_empty() {
        return Err(RuntimeError::InvalidSpec("an exec needs a command".into()));
    }
    if let Some((name, _)) = spec
        .env
        .iter()
        .find(|(name, _)| name.is_empty() || name.contains('='))
    {
        return Err(RuntimeError::InvalidSpec(format!(
            "environment variable name {name:?}"
        )));
    }
    let mut args: Vec<OsString> = vec!["exec".into()];
    let mut process_file = None;
    match (spec.tty, cli.flavor.exec_tty()) {
        (Some(_), ExecTty::ProcessFile) => {
            let file = ProcessFile::write(bundle, spec)?;
            args.extend(["--process".into(), file.path.clone().into()]);
            args.push(id.as_str().into());
            process_file = Some(file);
        }
        (tty, how) => {
            if let Some(cwd) = &spec.cwd {
                args.extend(["--cwd".into(), cwd.into()]);
            }
            for (name, value) in &spec.env {
                args.extend(["--env".into(), format!("{name}={value}").into()]);
            }
            if let (Some(_), ExecTty::Flag(flag)) = (tty, how) {
                args.push(flag.into());
            }
            args.push(id.as_str().into());
            args.extend(spec.args.iter().map(OsString::from));
        }
    }
    let mut cmd = cli.command(None, &args);
    cmd.kill_on_drop(true);
    let terminal = match spec.tty {
        Some(size) => {
            let pty = terminal::open(size)?;
            let slave = |what| {
                pty.slave
                    .try_clone()
                    .map_err(|e| RuntimeError::io(format!("duplicating a terminal for {what}"), e))
            };
            cmd.stdin(slave("stdin")?)
                .stdout(slave("stdout")?)
                .stderr(slave("stderr")?);
            // A session of its own, so also a process group of its own.
            terminal::lead_session(&mut cmd);
            Some(pty.terminal)
        }
        None => {
            // Own process group, as the container's: a Ctrl-C meant for
            // the worker is not forwarded to the command.
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0);
            None
        }
    };
    // `cmd` holds the slave's copies until it is dropped: after the spawn,
    // only the child holds them, and the master reads the end when it ends.
    let spawned = cmd.spawn();
    drop(cmd);
    let mut child =
        spawned.map_err(|e| RuntimeError::io(format!("spawning {}", cli.describe(&args)), e))?;
    Ok(ExecProcess {
        _process_file: process_file,
        terminal,
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
    })
}

/// An exec described as a process file (`exec --process`): the container's
/// own process from its `config.json` (user, capabilities, rlimits,
/// environment) with the exec's command, environment added, working
/// directory, and a terminal. Removed when dropped.
#[derive(Debug)]
struct ProcessFile {
    path: PathBuf,
}

impl ProcessFile {
    fn write(bundle: &Path, spec: &ExecSpec) -> Result<ProcessFile, RuntimeError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let config = bundle.join("config.json");
        let oci = oci_spec::runtime::Spec::load(&config).map_err(|e| {
            RuntimeError::io(
                format!("reading {}", config.display()),
                std::io::Error::other(e),
            )
        })?;
        let mut process = oci.process().clone().unwrap_or_default();
        let mut env = process.env().clone().unwrap_or_default();
        for (name, value) in &spec.env {
            env.retain(|pair| pair.split_once('=').map(|(n, _)| n) != Some(name.as_str()));
            env.push(format!("{name}={value}"));
        }
        process.set_env(Some(env));
        process.set_args(Some(spec.args.clone()));
        if let Some(cwd) = &spec.cwd {
            process.set_cwd(cwd.into());
        }
        process.set_terminal(Some(spec.tty.is_some()));
        let path = bundle.join(format!(
            "exec-{}.json",
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let json = serde_json::to_vec(&process)
            .map_err(|e| RuntimeError::io("serializing a process", std::io::Error::other(e)))?;
        std::fs::write(&path, json)
            .map_err(|e| RuntimeError::io(format!("writing {}", path.display()), e))?;
        Ok(ProcessFile { path })
    }
}

impl Drop for ProcessFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
