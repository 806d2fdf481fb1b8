//! The dispatcher: one loop, on the replica that holds its lease, that
//! owns the queue of every stub and the slots of every warm container.
//!
//! # The state machine of a task
//! ```text
//!  pending ──assign──▶ running ──complete──▶ complete
//!     ▲                  │ error/timeout, attempts left ──▶ retry ──▶ (queued again)
//!     │                  │ error/timeout, none left ─────▶ error | timeout
//!     ├──── lost ────────┤ (never ran: requeued, no attempt used)
//!     └── worker lost ───┘ (no attempt used, at most INFRA_RETRIES times)
//!  any unfinished ──cancel──▶ cancelled
//! ```
//! A cancelled input that a container holds is dropped there if it has not
//! started; one already running stops its container (a thread cannot be
//! interrupted), and the container's other inputs run again elsewhere.
//! A container of a stub is `starting` (requested from the scheduler) until
//! its runner says it is ready, then `warm` with `concurrency` slots. An
//! input goes to the warm container with the fewest free slots (packing
//! keeps the others idle, so they scale to zero); when none has a slot, a
//! fast function's input may wait in a container's short buffer, and new
//! containers are requested, up to the stub's `max_containers`, unless the
//! warm ones will finish the queue first ([`pace`]). Requests still waiting
//! for a worker when their stub's queue is empty are withdrawn. A warm
//! container with nothing to do for `keep_warm_seconds` is stopped, unless
//! it is one of the `min_containers` a deployed stub keeps ([`floor`]).
//!
//! Everything here is in memory and changed by one loop, so there are no
//! races between deciding and doing; what it does to the outside (store
//! rows, messages to workers, events to callers) is written as it goes.
//! A replica that takes the lease over rebuilds the queues from the
//! unfinished task rows.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use levers9_api::v1::{
    controlplane_message, run_event, ControlplaneMessage, TaskInput, TaskOutcome,
};
use levers9_state::keys;
use levers9_store::{FinalState, FunctionStore, StubRecord};
use tokio::sync::watch;

mod drain;
mod events;
mod floor;
mod pace;
mod stops;
mod upkeep;

use super::rows::RowWriter;
use super::spec::{self, StubSpec};
use super::{DispatchEvent, InputEnd, TaskState, Ticket};
use crate::functions::FunctionError;
use crate::scheduler::{self, send_stop, Scheduling};
use crate::wire_states;

const LEASE: &str = "function-dispatcher";
const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often idle containers are looked for, at most.
const TICK: Duration = Duration::from_millis(250);
/// Containers of one stub being started at once, at most: starting a
/// hundred Python processes at once on a small worker helps nobody.
const MAX_STARTING: usize = 8;
/// Unfinished tasks a new leader takes over.
const RECOVER_LIMIT: u32 = 100_000;

/// A warm container: its runner is connected.
struct Warm {
    worker_id: String,
    in_flight: BTreeSet<String>,
    idle_since: Instant,
    /// Its worker drains: no new inputs; stopped once idle.
    draining: bool,
    /// It lost an input (its runner is gone): no new inputs; its end
    /// follows.
    lost: bool,
    /// Inputs cancelled while it held them. Each keeps its slot until the
    /// worker says it is out (dropped before it started, or ended); if the
    /// container ends first (its worker stops it when a cancelled input
    /// already runs), its other inputs run again without using an attempt.
    cancelled: BTreeSet<String>,
}

struct Stub {
    record: StubRecord,
    spec: StubSpec,
    queue: VecDeque<String>,
    warm: BTreeMap<String, Warm>,
    /// Containers asked for, with when.
    starting: BTreeMap<String, Instant>,
    pace: pace::Pace,
    floor: floor::Floor,
}

/// What the worker's stream did with an attempt's end before telling the
/// dispatcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    /// Nothing: the dispatcher stores the outcome (a cancel, a lost
    /// container, a start failure).
    Nothing,
    /// It stored the outcome with its payload.
    Stored,
    /// It stored it and gave it to the caller's channel too.
    Delivered,
}

/// A task the dispatcher holds: queued, or in a container.
struct Held {
    stub_id: String,
    ticket: Ticket,
    /// Attempts started.
    attempt: u32,
    /// Workers lost while they ran it (see [`stops::INFRA_RETRIES`]).
    lost_workers: u32,
    container: Option<String>,
    /// When it was sent to its container.
    sent: Option<Instant>,
}

/// What the dispatcher needs from the rest of the controlplane.
#[derive(Clone)]
pub struct Parts {
    /// Task rows and stubs.
    pub store: Arc<dyn FunctionStore>,
    /// Inputs, outcomes, events.
    pub tasks: TaskState,
    /// Containers and workers, and the placing of containers on them.
    pub scheduling: Scheduling,
}

struct Dispatcher {
    parts: Parts,
    rows: RowWriter,
    stubs: HashMap<String, Stub>,
    held: HashMap<String, Held>,
    /// Which stub each starting or warm container serves.
    container_stub: HashMap<String, String>,
    /// Workers draining: containers there take no new inputs.
    draining: BTreeSet<String>,
    starts: pace::StartTime,
    /// When the deployed stubs' floors were last read.
    floors_read: Option<Instant>,
}

/// Runs the dispatcher whenever this replica holds the lease, until
/// `stopped`.
pub async fn run(parts: Parts, holder: String, stopped: watch::Receiver<bool>) {
    let state = parts.tasks.state().clone();
    loop {
        if *stopped.borrow() {
            return;
        }
        match state.acquire_lease(LEASE, &holder, LEASE_TTL).await {
            Ok(true) => {}
            Ok(false) => {
                tokio::time::sleep(LEASE_TTL / 4).await;
                continue;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot take the dispatcher lease");
                tokio::time::sleep(LEASE_TTL / 4).await;
                continue;
            }
        }
        tracing::info!("this replica dispatches function inputs");
        let mut dispatcher = Dispatcher {
            parts: parts.clone(),
            rows: RowWriter::spawn(parts.store.clone()),
            stubs: HashMap::new(),
            held: HashMap::new(),
            container_stub: HashMap::new(),
            draining: BTreeSet::new(),
            starts: pace::StartTime::default(),
            floors_read: None,
        };
        if let Err(error) = dispatcher.recover().await {
            tracing::error!(%error, "cannot take over unfinished tasks");
        }
        let mut events = events::Events::open(&parts.tasks);
        dispatcher.serve(&holder, &stopped, &mut events).await;
        events.close().await;
        if *stopped.borrow() {
            let _ = state.release_lease(LEASE, &holder).await;
            return;
        }
    }
}

impl Dispatcher {
    /// Handles events while the lease holds.
    async fn serve(
        &mut self,
        holder: &str,
        stopped: &watch::Receiver<bool>,
        events: &mut events::Events,
    ) {
        let state = self.parts.tasks.state().clone();
        let mut renewed = Instant::now();
        let mut ticked = Instant::now();
        while !*stopped.borrow() {
            if renewed.elapsed() >= LEASE_TTL / 3 {
                match state.acquire_lease(LEASE, holder, LEASE_TTL).await {
                    Ok(true) => renewed = Instant::now(),
                    Ok(false) => {
                        tracing::warn!("lost the dispatcher lease to another replica");
                        return;
                    }
                    Err(error) => tracing::warn!(%error, "cannot renew the dispatcher lease"),
                }
            }
            if let Ok(Some(event)) = tokio::time::timeout(TICK, events.next()).await {
                if let Err(error) = self.handle(event).await {
                    tracing::warn!(%error, "cannot handle a dispatch event");
                }
            }
            if ticked.elapsed() >= TICK {
                ticked = Instant::now();
                self.stop_idle().await;
                self.withdraw_unneeded().await;
                self.keep_floors().await;
            }
        }
    }

    async fn handle(&mut self, event: DispatchEvent) -> Result<(), FunctionError> {
        match event {
            DispatchEvent::Submitted {
                workspace_id,
                stub_id,
                tasks,
                rows,
            } => {
                // Before anything can start or end them.
                self.rows.insert(rows);
                self.submitted(&workspace_id, &stub_id, tasks).await
            }
            DispatchEvent::RunnerReady { container_id } => self.ready(&container_id).await,
            DispatchEvent::Finished {
                container_id,
                task_id,
                state,
                message,
                delivered,
            } => {
                self.finished(&container_id, &task_id, state, message, delivered)
                    .await
            }
            DispatchEvent::ContainerEnded { container_id } => self.ended(&container_id).await,
            DispatchEvent::Cancel { task_id } => self.cancel(&task_id).await,
            DispatchEvent::Drain {
                worker_id,
                draining,
            } => self.drain(worker_id, draining).await,
        }
    }

    /// The stub, loaded on first use.
    async fn load_stub(
        &mut self,
        workspace_id: &str,
        stub_id: &str,
    ) -> Result<bool, FunctionError> {
        if self.stubs.contains_key(stub_id) {
            return Ok(true);
        }
        let Some(record) = self.parts.store.get_stub(workspace_id, stub_id).await? else {
            return Ok(false);
        };
        let spec = StubSpec::from_json(stub_id, &record.config_json)?;
        self.stubs.insert(
            stub_id.to_owned(),
            Stub {
                record,
                spec,
                queue: VecDeque::new(),
                warm: BTreeMap::new(),
                starting: BTreeMap::new(),
                pace: pace::Pace::default(),
                floor: floor::Floor::default(),
            },
        );
        Ok(true)
    }

    async fn submitted(
        &mut self,
        workspace_id: &str,
        stub_id: &str,
        tickets: Vec<Ticket>,
    ) -> Result<(), FunctionError> {
        if !self.load_stub(workspace_id, stub_id).await? {
            for ticket in tickets {
                let message = format!("stub {stub_id} no longer exists");
                self.publish_end(&ticket, FinalState::Error, &message, Recorded::Nothing);
            }
            return Ok(());
        }
        for ticket in tickets {
            // Submitted just before this replica took the lease: taken over
            // from its row already.
            if self.held.contains_key(&ticket.task_id) {
                continue;
            }
            self.queue(stub_id, ticket, 0, false);
        }
        self.pump(stub_id).await
    }

    fn queue(&mut self, stub_id: &str, ticket: Ticket, attempt: u32, front: bool) {
        let held = Held {
            stub_id: stub_id.to_owned(),
            ticket,
            attempt,
            lost_workers: 0,
            container: None,
            sent: None,
        };
        self.queue_held(held, front);
    }

    /// Queues a task again with what it has been through (its attempts,
    /// the workers it lost).
    fn queue_held(&mut self, mut held: Held, front: bool) {
        let Some(stub) = self.stubs.get_mut(&held.stub_id) else {
            return;
        };
        if front {
            stub.queue.push_front(held.ticket.task_id.clone());
        } else {
            stub.queue.push_back(held.ticket.task_id.clone());
        }
        (held.container, held.sent) = (None, None);
        self.held.insert(held.ticket.task_id.clone(), held);
    }

    async fn ready(&mut self, container_id: &str) -> Result<(), FunctionError> {
        let Some(stub_id) = self.container_stub.get(container_id).cloned() else {
            // A container from before a takeover: nothing will feed it.
            if let Some(c) = self
                .parts
                .scheduling
                .fleet()
                .container(container_id)
                .await?
            {
                send_stop(self.parts.scheduling.fleet(), &c.worker_id, container_id).await?;
            }
            return Ok(());
        };
        let worker_id = self
            .parts
            .scheduling
            .fleet()
            .container(container_id)
            .await?
            .map(|c| c.worker_id)
            .unwrap_or_default();
        if let Some(stub) = self.stubs.get_mut(&stub_id) {
            if let Some(requested) = stub.starting.remove(container_id) {
                self.starts.ready(requested);
            }
            stub.warm.insert(
                container_id.to_owned(),
                Warm {
                    draining: self.draining.contains(&worker_id),
                    lost: false,
                    worker_id,
                    in_flight: BTreeSet::new(),
                    cancelled: BTreeSet::new(),
                    idle_since: Instant::now(),
                },
            );
        }
        self.pump(&stub_id).await
    }

    /// Hands queued inputs to warm containers with free slots (or room in
    /// their buffer), then asks for containers for what is left.
    async fn pump(&mut self, stub_id: &str) -> Result<(), FunctionError> {
        let Some(stub) = self.stubs.get_mut(stub_id) else {
            return Ok(());
        };
        let slots = stub.spec.concurrency as usize;
        let room = slots + stub.pace.buffer(slots);
        let timeout_ms = u64::from(stub.spec.timeout_seconds) * 1000;
        while let Some(task_id) = stub.queue.front().cloned() {
            // A free slot first, in the fullest container (packing); else
            // room in a buffer, in the emptiest.
            let pick = stub
                .warm
                .iter()
                .filter(|(_, w)| !w.draining && !w.lost && w.in_flight.len() < room)
                .min_by_key(|(_, w)| match w.in_flight.len() {
                    n if n < slots => (false, slots - n),
                    n => (true, n),
                })
                .map(|(id, _)| id.clone());
            let Some((container_id, warm)) =
                pick.and_then(|id| stub.warm.get_mut(&id).map(|w| (id, w)))
            else {
                break;
            };
            stub.queue.pop_front();
            let Some(held) = self.held.get_mut(&task_id) else {
                continue;
            };
            held.attempt += 1;
            held.container = Some(container_id.clone());
            held.sent = Some(Instant::now());
            warm.in_flight.insert(task_id.clone());
            let input = ControlplaneMessage {
                kind: Some(controlplane_message::Kind::TaskInput(TaskInput {
                    container_id: container_id.clone(),
                    task_id: task_id.clone(),
                    payload: Vec::new(),
                    timeout_ms,
                    attempt: held.attempt,
                })),
            };
            self.parts
                .scheduling
                .fleet()
                .send_to_worker(&warm.worker_id, input)
                .await?;
            self.rows
                .start(&task_id, held.attempt, &container_id, &warm.worker_id);
        }
        let queued = stub.queue.len();
        let coming = stub.starting.len() * slots;
        let serving = stub.warm.values().filter(|w| !w.draining && !w.lost);
        let (serving, held) = serving.fold((0, 0), |(n, h), w| (n + 1, h + w.in_flight.len()));
        let waiting = queued.saturating_sub(coming);
        let wanted = waiting.div_ceil(slots);
        let wanted = stub
            .pace
            .worth_starting(wanted, waiting, held, self.starts.expected());
        let total = serving + stub.starting.len();
        let room = (stub.spec.max_containers as usize)
            .saturating_sub(total)
            .min(MAX_STARTING.saturating_sub(stub.starting.len()));
        for _ in 0..wanted.min(room) {
            self.request_container(stub_id).await?;
        }
        Ok(())
    }

    /// Asks the scheduler for a container of the stub.
    async fn request_container(&mut self, stub_id: &str) -> Result<(), FunctionError> {
        let Some(stub) = self.stubs.get_mut(stub_id) else {
            return Ok(());
        };
        let container = spec::container(&stub.record, &stub.spec);
        scheduler::enqueue(&self.parts.scheduling, &container).await?;
        tracing::info!(container_id = %container.id, stub_id, function = %stub.record.function_name, "function container requested");
        stub.starting.insert(container.id.clone(), Instant::now());
        self.container_stub.insert(container.id, stub_id.to_owned());
        Ok(())
    }

    /// Takes a task out of the container it ran in; None if it was not
    /// there (a late word about an attempt already dealt with).
    fn take_from(&mut self, container_id: &str, task_id: &str) -> Option<Held> {
        let held = self.held.get(task_id)?;
        if held.container.as_deref() != Some(container_id) {
            return None;
        }
        if let Some(warm) = self
            .stubs
            .get_mut(&held.stub_id)
            .and_then(|s| s.warm.get_mut(container_id))
        {
            warm.in_flight.remove(task_id);
            if warm.in_flight.is_empty() {
                warm.idle_since = Instant::now();
            }
        }
        self.held.remove(task_id)
    }

    /// Frees the slot of a cancelled input once its worker says it is
    /// out; its stub, if it was one.
    fn release_cancelled(&mut self, container_id: &str, task_id: &str) -> Option<String> {
        let stub_id = self.container_stub.get(container_id)?;
        let warm = self.stubs.get_mut(stub_id)?.warm.get_mut(container_id)?;
        if !warm.cancelled.remove(task_id) {
            return None;
        }
        warm.in_flight.remove(task_id);
        if warm.in_flight.is_empty() {
            warm.idle_since = Instant::now();
        }
        Some(stub_id.clone())
    }

    async fn finished(
        &mut self,
        container_id: &str,
        task_id: &str,
        state: InputEnd,
        message: String,
        delivered: bool,
    ) -> Result<(), FunctionError> {
        if let Some(stub_id) = self.release_cancelled(container_id, task_id) {
            return self.pump(&stub_id).await;
        }
        let Some(mut held) = self.take_from(container_id, task_id) else {
            return Ok(());
        };
        let stub_id = held.stub_id.clone();
        if let (Some(sent), Some(stub)) = (held.sent, self.stubs.get_mut(&stub_id)) {
            if state != InputEnd::Lost {
                stub.pace.ended(sent);
            }
        }
        match state {
            InputEnd::Complete => {
                let recorded = if delivered {
                    Recorded::Delivered
                } else {
                    Recorded::Stored
                };
                self.publish_end(&held.ticket, FinalState::Complete, "", recorded);
            }
            InputEnd::Lost => {
                if let Some(warm) = self
                    .stubs
                    .get_mut(&stub_id)
                    .and_then(|s| s.warm.get_mut(container_id))
                {
                    warm.lost = true;
                }
                held.attempt = held.attempt.saturating_sub(1);
                self.queue_held(held, true);
            }
            InputEnd::Timeout => {
                self.failed(held, FinalState::Timeout, message, Recorded::Stored);
            }
            // A cancelled input the dispatcher still holds was not cancelled
            // by its caller: it failed like any other.
            InputEnd::Error | InputEnd::Cancelled => {
                self.failed(held, FinalState::Error, message, Recorded::Stored);
            }
        }
        self.pump(&stub_id).await
    }

    /// Ends a task: the row, the outcome (unless the worker's stream stored
    /// it), the input dropped, the caller told (unless it was already).
    fn publish_end(&self, ticket: &Ticket, state: FinalState, message: &str, recorded: Recorded) {
        let notice = TaskOutcome {
            index: ticket.index,
            task_id: ticket.task_id.clone(),
            state: wire_states::final_state(state).into(),
            message: message.to_owned(),
            ..TaskOutcome::default()
        };
        let (tasks, rows, ticket) = (self.parts.tasks.clone(), self.rows.clone(), ticket.clone());
        tokio::spawn(async move {
            let task_id = &ticket.task_id;
            let result = async {
                if recorded == Recorded::Nothing {
                    tasks.put_outcome(&notice).await?;
                }
                // A Run stream's caller first: it followed its channel
                // before the task existed, so it misses nothing, and its
                // result need not wait for the row. Followers of the task's
                // own channel look at the row after subscribing, so that
                // channel is told only once the row says the task ended.
                // Only a spawned task's own channel is told: the followers
                // of any other task read its row every second instead,
                // which spares each `.remote()` a publish nobody hears.
                let own = keys::task_reply(task_id);
                let spawned = ticket.reply == own;
                if !spawned && recorded != Recorded::Delivered {
                    tasks
                        .publish(&ticket.reply, run_event::Kind::Result(notice.clone()))
                        .await?;
                }
                rows.end(task_id, state, &notice.message).await?;
                tasks.drop_input(task_id).await?;
                if spawned {
                    tasks.publish(&own, run_event::Kind::Result(notice)).await?;
                }
                Ok::<(), FunctionError>(())
            }
            .await;
            if let Err(error) = result {
                tracing::error!(%error, %task_id, "cannot record the end of a task");
            }
        });
    }
}
