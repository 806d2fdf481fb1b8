//! One build: a container on the build pool that runs the SDK's builder
//! (`python3 -m levers9.builder`) from the base image or the longest built
//! prefix of the steps, followed to its end.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use levers9_api::v1::{
    build_image_event, container_log_event, BuildImageEvent, BuildProgress, BuiltImage,
    ContainerLogEvent,
};
use tokio::sync::{broadcast, mpsc};

use super::spec::{Canonical, Step};
use super::ImageBuilds;
use super::ImageServiceError;
use crate::fleet::records::ContainerRecord;
use crate::scheduler::{self, send_stop};
use crate::Shared;

const SDK_DIR: &str = "/levers9/sdk";
const PIP_DIR: &str = "/levers9/build/pip";
const FILES_DIR: &str = "/levers9/build/files";
const BUILD_CPU_MILLICORES: u64 = 1000;
const BUILD_MEMORY_MIB: u64 = 2048;
/// Lines of the log a failure message ends with.
const TAIL_LINES: usize = 20;

/// What a caller of BuildImage hears.
#[derive(Debug, Clone)]
pub enum BuildEvent {
    /// Log lines and progress.
    Event(BuildImageEvent),
    /// The build failed, and why.
    Failed(String),
}

/// What the caller needs to start (or join) a build.
pub struct BuildRequest {
    /// The spec with its base image pinned to a digest; its id names the image
    /// built.
    pub canonical: Canonical,
    /// Ignore built images and steps.
    pub force: bool,
    /// The workspace the container and its objects belong to.
    pub workspace_id: String,
    /// Objects with the builder (the SDK) and pip.
    pub sdk_digest: String,
    /// See `sdk_digest`.
    pub pip_digest: String,
}

pub(super) fn done(image_id: &str, image_ref: String, cached: bool) -> BuildEvent {
    BuildEvent::Event(BuildImageEvent {
        kind: Some(build_image_event::Kind::Done(BuiltImage {
            image_id: image_id.to_owned(),
            image_ref,
            cached,
        })),
    })
}

pub(super) fn log(line: String) -> BuildEvent {
    BuildEvent::Event(BuildImageEvent {
        kind: Some(build_image_event::Kind::Log(line)),
    })
}

/// Starts the build of `request` or joins the identical one running here
/// (or follows it on another replica); its events arrive on the receiver,
/// the last being Done or Failed.
pub fn start(shared: &Arc<Shared>, request: BuildRequest) -> broadcast::Receiver<BuildEvent> {
    let images = &shared.images;
    let id = request.canonical.id();
    let mut running = images.running.lock();
    if let Some(sender) = running.get(&id) {
        tracing::info!(image_id = %id, "joining a running build");
        return sender.subscribe();
    }
    let (sender, receiver) = broadcast::channel(4096);
    running.insert(id.clone(), sender.clone());
    let shared = shared.clone();
    tokio::spawn(async move {
        let outcome = super::replicas::build_once(&shared, &request, &sender).await;
        let last = match outcome {
            Ok(event) => event,
            Err(error) => BuildEvent::Failed(error.to_string()),
        };
        // Sent under the lock, so a caller either joins before the end and
        // hears it, or finds no build and looks in the registry.
        let mut running = shared.images.running.lock();
        let _ = sender.send(last);
        running.remove(&id);
    });
    receiver
}

pub(super) async fn run(
    shared: &Arc<Shared>,
    request: &BuildRequest,
    events: &broadcast::Sender<BuildEvent>,
) -> Result<BuildEvent, ImageServiceError> {
    let images = &shared.images;
    let canonical = &request.canonical;
    let id = canonical.id();
    if !request.force {
        if let Some(digest) = images.existing(&id).await? {
            return Ok(done(&id, images.reference(&digest), true));
        }
    }
    if canonical.steps.is_empty() {
        // Nothing to build: the image is its base.
        return Ok(done(&id, canonical.base.clone(), true));
    }
    let (start, from) = start_point(images, canonical, request.force).await?;
    if from > 0 {
        let _ = events.send(log(format!(
            "steps 1-{from} of {} are built already: starting after them",
            canonical.steps.len()
        )));
    }
    // Credentials reach the build container in its environment as it goes
    // to its worker (fleet::attach), and the builder takes them out before
    // any step runs (see levers9.builder).
    let registry_auth_hosts = images.build_registry_hosts(&start);
    let container = container(images, request, &start, from, registry_auth_hosts)?;
    shared
        .fleet
        .require_pool(&container.pool)
        .await
        .map_err(|_| ImageServiceError::NoBuildPool(container.pool.clone()))?;
    let fleet = &shared.fleet;
    let live = fleet.follow_container(&container.id).await?;
    scheduler::enqueue(&shared.scheduling, &container).await?;
    tracing::info!(image_id = %id, container_id = %container.id, from, "image build started");
    let (tx, mut rx) = mpsc::channel(256);
    tokio::spawn(crate::fleet::follow_logs(
        fleet.clone(),
        container.id.clone(),
        Some(live),
        tx,
    ));
    let mut watch = Watch::default();
    let deadline = tokio::time::Instant::now() + images.timeout;
    loop {
        let next = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(next) => next,
            Err(_) => {
                if let Some(record) = fleet.container(&container.id).await? {
                    let _ = send_stop(fleet, &record.worker_id, &container.id).await;
                }
                return Ok(BuildEvent::Failed(format!(
                    "the build of image {id} ran past {} s (imageService.buildTimeoutSeconds) \
                     and was stopped{}",
                    images.timeout.as_secs(),
                    watch.tail()
                )));
            }
        };
        let Some(Ok(ContainerLogEvent { kind: Some(kind) })) = next else {
            return Ok(BuildEvent::Failed(format!(
                "lost track of build container {}{}",
                container.id,
                watch.tail()
            )));
        };
        match kind {
            container_log_event::Kind::Log(chunk) => {
                for event in watch.feed(&chunk.data) {
                    let _ = events.send(event);
                }
            }
            container_log_event::Kind::Exited(ended) => {
                for event in watch.feed(b"\n") {
                    let _ = events.send(event);
                }
                return Ok(watch.outcome(images, &id, canonical, &ended));
            }
        }
    }
}

/// Where a build begins: the longest built prefix of the steps, or the
/// base image; and how many steps that covers.
async fn start_point(
    images: &ImageBuilds,
    canonical: &Canonical,
    force: bool,
) -> Result<(String, usize), ImageServiceError> {
    if !force {
        for n in (1..canonical.steps.len()).rev() {
            if let Some(digest) = images.existing(&canonical.prefix(n).id()).await? {
                return Ok((images.reference(&digest), n));
            }
        }
    }
    Ok((canonical.base.clone(), 0))
}

fn container(
    images: &ImageBuilds,
    request: &BuildRequest,
    start: &str,
    from: usize,
    registry_auth_hosts: Vec<String>,
) -> Result<ContainerRecord, ImageServiceError> {
    let canonical = &request.canonical;
    let steps = &canonical.steps[from..];
    let missing = |what: &str| ImageServiceError::MissingBuildObject(what.to_owned());
    if request.sdk_digest.is_empty() {
        return Err(missing("sdk_digest (the SDK, which holds the builder)"));
    }
    let mut objects = vec![(request.sdk_digest.clone(), SDK_DIR.to_owned(), true)];
    if steps.iter().any(|s| matches!(s, Step::Pip { .. })) {
        if request.pip_digest.is_empty() {
            return Err(missing("pip_digest (pip, to install Python packages)"));
        }
        objects.push((request.pip_digest.clone(), PIP_DIR.to_owned(), true));
    }
    for step in steps {
        if let Step::Files { digest, .. } = step {
            let hex = digest.trim_start_matches("sha256:");
            objects.push((digest.clone(), format!("{FILES_DIR}/{hex}"), true));
        }
    }
    let job = serde_json::json!({
        "registry": images.host,
        "repository": images.repository,
        "start": start,
        "total": canonical.steps.len(),
        "steps": (from..canonical.steps.len()).map(|i| {
            let prefix = canonical.prefix(i + 1);
            serde_json::json!({"step": canonical.steps[i], "id": prefix.id(), "spec": prefix.to_json()})
        }).collect::<Vec<_>>(),
    });
    let env: BTreeMap<String, String> = [
        ("LEVERS9_BUILD", job.to_string()),
        ("LEVERS9_PIP_PATH", PIP_DIR.to_owned()),
        ("LEVERS9_APT_MIRROR", images.apt_mirror.clone()),
        ("LEVERS9_APT_SUITE", images.apt_suite.clone()),
        ("PYTHONPATH", SDK_DIR.to_owned()),
        ("PYTHONUNBUFFERED", "1".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Ok(ContainerRecord {
        args: ["python3", "-m", "levers9.builder"]
            .map(str::to_owned)
            .to_vec(),
        env,
        pool: images.pool.clone(),
        cpu_millicores: BUILD_CPU_MILLICORES,
        memory_mib: BUILD_MEMORY_MIB,
        objects,
        working_dir: "/".to_owned(),
        host_network: true,
        registry_auth_hosts,
        ..ContainerRecord::pending(request.workspace_id.clone(), start)
    })
}

/// Reads the builder's output: progress and result markers, and the tail.
#[derive(Default)]
struct Watch {
    partial: Vec<u8>,
    tail: VecDeque<String>,
    image: Option<String>,
    failed_step: Option<(usize, i32)>,
    error: Option<String>,
}

impl Watch {
    fn feed(&mut self, data: &[u8]) -> Vec<BuildEvent> {
        self.partial.extend_from_slice(data);
        let mut out = Vec::new();
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]).into_owned();
            if let Some(event) = self.line(line) {
                out.push(event);
            }
        }
        out
    }

    fn line(&mut self, line: String) -> Option<BuildEvent> {
        let Some(marker) = line.strip_prefix("::levers9 ") else {
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line.clone());
            return Some(log(line));
        };
        let (word, rest) = marker.split_once(' ').unwrap_or((marker, ""));
        match word {
            "step" => {
                let (counts, description) = rest.split_once(' ').unwrap_or((rest, ""));
                let (step, steps) = counts.split_once('/').unwrap_or(("0", "0"));
                Some(BuildEvent::Event(BuildImageEvent {
                    kind: Some(build_image_event::Kind::Progress(BuildProgress {
                        step: step.parse().unwrap_or(0),
                        steps: steps.parse().unwrap_or(0),
                        description: description.to_owned(),
                    })),
                }))
            }
            "image" => {
                self.image = Some(rest.to_owned());
                None
            }
            "failed" => {
                let (step, code) = rest.split_once(' ').unwrap_or((rest, "1"));
                self.failed_step = Some((step.parse().unwrap_or(0), code.parse().unwrap_or(1)));
                None
            }
            "error" => {
                self.error = Some(rest.to_owned());
                None
            }
            _ => None,
        }
    }

    fn tail(&self) -> String {
        if self.tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = self.tail.iter().map(String::as_str).collect();
        format!("; the build log ended with:\n{}", lines.join("\n"))
    }

    fn outcome(
        &self,
        images: &ImageBuilds,
        id: &str,
        canonical: &Canonical,
        ended: &levers9_api::v1::Container,
    ) -> BuildEvent {
        if let (Some(digest), 0, levers9_api::v1::ContainerState::Exited) =
            (&self.image, ended.exit_code, ended.state())
        {
            return done(id, images.reference(digest), false);
        }
        let why = if let Some((step, code)) = self.failed_step {
            let what = canonical
                .steps
                .get(step.saturating_sub(1))
                .map(|s| serde_json::to_string(s).unwrap_or_default())
                .unwrap_or_default();
            format!(
                "step {step} of {} ({what}) failed with exit code {code}",
                canonical.steps.len()
            )
        } else if let Some(error) = &self.error {
            format!("the build failed: {error}")
        } else if ended.oom_killed {
            format!("the build container ran out of memory ({BUILD_MEMORY_MIB} MiB)")
        } else if !ended.message.is_empty() {
            format!("the build container failed: {}", ended.message)
        } else {
            format!(
                "the build container ended with exit code {} and no image",
                ended.exit_code
            )
        };
        BuildEvent::Failed(format!("image {id}: {why}{}", self.tail()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical() -> Canonical {
        Canonical {
            base: "r/p@sha256:00".into(),
            python_version: String::new(),
            steps: vec![Step::Run {
                commands: vec!["exit 3".into()],
            }],
        }
    }

    #[test]
    fn markers_become_progress_and_a_failure_names_step_code_and_tail() {
        let images = ImageBuilds::new(&Default::default(), "127.0.0.1:5000");
        let mut watch = Watch::default();
        // Chunks split lines anywhere.
        let mut events = watch.feed(b"::levers9 step 1/1 run ex");
        events.extend(watch.feed(b"it 3\nabout to fail\n::levers9 failed 1 3\n"));
        assert!(matches!(
            &events[0],
            BuildEvent::Event(BuildImageEvent {
                kind: Some(build_image_event::Kind::Progress(BuildProgress {
                    step: 1,
                    steps: 1,
                    ..
                }))
            })
        ));
        assert_eq!(events.len(), 2, "markers are not log lines: {events:?}");
        let ended = levers9_api::v1::Container {
            state: levers9_api::v1::ContainerState::Exited.into(),
            exit_code: 1,
            ..Default::default()
        };
        let BuildEvent::Failed(message) = watch.outcome(&images, "id", &canonical(), &ended) else {
            panic!("a failed step is a failed build");
        };
        assert!(message.contains("step 1 of 1"), "{message}");
        assert!(message.contains("exit code 3"), "{message}");
        assert!(message.ends_with("about to fail"), "{message}");
    }

    #[test]
    fn an_image_marker_and_a_clean_exit_are_a_built_image() {
        let images = ImageBuilds::new(&Default::default(), "127.0.0.1:5000/team");
        let mut watch = Watch::default();
        watch.feed(b"::levers9 image sha256:ab\n");
        let ended = levers9_api::v1::Container {
            state: levers9_api::v1::ContainerState::Exited.into(),
            ..Default::default()
        };
        let BuildEvent::Event(BuildImageEvent {
            kind: Some(build_image_event::Kind::Done(done)),
        }) = watch.outcome(&images, "id", &canonical(), &ended)
        else {
            panic!("built");
        };
        assert_eq!(done.image_ref, "127.0.0.1:5000/team/images@sha256:ab");
        assert!(!done.cached);
    }
}
