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

use std::sync::Arc;
use std::time::{Duration, Instant};

use levers9_api::v1::{controlplane_message, ControlplaneMessage, StopContainer};
use levers9_state::HotState;
use tokio::sync::watch;

use crate::fleet::records::{ContainerRecord, ContainerState};
use crate::fleet::{Fleet, FleetError};

mod batch;
pub mod claims;
pub(crate) mod demand;
pub mod placement;
pub mod view;
mod withdrawals;

pub use batch::Scheduler;

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

/// The scheduler's handle: the fleet it places on, and the hot state (the
/// fleet's own) that holds the scheduler's [keys](self#keys), which the
/// scheduler reaches through this handle rather than through the fleet.
#[derive(Clone)]
pub struct Scheduling {
    fleet: Fleet,
    state: Arc<dyn HotState>,
}

impl Scheduling {
    /// Scheduling on `fleet`, whose records are in `state`.
    pub fn new(fleet: Fleet, state: Arc<dyn HotState>) -> Self {
        Self { fleet, state }
    }

    /// The fleet it places on.
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }
}

/// Places backlog requests until `stopped` turns true, as replica
/// `replica`.
pub(crate) async fn run(scheduling: Scheduling, replica: String, stopped: watch::Receiver<bool>) {
    let (tx, mut picture) = watch::channel(Arc::new(Vec::new()));
    tokio::spawn(view::run(scheduling.clone(), tx, stopped.clone()));
    // Decide nothing on an empty picture: wait for the first reading.
    if picture.changed().await.is_err() {
        return;
    }
    let mut scheduler = Scheduler::new(scheduling.clone(), picture, &replica);
    let mut refreshed: Option<Instant> = None;
    loop {
        if *stopped.borrow() {
            // Requests still claimed (put back later than the stop) go back
            // at the next sweep of any replica.
            if let Err(error) = claims::forget(&scheduling, &replica).await {
                tracing::warn!(%error, "cannot say this scheduler stopped");
            }
            return;
        }
        if refreshed.is_none_or(|at| at.elapsed() >= claims::ALIVE_TTL / 6) {
            match claims::refresh(&scheduling, &replica, refreshed.is_none()).await {
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

/// Asks for a place for `container`, a pending request: stores its record,
/// then puts its id at the back of the backlog. The record goes first
/// because a replica that claims an id without a record drops it.
pub(crate) async fn enqueue(
    scheduling: &Scheduling,
    container: &ContainerRecord,
) -> Result<(), FleetError> {
    scheduling.fleet.put_container(container).await?;
    scheduling
        .state
        .push(BACKLOG, container.id.as_bytes())
        .await?;
    Ok(())
}

/// Marks a container failed for `reason` and tells followers.
pub(crate) async fn fail(
    fleet: &Fleet,
    container: &mut ContainerRecord,
    reason: String,
) -> Result<(), FleetError> {
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
) -> Result<(), FleetError> {
    let message = ControlplaneMessage {
        kind: Some(controlplane_message::Kind::Stop(StopContainer {
            request_id: uuid::Uuid::now_v7().to_string(),
            container_id: container_id.to_owned(),
        })),
    };
    fleet.send_to_worker(worker_id, message).await
}
