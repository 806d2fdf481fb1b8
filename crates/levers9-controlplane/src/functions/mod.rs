//! Python functions: stubs, tasks and the dispatcher that feeds inputs to
//! warm containers.
//!
//! A call's journey: the FunctionService stores the task's input in the
//! hot state and tells the dispatcher; its row (pending) is inserted first,
//! or, for a call followed only on its own stream on the dispatcher's
//! replica, by the dispatcher with the task's start (see
//! [`submit::RowBy`]). The dispatcher (one
//! loop, on the replica holding its lease) hands the input to a warm
//! container of the stub with a free slot, or asks the scheduler for a new
//! container. The input goes to the container's worker through the
//! worker's inbox; the replica pumping that inbox attaches the payload. The
//! worker's result is stored in the hot state by the replica holding the
//! worker's stream, and the dispatcher decides: done, or another attempt.
//! Callers follow their tasks on a reply channel; a small complete result
//! is published there straight from the worker's stream, since no decision
//! can change it.
//!
//! Hot state keys:
//! - kv `task-input:<id>`: the [`Ticket`] and payload of a task not yet done;
//! - kv `task-result:<id>`: its [`TaskOutcome`], kept for the result TTL;
//! - kv `task-item:<id>:<n>`: a generator's item over 1 MiB, until its
//!   caller's replica takes it (see [`items`]);
//! - queue `dispatch`: [`DispatchEvent`]s for the dispatcher;
//! - channel `reply:<id>`: [`RunEvent`]s for the followers of a spawned
//!   task; a Run stream's events take its replica's channel instead (see
//!   [`replies`]).
//!
//! On one replica the parts of a call also meet in process: tells go
//! straight to a dispatcher running here and small inputs are read from
//! memory (see `local`); the hot state still holds every input and event
//! that another replica may need.

pub mod dispatcher;
mod error;
mod input_end;
pub mod items;
mod local;
pub mod logs;
pub mod objects;
pub mod replies;
mod rows;
pub mod spec;
pub mod stubs;
pub(crate) mod submit;
pub(crate) mod worker_stream;

use std::sync::Arc;
use std::time::Duration;

use levers9_api::v1::{run_event, RunEvent, TaskOutcome};
use levers9_state::{keys, HotState, StateError};
use levers9_store::NewTask;
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::fleet::{FleetNotice, NoticeSink};
pub use error::FunctionError;
pub use input_end::InputEnd;
use replies::Replies;

/// How long a task's input waits in the hot state at most.
const INPUT_TTL: Duration = Duration::from_secs(24 * 3600);
/// The dispatcher's queue.
pub const DISPATCH: &str = "dispatch";

/// What the dispatcher is told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DispatchEvent {
    /// New tasks of a stub, in order.
    Submitted {
        /// Whose stub.
        workspace_id: String,
        /// The stub they run; if it no longer exists, each of them ends in
        /// error.
        stub_id: String,
        /// Their tickets, queued behind the stub's earlier tasks in this order.
        tasks: Vec<Ticket>,
        /// Their rows, when the dispatcher is to write them (in the batch
        /// that starts them) rather than the caller's submit (see
        /// [`submit::RowBy`]). Told in process as a rule, but an event the
        /// lane hands back to the queue (no dispatcher leads yet, or the
        /// lease was lost) keeps them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rows: Vec<NewTask>,
    },
    /// A container's runner is ready for inputs.
    RunnerReady {
        /// The container whose runner connected and loaded the function; one
        /// the leading dispatcher did not start (from before a takeover) is
        /// stopped.
        container_id: String,
    },
    /// A container finished an input (the outcome is stored already).
    Finished {
        /// Where the input ran; its slot there is free again.
        container_id: String,
        /// The task whose input ended; nothing is recorded for one the
        /// dispatcher no longer holds (cancelled, or ended already).
        task_id: String,
        /// How the input ended.
        state: InputEnd,
        /// Why, for error, timeout and lost.
        message: String,
        /// The caller's channel has the result already (a complete one).
        #[serde(default)]
        delivered: bool,
    },
    /// A container reached a final state.
    ContainerEnded {
        /// The container; the inputs it held run again (after a drain, or a
        /// lost worker) or end in error, and if it never started, the stub's
        /// queue fails when nothing else can take it.
        container_id: String,
    },
    /// A caller cancelled a task.
    Cancel {
        /// The task; a queued one leaves the queue, a sent one is dropped by
        /// its worker, or its container is stopped if it already runs.
        task_id: String,
    },
    /// A worker started draining (its containers take no new inputs and
    /// stop once idle), or stopped.
    Drain {
        /// The worker whose function containers take no new inputs (or take
        /// them again).
        worker_id: String,
        /// Whether it drains from now on.
        draining: bool,
    },
}

impl From<FleetNotice> for DispatchEvent {
    fn from(notice: FleetNotice) -> Self {
        match notice {
            FleetNotice::ContainerEnded { container_id } => {
                DispatchEvent::ContainerEnded { container_id }
            }
            FleetNotice::Drain {
                worker_id,
                draining,
            } => DispatchEvent::Drain {
                worker_id,
                draining,
            },
        }
    }
}

/// Where a task's events go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ticket {
    /// The task's id, the key the dispatcher holds the ticket under.
    pub task_id: String,
    /// The caller's channel (`reply:<this>`).
    pub reply: String,
    /// The caller's number for the input.
    pub index: u64,
}

/// Hot-state access for functions, shared by the service, the worker
/// streams and the dispatcher.
#[derive(Clone)]
pub struct TaskState {
    state: Arc<dyn HotState>,
    result_ttl: Duration,
    replies: Arc<Replies>,
    dispatch_lane: Arc<local::DispatchLane>,
    inputs: Arc<local::InputCache>,
}

impl TaskState {
    /// Over `state`, for the replica `replica`; results are kept for
    /// `result_ttl`. Run streams can be followed once [`TaskState::route`]
    /// runs.
    pub fn new(state: Arc<dyn HotState>, result_ttl: Duration, replica: &str) -> Self {
        Self {
            replies: Replies::new(state.clone(), replica),
            state,
            result_ttl,
            dispatch_lane: Arc::default(),
            inputs: Arc::default(),
        }
    }

    /// Routes this replica's reply channel to its Run streams until
    /// `stopped`.
    pub async fn route(&self, stopped: tokio::sync::watch::Receiver<bool>) {
        self.replies.clone().route(stopped).await;
    }

    /// The hot state underneath.
    pub fn state(&self) -> &Arc<dyn HotState> {
        &self.state
    }

    /// Tells the dispatcher: in process when it runs here, else through the
    /// hot state's queue.
    pub async fn tell(&self, event: &DispatchEvent) -> Result<(), StateError> {
        let Err(event) = self.dispatch_lane.send(event.clone()) else {
            return Ok(());
        };
        self.queue(&event).await
    }

    /// Tells a dispatcher running in this process; gives the event back
    /// if none does.
    pub(crate) fn tell_here(&self, event: DispatchEvent) -> Result<(), DispatchEvent> {
        self.dispatch_lane.send(event)
    }

    /// Puts an event on the hot state's dispatch queue.
    async fn queue(&self, event: &DispatchEvent) -> Result<(), StateError> {
        // Plain structs of strings: serialising cannot fail.
        let bytes = serde_json::to_vec(event).unwrap_or_default();
        self.state.push(DISPATCH, &bytes).await?;
        Ok(())
    }

    /// Stores a task's input until it is done.
    pub async fn put_input(&self, ticket: &Ticket, payload: &[u8]) -> Result<(), FunctionError> {
        self.store_input(ticket, payload).await?;
        self.inputs.put(ticket, payload);
        Ok(())
    }

    async fn store_input(&self, ticket: &Ticket, payload: &[u8]) -> Result<(), FunctionError> {
        let header = serde_json::to_vec(ticket).unwrap_or_default();
        let mut value = Vec::with_capacity(4 + header.len() + payload.len());
        value.extend_from_slice(&u32::try_from(header.len()).unwrap_or(0).to_be_bytes());
        value.extend_from_slice(&header);
        value.extend_from_slice(payload);
        self.state
            .set_with_ttl(&keys::task_input(&ticket.task_id), &value, INPUT_TTL)
            .await?;
        Ok(())
    }

    /// A task's ticket and payload, if it still waits.
    pub async fn input(&self, task_id: &str) -> Result<Option<(Ticket, Vec<u8>)>, FunctionError> {
        if let Some(cached) = self.inputs.get(task_id) {
            return Ok(Some(cached));
        }
        let Some(value) = self.state.get(&keys::task_input(task_id)).await? else {
            return Ok(None);
        };
        let corrupt = || FunctionError::CorruptInput(task_id.to_owned());
        let len = value
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(|b| u32::from_be_bytes(b) as usize)
            .ok_or_else(corrupt)?;
        let header = value.get(4..4 + len).ok_or_else(corrupt)?;
        let ticket: Ticket = serde_json::from_slice(header).map_err(|_| corrupt())?;
        Ok(Some((ticket, value[4 + len..].to_vec())))
    }

    /// Forgets a finished task's input.
    pub async fn drop_input(&self, task_id: &str) -> Result<(), FunctionError> {
        self.inputs.remove(task_id);
        self.state.delete(&keys::task_input(task_id)).await?;
        Ok(())
    }

    /// Stores how an attempt ended (the payload with it).
    pub async fn put_outcome(&self, outcome: &TaskOutcome) -> Result<(), FunctionError> {
        self.state
            .set_with_ttl(
                &keys::task_result(&outcome.task_id),
                &outcome.encode_to_vec(),
                self.result_ttl,
            )
            .await?;
        Ok(())
    }

    /// The stored outcome of a task.
    pub async fn outcome(&self, task_id: &str) -> Result<Option<TaskOutcome>, FunctionError> {
        match self.state.get(&keys::task_result(task_id)).await? {
            Some(bytes) => Ok(Some(
                TaskOutcome::decode(bytes.as_slice())
                    .map_err(|_| FunctionError::CorruptResult(task_id.to_owned()))?,
            )),
            None => Ok(None),
        }
    }

    /// Sends an event to a caller's channel.
    pub async fn publish(&self, reply: &str, event: run_event::Kind) -> Result<(), FunctionError> {
        let event = RunEvent { kind: Some(event) };
        if Replies::is_routed(reply) {
            return self.replies.publish(reply, event).await;
        }
        self.state
            .publish(&keys::reply(reply), &event.encode_to_vec())
            .await?;
        Ok(())
    }

    /// A new Run stream's reply channel and its events, until dropped.
    pub async fn open_reply(&self) -> Result<(String, replies::ReplyStream), FunctionError> {
        self.replies.open().await
    }

    /// The events of a spawned task's channel from now on.
    pub async fn follow(
        &self,
        reply: &str,
    ) -> Result<futures::stream::BoxStream<'static, Vec<u8>>, FunctionError> {
        Ok(self.state.subscribe(&keys::reply(reply)).await?)
    }
}

/// The fleet's notices reach the dispatcher as its events.
#[async_trait::async_trait]
impl NoticeSink for TaskState {
    async fn tell(&self, notice: FleetNotice) -> Result<(), StateError> {
        TaskState::tell(self, &notice.into()).await
    }
}
