//! The loop that fires due schedules, on the replica holding the
//! `schedules` lease.
//!
//! # Guarantees
//! - **One run per tick**, across replicas and restarts: a fire moves the
//!   schedule's `next_tick` only from the value read, in the same store
//!   transaction that inserts the tick's task, whose id is derived from
//!   (schedule, tick) and inserted only if absent. A replica that dies
//!   before that transaction commits fired nothing (the next holder fires
//!   the tick); one that dies after it fired it (the next holder moves on).
//! - **No missed tick goes unnoticed**: a tick that came while no replica
//!   held the lease fires once when one takes it, however many were missed
//!   ([`ticks::plan`]).
//! - A run is submitted as `.spawn()` submits a call: its input in the hot
//!   state, its task row, then the dispatcher is told.
//!
//! # Assumptions
//! - The dispatcher ignores a task it already holds, so telling it of a
//!   task twice queues it once (see [`Firer::resubmit_unstarted`]).

use std::sync::Arc;
use std::time::Duration;

use levers9_state::keys;
use levers9_store::{Fired, FunctionStore, NewTask, ScheduleFire, ScheduleRecord};
use tokio::sync::watch;

use super::spec::ScheduleSpec;
use super::ticks;
use crate::error::ApiError;
use crate::functions::{DispatchEvent, TaskState, Ticket};

const LEASE: &str = "schedules";
const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often due schedules are looked for: ticks are whole seconds, so a
/// run starts within about this much of its tick.
const POLL: Duration = Duration::from_millis(500);
/// Due schedules fired per poll, at most.
const BATCH: u32 = 500;
/// Schedules looked at when a replica takes the lease over.
const TAKEOVER_LIMIT: u32 = 100_000;

/// The pickled arguments of a run, `((), {})`: pickle protocol 2, which
/// every Python 3 reads (the runner unpickles `(args, kwargs)`).
pub const NO_ARGUMENTS: &[u8] = b"\x80\x02)}q\x00\x86q\x01.";

/// Seconds since the Unix epoch, UTC; injected so tests move time by hand.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> i64;
}

/// The system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        chrono::Utc::now().timestamp()
    }
}

/// What the firer needs from the rest of the controlplane.
#[derive(Clone)]
pub struct Parts {
    /// Schedules, stubs and task rows.
    pub store: Arc<dyn FunctionStore>,
    /// Inputs and the dispatcher's queue.
    pub tasks: TaskState,
}

/// Fires due schedules whenever this replica holds the lease, until `stopped`.
pub async fn run(parts: Parts, holder: String, stopped: watch::Receiver<bool>) {
    let state = parts.tasks.state().clone();
    let firer = Firer::new(parts, Arc::new(SystemClock));
    let mut stopped = stopped;
    loop {
        if *stopped.borrow() {
            return;
        }
        match state.acquire_lease(LEASE, &holder, LEASE_TTL).await {
            Ok(true) => {}
            Ok(false) => {
                wait(&mut stopped, LEASE_TTL / 4).await;
                continue;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot take the schedules lease");
                wait(&mut stopped, LEASE_TTL / 4).await;
                continue;
            }
        }
        tracing::info!(replica = %holder, "this replica fires schedules");
        if let Err(error) = firer.resubmit_unstarted().await {
            tracing::warn!(%error, "cannot look for scheduled runs left unsubmitted");
        }
        let mut renewed = tokio::time::Instant::now();
        while !*stopped.borrow() {
            if renewed.elapsed() >= LEASE_TTL / 3 {
                match state.acquire_lease(LEASE, &holder, LEASE_TTL).await {
                    Ok(true) => renewed = tokio::time::Instant::now(),
                    Ok(false) => {
                        tracing::warn!("lost the schedules lease to another replica");
                        break;
                    }
                    // Held for a while still: go on, the next renewal may work.
                    Err(error) => tracing::warn!(%error, "cannot renew the schedules lease"),
                }
            }
            // Past the lease's life without a renewal another replica may
            // fire too; the store keeps that to one run per tick, but stop
            // firing here all the same.
            if renewed.elapsed() < LEASE_TTL {
                if let Err(error) = firer.fire_due().await {
                    tracing::warn!(%error, "cannot fire due schedules");
                }
            }
            wait(&mut stopped, POLL).await;
        }
        if *stopped.borrow() {
            let _ = state.release_lease(LEASE, &holder).await;
            return;
        }
    }
}

/// Sleeps for `time`, or less if `stopped` changes.
async fn wait(stopped: &mut watch::Receiver<bool>, time: Duration) {
    // A dropped sender answers at once: sleep then, rather than spin.
    if let Ok(Err(_)) = tokio::time::timeout(time, stopped.changed()).await {
        tokio::time::sleep(time).await;
    }
}

/// Fires due schedules by a clock.
pub struct Firer {
    parts: Parts,
    clock: Arc<dyn Clock>,
}

impl Firer {
    /// A firer over `parts` by `clock`.
    pub fn new(parts: Parts, clock: Arc<dyn Clock>) -> Self {
        Self { parts, clock }
    }

    /// Fires every schedule due now; returns the ids of the tasks submitted.
    pub async fn fire_due(&self) -> Result<Vec<String>, ApiError> {
        let now = self.clock.now();
        let due = self.parts.store.due_schedules(now, BATCH).await?;
        let mut submitted = Vec::new();
        for schedule in due {
            match self.fire(&schedule, now).await {
                Ok(Some(task_id)) => submitted.push(task_id),
                Ok(None) => {}
                // One bad schedule does not hold up the others.
                Err(error) => tracing::warn!(
                    %error,
                    schedule = %schedule.id,
                    app = %schedule.app_name,
                    function = %schedule.function_name,
                    "cannot fire a schedule"
                ),
            }
        }
        Ok(submitted)
    }

    /// Fires one due schedule; the task id if this call submitted its run.
    async fn fire(&self, schedule: &ScheduleRecord, now: i64) -> Result<Option<String>, ApiError> {
        let spec = ScheduleSpec::from_stored(&schedule.spec)?;
        let Some(plan) = ticks::plan(&spec, schedule.next_tick, now) else {
            return Ok(None);
        };
        let store = &self.parts.store;
        let stub = store
            .get_stub(&schedule.workspace_id, &schedule.stub_id)
            .await?
            .ok_or_else(|| {
                ApiError::Corrupt(format!(
                    "schedule {} names stub {}, which is not stored",
                    schedule.id, schedule.stub_id
                ))
            })?;
        let task_id = ticks::task_id(&schedule.id, plan.tick);
        let ticket = Ticket {
            task_id: task_id.clone(),
            reply: keys::task_reply(&task_id),
            index: 0,
        };
        // The input first: once the row is committed the dispatcher may
        // take the task over from it at any moment. An input put for a fire
        // that then loses (Stale) expires with its TTL.
        self.parts.tasks.put_input(&ticket, NO_ARGUMENTS).await?;
        let fire = ScheduleFire {
            schedule_id: schedule.id.clone(),
            expected_next_tick: schedule.next_tick,
            tick: plan.tick,
            next_tick: plan.next_tick,
            task: NewTask {
                id: task_id.clone(),
                workspace_id: stub.workspace_id.clone(),
                stub_id: stub.id.clone(),
                function_name: stub.function_name.clone(),
                created_at: chrono::Utc::now(),
            },
        };
        match store.fire_schedule(&fire).await? {
            Fired::Submitted => {}
            Fired::AlreadyThere | Fired::Stale => return Ok(None),
        }
        if plan.skipped > 0 {
            tracing::info!(
                app = %schedule.app_name,
                function = %schedule.function_name,
                skipped = plan.skipped,
                "ticks missed while no replica fired schedules: fired once for the latest"
            );
        }
        self.tell(&stub.workspace_id, &stub.id, ticket).await?;
        tracing::debug!(
            app = %schedule.app_name,
            function = %schedule.function_name,
            tick = plan.tick,
            task = %task_id,
            "schedule fired"
        );
        Ok(Some(task_id))
    }

    async fn tell(
        &self,
        workspace_id: &str,
        stub_id: &str,
        ticket: Ticket,
    ) -> Result<(), ApiError> {
        Ok(self
            .parts
            .tasks
            .tell(&DispatchEvent::Submitted {
                workspace_id: workspace_id.to_owned(),
                stub_id: stub_id.to_owned(),
                tasks: vec![ticket],
                rows: Vec::new(),
            })
            .await?)
    }

    /// Tells the dispatcher again of each schedule's last run that is still
    /// pending: a replica that died between committing a fire and telling
    /// the dispatcher left it unheard of (the dispatcher ignores a task it
    /// holds already). Returns the task ids told.
    pub async fn resubmit_unstarted(&self) -> Result<Vec<String>, ApiError> {
        let store = &self.parts.store;
        let mut told = Vec::new();
        for schedule in store.due_schedules(i64::MAX, TAKEOVER_LIMIT).await? {
            let Some(task_id) = &schedule.last_task_id else {
                continue;
            };
            let Some(task) = store.find_task(task_id).await? else {
                continue;
            };
            if task.state != levers9_store::TaskState::Pending {
                continue;
            }
            let ticket = Ticket {
                task_id: task.id.clone(),
                reply: keys::task_reply(&task.id),
                index: 0,
            };
            self.tell(&task.workspace_id, &task.stub_id, ticket).await?;
            told.push(task.id);
        }
        Ok(told)
    }
}

#[cfg(test)]
mod tests;
