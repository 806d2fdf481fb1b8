//! A further command in a running container: `runc exec` / `runsc exec` in
//! the foreground, as our child, its stdio our pipes, its exit status the
//! command's (a signal death as 128+N), as `run` is for the container.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::error::RuntimeError;
use crate::oci_cli::{Cli, Flavor};

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
}

/// A command started in a container. Its pipes are taken by the caller;
/// dropping it kills the runtime's exec process.
#[derive(Debug)]
pub struct ExecProcess {
    /// The command's stdin (close it by dropping it).
    pub stdin: Option<ChildStdin>,
    /// The command's stdout.
    pub stdout: Option<ChildStdout>,
    /// The command's stderr (and the runtime's own messages).
    pub stderr: Option<ChildStderr>,
    child: Child,
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

/// Starts `spec` in the container `id` with the runtime's `exec` verb.
pub(crate) fn start<F: Flavor>(
    cli: &Cli<F>,
    id: &str,
    spec: &ExecSpec,
) -> Result<ExecProcess, RuntimeError> {
    if spec.args.is_empty() || spec.args[0].is_empty() {
        return Err(RuntimeError::InvalidSpec("an exec needs a command".into()));
    }
    let mut args: Vec<OsString> = vec!["exec".into()];
    if let Some(cwd) = &spec.cwd {
        args.extend(["--cwd".into(), cwd.into()]);
    }
    for (name, value) in &spec.env {
        if name.is_empty() || name.contains('=') {
            return Err(RuntimeError::InvalidSpec(format!(
                "environment variable name {name:?}"
            )));
        }
        args.extend(["--env".into(), format!("{name}={value}").into()]);
    }
    args.push(id.into());
    args.extend(spec.args.iter().map(OsString::from));
    let mut cmd = cli.command(None, &args);
    // Own process group, as the container's: a Ctrl-C meant for the worker
    // is not forwarded to the command.
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| RuntimeError::io(format!("spawning {}", cli.describe(&args)), e))?;
    Ok(ExecProcess {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
    })
}
