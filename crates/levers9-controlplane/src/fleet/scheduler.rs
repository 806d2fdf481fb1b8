//! The scheduler: container requests wait in a backlog; each is placed on
//! a live, schedulable worker by [`placement::decide`], with its capacity
//! reserved atomically in the hot state, then handed to the worker's inbox.
//!
//! # The state machine of a request
//! ```text
//!  pending ──decide: Place──▶ reserve ──ok──▶ scheduled (sent to the worker)
//!     │  ▲                       │ lost the race: read that worker again,
//!     │  │                       └────────────▶ try the next choice
//!     │  └── decide: Wait ── back in the backlog after RETRY_DELAY
//!     │      (past PLACEMENT_DEADLINE ──▶ failed, "no worker … had room")
//!     └───── decide: Fail ──▶ failed, with the reason ("no pool offers GPU H200")
//! ```
//! Every replica runs this loop. Popping the backlog is atomic, so a request
//! is placed by one replica; reserving is atomic, so two replicas placing on
//! one worker never overcommit it. Each pop takes a batch and places it
//! round-robin by workspace, so one workspace's flood does not starve
//! another's requests; requests that must wait go to the back.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use levers9_api::v1::{
    controlplane_message, ControlplaneMessage, ObjectMount, RunContainer, StopContainer,
    VolumeMount,
};
use tokio::sync::watch;

use super::placement::{self, Ask, Decision, Offer};
use super::records::{state, ContainerRecord};
use super::{view, Fleet};
use crate::error::ApiError;

/// The backlog queue.
pub const BACKLOG: &str = "backlog";
/// How long a request may wait for room before it fails.
const PLACEMENT_DEADLINE: Duration = Duration::from_secs(300);
/// How long a request that found no room waits before it is tried again.
const RETRY_DELAY: Duration = Duration::from_millis(200);
/// How long one pop of the backlog waits.
const POP_WAIT: Duration = Duration::from_secs(1);
/// Requests taken from the backlog at once, at most.
const BATCH: usize = 256;

/// What became of one placement attempt.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Handed to a worker.
    Placed,
    /// No live worker has room now; try again later.
    NoRoom,
    /// Nothing to do: the request is gone, no longer pending, or failed.
    Done,
}

/// Places backlog requests until `stopped` turns true.
pub async fn run(fleet: Fleet, stopped: watch::Receiver<bool>) {
    let (tx, mut picture) = watch::channel(Arc::new(Vec::new()));
    tokio::spawn(view::run(fleet.clone(), tx, stopped.clone()));
    // Decide nothing on an empty picture: wait for the first reading.
    if picture.changed().await.is_err() {
        return;
    }
    let mut scheduler = Scheduler::new(fleet, picture);
    loop {
        if *stopped.borrow() {
            return;
        }
        // Not raced against the stop signal: a pop cancelled half-way could
        // lose the request it took. The stop is seen within POP_WAIT.
        let batch = match pop_batch(&scheduler.fleet).await {
            Ok(batch) => batch,
            Err(error) => {
                tracing::warn!(%error, "cannot read the backlog");
                tokio::time::sleep(RETRY_DELAY).await;
                continue;
            }
        };
        scheduler.place_batch(batch).await;
    }
}

async fn pop_batch(fleet: &Fleet) -> Result<Vec<String>, ApiError> {
    let mut batch = Vec::new();
    let Some(first) = fleet.state().pop(BACKLOG, POP_WAIT).await? else {
        return Ok(batch);
    };
    batch.push(String::from_utf8_lossy(&first).into_owned());
    while batch.len() < BATCH {
        match fleet.state().pop(BACKLOG, Duration::ZERO).await? {
            Some(bytes) => batch.push(String::from_utf8_lossy(&bytes).into_owned()),
            None => break,
        }
    }
    Ok(batch)
}

/// Orders requests round-robin by workspace, each workspace's in the
/// order they came.
pub fn fair_order(requests: Vec<ContainerRecord>) -> Vec<ContainerRecord> {
    let mut by_workspace: BTreeMap<String, VecDeque<ContainerRecord>> = BTreeMap::new();
    let mut first_seen = Vec::new();
    for request in requests {
        if !by_workspace.contains_key(&request.workspace_id) {
            first_seen.push(request.workspace_id.clone());
        }
        by_workspace
            .entry(request.workspace_id.clone())
            .or_default()
            .push_back(request);
    }
    let mut ordered = Vec::new();
    loop {
        let before = ordered.len();
        for workspace in &first_seen {
            if let Some(request) = by_workspace
                .get_mut(workspace)
                .and_then(VecDeque::pop_front)
            {
                ordered.push(request);
            }
        }
        if ordered.len() == before {
            return ordered;
        }
    }
}

/// One replica's scheduler: its picture of the fleet, adjusted by its own
/// placements until the next reading.
pub struct Scheduler {
    fleet: Fleet,
    picture: watch::Receiver<Arc<Vec<Offer>>>,
    offers: Vec<Offer>,
    /// When this scheduler last read the fleet itself, before failing a
    /// request on what the picture showed.
    read_at: DateTime<Utc>,
}

impl Scheduler {
    /// A scheduler deciding on the readings `picture` publishes.
    pub fn new(fleet: Fleet, picture: watch::Receiver<Arc<Vec<Offer>>>) -> Self {
        let offers = picture.borrow().as_ref().clone();
        Self {
            fleet,
            picture,
            offers,
            read_at: DateTime::<Utc>::MIN_UTC,
        }
    }

    /// Places a batch of requests by id, fairly; those that must wait go
    /// back to the backlog.
    pub async fn place_batch(&mut self, ids: Vec<String>) {
        let mut requests = Vec::with_capacity(ids.len());
        for id in ids {
            match self.fleet.container(&id).await {
                Ok(Some(c)) if c.state == state::PENDING => requests.push(c),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, container_id = %id, "cannot read a request; retrying");
                    requeue_later(self.fleet.clone(), id);
                }
            }
        }
        for mut container in fair_order(requests) {
            match self.place(&mut container).await {
                Ok(Outcome::Placed | Outcome::Done) => {}
                Ok(Outcome::NoRoom) => requeue_later(self.fleet.clone(), container.id),
                Err(error) => {
                    tracing::warn!(%error, container_id = %container.id, "placement failed; retrying");
                    requeue_later(self.fleet.clone(), container.id);
                }
            }
        }
    }

    /// One placement attempt; see the module's state machine.
    pub async fn place(&mut self, container: &mut ContainerRecord) -> Result<Outcome, ApiError> {
        if self.picture.has_changed().unwrap_or(false) {
            self.offers = self.picture.borrow_and_update().as_ref().clone();
        }
        let ask = ask(container);
        let mut decision = placement::decide(&ask, &self.offers, self.fleet.pools());
        if matches!(decision, Decision::Fail(_)) && self.read_at < container.created_at {
            // The picture may predate a worker that joined just before the
            // request: fail only on a reading newer than the request.
            self.read_at = Utc::now();
            self.offers = view::read(&self.fleet, &mut HashMap::new()).await?;
            decision = placement::decide(&ask, &self.offers, self.fleet.pools());
        }
        let choices = match decision {
            Decision::Fail(reason) => {
                fail(&self.fleet, container, reason).await?;
                return Ok(Outcome::Done);
            }
            Decision::Wait => Vec::new(),
            Decision::Place(choices) => choices,
        };
        for choice in choices {
            container.gpu_type = choice.gpu_type.clone().unwrap_or_default();
            for index in choice.offers {
                let worker_id = self.offers[index].worker_id.clone();
                if !self.fleet.try_reserve(&worker_id, container).await? {
                    self.reread(index).await?;
                    continue;
                }
                self.offers[index].take(&ask, choice.gpu_type.as_deref());
                container.state = state::SCHEDULED.to_owned();
                container.pool = self.offers[index].pool.clone();
                container.worker_id = worker_id;
                self.fleet.put_container(container).await?;
                send_run(&self.fleet, container).await?;
                tracing::info!(container_id = %container.id, worker_id = %container.worker_id, pool = %container.pool, gpu_type = %container.gpu_type, "container placed");
                return Ok(Outcome::Placed);
            }
        }
        container.gpu_type.clear();
        super::demand::note_waiting(&self.fleet, &ask, container).await;
        let waited = Utc::now() - container.created_at;
        if waited.to_std().unwrap_or_default() > PLACEMENT_DEADLINE {
            let pool = if container.pool.is_empty() {
                "any pool".to_owned()
            } else {
                format!("pool {}", container.pool)
            };
            let reason = format!(
                "no worker of {pool} had room for {} millicores, {} MiB and {} GPUs within {} s",
                container.cpu_millicores,
                container.memory_mib,
                container.gpu_count,
                PLACEMENT_DEADLINE.as_secs()
            );
            fail(&self.fleet, container, reason).await?;
            return Ok(Outcome::Done);
        }
        Ok(Outcome::NoRoom)
    }

    /// After a lost race: what the worker really has free now.
    async fn reread(&mut self, index: usize) -> Result<(), ApiError> {
        let id = self.offers[index].worker_id.clone();
        match (
            self.fleet.worker(&id).await?,
            self.fleet.free_capacity(&id).await?,
        ) {
            (Some(worker), Some(free)) => self.offers[index] = view::offer(&worker, &free),
            // Gone: nothing fits on it until the next reading.
            _ => {
                let offer = &mut self.offers[index];
                offer.free_cpu = 0;
                offer.free_memory = 0;
            }
        }
        Ok(())
    }
}

/// What a container request asks the scheduler for.
fn ask(c: &ContainerRecord) -> Ask {
    let has_gpus = !c.gpu_types.is_empty();
    Ask {
        pool: c.pool.clone(),
        cpu: i64::try_from(c.cpu_millicores).unwrap_or(i64::MAX),
        memory: i64::try_from(c.memory_mib).unwrap_or(i64::MAX),
        gpu_types: c.gpu_types.clone(),
        gpus: if has_gpus { i64::from(c.gpu_count) } else { 0 },
    }
}

fn requeue_later(fleet: Fleet, id: String) {
    tokio::spawn(async move {
        tokio::time::sleep(RETRY_DELAY).await;
        if let Err(error) = fleet.state().push(BACKLOG, id.as_bytes()).await {
            tracing::error!(%error, container_id = %id, "cannot put a request back in the backlog");
        }
    });
}

/// Marks a container failed for `reason` and tells followers.
pub async fn fail(
    fleet: &Fleet,
    container: &mut ContainerRecord,
    reason: String,
) -> Result<(), ApiError> {
    tracing::info!(container_id = %container.id, %reason, "container cannot be placed");
    container.state = state::FAILED.to_owned();
    container.message = reason;
    fleet.put_container(container).await?;
    fleet.publish_end(&container.id).await
}

/// Puts a run request in the inbox of the container's worker.
pub async fn send_run(fleet: &Fleet, c: &ContainerRecord) -> Result<(), ApiError> {
    let message = ControlplaneMessage {
        kind: Some(controlplane_message::Kind::Run(RunContainer {
            request_id: uuid::Uuid::now_v7().to_string(),
            container_id: c.id.clone(),
            image: c.image.clone(),
            args: c.args.clone(),
            env: c.env.clone().into_iter().collect(),
            cpu_millicores: c.cpu_millicores,
            memory_mib: c.memory_mib,
            secret_names: c.secrets.clone(),
            workspace_id: c.workspace_id.clone(),
            gpu_type: c.gpu_type.clone(),
            gpu_count: if c.gpu_type.is_empty() {
                0
            } else {
                c.gpu_count
            },
            objects: c
                .objects
                .iter()
                .map(|(digest, target, unpack)| ObjectMount {
                    digest: digest.clone(),
                    target: target.clone(),
                    unpack: *unpack,
                })
                .collect(),
            container_server: c.container_server,
            working_dir: c.working_dir.clone(),
            volumes: c
                .volumes
                .iter()
                .map(|(name, mount_path)| VolumeMount {
                    name: name.clone(),
                    mount_path: mount_path.clone(),
                })
                .collect(),
            host_network: c.host_network,
        })),
    };
    fleet.send_to_worker(&c.worker_id, message).await
}

/// Puts a stop request in the inbox of a container's worker.
pub async fn send_stop(fleet: &Fleet, worker_id: &str, container_id: &str) -> Result<(), ApiError> {
    let message = ControlplaneMessage {
        kind: Some(controlplane_message::Kind::Stop(StopContainer {
            request_id: uuid::Uuid::now_v7().to_string(),
            container_id: container_id.to_owned(),
        })),
    };
    fleet.send_to_worker(worker_id, message).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, workspace: &str) -> ContainerRecord {
        ContainerRecord {
            id: id.into(),
            workspace_id: workspace.into(),
            image: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            pool: String::new(),
            cpu_millicores: 1,
            memory_mib: 1,
            state: state::PENDING.into(),
            worker_id: String::new(),
            exit_code: 0,
            oom_killed: false,
            message: String::new(),
            created_at: Utc::now(),
            secrets: Vec::new(),
            gpu_types: Vec::new(),
            gpu_type: String::new(),
            gpu_count: 0,
            stub_id: String::new(),
            objects: Vec::new(),
            container_server: false,
            working_dir: String::new(),
            volumes: Vec::new(),
            host_network: false,
        }
    }

    #[test]
    fn a_flood_from_one_workspace_does_not_starve_another() {
        let mut batch: Vec<ContainerRecord> =
            (0..5).map(|i| request(&format!("a{i}"), "a")).collect();
        batch.push(request("b0", "b"));
        batch.push(request("b1", "b"));
        let order: Vec<String> = fair_order(batch).into_iter().map(|c| c.id).collect();
        assert_eq!(order, ["a0", "b0", "a1", "b1", "a2", "a3", "a4"]);
    }
}
