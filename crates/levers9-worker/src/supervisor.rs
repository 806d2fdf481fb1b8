//! The containers of this worker: pull, prepare the root filesystem, start,
//! forward output, report the exit, clean up. Function containers also get
//! a container server and their objects (see `function`).

mod compiled;
mod function;
mod gpus;
mod images;
mod reports;
mod spares;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{
    worker_message, ContainerEvent, ContainerEventState, RunContainer, RunningContainer,
    WorkerMessage,
};
use levers9_config::JuiceFsConfig;
use levers9_ids::ContainerId;
use levers9_image::ImageStore;
use levers9_runtime::{Container, ContainerSpec, Exit, Resources, Runtime};
use levers9_sync::Lock;
use tokio::sync::mpsc;

use crate::container_server::{ContainerServer, NamedForwarder};
use crate::objects::ObjectCache;
use crate::security::{SecurityMetrics, SecurityPolicy, Subject};
use crate::storage_settings::SwappableVolumes;
use images::Images;
use reports::{event, exited, forward_output, message};
pub(crate) use spares::RuntimeIds;
pub use spares::SpareOptions;

/// The variable the controlplane names a function container's stub in.
const STUB_ID_VARIABLE: &str = "LEVERS9_STUB_ID";
/// How many inputs the function runner runs at once; 1 when unset.
const CONCURRENCY_VARIABLE: &str = "LEVERS9_CONCURRENCY";

/// The CPU any container may use while the worker has it idle, whatever
/// it reserved (more if it reserved more).
const BURST_MILLICORES: u64 = 1000;

/// Events and output wait here while no session is connected; beyond this
/// the producers wait (output backs up into the runtime's own buffer).
const EVENT_BUFFER: usize = 4096;

/// A container this worker holds, from the run request to its cleanup.
#[derive(Debug, Clone)]
struct Held {
    cpu_millicores: u64,
    memory_mib: u64,
    gpu_type: String,
    gpu_count: u32,
    /// Its stub, named in what the hardening records.
    stub_id: String,
    /// Whether it has volumes bound in.
    has_volumes: bool,
}

use gpus::FreeGpus;

/// What a supervisor needs besides its runtime, images and objects.
#[derive(Debug, Clone)]
pub struct SupervisorOptions {
    /// This worker, named in what it reports.
    pub worker_id: String,
    /// The worker's state directory: container servers live under its
    /// `run/`.
    pub state_dir: PathBuf,
    /// The GPUs it hands out: type and device ids.
    pub gpus: Vec<(String, Vec<String>)>,
    /// The hardening of its containers.
    pub security: SecurityPolicy,
    /// Where what the hardening sees is counted.
    pub metrics: SecurityMetrics,
    /// The workspaces' volumes, bound into the containers that ask.
    pub volumes: levers9_volumes::Volumes,
    /// Where CDI spec files are looked for (`worker.cdiSpecDirs`).
    pub cdi_spec_dirs: Vec<PathBuf>,
    /// Where function containers' Dict and Queue calls go.
    pub named: Option<Arc<NamedForwarder>>,
    /// The spare function containers it keeps (see `spares`).
    pub spares: SpareOptions,
}

/// Runs and tracks containers. Cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    runtime: Arc<dyn Runtime>,
    images: Arc<dyn Images>,
    objects: ObjectCache,
    worker_id: String,
    state_dir: PathBuf,
    held: Arc<Lock<HashMap<ContainerId, Held>>>,
    /// The servers of held function containers, for their inputs.
    servers: Arc<Lock<HashMap<ContainerId, Arc<ContainerServer>>>>,
    free_gpus: Arc<Lock<FreeGpus>>,
    events: mpsc::Sender<WorkerMessage>,
    /// Replaced when the controlplane's settings arrive on attach.
    security: Arc<Lock<Arc<SecurityPolicy>>>,
    metrics: SecurityMetrics,
    /// Replaced when the controlplane's file system is adopted on attach.
    volumes: SwappableVolumes,
    cdi_spec_dirs: Arc<Vec<PathBuf>>,
    named: Option<Arc<NamedForwarder>>,
    /// Commands run in its containers for their callers.
    execs: crate::exec::Execs,
    /// Objects' Python modules compiled for their images.
    compiled: Arc<compiled::Compiled>,
    spares: Arc<spares::Spares>,
    /// The spares' ids of the containers that adopted them.
    runtime_ids: RuntimeIds,
}

/// When a container's preparation reached each step, in ms from its
/// request: where a start goes, for whoever tunes it.
struct Steps {
    pulled_ms: u128,
    rootfs_ms: u128,
    spec_ms: u128,
}

/// What the runner of a function container will take at once, as its
/// environment tells it.
fn concurrency(request: &RunContainer) -> usize {
    request
        .env
        .get(CONCURRENCY_VARIABLE)
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// The environment `image`'s config sets, as name and value.
fn image_env(image: &levers9_image::Image) -> impl Iterator<Item = (String, String)> + '_ {
    image
        .config
        .env
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
}

impl Supervisor {
    /// A supervisor, and the stream of what it reports, for the sessions.
    pub fn new(
        runtime: Arc<dyn Runtime>,
        images: ImageStore,
        objects: ObjectCache,
        options: SupervisorOptions,
    ) -> (Supervisor, mpsc::Receiver<WorkerMessage>) {
        Supervisor::with_images(runtime, Arc::new(images), objects, options)
    }

    /// As [`Supervisor::new`], with the root file systems from `images`.
    fn with_images(
        runtime: Arc<dyn Runtime>,
        images: Arc<dyn Images>,
        objects: ObjectCache,
        options: SupervisorOptions,
    ) -> (Supervisor, mpsc::Receiver<WorkerMessage>) {
        let (events, receiver) = mpsc::channel(EVENT_BUFFER);
        let runtime_ids = RuntimeIds::default();
        let supervisor = Supervisor {
            execs: crate::exec::Execs::new(runtime.clone(), events.clone(), runtime_ids.clone()),
            runtime,
            images,
            objects,
            worker_id: options.worker_id,
            state_dir: options.state_dir,
            held: Arc::default(),
            servers: Arc::default(),
            free_gpus: Arc::new(Lock::new(options.gpus.into_iter().collect())),
            events,
            security: Arc::new(Lock::new(Arc::new(options.security))),
            metrics: options.metrics,
            volumes: SwappableVolumes::new(options.volumes),
            cdi_spec_dirs: Arc::new(options.cdi_spec_dirs),
            named: options.named,
            compiled: Arc::default(),
            spares: Arc::new(spares::Spares::new(options.spares)),
            runtime_ids,
        };
        (supervisor, receiver)
    }

    /// Whom the hardening's log lines and counters name for `request`, the
    /// container `id`.
    fn subject(&self, id: &ContainerId, request: &RunContainer) -> Subject {
        Subject {
            container_id: Some(id.clone()),
            stub_id: request
                .env
                .get(STUB_ID_VARIABLE)
                .cloned()
                .unwrap_or_default(),
            pool: self.security().pool.clone(),
        }
    }

    /// The hardening containers start under now.
    pub(crate) fn security(&self) -> Arc<SecurityPolicy> {
        // Each critical section is one read or one swap.
        Arc::clone(&self.security.lock())
    }

    /// The commands run in its containers.
    pub(crate) fn execs(&self) -> &crate::exec::Execs {
        &self.execs
    }

    /// The volumes containers start with now.
    pub(crate) fn volumes(&self) -> levers9_volumes::Volumes {
        self.volumes.get()
    }

    /// Binds the volumes of containers started from now on in the file
    /// system `juicefs` the controlplane sent (see
    /// [`crate::storage_settings`]), unless it is in place already. A
    /// file system it replaces is unmounted first, and the containers bound
    /// to it stopped (their stub starts fresh ones); the new one is mounted
    /// in the background, ahead of the first container that needs it.
    pub(crate) async fn adopt_volume_storage(&self, juicefs: JuiceFsConfig, state_dir: &Path) {
        let Some(replaced) = self.volumes.adopt(juicefs, state_dir) else {
            return;
        };
        tracing::info!(location = %replaced.new.location(), "volumes from the controlplane's storage settings");
        if replaced.old.is_juicefs() {
            self.stop_volume_users(Duration::from_secs(5));
            replaced.old.close().await;
        }
        tokio::spawn(async move {
            if let Err(error) = replaced.new.root().await {
                tracing::warn!(%error, "volumes are not available yet");
            }
        });
    }

    /// Containers started from now on are hardened under `policy`.
    pub fn set_security(&self, policy: SecurityPolicy) {
        *self.security.lock() = Arc::new(policy);
    }

    /// The container held now whose processes the runtime knows by
    /// `runtime_id` (its own id, or the spare's it adopted), and its stub.
    pub fn held_as(&self, runtime_id: &ContainerId) -> Option<(ContainerId, String)> {
        let id = self
            .runtime_ids
            .container_of(runtime_id)
            .unwrap_or_else(|| runtime_id.clone());
        let stub_id = self.held.lock().get(&id)?.stub_id.clone();
        Some((id, stub_id))
    }

    /// The containers held now, for a (re-)registration.
    pub fn running(&self) -> Vec<RunningContainer> {
        self.held
            .lock()
            .iter()
            .map(|(id, h)| RunningContainer {
                container_id: id.to_string(),
                cpu_millicores: h.cpu_millicores,
                memory_mib: h.memory_mib,
                gpu_type: h.gpu_type.clone(),
                gpu_count: h.gpu_count,
            })
            .collect()
    }

    /// Starts a container in the background; everything it does is
    /// reported as events. A request for a container already held is a
    /// repeat and does nothing; one whose id is not valid fails.
    pub fn run(&self, mut request: RunContainer) {
        let id = match ContainerId::parse(request.container_id.as_str()) {
            Ok(id) => id,
            Err(invalid) => return self.refuse(&request.container_id, invalid.to_string()),
        };
        {
            let mut held = self.held.lock();
            if held.contains_key(&id) {
                return;
            }
            held.insert(
                id.clone(),
                Held {
                    cpu_millicores: request.cpu_millicores,
                    memory_mib: request.memory_mib,
                    gpu_type: request.gpu_type.clone(),
                    gpu_count: request.gpu_count,
                    stub_id: self.subject(&id, &request).stub_id,
                    has_volumes: !request.volumes.is_empty(),
                },
            );
        }
        // Out of the request, which lives as long as the container: the
        // keys are dropped (zeroed) once its volumes are mounted.
        let storage = request.volume_storage.take().map(|c| {
            levers9_volumes::WorkspaceStorage::new(
                c.endpoint,
                c.bucket,
                c.access_key_id,
                c.secret_access_key,
            )
        });
        let spare = self.take_spare(&request);
        if spare.is_none() {
            self.make_room(&request);
        }
        // Bound now, not once the image is pulled, so an input that comes
        // early is queued rather than lost.
        let mut server = match &spare {
            Some(spare) => {
                let server = spare.server.clone();
                self.servers.lock().insert(id.clone(), server.clone());
                Some(Ok(server))
            }
            None => request
                .container_server
                .then(|| self.bind_server(&id, self.subject(&id, &request), concurrency(&request))),
        };
        let this = self.clone();
        tokio::spawn(async move {
            let gpu_type = request.gpu_type.clone();
            let adopted = match spare {
                Some(spare) => match this.adopt(&id, &request, spare).await {
                    Ok(container) => Some(container),
                    Err((spare, reason)) => {
                        tracing::info!(container_id = %id, %reason, "a spare cannot serve this container; starting one");
                        server = Some(this.rebind_server(&id, &request, &spare.server));
                        this.discard_spare(spare).await;
                        None
                    }
                },
                None => None,
            };
            let (outcome, devices) = match (server.clone().transpose(), adopted) {
                (Err(reason), _) => (Err(reason), Vec::new()),
                (Ok(_), Some(container)) => (this.follow(&id, container).await, Vec::new()),
                (Ok(server), None) => match this.take_gpus(&gpu_type, request.gpu_count) {
                    Ok(devices) => {
                        let exit = this
                            .run_to_exit(&id, &request, storage, &devices, server.as_deref())
                            .await;
                        (exit, devices)
                    }
                    Err(reason) => (Err(reason), Vec::new()),
                },
            };
            this.give_back_gpus(&gpu_type, devices);
            // Only a server that was bound has a directory to remove.
            let runner = match server {
                Some(Ok(server)) => Some(this.close_server(&server, &id).await),
                _ => None,
            };
            let report = match outcome {
                Ok(exit) => {
                    let mut event = exited(&id, exit);
                    if let Some(runner) = &runner {
                        function::explain_exit(&mut event, runner);
                    }
                    event
                }
                Err(reason) => {
                    tracing::warn!(container_id = %id, %reason, "container failed");
                    ContainerEvent {
                        message: reason,
                        ..event(&id, ContainerEventState::Failed)
                    }
                }
            };
            let runtime_id = this.forget_runtime_id(&id);
            if runtime_id == id {
                if let Err(error) = this.images.release(&id).await {
                    tracing::warn!(container_id = %id, %error, "cannot release the root filesystem");
                }
            } else {
                this.forget_spare(&runtime_id).await;
            }
            this.held.lock().remove(&id);
            this.report(message(worker_message::Kind::Event(report)))
                .await;
        });
    }

    /// Fails the container `raw_id` of a run request without holding it: its
    /// id is not valid, so nothing could be made for it.
    fn refuse(&self, raw_id: &str, reason: String) {
        tracing::warn!(container_id = ?raw_id, %reason, "container failed");
        let failed = ContainerEvent {
            container_id: raw_id.to_owned(),
            state: ContainerEventState::Failed.into(),
            message: reason,
            ..Default::default()
        };
        // Not awaited: the session loop calls this and must not block.
        let events = self.events.clone();
        tokio::spawn(async move {
            let _ = events
                .send(message(worker_message::Kind::Event(failed)))
                .await;
        });
    }

    async fn run_to_exit(
        &self,
        id: &ContainerId,
        request: &RunContainer,
        storage: Option<levers9_volumes::WorkspaceStorage>,
        gpus: &[String],
        server: Option<&ContainerServer>,
    ) -> Result<Exit, String> {
        let began = std::time::Instant::now();
        let (spec, steps) = self
            .prepare(began, id, request, storage, gpus, server)
            .await?;
        let container = self
            .runtime
            .start(&spec)
            .await
            .map_err(|e| format!("cannot start the container: {e}"))?;
        let Steps {
            pulled_ms,
            rootfs_ms,
            spec_ms,
        } = steps;
        tracing::debug!(container_id = %id, pulled_ms, rootfs_ms, spec_ms, started_ms = began.elapsed().as_millis(), "container started");
        self.add_spare_like(request);
        self.follow(id, container).await
    }

    /// Reports the container `id` running, forwards its output and waits
    /// for its exit.
    async fn follow(&self, id: &ContainerId, container: Container) -> Result<Exit, String> {
        self.report(message(worker_message::Kind::Event(event(
            id,
            ContainerEventState::Running,
        ))))
        .await;
        let forward = tokio::spawn(forward_output(
            id.clone(),
            container.logs().clone(),
            self.events.clone(),
        ));
        let exit = container
            .wait()
            .await
            .map_err(|e| format!("lost track of the container: {e}"))?;
        // Output first, then the exit: readers see everything before the end.
        let _ = forward.await;
        Ok(exit)
    }

    /// The spec of the container `id` for `request`, ready to start: its
    /// image pulled and root file system prepared, its objects and volumes
    /// mounted, hardened, its resources set.
    async fn prepare(
        &self,
        began: std::time::Instant,
        id: &ContainerId,
        request: &RunContainer,
        storage: Option<levers9_volumes::WorkspaceStorage>,
        gpus: &[String],
        server: Option<&ContainerServer>,
    ) -> Result<(ContainerSpec, Steps), String> {
        // The objects and volumes come while the image is pulled.
        let volumes = self.volumes();
        let (image, object_mounts, volume_mounts) = tokio::join!(
            self.images.pull(&request.image),
            function::object_mounts(&self.objects, request),
            function::volume_mounts(&volumes, request, storage),
        );
        let image = image.map_err(|e| format!("cannot pull image {}: {e}", request.image))?;
        let mut object_mounts = object_mounts?;
        self.use_compiled(&mut object_mounts, request, &image);
        let volume_mounts = volume_mounts?;
        let pulled_ms = began.elapsed().as_millis();
        let rootfs = self.images.prepare_rootfs(&image, id).await.map_err(|e| {
            format!(
                "cannot prepare the root filesystem of {}: {e}",
                request.image
            )
        })?;
        let rootfs_ms = began.elapsed().as_millis();
        let args = if request.args.is_empty() {
            image.config.argv()
        } else {
            request.args.clone()
        };
        if args.is_empty() {
            return Err(format!(
                "image {} has no command and none was given: pass one after --",
                request.image
            ));
        }
        let mut spec = ContainerSpec::new(id.clone(), &rootfs.path, args);
        spec.env = image_env(&image)
            .filter(|(k, _)| !request.env.contains_key(k))
            .chain(request.env.clone())
            .collect();
        if !gpus.is_empty() {
            // The NVIDIA container runtime's convention: the devices this
            // container may use, by index.
            spec.env
                .push(("NVIDIA_VISIBLE_DEVICES".to_owned(), gpus.join(",")));
            crate::cdi::inject(&mut spec, &self.cdi_spec_dirs, gpus).map_err(|e| e.to_string())?;
        }
        if let Some(dir) = image.config.working_dir.as_ref().filter(|d| !d.is_empty()) {
            spec.cwd = dir.clone();
        }
        spec.mounts.extend(object_mounts);
        spec.mounts.extend(volume_mounts);
        function::prepare_spec(&mut spec, &request.working_dir, server)?;
        // A stub that asked for less than its pool, or a mount refused:
        // the reason is the start failure its caller reads.
        self.security()
            .harden(
                &mut spec,
                &rootfs.path,
                &self.subject(id, request),
                &self.metrics,
            )
            .map_err(|e| e.to_string())?;
        if request.host_network {
            function::share_host_network(&mut spec);
        }
        spec.resources = Resources {
            cpu_millicores: request.cpu_millicores,
            // What was reserved is guaranteed (its weight); idle CPU is
            // there to use, up to a core: a container of 1/8 core should
            // not take eight times as long to start on an idle worker.
            cpu_limit_millicores: request.cpu_millicores.max(BURST_MILLICORES),
            memory_mib: request.memory_mib,
            ..Resources::default()
        };
        let steps = Steps {
            pulled_ms,
            rootfs_ms,
            spec_ms: began.elapsed().as_millis(),
        };
        Ok((spec, steps))
    }

    /// Stops a container (SIGTERM, then SIGKILL after `grace`).
    pub fn stop(&self, container_id: ContainerId, grace: Duration) {
        let runtime = self.runtime.clone();
        let container_id = self.runtime_ids.resolve(&container_id);
        tokio::spawn(async move {
            if let Err(error) = runtime.stop(&container_id, grace).await {
                tracing::warn!(%container_id, %error, "cannot stop a container");
            }
        });
    }

    /// Stops the containers that have volumes bound in: their mount died
    /// and was replaced, and what they hold now only answers errors. Their
    /// stub starts fresh containers on the new mount.
    pub fn stop_volume_users(&self, grace: Duration) {
        let ids: Vec<ContainerId> = self
            .held
            .lock()
            .iter()
            .filter(|(_, h)| h.has_volumes)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            tracing::warn!(container_id = %id, "stopping a container whose volume mount died");
            self.stop(id, grace);
        }
    }

    /// Stops every container, for a worker shutting down.
    pub async fn stop_all(&self, grace: Duration) {
        let ids: Vec<ContainerId> = self
            .held
            .lock()
            .keys()
            .map(|id| self.runtime_ids.resolve(id))
            .collect();
        let stops = ids.iter().map(|id| self.runtime.stop(id, grace));
        let (stopped, ()) = tokio::join!(futures::future::join_all(stops), self.discard_spares());
        for result in stopped {
            if let Err(error) = result {
                tracing::warn!(%error, "cannot stop a container");
            }
        }
    }

    async fn report(&self, message: WorkerMessage) {
        // The receiver lives as long as the worker; a send fails only while
        // it shuts down, when nothing is left to tell.
        let _ = self.events.send(message).await;
    }
}
