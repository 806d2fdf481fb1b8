//! What makes a container a function container: its container server, the
//! objects it mounts (code, SDK), and exit messages that say why a function
//! never ran.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{
    worker_message, CancelInput, ContainerEvent, ItemsAck, ObjectMount, RunContainer, TaskInput,
    TaskResult, TaskResultState,
};
use levers9_ids::ContainerId;
use levers9_runtime::{BindMount, ContainerSpec, Network};

use super::reports::message;
use super::Supervisor;
use crate::container_server::{ContainerServer, RunnerOutcome, ServerAuth};
use crate::objects::ObjectCache;
use crate::security::Subject;

/// Where the container server's directory appears in the container.
pub const RUN_MOUNT: &str = "/levers9/run";
/// How long a container whose input timed out (or was cancelled while
/// running) gets between SIGTERM and SIGKILL: nobody wants what it does,
/// so waiting only wastes the slot.
const TIMEOUT_STOP_GRACE: Duration = Duration::from_secs(1);

impl Supervisor {
    /// Where container servers' directories go.
    fn run_root(&self) -> PathBuf {
        self.state_dir.join("run")
    }

    /// Binds the server of the container `id` and keeps it for the
    /// container's inputs; an input running past its timeout stops the
    /// container, as does a cancelled one already running. It asks for a
    /// credential as the pool's `containerServerAuth` says, naming `subject`
    /// in what it records. Its runner runs `concurrency` inputs at once.
    pub(super) fn bind_server(
        &self,
        id: &ContainerId,
        subject: Subject,
        concurrency: usize,
    ) -> Result<Arc<ContainerServer>, String> {
        let runtime = self.runtime.clone();
        let stopped = id.clone();
        let stop = Arc::new(move || {
            let runtime = runtime.clone();
            let id = stopped.clone();
            tokio::spawn(async move {
                if let Err(error) = runtime.stop(&id, TIMEOUT_STOP_GRACE).await {
                    tracing::warn!(container_id = %id, %error, "cannot stop a container whose input timed out or was cancelled while running");
                }
            });
        });
        let auth = ServerAuth::new(self.security().server_auth, subject, self.metrics.clone());
        let server = ContainerServer::bind(
            &self.run_root(),
            &self.state_dir,
            id,
            self.events.clone(),
            stop,
            auth,
            concurrency,
        )
        .map(Arc::new)
        .map_err(|e| e.to_string())?;
        if let Some(named) = &self.named {
            server.forward_named(named.clone());
        }
        self.servers.lock().insert(id.clone(), server.clone());
        Ok(server)
    }

    /// Binds a server of its own for the container `id` of `request`,
    /// which was to run in a spare whose server is `spare`: the inputs that
    /// came for it move to the new one.
    pub(super) fn rebind_server(
        &self,
        id: &ContainerId,
        request: &RunContainer,
        spare: &ContainerServer,
    ) -> Result<Arc<ContainerServer>, String> {
        let server =
            self.bind_server(id, self.subject(id, request), super::concurrency(request))?;
        for input in spare.take_queued() {
            server.send_input(input);
        }
        Ok(server)
    }

    /// Ends a container's server once the container is gone: forgets it,
    /// removes its directory, and returns what the runner said.
    pub(super) async fn close_server(
        &self,
        server: &ContainerServer,
        container_id: &ContainerId,
    ) -> RunnerOutcome {
        self.servers.lock().remove(container_id);
        let runner = server.shut_down().await;
        let dir = server.dir();
        match tokio::fs::remove_dir_all(dir).await {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(%container_id, %error, dir = %dir.display(), "cannot remove the container server's directory");
            }
            _ => {}
        }
        runner
    }

    /// Cancels an input given to one of this worker's containers; one
    /// whose container is gone needs nothing (it was reported lost).
    pub fn cancel_input(&self, cancel: CancelInput) {
        // Asked by the wire's text: an id that is not valid is not here.
        let server = self
            .servers
            .lock()
            .get(cancel.container_id.as_str())
            .cloned();
        if let Some(server) = server {
            server.cancel_input(&cancel.task_id);
        }
    }

    /// Passes a generator caller's count of items taken to the runner of
    /// its container; one whose container is gone needs nothing.
    pub fn items_ack(&self, ack: ItemsAck) {
        let server = self.servers.lock().get(ack.container_id.as_str()).cloned();
        if let Some(server) = server {
            server.ack_items(&ack.task_id, ack.received);
        }
    }

    /// Hands an input to its container's runner. An input for a container
    /// this worker does not hold, or one without a server, is reported
    /// lost: it never ran, and goes back to the queue.
    pub fn task_input(&self, input: TaskInput) {
        let server = self
            .servers
            .lock()
            .get(input.container_id.as_str())
            .cloned();
        if let Some(server) = server {
            return server.send_input(input);
        }
        tracing::info!(container_id = %input.container_id, task_id = %input.task_id, "an input for a container that is not here; reported lost");
        let lost = TaskResult {
            message: format!(
                "container {} is not running on worker {}",
                input.container_id, self.worker_id
            ),
            container_id: input.container_id,
            task_id: input.task_id,
            state: TaskResultState::Lost.into(),
            ..TaskResult::default()
        };
        // Not awaited: the session loop calls this and must not block.
        let events = self.events.clone();
        tokio::spawn(async move {
            let _ = events
                .send(message(worker_message::Kind::TaskResult(lost)))
                .await;
        });
    }
}

/// The request's objects as read-only bind mounts, fetched (and unpacked)
/// through the cache, all at once.
pub async fn object_mounts(
    objects: &ObjectCache,
    request: &RunContainer,
) -> Result<Vec<BindMount>, String> {
    let mounts = request
        .objects
        .iter()
        .map(|object| object_mount(objects, &request.workspace_id, object));
    futures::future::try_join_all(mounts).await
}

async fn object_mount(
    objects: &ObjectCache,
    workspace_id: &str,
    object: &ObjectMount,
) -> Result<BindMount, String> {
    if !is_plain_absolute(&object.target) {
        return Err(format!(
            "object {} has mount target {:?}: it must be an absolute path without ..",
            object.digest, object.target
        ));
    }
    let source = if object.unpack {
        objects.unpacked(workspace_id, &object.digest).await
    } else {
        objects.file(workspace_id, &object.digest).await
    }
    .map_err(|e| format!("cannot fetch object {}: {e}", object.digest))?;
    Ok(BindMount {
        source,
        destination: object.target.clone(),
        read_only: true,
    })
}

/// The request's volumes as read-write bind mounts of their directories in
/// its workspace. A volume that cannot be had fails the container with its
/// name and the cause: a container never starts with a missing or stale
/// directory in its place.
///
/// `storage`, the workspace's own credentials when it has some, mounts its
/// file system; they are dropped (zeroed) on return.
pub async fn volume_mounts(
    volumes: &levers9_volumes::Volumes,
    request: &RunContainer,
    storage: Option<levers9_volumes::WorkspaceStorage>,
) -> Result<Vec<BindMount>, String> {
    let Some(first) = request.volumes.first() else {
        return Ok(Vec::new());
    };
    let owner = levers9_volumes::Owner {
        workspace_id: &request.workspace_id,
        storage,
    };
    let workspace_dir = volumes
        .workspace_dir(owner)
        .await
        .map_err(|e| format!("cannot mount volume {:?}: {e}", first.name))?;
    let mut mounts = Vec::with_capacity(request.volumes.len());
    for volume in &request.volumes {
        let source = levers9_volumes::volume_in(&workspace_dir, &volume.name)
            .await
            .map_err(|e| format!("cannot mount volume {:?}: {e}", volume.name))?;
        mounts.push(BindMount {
            source,
            destination: volume.mount_path.clone(),
            read_only: false,
        });
    }
    Ok(mounts)
}

fn is_plain_absolute(path: &str) -> bool {
    path.starts_with('/') && !path.split('/').any(|part| part == "..")
}

/// Turns `spec` into a function container's: the server's directory
/// mounted, the variables the runner finds it by, the working directory
/// the request asked for (`working_dir`; empty keeps the image's).
pub fn prepare_spec(
    spec: &mut ContainerSpec,
    working_dir: &str,
    server: Option<&ContainerServer>,
) -> Result<(), String> {
    if !working_dir.is_empty() {
        if !working_dir.starts_with('/') {
            return Err(format!(
                "the working directory {working_dir:?} must be an absolute path"
            ));
        }
        spec.cwd = working_dir.to_owned();
    }
    let Some(server) = server else {
        return Ok(());
    };
    spec.mounts.push(BindMount {
        source: server.dir().to_owned(),
        destination: RUN_MOUNT.into(),
        // The runner connects to the socket, which needs write access to it.
        read_only: false,
    });
    let ours: Vec<(String, String)> = [
        (
            "LEVERS9_CONTAINER_SERVER".to_owned(),
            format!("{RUN_MOUNT}/{}", crate::container_server::SOCKET_NAME),
        ),
        ("LEVERS9_CONTAINER_ID".to_owned(), spec.id.to_string()),
    ]
    .into_iter()
    .chain(server.credential_env())
    .collect();
    spec.env
        .retain(|(k, _)| ours.iter().all(|(ours, _)| ours != k));
    spec.env.extend(ours);
    Ok(())
}

/// Host files a container on the worker's network needs to use it: names
/// and the CA bundle to check package indexes with.
const HOST_NETWORK_FILES: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/ssl/certs/ca-certificates.crt",
];

/// Puts `spec` in the worker's own network namespace (image builds reach
/// package indexes), with the host's name resolution and CA bundle bound
/// read-only. These are the worker's mounts, added after the volume checks.
pub fn share_host_network(spec: &mut ContainerSpec) {
    spec.network = Network::Path(format!("/proc/{}/ns/net", std::process::id()).into());
    for file in HOST_NETWORK_FILES {
        if Path::new(file).is_file() {
            spec.mounts.push(BindMount {
                source: PathBuf::from(file),
                destination: (*file).to_owned(),
                read_only: true,
            });
        }
    }
}

/// Why a function container ended, when its runner can say more than the
/// exit code: the function failed to load, or the runner never started.
pub fn explain_exit(event: &mut ContainerEvent, runner: &RunnerOutcome) {
    if let Some(error) = &runner.init_error {
        event.message = if error.traceback.is_empty() {
            format!("the function could not be loaded: {}", error.message)
        } else {
            format!(
                "the function could not be loaded: {}\n{}",
                error.message, error.traceback
            )
        };
    } else if !runner.said_hello && event.exit_code != 0 && !event.oom_killed {
        // The OOM message is more precise than a guess about Python.
        event.message = format!(
            "the container exited with code {} before the function runner connected: does the image have python3 (3.9 or later) on its PATH?",
            event.exit_code
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_server::InitError;
    use tokio::sync::mpsc;

    #[test]
    fn the_exit_says_why_the_function_never_ran() {
        let mut event = ContainerEvent {
            exit_code: 1,
            ..ContainerEvent::default()
        };
        explain_exit(
            &mut event,
            &RunnerOutcome {
                said_hello: false,
                init_error: Some(InitError {
                    message: "ImportError: x".into(),
                    traceback: "Traceback…".into(),
                }),
            },
        );
        assert_eq!(
            event.message,
            "the function could not be loaded: ImportError: x\nTraceback…"
        );

        let mut event = ContainerEvent {
            exit_code: 127,
            ..ContainerEvent::default()
        };
        explain_exit(&mut event, &RunnerOutcome::default());
        assert_eq!(event.message, "the container exited with code 127 before the function runner connected: does the image have python3 (3.9 or later) on its PATH?");

        let mut event = ContainerEvent::default();
        explain_exit(
            &mut event,
            &RunnerOutcome {
                said_hello: true,
                init_error: None,
            },
        );
        assert_eq!(event.message, "");
    }

    #[tokio::test]
    async fn the_server_and_variables_are_added_and_the_working_dir_set() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = mpsc::channel(1);
        let server = ContainerServer::bind(
            &dir.path().join("run"),
            dir.path(),
            &crate::fake_runtime::id("c1"),
            events,
            Arc::new(|| {}),
            ServerAuth::new(
                levers9_config::ContainerServerAuthMode::Enforce,
                Subject::default(),
                crate::security::SecurityMetrics::default(),
            ),
            1,
        )
        .unwrap();
        let (_, credential) = server.credential_env().expect("issued");
        let mut spec =
            ContainerSpec::new(crate::fake_runtime::id("c1"), "/r", vec!["python3".into()]);
        spec.env
            .push(("LEVERS9_CONTAINER_ID".into(), "spoofed".into()));
        spec.env.push((
            "LEVERS9_CONTAINER_SERVER_CREDENTIAL".into(),
            "spoofed".into(),
        ));
        prepare_spec(&mut spec, "/code", Some(&server)).unwrap();
        assert_eq!(spec.cwd, "/code");
        assert_eq!(
            spec.env,
            [
                (
                    "LEVERS9_CONTAINER_SERVER".to_owned(),
                    "/levers9/run/server.sock".to_owned()
                ),
                ("LEVERS9_CONTAINER_ID".to_owned(), "c1".to_owned()),
                ("LEVERS9_CONTAINER_SERVER_CREDENTIAL".to_owned(), credential),
            ]
        );
        assert_eq!(
            spec.mounts,
            [BindMount {
                source: dir.path().join("run/c1"),
                destination: "/levers9/run".into(),
                read_only: false,
            }]
        );
        assert!(prepare_spec(&mut spec, "code", None).is_err());
    }

    #[test]
    fn object_targets_must_be_plain_absolute_paths() {
        assert!(is_plain_absolute("/levers9/code"));
        assert!(!is_plain_absolute("levers9/code"));
        assert!(!is_plain_absolute("/levers9/../etc"));
    }
}
