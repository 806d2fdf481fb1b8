//! Containers that end or are stopped, and what becomes of the inputs
//! they held: run again without using an attempt when they never failed
//! (a drain, another input's cancel) or when their worker was lost (up to
//! [`INFRA_RETRIES`] times), failed and maybe retried otherwise; and
//! cancelled inputs, which their worker drops or stops their container for.

use levers9_api::v1::{
    controlplane_message, run_event, CancelInput, ControlplaneMessage, TaskRetrying,
};
use levers9_store::FinalState;

use super::{Dispatcher, Held, Recorded};
use crate::fleet::records::ContainerState;
use crate::functions::FunctionError;

/// Times one task runs again because the worker running it was lost (a
/// reclaimed spot node, an evicted pod, a stream gone past its grace),
/// apart from the stub's `retries`: lost infrastructure is not the
/// function's failure. Past this, a lost worker counts as a failed attempt,
/// so an input that takes its worker down with it cannot loop for ever.
pub(super) const INFRA_RETRIES: u32 = 3;

impl Dispatcher {
    pub(super) async fn ended(&mut self, container_id: &str) -> Result<(), FunctionError> {
        let Some(stub_id) = self.container_stub.remove(container_id) else {
            return Ok(());
        };
        let container = self
            .parts
            .scheduling
            .fleet()
            .container(container_id)
            .await?;
        let worker_lost = container
            .as_ref()
            .is_some_and(|c| c.state == ContainerState::Lost);
        let reason = match container {
            Some(c) if c.state == ContainerState::Exited && c.message.is_empty() => {
                format!("its container exited with code {}", c.exit_code)
            }
            Some(c) if !c.message.is_empty() => c.message,
            _ => "its container ended".to_owned(),
        };
        let Some(stub) = self.stubs.get_mut(&stub_id) else {
            return Ok(());
        };
        let function = stub.record.function_name.clone();
        let mut handed_back = false;
        let (never_started, in_flight): (Vec<String>, Vec<String>) =
            if stub.starting.remove(container_id).is_some() {
                if !worker_lost {
                    stub.start_failed();
                }
                // Nothing else can take the queue: say why rather than
                // retry a container that will fail the same way. A lost
                // worker says nothing of the container: another is asked for.
                let hopeless = !worker_lost && stub.warm.is_empty() && stub.starting.is_empty();
                let queued = if hopeless {
                    stub.queue.drain(..).collect()
                } else {
                    Vec::new()
                };
                (queued, Vec::new())
            } else if let Some(warm) = stub.warm.remove(container_id) {
                // Drained, or stopped by its worker because a cancelled
                // input already ran: the others did not fail.
                handed_back = warm.draining || !warm.cancelled.is_empty();
                (Vec::new(), warm.in_flight.into_iter().collect())
            } else {
                (Vec::new(), Vec::new())
            };
        let message = format!("the container for {function} failed to start: {reason}");
        for task_id in never_started {
            if let Some(held) = self.held.remove(&task_id) {
                self.publish_end(&held.ticket, FinalState::Error, &message, Recorded::Nothing);
            }
        }
        for task_id in in_flight {
            let Some(mut held) = self.held.remove(&task_id) else {
                continue;
            };
            if handed_back {
                // Stopped by its worker's drain: the input did not fail,
                // so it runs again without using an attempt.
                held.attempt = held.attempt.saturating_sub(1);
                self.queue_held(held, true);
            } else if worker_lost && held.lost_workers < INFRA_RETRIES {
                self.requeue_lost(held, &reason);
            } else {
                self.failed(held, FinalState::Error, reason.clone(), Recorded::Nothing);
            }
        }
        self.pump(&stub_id).await
    }

    /// The worker running `held` was lost: it runs again elsewhere under
    /// the same attempt number, without using one of the stub's retries;
    /// its attempt and the caller's events say why.
    fn requeue_lost(&mut self, mut held: Held, reason: &str) {
        held.lost_workers += 1;
        let message = format!(
            "{reason}; running it again elsewhere without using a retry \
             (infrastructure retry {} of {INFRA_RETRIES})",
            held.lost_workers
        );
        self.rows.requeue(&held.ticket.task_id, &message);
        self.tell_retrying(&held, held.attempt, message);
        held.attempt = held.attempt.saturating_sub(1);
        self.queue_held(held, true);
    }

    /// An attempt failed: another one if the stub's retries allow, else the
    /// task ends in `state` (error, or timeout when the attempt timed out).
    pub(super) fn failed(
        &mut self,
        held: Held,
        state: FinalState,
        message: String,
        recorded: Recorded,
    ) {
        let retries = self.stubs.get(&held.stub_id).map_or(0, |s| s.spec.retries);
        if held.attempt > retries {
            self.publish_end(&held.ticket, state, &message, recorded);
            return;
        }
        self.rows.retry(&held.ticket.task_id, &message);
        self.tell_retrying(&held, held.attempt + 1, message);
        self.queue_held(held, false);
    }

    /// Tells the caller following `held` that it runs again, as `attempt`.
    fn tell_retrying(&self, held: &Held, attempt: u32, reason: String) {
        let tasks = self.parts.tasks.clone();
        let retrying = run_event::Kind::Retrying(TaskRetrying {
            index: held.ticket.index,
            task_id: held.ticket.task_id.clone(),
            attempt,
            reason,
        });
        let (task_id, reply) = (held.ticket.task_id.clone(), held.ticket.reply.clone());
        tokio::spawn(async move {
            if let Err(error) = tasks.publish(&reply, retrying).await {
                tracing::warn!(%error, %task_id, "cannot tell the caller about a retry");
            }
        });
    }

    pub(super) async fn cancel(&mut self, task_id: &str) -> Result<(), FunctionError> {
        let Some(held) = self.held.remove(task_id) else {
            return Ok(());
        };
        let stub_id = held.stub_id.clone();
        let message = "cancelled by the caller";
        self.publish_end(
            &held.ticket,
            FinalState::Cancelled,
            message,
            Recorded::Nothing,
        );
        let Some(container_id) = held.container else {
            if let Some(stub) = self.stubs.get_mut(&stub_id) {
                stub.queue.retain(|t| t != task_id);
            }
            return Ok(());
        };
        // Its worker drops it if it has not started yet, and stops the
        // container if it has; until it says which, it keeps its slot.
        let Some(warm) = self
            .stubs
            .get_mut(&stub_id)
            .and_then(|s| s.warm.get_mut(&container_id))
        else {
            return Ok(());
        };
        warm.cancelled.insert(task_id.to_owned());
        let cancel = ControlplaneMessage {
            kind: Some(controlplane_message::Kind::CancelInput(CancelInput {
                container_id,
                task_id: task_id.to_owned(),
            })),
        };
        let worker_id = warm.worker_id.clone();
        Ok(self
            .parts
            .scheduling
            .fleet()
            .send_to_worker(&worker_id, cancel)
            .await?)
    }
}
