//! Spare function containers (`worker.spares`): after a function container
//! starts, the worker starts another of the same shape with no function
//! yet, whose runner imports what every runner imports and waits. The next
//! cold start of that shape adopts it: the function's code is linked into
//! the spare's (empty, read-only) code directory, and the runner is sent
//! the call's environment, loads the function and says hello. Under gVisor
//! most of a cold start is the sandbox and Python's imports, which a spare
//! has done before the call comes.
//!
//! A spare has a shape's everything but its code and its environment read
//! after the interpreter starts: the workspace, image, SDK, resources,
//! hardening (the pool's and the stub's), concurrency and the variables
//! read at start. Containers with
//! GPUs, volumes or the host's network get none. A spare serves one
//! container, is stopped after [`SPARE_IDLE`] unused, and is stopped
//! first when a container needs its room.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::RunContainer;
use levers9_ids::ContainerId;
use levers9_runtime::{BindMount, Container};
use levers9_sync::Lock;

use super::Supervisor;
use crate::container_server::ContainerServer;
use crate::security::{SecurityPolicy, Subject, PROFILE_VARIABLE, SECCOMP_VARIABLE};

/// How long a spare waits for a container to adopt it before it is stopped.
const SPARE_IDLE: Duration = Duration::from_secs(600);
/// How long a spare that is not wanted any more gets between SIGTERM and
/// SIGKILL: it runs nobody's code.
const SPARE_STOP_GRACE: Duration = Duration::from_secs(1);
/// The variable the controlplane names a function's code directory in.
const CODE_DIR_VARIABLE: &str = "LEVERS9_CODE_DIR";

/// How many spares a worker keeps, and the room they must fit in beside the
/// containers it holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpareOptions {
    /// At most this many at once (`worker.spares`, until the controlplane's
    /// value replaces it); 0: none.
    pub count: u32,
    /// The worker's CPU, in millicores.
    pub cpu_millicores: u64,
    /// The worker's memory, in MiB.
    pub memory_mib: u64,
}

/// The runtime's id of each container that runs in an adopted spare (the
/// spare's own), by the container's id.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuntimeIds(Arc<Lock<HashMap<ContainerId, ContainerId>>>);

impl RuntimeIds {
    /// The id the runtime knows the container `id` by.
    pub(crate) fn resolve(&self, id: &ContainerId) -> ContainerId {
        self.0.lock().get(id).cloned().unwrap_or_else(|| id.clone())
    }

    /// The container that adopted the spare `runtime_id`, if one did.
    pub(crate) fn container_of(&self, runtime_id: &ContainerId) -> Option<ContainerId> {
        let ids = self.0.lock();
        ids.iter()
            .find(|(_, spare)| *spare == runtime_id)
            .map(|(id, _)| id.clone())
    }
}

/// A spare that started.
pub(super) struct Spare {
    /// The shape it has: its run request without what is the call's.
    shape: RunContainer,
    id: ContainerId,
    pub(super) server: Arc<ContainerServer>,
    pub(super) container: Container,
    /// Empty until adopted; mounted read-only where the code goes.
    code_dir: PathBuf,
    /// The image it runs: a tag in its shape may name another by now.
    image: levers9_image::Digest,
    /// The hardening it started under: the controlplane's settings may
    /// have tightened it since.
    security: Arc<SecurityPolicy>,
}

/// The spares of a worker.
#[derive(Default)]
pub(super) struct Spares {
    options: SpareOptions,
    /// `options.count`, or what replaced it.
    count: AtomicU32,
    ready: Lock<Vec<Spare>>,
    /// The shapes of spares being started.
    starting: Lock<Vec<RunContainer>>,
}

impl Spares {
    pub(super) fn new(options: SpareOptions) -> Self {
        Spares {
            count: AtomicU32::new(options.count),
            options,
            ..Spares::default()
        }
    }

    /// Takes the spare `id` out, if it is still here.
    fn take(&self, id: &ContainerId) -> Option<Spare> {
        let mut ready = self.ready.lock();
        let at = ready.iter().position(|s| &s.id == id)?;
        Some(ready.remove(at))
    }
}

/// Whether the variable `name` takes effect when the container starts, so
/// a spare must start with the call's: Python, the C library and the
/// dynamic linker read it as the interpreter starts, or it is the stub's
/// hardening, which is applied to the container's spec.
fn fixed_at_start(name: &str) -> bool {
    ["PYTHON", "LD_", "LC_", "MALLOC_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || matches!(
            name,
            "LANG" | "LANGUAGE" | "TZ" | "HOME" | "PATH" | "GLIBC_TUNABLES"
        )
        || matches!(name, PROFILE_VARIABLE | SECCOMP_VARIABLE)
        // The server is bound for it, and the code's place is the spare's.
        || matches!(name, "LEVERS9_CONCURRENCY" | CODE_DIR_VARIABLE)
}

/// The shape of `request` a spare must have to serve it; `None` when no
/// spare can (not a function container, or GPUs, volumes, the host's
/// network).
fn shape(request: &RunContainer) -> Option<RunContainer> {
    if !request.container_server
        || request.gpu_count > 0
        || !request.volumes.is_empty()
        || request.host_network
    {
        return None;
    }
    let code = request.env.get(CODE_DIR_VARIABLE)?;
    let mut shape = request.clone();
    shape.container_id.clear();
    shape.request_id.clear();
    // Opened into the environment, which the adopting container sends.
    shape.secret_names.clear();
    shape.volume_storage = None;
    shape.env.retain(|name, _| fixed_at_start(name));
    let code_object = shape.objects.iter_mut().find(|o| &o.target == code)?;
    code_object.digest.clear();
    Some(shape)
}

/// The top-level module names `dir` holds (`pkg/`, `mod.py`, `ext.*.so`).
fn top_level_modules(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        names.push(name.split('.').next().unwrap_or_default().to_owned());
    }
    Ok(names)
}

/// Hard-links the tree `from` into the empty directory `to` (both on the
/// worker's state file system): a sandbox sees files linked into a
/// directory it has mounted, with no new mount.
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            link_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else {
            std::fs::hard_link(&source, &target)?;
        }
    }
    Ok(())
}

impl Supervisor {
    fn spares_dir(&self) -> PathBuf {
        self.state_dir.join("spares")
    }

    /// Starts a spare of `request`'s shape in the background, unless spares
    /// are off, it can have none, one is there or starting, or there is no
    /// room.
    pub(super) fn add_spare_like(&self, request: &RunContainer) {
        if self.spares.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(shape) = shape(request) else {
            return;
        };
        {
            let ready = self.spares.ready.lock();
            let mut starting = self.spares.starting.lock();
            let present = ready.iter().any(|s| s.shape == shape) || starting.contains(&shape);
            if present
                || ready.len() + starting.len()
                    >= self.spares.count.load(Ordering::Relaxed) as usize
                || !self.fits(
                    ready
                        .iter()
                        .map(|s| &s.shape)
                        .chain(starting.iter())
                        .chain([&shape]),
                )
            {
                return;
            }
            starting.push(shape.clone());
        }
        let this = self.clone();
        tokio::spawn(async move {
            let made = this.start_spare(&shape).await;
            let mut starting = this.spares.starting.lock();
            if let Some(at) = starting.iter().position(|s| s == &shape) {
                starting.remove(at);
            }
            if let Err(reason) = made {
                tracing::warn!(%reason, "cannot start a spare container");
            }
        });
    }

    /// Whether the held containers and spares of `shapes` fit in the worker.
    fn fits<'a>(&self, shapes: impl Iterator<Item = &'a RunContainer>) -> bool {
        let held = self.held.lock();
        let reserved = held
            .values()
            .map(|h| (h.cpu_millicores, h.memory_mib))
            .chain(shapes.map(|s| (s.cpu_millicores, s.memory_mib)));
        let (cpu, memory) = reserved.fold((0, 0), |(c, m), (dc, dm)| (c + dc, m + dm));
        cpu <= self.spares.options.cpu_millicores && memory <= self.spares.options.memory_mib
    }

    async fn start_spare(&self, shape: &RunContainer) -> Result<(), String> {
        let id = ContainerId::parse(format!("spare-{}", uuid::Uuid::new_v4().simple()))
            .map_err(|e| e.to_string())?;
        let code_target = shape
            .env
            .get(CODE_DIR_VARIABLE)
            .cloned()
            .unwrap_or_default();
        let code_dir = self.spares_dir().join(id.as_str()).join("code");
        std::fs::create_dir_all(&code_dir).map_err(|e| {
            format!(
                "cannot create the spare's code directory {}: {e}",
                code_dir.display()
            )
        })?;
        let mut request = shape.clone();
        request.container_id = id.to_string();
        request.objects.retain(|o| o.target != code_target);
        request.env.insert("LEVERS9_SPARE".into(), "1".into());
        let security = self.security();
        let subject = Subject {
            container_id: Some(id.clone()),
            stub_id: String::new(),
            pool: security.pool.clone(),
        };
        let server = self.bind_server(&id, subject, super::concurrency(&request))?;
        let started = async {
            let began = std::time::Instant::now();
            // Pulled again by `prepare`, from the cache: the digest that
            // the tag named now, which an adopting container's must be.
            let image = self
                .images
                .pull(&request.image)
                .await
                .map_err(|e| format!("cannot pull image {}: {e}", request.image))?
                .digest;
            let (mut spec, _) = self
                .prepare(began, &id, &request, None, &[], Some(&server))
                .await?;
            spec.mounts.push(BindMount {
                source: code_dir.clone(),
                destination: code_target,
                read_only: true,
            });
            let container = self
                .runtime
                .start(&spec)
                .await
                .map_err(|e| format!("cannot start the container: {e}"))?;
            Ok::<_, String>((container, image))
        }
        .await;
        let (container, image) = match started {
            Ok(started) => started,
            Err(reason) => {
                self.close_server(&server, &id).await;
                self.forget_spare(&id).await;
                return Err(reason);
            }
        };
        tracing::info!(container_id = %id, "a spare container started");
        let exit = container.clone();
        self.spares.ready.lock().push(Spare {
            shape: shape.clone(),
            id: id.clone(),
            server,
            container,
            code_dir,
            image,
            security,
        });
        // Whoever takes it out of `ready` owns it: a container that adopts
        // it, or this watch once it ends or idles.
        let this = self.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(SPARE_IDLE, exit.wait()).await;
            if let Some(spare) = this.spares.take(&id) {
                this.discard_spare(spare).await;
            }
        });
        Ok(())
    }

    /// A ready spare of `request`'s shape, taken for it.
    pub(super) fn take_spare(&self, request: &RunContainer) -> Option<Spare> {
        if self.spares.ready.lock().is_empty() {
            return None;
        }
        let shape = shape(request)?;
        let mut ready = self.spares.ready.lock();
        let at = ready.iter().position(|s| {
            s.shape == shape && s.security == self.security() && s.server.spare_modules().is_some()
        })?;
        Some(ready.remove(at))
    }

    /// Stops spares, oldest first, until `request` fits beside them.
    pub(super) fn make_room(&self, request: &RunContainer) {
        loop {
            let oldest = {
                let mut ready = self.spares.ready.lock();
                if ready.is_empty() || self.fits(ready.iter().map(|s| &s.shape)) {
                    return;
                }
                ready.remove(0)
            };
            tracing::info!(container_id = %oldest.id, for_container = %request.container_id, "stopping a spare container to make room");
            let this = self.clone();
            tokio::spawn(async move { this.discard_spare(oldest).await });
        }
    }

    /// Gives the spare `spare` the container `id` of `request`: its code
    /// linked in, its environment sent. `Err` gives the spare back, unused,
    /// when the code has a module the spare imported already (the code's
    /// would not be the one imported).
    pub(super) async fn adopt(
        &self,
        id: &ContainerId,
        request: &RunContainer,
        spare: Spare,
    ) -> Result<Container, (Spare, String)> {
        let code = request
            .env
            .get(CODE_DIR_VARIABLE)
            .cloned()
            .unwrap_or_default();
        let mut code_request = request.clone();
        code_request.objects.retain(|o| o.target == code);
        let (image, mounts) = tokio::join!(
            self.images.pull(&request.image),
            super::function::object_mounts(&self.objects, &code_request)
        );
        match image {
            Ok(image) if image.digest == spare.image => {}
            Ok(_) => return Err((spare, format!("{} names another image now", request.image))),
            Err(error) => {
                return Err((
                    spare,
                    format!("cannot pull image {}: {error}", request.image),
                ))
            }
        }
        let source = match mounts {
            Ok(mut mounts) if mounts.len() == 1 => mounts.remove(0).source,
            Ok(_) => return Err((spare, "the request has no code object".into())),
            Err(reason) => return Err((spare, reason)),
        };
        let imported = spare.server.spare_modules().unwrap_or_default();
        let (from, to) = (source.clone(), spare.code_dir.clone());
        let linked = tokio::task::spawn_blocking(move || {
            let clash = top_level_modules(&from)?
                .into_iter()
                .find(|name| imported.contains(name));
            if clash.is_none() {
                link_tree(&from, &to)?;
            }
            Ok::<_, std::io::Error>(clash)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| format!("cannot link the code into the spare: {e}")));
        match linked {
            Ok(None) => {}
            Ok(Some(module)) => {
                return Err((
                    spare,
                    format!("the code has a module {module:?}, which the spare imported already"),
                ))
            }
            Err(reason) => return Err((spare, reason)),
        }
        let mut env: BTreeMap<String, String> = request
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.insert("LEVERS9_CONTAINER_ID".into(), id.to_string());
        self.runtime_ids
            .0
            .lock()
            .insert(id.clone(), spare.id.clone());
        if !spare.server.assign(id, &env, &request.working_dir) {
            self.runtime_ids.0.lock().remove(id);
            return Err((spare, "the spare's runner is gone".into()));
        }
        self.servers.lock().remove(&spare.id);
        tracing::info!(container_id = %id, spare = %spare.id, "a container adopted a spare");
        self.add_spare_like(request);
        Ok(spare.container)
    }

    /// Stops an unused spare and removes what it had.
    pub(super) async fn discard_spare(&self, spare: Spare) {
        if let Err(error) = self.runtime.stop(&spare.id, SPARE_STOP_GRACE).await {
            tracing::debug!(container_id = %spare.id, %error, "cannot stop a spare container");
        }
        let _ = spare.container.wait().await;
        self.close_server(&spare.server, &spare.id).await;
        self.forget_spare(&spare.id).await;
        tracing::info!(container_id = %spare.id, "a spare container was stopped");
    }

    /// Removes what a spare container `runtime_id` leaves once it ended.
    pub(super) async fn forget_spare(&self, runtime_id: &ContainerId) {
        if let Err(error) = self.images.release(runtime_id).await {
            tracing::warn!(container_id = %runtime_id, %error, "cannot release the root filesystem");
        }
        let dir = self.spares_dir().join(runtime_id.as_str());
        if let Err(error) = tokio::fs::remove_dir_all(&dir).await {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(%error, dir = %dir.display(), "cannot remove a spare's directory");
            }
        }
    }

    /// Forgets that the container `id` ran in a spare, once it ended.
    pub(super) fn forget_runtime_id(&self, id: &ContainerId) -> ContainerId {
        self.runtime_ids
            .0
            .lock()
            .remove(id)
            .unwrap_or_else(|| id.clone())
    }

    /// Keeps `count` spares from now on; fewer stop those over it.
    pub fn set_spares(&self, count: u32) {
        if self.spares.count.swap(count, Ordering::Relaxed) != count {
            tracing::info!(count, "spare containers");
        }
        let over: Vec<Spare> = {
            let mut ready = self.spares.ready.lock();
            let over = ready.len().saturating_sub(count as usize);
            ready.drain(..over).collect()
        };
        for spare in over {
            let this = self.clone();
            tokio::spawn(async move { this.discard_spare(spare).await });
        }
    }

    /// How many spares wait for a container to adopt them.
    #[cfg(test)]
    pub(super) fn spares_waiting(&self) -> usize {
        let ready = self.spares.ready.lock();
        ready
            .iter()
            .filter(|s| s.server.spare_modules().is_some())
            .count()
    }

    /// Stops every spare, for a worker shutting down.
    pub(super) async fn discard_spares(&self) {
        let all = std::mem::take(&mut *self.spares.ready.lock());
        futures::future::join_all(all.into_iter().map(|s| self.discard_spare(s))).await;
    }
}

#[cfg(test)]
mod tests;
