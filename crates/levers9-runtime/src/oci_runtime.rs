//! [`OciRuntime`]: the [`Runtime`] of any OCI CLI [`Flavor`].
//!
//! Why `run` in the foreground, not `create`/`start` or `run --detach`: the
//! runtime process is then our child, its stdio (pipes) are passed through to
//! the container, and its exit status is the container's (a signal death as
//! 128+N). Detached, nobody would be left to tell the exit code. A task per
//! container waits for that child, reads the OOM counter, removes
//! everything, and then reports the exit.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use levers9_sync::Lock;
use tokio::process::Child;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cgroups::{self, Hierarchies};
use crate::container::{classify, Container, ExitWatch};
use crate::error::{trim_output, RuntimeError};
use crate::exec::{self, ExecProcess, ExecSpec};
use crate::logs::{LogHandle, Stream};
use crate::oci_cli::{Cli, Flavor};
use crate::{spec, Capabilities, ContainerId, ContainerSpec, Exit, Runtime, RuntimeConfig, Usage};

/// How often the pid file is looked for while a container starts.
const START_POLL: Duration = Duration::from_millis(2);
/// How long after the exit we wait for the output pipes to close (a stray
/// process could hold them open).
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);
/// How often a container that is not ours to watch is polled during `stop`.
const STOP_POLL: Duration = Duration::from_millis(50);

/// An OCI runtime driven through its CLI; see [`crate::Runc`] and
/// [`crate::Runsc`].
pub struct OciRuntime<F: Flavor> {
    inner: Arc<Inner<F>>,
}

struct Inner<F> {
    cli: Cli<F>,
    config: RuntimeConfig,
    bundles: PathBuf,
    cgroups: Hierarchies,
    /// Exit watches of the containers this instance started that have not
    /// exited yet.
    live: Lock<HashMap<ContainerId, ExitWatch>>,
}

impl<F: Flavor> OciRuntime<F> {
    /// A runtime of this flavor. Creates nothing yet.
    pub fn with_flavor(config: RuntimeConfig, flavor: F) -> Self {
        // Absolute: the runtime resolves paths from its own cwd, and the
        // spec needs absolute ones.
        let state = std::path::absolute(&config.state_dir).unwrap_or(config.state_dir.clone());
        let binary = config
            .binary
            .clone()
            .unwrap_or_else(|| PathBuf::from(flavor.name()));
        let root = state.join(flavor.name());
        OciRuntime {
            inner: Arc::new(Inner {
                cli: Cli::new(flavor, binary, root, config.command_timeout),
                bundles: state.join("bundles"),
                cgroups: Hierarchies::discover(),
                live: Lock::new(HashMap::new()),
                config,
            }),
        }
    }

    /// The configuration it was made with: binary, state dir, cgroup prefix,
    /// timeouts.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }
}

impl<F: Flavor> Inner<F> {
    fn cgroup_name(&self, id: &ContainerId) -> String {
        format!("{}{id}", self.config.cgroup_prefix)
    }

    fn cgroup_dirs(&self, id: &ContainerId) -> Vec<PathBuf> {
        self.cgroups.dirs(&self.cgroup_name(id))
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = self.cli.flavor.capabilities();
        caps.detects_oom = if self.cli.flavor.owns_memory_cgroup() {
            self.cgroups.memory_v1().is_some()
        } else {
            self.cgroups.has_memory()
        };
        caps
    }

    /// Removes runtime state, cgroups and bundle of `id`; reports the first
    /// failure after trying all three.
    async fn remove_all(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        let deleted = self.cli.delete(id).await;
        let cgroups = cgroups::remove(&self.cgroup_dirs(id)).await;
        let bundle = self.bundles.join(id);
        let bundle = match tokio::fs::remove_dir_all(&bundle).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RuntimeError::io(
                format!("removing bundle {}", bundle.display()),
                e,
            )),
            _ => Ok(()),
        };
        deleted.and(cgroups).and(bundle)
    }

    /// Waits up to `limit` for the container to end.
    async fn wait_ended(&self, id: &ContainerId, limit: Duration) -> bool {
        let watch = self.live.lock().get(id).cloned();
        if let Some(watch) = watch {
            return tokio::time::timeout(limit, watch.wait()).await.is_ok();
        }
        let deadline = Instant::now() + limit;
        loop {
            if !self.cli.is_running(id).await {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(STOP_POLL).await;
        }
    }

    /// Waits for the `run` child, reads the OOM counter before anything is
    /// removed, cleans up, then reports the exit.
    async fn supervise(
        self: Arc<Self>,
        id: ContainerId,
        mut child: Child,
        pumps: Vec<JoinHandle<()>>,
        exit_tx: watch::Sender<Option<Exit>>,
    ) {
        let status = child.wait().await;
        let _ = tokio::time::timeout(OUTPUT_DRAIN, join_all(pumps)).await;
        let oom_kills = cgroups::oom_kills(&self.cgroup_dirs(&id));
        if let Err(e) = self.remove_all(&id).await {
            tracing::warn!(%id, error = %e, "cleaning up after the exit; reap_leftovers will retry");
        }
        {
            // Only our own entry: the id may have been started anew already.
            let mut live = self.live.lock();
            if live.get(&id).is_some_and(|w| w.is_of(&exit_tx)) {
                live.remove(&id);
            }
        }
        match status {
            Ok(status) => {
                exit_tx.send_replace(Some(classify(status, oom_kills)));
            }
            Err(e) => tracing::error!(%id, error = %e, "waiting for the runtime"),
        }
    }

    /// `start` once the bundle directory exists: config.json, the memory
    /// cgroup for runsc, `run`, and the wait for the container's pid.
    async fn start_in(
        self: &Arc<Self>,
        spec: &ContainerSpec,
        rootfs: &Path,
        bundle: &Path,
    ) -> Result<Container, RuntimeError> {
        let caps = self.capabilities();
        let cgroup = self.cgroup_name(&spec.id);
        let oci = spec::build(spec, rootfs, &caps, &format!("/{cgroup}"))?;
        let config = bundle.join("config.json");
        let json = serde_json::to_vec_pretty(&oci)
            .map_err(|e| RuntimeError::io("serializing config.json", std::io::Error::other(e)))?;
        std::fs::write(&config, json)
            .map_err(|e| RuntimeError::io(format!("writing {}", config.display()), e))?;
        if self.cli.flavor.owns_memory_cgroup() {
            if let Some(mount) = self.cgroups.memory_v1() {
                let bytes = (spec.resources.memory_mib + caps.memory_overhead_mib) << 20;
                cgroups::create_memory(mount, &cgroup, bytes)?;
            }
        }

        let pid_file = bundle.join("pid");
        let mut args: Vec<OsString> = vec!["run".into()];
        args.extend(self.cli.flavor.run_args().into_iter().map(OsString::from));
        args.extend([
            "--bundle".into(),
            bundle.as_os_str().to_owned(),
            "--pid-file".into(),
            pid_file.as_os_str().to_owned(),
            spec.id.as_str().into(),
        ]);
        let mut cmd = self.cli.command(Some(spec), &args);
        // Own process group: a Ctrl-C meant for the worker does not reach
        // (and get forwarded to) the containers.
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| RuntimeError::io(format!("spawning {}", self.cli.describe(&args)), e))?;
        let logs = LogHandle::new(self.config.log_buffer_bytes);
        let mut pumps = Vec::new();
        if let Some(out) = child.stdout.take() {
            pumps.push(tokio::spawn(logs.clone().pump(Stream::Stdout, out)));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(tokio::spawn(logs.clone().pump(Stream::Stderr, err)));
        }

        let deadline = Instant::now() + self.config.start_timeout;
        let pid = loop {
            if let Some(pid) = read_pid(&pid_file) {
                break pid;
            }
            let exited = child
                .try_wait()
                .map_err(|e| RuntimeError::io("waiting for the runtime", e))?;
            if let Some(status) = exited {
                // A quick container may have run and exited already.
                if let Some(pid) = read_pid(&pid_file) {
                    break pid;
                }
                let _ = tokio::time::timeout(OUTPUT_DRAIN, join_all(pumps)).await;
                return Err(RuntimeError::StartFailed {
                    id: spec.id.to_string(),
                    status: status.to_string(),
                    stderr: trim_output(logs.text(Stream::Stderr).as_bytes()),
                });
            }
            if Instant::now() >= deadline {
                let _ = child.start_kill();
                return Err(RuntimeError::Timeout {
                    command: self.cli.describe(&args),
                    timeout: self.config.start_timeout,
                });
            }
            tokio::time::sleep(START_POLL).await;
        };

        let (exit_tx, exit) = ExitWatch::new(&spec.id);
        self.live.lock().insert(spec.id.clone(), exit.clone());
        tokio::spawn(
            self.clone()
                .supervise(spec.id.clone(), child, pumps, exit_tx),
        );
        Ok(Container {
            id: spec.id.clone(),
            pid,
            logs,
            exit,
        })
    }
}

async fn join_all(handles: Vec<JoinHandle<()>>) {
    for h in handles {
        let _ = h.await;
    }
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[async_trait]
impl<F: Flavor> Runtime for OciRuntime<F> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn start(&self, spec: &ContainerSpec) -> Result<Container, RuntimeError> {
        let inner = &self.inner;
        spec::validate(spec)?;
        let prefix = &inner.config.cgroup_prefix;
        if !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(RuntimeError::InvalidSpec(format!(
                "cgroup prefix {prefix:?}"
            )));
        }
        // runc rejects a symlinked rootfs; the canonical path is fine.
        let rootfs = std::fs::canonicalize(&spec.rootfs)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                RuntimeError::InvalidSpec(format!(
                    "rootfs {} is not a directory",
                    spec.rootfs.display()
                ))
            })?;
        for dir in [inner.cli.root(), &inner.bundles] {
            std::fs::create_dir_all(dir)
                .map_err(|e| RuntimeError::io(format!("creating {}", dir.display()), e))?;
        }
        let bundle = inner.bundles.join(&spec.id);
        match std::fs::create_dir(&bundle) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(RuntimeError::AlreadyExists(spec.id.to_string()))
            }
            r => r.map_err(|e| RuntimeError::io(format!("creating {}", bundle.display()), e))?,
        }
        // From here on a failure removes whatever was made.
        let started = inner.start_in(spec, &rootfs, &bundle).await;
        if started.is_err() {
            if let Err(e) = inner.remove_all(&spec.id).await {
                tracing::warn!(id = %spec.id, error = %e, "cleaning up a failed start");
            }
        }
        started
    }

    async fn stop(&self, id: &ContainerId, grace: Duration) -> Result<(), RuntimeError> {
        let inner = &self.inner;
        // Every process gets SIGTERM (an init process without a handler
        // ignores it, hence the SIGKILL after the grace period).
        if inner
            .cli
            .run(&["kill", "--all", id.as_str(), "TERM"])
            .await
            .is_err()
            && !inner.cli.is_running(id).await
        {
            return Ok(());
        }
        if inner.wait_ended(id, grace).await {
            return Ok(());
        }
        // Killing the init kills its whole pid namespace (runsc: sandbox).
        let _ = inner.cli.run(&["kill", id.as_str(), "KILL"]).await;
        if inner.wait_ended(id, inner.config.command_timeout).await {
            return Ok(());
        }
        Err(RuntimeError::Timeout {
            command: format!("stopping {id}"),
            timeout: grace + inner.config.command_timeout,
        })
    }

    async fn cleanup(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        self.inner.remove_all(id).await
    }

    async fn reap_leftovers(&self) -> Result<Vec<ContainerId>, RuntimeError> {
        let inner = &self.inner;
        let mut ids = BTreeSet::new();
        if inner.cli.root().is_dir() {
            ids.extend(inner.cli.list().await?);
        }
        // Only names that are valid ids: anything else (a stray file in the
        // bundles dir) is not ours to name.
        if let Ok(entries) = std::fs::read_dir(&inner.bundles) {
            ids.extend(entries.flatten().filter_map(|e| {
                ContainerId::parse(e.file_name().to_string_lossy().into_owned()).ok()
            }));
        }
        let prefix = inner.config.cgroup_prefix.as_str();
        ids.extend(
            inner
                .cgroups
                .names_with_prefix(prefix)
                .into_iter()
                .filter_map(|n| ContainerId::parse(n.strip_prefix(prefix)?).ok()),
        );
        let mut first_error = None;
        for id in &ids {
            tracing::info!(%id, runtime = inner.cli.flavor.name(), "reaping a leftover container");
            if let Err(e) = inner.remove_all(id).await {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(ids.into_iter().collect()),
        }
    }

    async fn usage(&self, id: &ContainerId) -> Result<Usage, RuntimeError> {
        cgroups::usage(&self.inner.cgroup_dirs(id))
            .ok_or_else(|| RuntimeError::NotFound(id.to_string()))
    }

    async fn exec(&self, id: &ContainerId, spec: &ExecSpec) -> Result<ExecProcess, RuntimeError> {
        let inner = &self.inner;
        let ours_running = inner.live.lock().get(id).is_some_and(|w| w.get().is_none());
        if !ours_running && !inner.cli.is_running(id).await {
            return Err(RuntimeError::NotRunning(id.to_string()));
        }
        exec::start(&inner.cli, id, &inner.bundles.join(id), spec)
    }
}
