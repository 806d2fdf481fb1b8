//! Driving an OCI runtime's command line. runc and runsc take the same verbs
//! (`run`, `kill`, `delete`, `list`, `state`), so the driving is shared and
//! their differences are a [`Flavor`].

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::process::Command;

use crate::error::{trim_output, RuntimeError};
use crate::{Capabilities, ContainerId, ContainerSpec};

/// What differs between OCI runtimes' command lines.
pub trait Flavor: Send + Sync + 'static {
    /// `"runc"`, `"runsc"`: the default binary and the state subdirectory.
    fn name(&self) -> &'static str;
    /// What it offers; `detects_oom` is filled in by
    /// [`crate::OciRuntime`] from the cgroups it finds.
    fn capabilities(&self) -> Capabilities;
    /// Global flags (before the verb). `spec` is given for `run`.
    fn global_args(&self, spec: Option<&ContainerSpec>) -> Vec<String>;
    /// Flags of the `run` verb.
    fn run_args(&self) -> Vec<String>;
    /// How the `exec` verb is told that the command gets our terminal.
    fn exec_tty(&self) -> ExecTty;
    /// Whether we create the container's v1 memory cgroup ourselves, so that
    /// it outlives the runtime's cleanup and its OOM counter can be read.
    fn owns_memory_cgroup(&self) -> bool;
}

/// How a runtime's `exec` gives the command a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecTty {
    /// With this flag (runc's `--tty`).
    Flag(&'static str),
    /// Only when the process is described in a file (`exec --process`)
    /// that says `"terminal": true` (runsc, whose command-line flags have
    /// no such thing).
    ProcessFile,
}

/// One runtime binary with our `--root`.
pub(crate) struct Cli<F> {
    pub(crate) flavor: F,
    binary: PathBuf,
    root: PathBuf,
    timeout: Duration,
}

impl<F: Flavor> Cli<F> {
    pub(crate) fn new(flavor: F, binary: PathBuf, root: PathBuf, timeout: Duration) -> Self {
        Cli {
            flavor,
            binary,
            root,
            timeout,
        }
    }

    /// The runtime's `--root`.
    pub(crate) fn root(&self) -> &PathBuf {
        &self.root
    }

    /// `<binary> --root <root> <global flags> <args>`, stdin closed.
    pub(crate) fn command(&self, spec: Option<&ContainerSpec>, args: &[OsString]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--root")
            .arg(&self.root)
            .args(self.flavor.global_args(spec))
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// The command line, for messages.
    pub(crate) fn describe(&self, args: &[OsString]) -> String {
        let mut s = self.binary.display().to_string();
        for a in args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }

    /// Runs a short command, killed after the command timeout.
    pub(crate) async fn run(&self, args: &[&str]) -> Result<Output, RuntimeError> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let mut cmd = self.command(None, &args);
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = match tokio::time::timeout(self.timeout, cmd.output()).await {
            Err(_) => {
                return Err(RuntimeError::Timeout {
                    command: self.describe(&args),
                    timeout: self.timeout,
                })
            }
            Ok(r) => {
                r.map_err(|e| RuntimeError::io(format!("running {}", self.describe(&args)), e))?
            }
        };
        if !output.status.success() {
            return Err(RuntimeError::Command {
                command: self.describe(&args),
                status: output.status.to_string(),
                stderr: trim_output(&output.stderr),
            });
        }
        Ok(output)
    }

    /// Ids in the runtime's state; one that is no valid [`ContainerId`] is
    /// not ours (we start none such) and is left out.
    pub(crate) async fn list(&self) -> Result<BTreeSet<ContainerId>, RuntimeError> {
        #[derive(serde::Deserialize)]
        struct State {
            id: String,
        }
        let out = self.run(&["list", "--format", "json"]).await?;
        // runc prints `null` for none.
        let states: Option<Vec<State>> = serde_json::from_slice(&out.stdout)
            .map_err(|e| RuntimeError::io("parsing `list` output", std::io::Error::other(e)))?;
        Ok(states
            .into_iter()
            .flatten()
            .filter_map(|s| ContainerId::parse(s.id).ok())
            .collect())
    }

    /// `delete --force`; a container the runtime does not know is fine.
    pub(crate) async fn delete(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        match self.run(&["delete", "--force", id.as_str()]).await {
            Ok(_) => Ok(()),
            Err(e @ RuntimeError::Command { .. }) if self.list().await?.contains(id) => Err(e),
            Err(RuntimeError::Command { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Whether the runtime has the container, not stopped.
    pub(crate) async fn is_running(&self, id: &ContainerId) -> bool {
        match self.run(&["state", id.as_str()]).await {
            Ok(out) => !String::from_utf8_lossy(&out.stdout).contains("\"stopped\""),
            Err(_) => false,
        }
    }
}
