//! The scheduler: container requests wait in a backlog; each replica takes
//! them in batches, decides the whole batch in memory on its picture of the
//! fleet ([`placement::decide`], each placement taken from the picture before
//! the next request is decided), reserves every placement in one atomic step
//! in the hot state, then writes the records and fills the workers' inboxes:
//! a handful of round trips per batch, not several per request.
//!
//! # The state machine of a request
//! ```text
//!  pending ──decide: Place──▶ reserved with its batch ──ok──▶ scheduled (sent to the worker)
//!     │  ▲                       │ lost the race: the picture takes what that
//!     │  │                       │ worker has now; decided again with the
//!     │  │                       └──▶ batch's other losers (ROUNDS in all, then
//!     │  │                            back in the backlog)
//!     │  └── decide: Wait ── back in the backlog after RETRY_DELAY
//!     │      (past PLACEMENT_DEADLINE ──▶ failed, "no worker … had room")
//!     ├───── withdrawn by its owner ──▶ failed, with the owner's reason
//!     └───── decide: Fail ──▶ failed, with the reason ("no pool offers GPU H200")
//! ```
//!
//! # Guarantees
//! - A request is placed by one replica: taking from the backlog is atomic.
//! - A request taken is not lost with its replica: each batch is claimed
//!   (moved from the backlog to the replica's claims list in one step) and
//!   settled when done; a dead replica's pending requests go back to the
//!   backlog ([`claims`]).
//! - No worker is overcommitted, whatever the replicas' pictures say: each
//!   reservation of a batch is checked and taken atomically in the hot
//!   state, and a refused one reports what the worker really has.
//! - Fairness: a batch is decided round-robin by workspace, so one
//!   workspace's flood does not starve another's requests; requests that
//!   must wait go to the back of the backlog.
//! - A request placed is recorded (`scheduled`, with its worker) before its
//!   run request reaches the worker.
//!
//! # Keys
//! Queue [`BACKLOG`]; per replica, list `backlog-claims:<replica>` and kv
//! `scheduler-alive:<replica>`, in set `schedulers` ([`claims`]); kv
//! `withdrawn:<id>` (`withdrawals`); per pool, set `pool-waiting:<pool>`
//! and kv `cluster-agent:<pool>` (`demand`).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use levers9_api::v1::{controlplane_message, ControlplaneMessage, StopContainer};
use levers9_state::{keys, Reservation, Write};
use tokio::sync::watch;

use crate::error::ApiError;
use crate::fleet::records::{ContainerRecord, ContainerState};
use crate::fleet::{inbox, Fleet, FreeCapacity};
use placement::{Ask, Decision, Offer};

pub mod claims;
pub(crate) mod demand;
pub mod placement;
pub mod view;
mod withdrawals;

/// The hot-state queue of container ids waiting to be placed; the schedulers
/// claim from it, and put back what found no room.
pub const BACKLOG: &str = "backlog";
/// How long a request may wait for room before it fails.
pub(crate) const PLACEMENT_DEADLINE: Duration = Duration::from_secs(300);
/// How long a request that found no room waits before it is tried again.
const RETRY_DELAY: Duration = Duration::from_millis(200);
/// How long one pop of the backlog waits.
const POP_WAIT: Duration = Duration::from_secs(1);
/// Requests taken from the backlog at once, at most.
const BATCH: usize = 256;
/// Times the requests of a batch that lost a race are decided again (on the
/// corrected picture) before they go back to the backlog: replicas racing
/// for the same workers settle within a round or two.
const ROUNDS: usize = 3;

/// What became of the requests of one batch.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Handed to a worker.
    pub placed: usize,
    /// Back in the backlog: no room now, races lost [`ROUNDS`] times, or an
    /// error of the hot state.
    pub requeued: usize,
    /// Failed, with the reason on the record.
    pub failed: usize,
}

/// Places backlog requests until `stopped` turns true, as replica
/// `replica`.
pub(crate) async fn run(fleet: Fleet, replica: String, stopped: watch::Receiver<bool>) {
    let (tx, mut picture) = watch::channel(Arc::new(Vec::new()));
    tokio::spawn(view::run(fleet.clone(), tx, stopped.clone()));
    // Decide nothing on an empty picture: wait for the first reading.
    if picture.changed().await.is_err() {
        return;
    }
    let mut scheduler = Scheduler::new(fleet, picture, &replica);
    let mut refreshed: Option<Instant> = None;
    loop {
        if *stopped.borrow() {
            // Requests still claimed (put back later than the stop) go back
            // at the next sweep of any replica.
            if let Err(error) = claims::forget(&scheduler.fleet, &replica).await {
                tracing::warn!(%error, "cannot say this scheduler stopped");
            }
            return;
        }
        if refreshed.is_none_or(|at| at.elapsed() >= claims::ALIVE_TTL / 6) {
            match claims::refresh(&scheduler.fleet, &replica, refreshed.is_none()).await {
                Ok(()) => refreshed = Some(Instant::now()),
                Err(error) => tracing::warn!(%error, "cannot say this scheduler is alive"),
            }
        }
        // Not raced against the stop signal: a claim cancelled half-way
        // could leave its request claimed until this replica counts as
        // dead. The stop is seen within POP_WAIT.
        let batch = match scheduler.pop_batch().await {
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

/// Orders requests round-robin by workspace, each workspace's in the
/// order they came.
fn fair_order(requests: Vec<ContainerRecord>) -> Vec<ContainerRecord> {
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
    /// Sorted by worker id, as every reading is.
    offers: Vec<Offer>,
    /// When this scheduler last read the fleet itself, before failing a
    /// request on what the picture showed.
    read_at: DateTime<Utc>,
    /// Its claims list ([`keys::backlog_claims`]).
    claims: String,
}

/// What a pass over a batch has done so far.
#[derive(Default)]
struct Pass {
    outcome: Outcome,
    /// Requests to put back in the backlog.
    back: Vec<String>,
    /// Their pools' demand, counted in one write at the end.
    waiting: Vec<Write>,
}

/// A request decided in memory, its reservation not yet made.
struct Decided {
    container: ContainerRecord,
    ask: Ask,
    worker_id: String,
    pool: String,
    gpu_type: Option<String>,
}

impl Scheduler {
    /// A scheduler deciding on the readings `picture` publishes.
    pub fn new(fleet: Fleet, picture: watch::Receiver<Arc<Vec<Offer>>>, replica: &str) -> Self {
        let offers = picture.borrow().as_ref().clone();
        Self {
            fleet,
            picture,
            offers,
            read_at: DateTime::<Utc>::MIN_UTC,
            claims: keys::backlog_claims(replica),
        }
    }

    /// Claims up to [`BATCH`] request ids from the backlog, waiting up to a
    /// second for the first; empty if none came.
    pub async fn pop_batch(&self) -> Result<Vec<String>, ApiError> {
        let state = self.fleet.state();
        let Some(first) = state.claim(BACKLOG, &self.claims, POP_WAIT).await? else {
            return Ok(Vec::new());
        };
        let mut batch = vec![first];
        match state.claim_many(BACKLOG, &self.claims, BATCH - 1).await {
            Ok(more) => batch.extend(more),
            // The first is claimed already: place it, not strand it.
            Err(error) => tracing::warn!(%error, "cannot read the rest of the backlog"),
        }
        Ok(batch
            .into_iter()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .collect())
    }

    /// Places a batch of requests by id, fairly; see the module's state
    /// machine. Those that must wait go back to the backlog.
    pub async fn place_batch(&mut self, ids: Vec<String>) -> Outcome {
        let mut pass = Pass::default();
        let taken = ids.clone();
        let requests = self.pending(ids, &mut pass).await;
        if self.picture.has_changed().unwrap_or(false) {
            self.offers = self.picture.borrow_and_update().as_ref().clone();
        }
        let mut undecided = fair_order(requests);
        for _ in 0..ROUNDS {
            if undecided.is_empty() {
                break;
            }
            let decided = self.decide_all(undecided, &mut pass).await;
            undecided = self.reserve(decided, &mut pass).await;
        }
        pass.back.extend(undecided.into_iter().map(|c| c.id));
        pass.outcome.requeued = pass.back.len();
        if !pass.waiting.is_empty() {
            if let Err(error) = self.fleet.state().write_batch(&pass.waiting).await {
                tracing::warn!(%error, requests = pass.waiting.len(), "cannot count waiting requests in their pools' demand");
            }
        }
        self.settle(taken, pass.back).await;
        pass.outcome
    }

    /// Drops the batch's settled requests from this replica's claims, and
    /// puts those in `back` from its claims into the backlog after
    /// [`RETRY_DELAY`]. A failure leaves them claimed: the reaper puts
    /// back what is still pending once this replica is gone.
    async fn settle(&self, taken: Vec<String>, back: Vec<String>) {
        let waiting: HashSet<&String> = back.iter().collect();
        let done: Vec<Vec<u8>> = taken
            .iter()
            .filter(|id| !waiting.contains(id))
            .map(|id| id.clone().into_bytes())
            .collect();
        if let Err(error) = self.fleet.state().unclaim(&self.claims, &done, None).await {
            tracing::warn!(%error, requests = done.len(), "cannot settle a batch's claims");
        }
        if back.is_empty() {
            return;
        }
        let (fleet, claims) = (self.fleet.clone(), self.claims.clone());
        tokio::spawn(async move {
            tokio::time::sleep(RETRY_DELAY).await;
            let items: Vec<Vec<u8>> = back.iter().map(|id| id.clone().into_bytes()).collect();
            if let Err(error) = fleet.state().unclaim(&claims, &items, Some(BACKLOG)).await {
                tracing::error!(%error, requests = back.len(), container_ids = ?back, "cannot put requests back in the backlog");
            }
        });
    }

    /// The records of the requests still pending, read with their owners'
    /// withdrawals at once; withdrawn ones are failed here. If the marks
    /// cannot be read, none counts as withdrawn: a withdrawn container that
    /// runs is stopped by its owner, which costs a start and loses nothing.
    async fn pending(&self, ids: Vec<String>, pass: &mut Pass) -> Vec<ContainerRecord> {
        let (records, marks) =
            futures::join!(self.fleet.containers(&ids), self.fleet.withdrawals(&ids));
        let records = match records {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(%error, "cannot read a batch of requests; retrying");
                pass.back.extend(ids);
                return Vec::new();
            }
        };
        let marks = marks.unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot read which requests were withdrawn");
            vec![None; ids.len()]
        });
        let mut pending = Vec::with_capacity(ids.len());
        let mut seen = HashSet::with_capacity(ids.len());
        for ((id, record), withdrawn) in ids.into_iter().zip(records).zip(marks) {
            match record {
                Ok(Some(c)) if c.state == ContainerState::Pending && seen.insert(id.clone()) => {
                    match withdrawn {
                        Some(reason) => self.fail(c, reason, pass).await,
                        None => pending.push(c),
                    }
                }
                // Gone, placed already, or an id pushed twice (placed once).
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, container_id = %id, "cannot read a request; retrying");
                    pass.back.push(id);
                }
            }
        }
        pending
    }

    /// Decides each request on the picture, in order, taking each placement
    /// from the picture before the next is decided; those that must wait or
    /// cannot run are dealt with here.
    async fn decide_all(
        &mut self,
        requests: Vec<ContainerRecord>,
        pass: &mut Pass,
    ) -> Vec<Decided> {
        let mut decided: Vec<Decided> = Vec::with_capacity(requests.len());
        for container in requests {
            let ask = ask(&container);
            match self.decide(&ask, &container, &decided).await {
                Ok(Decision::Place(choice)) => {
                    let offer = &mut self.offers[choice.offer];
                    offer.take(&ask, choice.gpu_type.as_deref());
                    decided.push(Decided {
                        worker_id: offer.worker_id.clone(),
                        pool: offer.pool.clone(),
                        container,
                        ask,
                        gpu_type: choice.gpu_type,
                    });
                }
                Ok(Decision::Wait) => self.no_room(&ask, container, pass).await,
                Ok(Decision::Fail(reason)) => self.fail(container, reason, pass).await,
                Err(error) => {
                    tracing::warn!(%error, container_id = %container.id, "cannot read the fleet; retrying");
                    pass.back.push(container.id);
                }
            }
        }
        decided
    }

    /// The decision for one request. The picture may predate a worker that
    /// joined just before the request: it fails only on a reading newer
    /// than the request, which then replaces the picture (less what the
    /// batch decided so far).
    async fn decide(
        &mut self,
        ask: &Ask,
        container: &ContainerRecord,
        decided: &[Decided],
    ) -> Result<Decision, ApiError> {
        let decision = placement::decide(ask, &self.offers, self.fleet.pools());
        if !matches!(decision, Decision::Fail(_)) || self.read_at >= container.created_at {
            return Ok(decision);
        }
        self.read_at = Utc::now();
        self.offers = view::read(&self.fleet, &mut HashMap::new()).await?;
        for d in decided {
            if let Some(i) = self.index_of(&d.worker_id) {
                self.offers[i].take(&d.ask, d.gpu_type.as_deref());
            }
        }
        Ok(placement::decide(ask, &self.offers, self.fleet.pools()))
    }

    /// Reserves every decided placement in one atomic step, hands over the
    /// ones that got their place and returns the others, the picture
    /// corrected from what their workers really had.
    async fn reserve(
        &mut self,
        mut decided: Vec<Decided>,
        pass: &mut Pass,
    ) -> Vec<ContainerRecord> {
        if decided.is_empty() {
            return Vec::new();
        }
        for d in &mut decided {
            d.container.gpu_type = d.gpu_type.clone().unwrap_or_default();
        }
        let placements: Vec<(&str, &ContainerRecord)> = decided
            .iter()
            .map(|d| (d.worker_id.as_str(), &d.container))
            .collect();
        let results = match self.fleet.try_reserve_batch(&placements).await {
            Ok(results) => results,
            Err(error) => {
                tracing::warn!(%error, "cannot reserve a batch; retrying");
                pass.back
                    .extend(decided.into_iter().map(|d| d.container.id));
                return Vec::new();
            }
        };
        let mut placed = Vec::new();
        let mut lost = Vec::new();
        // Workers whose picture a refusal reset to their real counters: the
        // batch's later reservations there must be taken from it again.
        let mut corrected = HashSet::new();
        for (d, result) in decided.into_iter().zip(results) {
            let index = self.index_of(&d.worker_id);
            match result {
                Reservation::Reserved => {
                    if let Some(i) = index.filter(|_| corrected.contains(&d.worker_id)) {
                        self.offers[i].take(&d.ask, d.gpu_type.as_deref());
                    }
                    let mut container = d.container;
                    container.state = ContainerState::Scheduled;
                    container.pool = d.pool;
                    container.worker_id = d.worker_id;
                    placed.push(container);
                }
                Reservation::Refused(free) => {
                    if let Some(i) = index {
                        view::correct(
                            &mut self.offers[i],
                            free.map(|counters| FreeCapacity { counters }),
                        );
                    }
                    corrected.insert(d.worker_id);
                    let mut container = d.container;
                    container.gpu_type.clear();
                    lost.push(container);
                }
            }
        }
        self.hand_over(placed, pass).await;
        lost
    }

    /// Records the placed containers as scheduled, then sends them to their
    /// workers.
    async fn hand_over(&self, placed: Vec<ContainerRecord>, pass: &mut Pass) {
        if placed.is_empty() {
            return;
        }
        if let Err(error) = self.fleet.put_containers(&placed).await {
            tracing::warn!(%error, "cannot record a batch of placements; retrying");
            for c in placed {
                // Nothing was sent: give the reservation back.
                if let Err(error) = self.fleet.release(&c.worker_id, &c).await {
                    tracing::error!(%error, container_id = %c.id, worker_id = %c.worker_id, "cannot give back a reservation");
                }
                pass.back.push(c.id);
            }
            return;
        }
        let runs = placed
            .iter()
            .map(|c| (c.worker_id.clone(), c.run_request()))
            .collect();
        if let Err(error) = inbox::send_many(&self.fleet, runs).await {
            tracing::error!(%error, containers = placed.len(), "cannot send placed containers to their workers");
            return;
        }
        for c in &placed {
            tracing::info!(container_id = %c.id, worker_id = %c.worker_id, pool = %c.pool, gpu_type = %c.gpu_type, "container placed");
        }
        pass.outcome.placed += placed.len();
    }

    /// No room now: back in the backlog (counted as its pool's demand), or
    /// failed past the deadline.
    async fn no_room(&self, ask: &Ask, container: ContainerRecord, pass: &mut Pass) {
        pass.waiting
            .extend(demand::waiting_write(&self.fleet, ask, &container));
        let waited = Utc::now() - container.created_at;
        if waited.to_std().unwrap_or_default() <= PLACEMENT_DEADLINE {
            pass.back.push(container.id);
            return;
        }
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
        self.fail(container, reason, pass).await;
    }

    async fn fail(&self, mut container: ContainerRecord, reason: String, pass: &mut Pass) {
        match fail(&self.fleet, &mut container, reason).await {
            Ok(()) => pass.outcome.failed += 1,
            Err(error) => {
                tracing::warn!(%error, container_id = %container.id, "cannot fail a request; retrying");
                pass.back.push(container.id);
            }
        }
    }

    /// Where a worker is in the picture (sorted by worker id).
    fn index_of(&self, worker_id: &str) -> Option<usize> {
        self.offers
            .binary_search_by(|o| o.worker_id.as_str().cmp(worker_id))
            .ok()
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

/// Asks for a place for `container`, a pending request: stores its record,
/// then puts its id at the back of the backlog. The record goes first
/// because a replica that claims an id without a record drops it.
pub(crate) async fn enqueue(fleet: &Fleet, container: &ContainerRecord) -> Result<(), ApiError> {
    fleet.put_container(container).await?;
    fleet.state().push(BACKLOG, container.id.as_bytes()).await?;
    Ok(())
}

/// Marks a container failed for `reason` and tells followers.
pub(crate) async fn fail(
    fleet: &Fleet,
    container: &mut ContainerRecord,
    reason: String,
) -> Result<(), ApiError> {
    tracing::info!(container_id = %container.id, %reason, "container cannot be placed");
    container.state = ContainerState::Failed;
    container.message = reason;
    fleet.put_container(container).await?;
    fleet.publish_end(&container.id).await
}

/// Puts a stop request in the inbox of a container's worker.
pub(crate) async fn send_stop(
    fleet: &Fleet,
    worker_id: &str,
    container_id: &str,
) -> Result<(), ApiError> {
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
            cpu_millicores: 1,
            memory_mib: 1,
            ..ContainerRecord::pending(workspace, "")
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
