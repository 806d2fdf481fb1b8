//! Containers that end or are stopped, and what becomes of the inputs
//! they held: run again without using an attempt when they never failed
//! (a drain, another input's cancel), failed otherwise; and cancelled
//! inputs, which their worker drops or stops their container for.

use levers9_api::v1::{controlplane_message, CancelInput, ControlplaneMessage};
use levers9_store::task_state;

use super::{Dispatcher, Recorded};
use crate::error::ApiError;
use crate::fleet::records::state as container_state;

impl Dispatcher {
    pub(super) async fn ended(&mut self, container_id: &str) -> Result<(), ApiError> {
        let Some(stub_id) = self.container_stub.remove(container_id) else {
            return Ok(());
        };
        let reason = match self.parts.fleet.container(container_id).await? {
            Some(c) if c.state == container_state::EXITED && c.message.is_empty() => {
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
                // Nothing else can take the queue: say why rather than
                // retry a container that will fail the same way.
                let hopeless = stub.warm.is_empty() && stub.starting.is_empty();
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
                self.publish_end(&held.ticket, task_state::ERROR, &message, Recorded::Nothing);
            }
        }
        for task_id in in_flight {
            let Some(held) = self.held.remove(&task_id) else {
                continue;
            };
            if handed_back {
                // Stopped by its worker's drain: the input did not fail,
                // so it runs again without using an attempt.
                let attempt = held.attempt.saturating_sub(1);
                self.queue(&stub_id, held.ticket, attempt, true);
            } else {
                self.failed(held, task_state::ERROR, reason.clone(), Recorded::Nothing);
            }
        }
        self.pump(&stub_id).await
    }

    pub(super) async fn cancel(&mut self, task_id: &str) -> Result<(), ApiError> {
        let Some(held) = self.held.remove(task_id) else {
            return Ok(());
        };
        let stub_id = held.stub_id.clone();
        let message = "cancelled by the caller";
        self.publish_end(
            &held.ticket,
            task_state::CANCELLED,
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
        self.parts.fleet.send_to_worker(&worker_id, cancel).await
    }
}
