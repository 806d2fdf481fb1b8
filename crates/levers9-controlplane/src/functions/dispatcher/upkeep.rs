//! The dispatcher's upkeep: stopping idle containers, withdrawing requests
//! for containers no longer needed, and taking over unfinished tasks when
//! this replica becomes the dispatcher.

use std::collections::BTreeSet;
use std::time::Duration;

use levers9_state::keys;
use levers9_store::{FinalState, TaskRecord, TaskState};

use super::{Dispatcher, Recorded, RECOVER_LIMIT};
use crate::fleet::records::ContainerState;
use crate::functions::FunctionError;
use crate::functions::Ticket;
use crate::scheduler::send_stop;

/// How long a request of a stub with nothing queued may wait for a worker
/// before it is withdrawn.
const WITHDRAW_AFTER: Duration = Duration::from_secs(1);

impl Dispatcher {
    /// Stops warm containers idle for their keep-warm window (scale to
    /// zero, or down to the stub's floor), and idle ones on draining workers
    /// at once.
    pub(super) async fn stop_idle(&mut self) {
        let mut idle = Vec::new();
        for stub in self.stubs.values_mut() {
            let window = Duration::from_secs(u64::from(stub.spec.keep_warm_seconds));
            let mut spare = stub.above_floor();
            let expired: Vec<String> = stub
                .warm
                .iter()
                .filter(|(_, w)| {
                    if !w.in_flight.is_empty() {
                        return false;
                    }
                    // A drained or lost one is not part of the floor.
                    if w.draining || w.lost {
                        return w.draining || w.idle_since.elapsed() >= window;
                    }
                    let expired = w.idle_since.elapsed() >= window && spare > 0;
                    spare -= usize::from(expired);
                    expired
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                if let Some(warm) = stub.warm.remove(&id) {
                    idle.push((id, warm.worker_id));
                }
            }
        }
        for (container_id, worker_id) in idle {
            self.container_stub.remove(&container_id);
            tracing::info!(%container_id, "stopping a function container after its keep-warm window");
            if let Err(error) =
                send_stop(self.parts.scheduling.fleet(), &worker_id, &container_id).await
            {
                tracing::warn!(%error, %container_id, "cannot stop an idle container");
            }
        }
    }

    /// Withdraws the requests of stubs whose queue is empty that no worker
    /// has taken yet: the inputs they were asked for went to warm
    /// containers, and a container placed later (when room frees, maybe
    /// minutes later) would only hold room that other functions' cold
    /// starts wait for. Requests already placed go on starting: they are
    /// close to ready and stay warm for the next input. A request younger
    /// than [`WITHDRAW_AFTER`] is left alone: a worker is likely about to
    /// take it, and a queue that empties for a moment between a map's
    /// batches may need it. Requests a stub's floor needs wait for a worker
    /// like any.
    pub(super) async fn withdraw_unneeded(&mut self) {
        let ids: Vec<String> = self
            .stubs
            .values()
            .filter(|s| s.queue.is_empty())
            .flat_map(|s| {
                let spare = s.requests_above_floor().min(s.starting.len());
                s.starting.iter().take(spare)
            })
            .filter(|(_, requested)| requested.elapsed() >= WITHDRAW_AFTER)
            .map(|(id, _)| id.clone())
            .collect();
        if ids.is_empty() {
            return;
        }
        let result = async {
            let records = self.parts.scheduling.fleet().containers(&ids).await?;
            let waiting: Vec<String> = ids
                .into_iter()
                .zip(records)
                .filter(|(_, r)| matches!(r, Ok(Some(c)) if c.state == ContainerState::Pending))
                .map(|(id, _)| id)
                .collect();
            if !waiting.is_empty() {
                let reason = "withdrawn before a worker took it: its function's inputs \
                              all went to containers already running";
                self.parts.scheduling.withdraw(&waiting, reason).await?;
            }
            Ok::<_, FunctionError>(waiting)
        }
        .await;
        let withdrawn = match result {
            Ok(withdrawn) => withdrawn,
            Err(error) => {
                tracing::warn!(%error, "cannot withdraw unneeded container requests");
                return;
            }
        };
        for container_id in withdrawn {
            if let Some(stub_id) = self.container_stub.remove(&container_id) {
                if let Some(stub) = self.stubs.get_mut(&stub_id) {
                    stub.starting.remove(&container_id);
                }
                tracing::info!(%container_id, %stub_id, "withdrew a function container request: its queue is empty");
            }
        }
    }

    /// Takes over the unfinished tasks of a previous leader: queued ones
    /// queue again; running ones run again (their containers are not
    /// known to this leader), without using an attempt.
    pub(super) async fn recover(&mut self) -> Result<(), FunctionError> {
        let unfinished: Vec<TaskRecord> = self.parts.store.unfinished_tasks(RECOVER_LIMIT).await?;
        let mut stubs = BTreeSet::new();
        for task in unfinished {
            let Some((ticket, _)) = self.parts.tasks.input(&task.id).await? else {
                let ticket = Ticket {
                    task_id: task.id.clone(),
                    reply: keys::task_reply(&task.id),
                    index: 0,
                };
                let message = "the task's input was lost (the hot state restarted) before it \
                               finished: call the function again";
                self.publish_end(&ticket, FinalState::Error, message, Recorded::Nothing);
                continue;
            };
            if !self.load_stub(&task.workspace_id, &task.stub_id).await? {
                continue;
            }
            // Running (its container unknown here) or pending again after a
            // lost worker: the next start is the same attempt once more.
            let attempt = match task.state {
                TaskState::Retry => task.attempts,
                TaskState::Pending | TaskState::Running | TaskState::Ended(_) => {
                    task.attempts.saturating_sub(1)
                }
            };
            self.queue(&task.stub_id, ticket, attempt, false);
            stubs.insert(task.stub_id);
        }
        if !stubs.is_empty() {
            tracing::info!(
                stubs = stubs.len(),
                tasks = self.held.len(),
                "took over unfinished tasks"
            );
        }
        for stub_id in stubs {
            self.pump(&stub_id).await?;
        }
        Ok(())
    }
}
