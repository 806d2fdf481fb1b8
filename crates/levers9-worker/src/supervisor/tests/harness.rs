//! What the supervisor's tests run it on: a fake runtime, images that are
//! plain directories, one object, volumes in a local directory; and how
//! they drive it and read its reports.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use levers9_api::v1::{
    worker_message, ContainerEvent, ContainerEventState, LogChunk, RunContainer, WorkerMessage,
};
use levers9_ids::ContainerId;
use levers9_image::{Digest, Image, ImageConfig, ImageError, ImageReference, Rootfs};
use levers9_runtime::{ContainerSpec, Exit};
use levers9_sync::Lock;
use levers9_volumes::{FormatMode, Volumes};
use tokio::sync::mpsc;

use crate::fake_runtime::FakeRuntime;
use crate::objects::tests::{digest_of, source_of, zip_of};
use crate::objects::ObjectCache;
use crate::supervisor::images::Images;
use crate::supervisor::{SpareOptions, Supervisor, SupervisorOptions};

pub(super) const IMAGE: &str = "127.0.0.1:5000/levers9/app:1";
pub(super) const NO_COMMAND: &str = "127.0.0.1:5000/levers9/bare:1";

/// Images by reference, and root file systems as plain directories; keeps
/// which are prepared.
pub(super) struct FakeImages {
    pub(super) root: PathBuf,
    configs: HashMap<String, ImageConfig>,
    prepared: Lock<HashSet<String>>,
    /// How many times each reference was pushed again: its digest changes.
    pushes: Lock<HashMap<String, u32>>,
}

impl FakeImages {
    /// Another image is pushed under `reference`.
    pub(super) fn push(&self, reference: &str) {
        *self.pushes.lock().entry(reference.to_owned()).or_default() += 1;
    }
}

#[async_trait]
impl Images for FakeImages {
    async fn pull(&self, reference: &str) -> Result<Image, ImageError> {
        let parsed = ImageReference::parse(reference)?;
        let config = self
            .configs
            .get(reference)
            .cloned()
            .ok_or_else(|| ImageError::NotFound {
                reference: reference.to_owned(),
                registry: parsed.registry().to_owned(),
            })?;
        let digest = match self.pushes.lock().get(reference) {
            None => Digest::of(reference.as_bytes()),
            Some(pushes) => Digest::of(format!("{reference}#{pushes}").as_bytes()),
        };
        Ok(Image {
            reference: parsed,
            digest: digest.clone(),
            config_digest: digest,
            layers: Vec::new(),
            config,
        })
    }

    async fn prepare_rootfs(
        &self,
        image: &Image,
        container_id: &ContainerId,
    ) -> Result<Rootfs, ImageError> {
        let path = self.root.join(container_id);
        std::fs::create_dir_all(&path).expect("rootfs");
        self.prepared.lock().insert(container_id.to_string());
        Ok(Rootfs {
            container_id: container_id.clone(),
            path,
            image: image.digest.clone(),
        })
    }

    async fn release(&self, container_id: &ContainerId) -> Result<(), ImageError> {
        self.prepared.lock().remove(container_id.as_str());
        Ok(())
    }
}

/// The one object stored: a function's code, a zip of `app.py`.
pub(super) fn code() -> Vec<u8> {
    zip_of(&[("app.py", "print('hello')\n", 0o644)])
}

pub(super) struct Harness {
    pub(super) supervisor: Supervisor,
    pub(super) events: mpsc::Receiver<WorkerMessage>,
    pub(super) runtime: Arc<FakeRuntime>,
    pub(super) images: Arc<FakeImages>,
    pub(super) volumes: Volumes,
    pub(super) dir: tempfile::TempDir,
}

/// A supervisor of worker `w1` with two `h100` GPUs, `0` and `1`, and its
/// volumes in a local directory.
pub(super) fn harness() -> Harness {
    harness_with(SpareOptions::default())
}

/// As [`harness`], keeping spares as `spares` says.
pub(super) fn harness_with(spares: SpareOptions) -> Harness {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = Arc::new(FakeRuntime::default());
    let images = Arc::new(FakeImages {
        root: dir.path().join("rootfs"),
        configs: HashMap::from([
            (
                IMAGE.to_owned(),
                ImageConfig {
                    entrypoint: vec!["/bin/app".into()],
                    cmd: vec!["--serve".into()],
                    env: vec!["PATH=/bin".into(), "MODE=image".into()],
                    working_dir: Some("/srv".into()),
                    user: None,
                },
            ),
            (NO_COMMAND.to_owned(), ImageConfig::default()),
        ]),
        prepared: Lock::default(),
        pushes: Lock::default(),
    });
    let objects = ObjectCache::open(
        dir.path().join("objects"),
        Arc::new(source_of(&[(&digest_of(&code()), code())])),
    )
    .expect("cache");
    let mut config = levers9_config::Config::default();
    config.storage.volumes.local_dir = dir.path().join("volumes").display().to_string();
    let volumes = Volumes::new(&config, dir.path(), FormatMode::CreateOnly);
    let (supervisor, events) = Supervisor::with_images(
        runtime.clone(),
        images.clone(),
        objects,
        SupervisorOptions {
            worker_id: "w1".into(),
            state_dir: dir.path().join("state"),
            gpus: vec![("h100".into(), vec!["0".into(), "1".into()])],
            security: crate::security::SecurityPolicy::default(),
            metrics: crate::security::SecurityMetrics::default(),
            volumes: volumes.clone(),
            cdi_spec_dirs: Vec::new(),
            named: None,
            spares,
        },
    );
    Harness {
        supervisor,
        events,
        runtime,
        images,
        volumes,
        dir,
    }
}

pub(super) fn request(id: &str) -> RunContainer {
    RunContainer {
        container_id: id.into(),
        image: IMAGE.into(),
        workspace_id: "ws1".into(),
        cpu_millicores: 250,
        memory_mib: 128,
        ..RunContainer::default()
    }
}

pub(super) fn with_gpus(id: &str, count: u32) -> RunContainer {
    RunContainer {
        gpu_type: "h100".into(),
        gpu_count: count,
        ..request(id)
    }
}

impl Harness {
    pub(super) async fn next(&mut self) -> worker_message::Kind {
        tokio::time::timeout(Duration::from_secs(10), self.events.recv())
            .await
            .expect("a report within 10 s")
            .expect("the reports go on")
            .kind
            .expect("a report says what it is")
    }

    /// The next report, a container event.
    pub(super) async fn event(&mut self) -> ContainerEvent {
        match self.next().await {
            worker_message::Kind::Event(event) => event,
            other => panic!("expected a container event, got {other:?}"),
        }
    }

    /// The next report, a container's failure: its id and message.
    pub(super) async fn failure(&mut self) -> (String, String) {
        let event = self.event().await;
        assert_eq!(
            event.state(),
            ContainerEventState::Failed,
            "expected a failure, got {event:?}"
        );
        (event.container_id, event.message)
    }

    /// The next report, output.
    pub(super) async fn log(&mut self) -> LogChunk {
        match self.next().await {
            worker_message::Kind::Log(chunk) => chunk,
            other => panic!("expected output, got {other:?}"),
        }
    }

    /// Runs `request` and waits for it to be running.
    pub(super) async fn start(&mut self, request: RunContainer) {
        let id = request.container_id.clone();
        self.supervisor.run(request);
        let event = self.event().await;
        assert_eq!(
            (event.container_id.as_str(), event.state()),
            (id.as_str(), ContainerEventState::Running)
        );
    }

    /// Runs `id` to its exit and returns every report since, which must
    /// end with its exit: a fence after which any report still due from
    /// before would have shown.
    pub(super) async fn fence(&mut self, id: &str) -> Vec<worker_message::Kind> {
        self.supervisor.run(request(id));
        let mut seen = Vec::new();
        loop {
            let kind = self.next().await;
            let running = matches!(&kind, worker_message::Kind::Event(e) if e.container_id == id && e.state() == ContainerEventState::Running);
            let exited = matches!(&kind, worker_message::Kind::Event(e) if e.container_id == id && e.state() == ContainerEventState::Exited);
            seen.push(kind);
            if running {
                self.runtime.exit(id, Exit::Code(0));
            }
            if exited {
                return seen;
            }
        }
    }

    /// Asserts nothing about containers other than `fence` comes before
    /// the fence's exit.
    pub(super) async fn assert_no_more_reports(&mut self) {
        let seen = self.fence("fence").await;
        let others: Vec<_> = seen
            .iter()
            .filter(
                |kind| !matches!(kind, worker_message::Kind::Event(e) if e.container_id == "fence"),
            )
            .collect();
        assert!(others.is_empty(), "reported again: {others:?}");
    }

    pub(super) fn spec_of(&self, id: &str) -> ContainerSpec {
        self.runtime
            .started()
            .into_iter()
            .rfind(|spec| spec.id.as_str() == id)
            .unwrap_or_else(|| panic!("{id} was never started"))
    }

    pub(super) fn held(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .supervisor
            .running()
            .into_iter()
            .map(|c| c.container_id)
            .collect();
        ids.sort();
        ids
    }

    pub(super) fn prepared(&self) -> HashSet<String> {
        self.images.prepared.lock().clone()
    }

    pub(super) fn run_dir(&self, id: &str) -> PathBuf {
        self.dir.path().join("state/run").join(id)
    }
}

pub(super) fn env_of<'a>(spec: &'a ContainerSpec, key: &str) -> Vec<&'a str> {
    spec.env
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}
