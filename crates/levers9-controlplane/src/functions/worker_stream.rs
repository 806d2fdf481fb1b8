//! Function traffic on one worker's stream: inputs get their payload as
//! they go out, and what comes back (runner ready, output, items, results)
//! reaches the dispatcher and the callers. The fleet's stream
//! (`fleet::attach`) hands each such message here, as its [`TaskTraffic`].

use std::collections::HashMap;
use std::future::Future;

use levers9_api::v1::{
    run_event, TaskInput, TaskItem, TaskItemEvent, TaskOutcome, TaskOutput, TaskOutputEvent,
    TaskResult,
};
use levers9_store::FinalState;
use levers9_sync::Lock;

use super::items::MAX_INLINE_ITEM_BYTES;
use super::logs::TaskLogs;
use super::{DispatchEvent, InputEnd, TaskState, Ticket};
use crate::fleet::attach::TaskTraffic;
use crate::functions::FunctionError;
use crate::wire_states;

/// Complete results up to this size go to the caller's channel directly.
const MAX_INLINE_RESULT_BYTES: usize = 1 << 20;

/// The tasks of one worker's stream.
pub(crate) struct StreamTasks {
    tasks: TaskState,
    logs: TaskLogs,
    /// The tickets of the inputs sent on this stream, by task id, so output
    /// and results find their caller without a hot-state read each. Every
    /// critical section is a single get, insert or remove.
    tickets: Lock<HashMap<String, Ticket>>,
}

impl StreamTasks {
    /// The tasks of a new stream: inputs and results meet in `tasks`, what
    /// tasks print is kept in `logs`.
    pub(crate) fn new(tasks: TaskState, logs: TaskLogs) -> Self {
        Self {
            tasks,
            logs,
            tickets: Lock::default(),
        }
    }

    /// Adds a task's payload to its input, just before it goes to the
    /// worker, and keeps its ticket for the output and result to come. An
    /// input that is gone (expired, or the task was cancelled meanwhile) is
    /// not sent: the dispatcher is told it was lost, or that it can never
    /// run.
    pub(crate) async fn attach_input(&self, input: &mut TaskInput) -> bool {
        match self.tasks.input(&input.task_id).await {
            Ok(Some((ticket, payload))) => {
                input.payload = payload;
                self.tickets.lock().insert(input.task_id.clone(), ticket);
                true
            }
            outcome => {
                let (state, message) = match outcome {
                    Ok(_) => (
                        InputEnd::Error,
                        "the task's input expired before it could run".to_owned(),
                    ),
                    Err(error) => (
                        InputEnd::Lost,
                        format!("cannot read the task's input: {error}"),
                    ),
                };
                let event = DispatchEvent::Finished {
                    container_id: input.container_id.clone(),
                    task_id: input.task_id.clone(),
                    state,
                    message,
                    delivered: false,
                };
                if let Err(error) = self.tasks.tell(&event).await {
                    tracing::error!(%error, task_id = %input.task_id, "cannot report an input that cannot be sent");
                }
                false
            }
        }
    }

    /// Tells the dispatcher a container's runner takes inputs.
    pub(crate) async fn runner_ready(&self, container_id: String) -> Result<(), FunctionError> {
        Ok(self
            .tasks
            .tell(&DispatchEvent::RunnerReady { container_id })
            .await?)
    }

    /// Keeps what a task printed and passes it to its caller.
    pub(crate) async fn output(&self, output: TaskOutput) -> Result<(), FunctionError> {
        self.logs.record(&output);
        let ticket = self.tickets.lock().get(&output.task_id).cloned();
        if let Some(ticket) = ticket {
            let event = run_event::Kind::Output(TaskOutputEvent {
                index: ticket.index,
                task_id: output.task_id,
                stream: output.stream,
                data: output.data,
            });
            self.tasks.publish(&ticket.reply, event).await?;
        }
        Ok(())
    }

    /// Publishes a generator's item to its task's caller, in the order the
    /// worker sent it (a stream's messages are handled one at a time), so
    /// items reach the caller before the task's result. An item of a task
    /// this stream no longer holds (it ended, or timed out) has nobody
    /// waiting: dropped.
    pub(crate) async fn item(&self, worker_id: &str, item: TaskItem) -> Result<(), FunctionError> {
        let ticket = self.tickets.lock().get(&item.task_id).cloned();
        let Some(ticket) = ticket else {
            tracing::debug!(task_id = %item.task_id, "an item of a task this stream does not hold; dropped");
            return Ok(());
        };
        let mut payload = item.payload;
        if payload.len() > MAX_INLINE_ITEM_BYTES {
            self.tasks
                .put_item(&item.task_id, item.item_index, &payload)
                .await?;
            // Empty: the caller's replica reads it back.
            payload = Vec::new();
        }
        let event = run_event::Kind::Item(TaskItemEvent {
            index: ticket.index,
            task_id: item.task_id,
            item_index: item.item_index,
            payload,
            worker_id: worker_id.to_owned(),
            container_id: item.container_id,
        });
        self.tasks.publish(&ticket.reply, event).await
    }

    /// Stores how an attempt ended and tells the dispatcher.
    pub(crate) async fn result(&self, result: TaskResult) -> Result<(), FunctionError> {
        let ticket = self.tickets.lock().remove(&result.task_id);
        // A result that names no end (unspecified, or a number of a newer
        // worker's) cannot be trusted to say the function ran: taken as
        // lost, the input runs again without using an attempt, rather than
        // a task failing for what may be a worker's mistake. A worker
        // repeating it fails the same way each time; the warning says so.
        let end = wire_states::input_end(result.state()).unwrap_or_else(|| {
            tracing::warn!(task_id = %result.task_id, state = result.state, "a worker ended an input in a state this controlplane does not know; taken as lost");
            InputEnd::Lost
        });
        let reported = match end {
            InputEnd::Complete => Some(FinalState::Complete),
            InputEnd::Error => Some(FinalState::Error),
            InputEnd::Timeout => Some(FinalState::Timeout),
            // A lost input runs again; a cancelled one was ended by the
            // dispatcher when the caller cancelled it: neither is how the
            // task ended.
            InputEnd::Lost | InputEnd::Cancelled => None,
        };
        let mut delivered = false;
        if let Some(state) = reported {
            let outcome = TaskOutcome {
                index: ticket.as_ref().map_or(0, |t| t.index),
                task_id: result.task_id.clone(),
                state: wire_states::final_state(state).into(),
                payload: result.payload,
                traceback: result.traceback,
                message: result.message.clone(),
            };
            // A complete result is final whatever the dispatcher decides,
            // so the caller gets it now, payload and all, rather than after
            // two more hops through the dispatcher and a read of what was
            // stored. Large ones take the long way: Redis drops a
            // subscriber whose pending messages pass its pub/sub output
            // limit (32 MB).
            let inline =
                state == FinalState::Complete && outcome.payload.len() <= MAX_INLINE_RESULT_BYTES;
            if let Some(ticket) = ticket.filter(|_| inline) {
                self.tasks
                    .publish(&ticket.reply, run_event::Kind::Result(outcome.clone()))
                    .await?;
                delivered = true;
            }
            // Stored before the dispatcher hears of it: what it does next
            // (the row, the task's own channel) tells followers to read it.
            self.tasks.put_outcome(&outcome).await?;
        }
        Ok(self
            .tasks
            .tell(&DispatchEvent::Finished {
                container_id: result.container_id,
                task_id: result.task_id,
                state: end,
                message: result.message,
                delivered,
            })
            .await?)
    }
}

/// The fleet's worker streams hand their function traffic here.
impl TaskTraffic for StreamTasks {
    type Error = FunctionError;

    fn attach_input(&self, input: &mut TaskInput) -> impl Future<Output = bool> + Send {
        StreamTasks::attach_input(self, input)
    }

    fn runner_ready(
        &self,
        container_id: String,
    ) -> impl Future<Output = Result<(), FunctionError>> + Send {
        StreamTasks::runner_ready(self, container_id)
    }

    fn output(&self, output: TaskOutput) -> impl Future<Output = Result<(), FunctionError>> + Send {
        StreamTasks::output(self, output)
    }

    fn result(&self, result: TaskResult) -> impl Future<Output = Result<(), FunctionError>> + Send {
        StreamTasks::result(self, result)
    }

    fn item(
        &self,
        worker_id: &str,
        item: TaskItem,
    ) -> impl Future<Output = Result<(), FunctionError>> + Send {
        StreamTasks::item(self, worker_id, item)
    }
}
