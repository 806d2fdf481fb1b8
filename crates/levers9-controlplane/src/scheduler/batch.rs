//! One replica's batches: claim from the backlog, decide in memory on the
//! picture, reserve in one atomic step, record, hand over (the state
//! machine in [the module's doc](super)).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use levers9_state::{keys, Reservation, Write};
use tokio::sync::watch;

use super::placement::{self, Ask, Decision, Offer};
use super::{
    demand, fail, view, Outcome, Scheduling, BACKLOG, BATCH, PLACEMENT_DEADLINE, POP_WAIT,
    RETRY_DELAY, ROUNDS,
};
use crate::error::ApiError;
use crate::fleet::records::{ContainerRecord, ContainerState};
use crate::fleet::{inbox, FreeCapacity};

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
    scheduling: Scheduling,
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
    pub fn new(
        scheduling: Scheduling,
        picture: watch::Receiver<Arc<Vec<Offer>>>,
        replica: &str,
    ) -> Self {
        let offers = picture.borrow().as_ref().clone();
        Self {
            scheduling,
            picture,
            offers,
            read_at: DateTime::<Utc>::MIN_UTC,
            claims: keys::backlog_claims(replica),
        }
    }

    /// Claims up to [`BATCH`] request ids from the backlog, waiting up to a
    /// second for the first; empty if none came.
    pub async fn pop_batch(&self) -> Result<Vec<String>, ApiError> {
        let state = &self.scheduling.state;
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
            if let Err(error) = self.scheduling.state.write_batch(&pass.waiting).await {
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
        if let Err(error) = self
            .scheduling
            .state
            .unclaim(&self.claims, &done, None)
            .await
        {
            tracing::warn!(%error, requests = done.len(), "cannot settle a batch's claims");
        }
        if back.is_empty() {
            return;
        }
        let (state, claims) = (self.scheduling.state.clone(), self.claims.clone());
        tokio::spawn(async move {
            tokio::time::sleep(RETRY_DELAY).await;
            let items: Vec<Vec<u8>> = back.iter().map(|id| id.clone().into_bytes()).collect();
            if let Err(error) = state.unclaim(&claims, &items, Some(BACKLOG)).await {
                tracing::error!(%error, requests = back.len(), container_ids = ?back, "cannot put requests back in the backlog");
            }
        });
    }

    /// The records of the requests still pending, read with their owners'
    /// withdrawals at once; withdrawn ones are failed here. If the marks
    /// cannot be read, none counts as withdrawn: a withdrawn container that
    /// runs is stopped by its owner, which costs a start and loses nothing.
    async fn pending(&self, ids: Vec<String>, pass: &mut Pass) -> Vec<ContainerRecord> {
        let (records, marks) = futures::join!(
            self.scheduling.fleet.containers(&ids),
            self.scheduling.withdrawals(&ids)
        );
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
        let decision = placement::decide(ask, &self.offers, self.scheduling.fleet.pools());
        if !matches!(decision, Decision::Fail(_)) || self.read_at >= container.created_at {
            return Ok(decision);
        }
        self.read_at = Utc::now();
        self.offers = view::read(&self.scheduling, &mut HashMap::new()).await?;
        for d in decided {
            if let Some(i) = self.index_of(&d.worker_id) {
                self.offers[i].take(&d.ask, d.gpu_type.as_deref());
            }
        }
        Ok(placement::decide(
            ask,
            &self.offers,
            self.scheduling.fleet.pools(),
        ))
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
        let results = match self.scheduling.fleet.try_reserve_batch(&placements).await {
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
        if let Err(error) = self.scheduling.fleet.put_containers(&placed).await {
            tracing::warn!(%error, "cannot record a batch of placements; retrying");
            for c in placed {
                // Nothing was sent: give the reservation back.
                if let Err(error) = self.scheduling.fleet.release(&c.worker_id, &c).await {
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
        if let Err(error) = inbox::send_many(&self.scheduling.fleet, runs).await {
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
        pass.waiting.extend(demand::waiting_write(
            &self.scheduling.fleet,
            ask,
            &container,
        ));
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
        match fail(&self.scheduling.fleet, &mut container, reason).await {
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
