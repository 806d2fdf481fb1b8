//! A generator's items, from the worker's stream to the caller's channel.

use levers9_api::v1::{run_event, TaskItem, TaskItemEvent};

use super::StreamState;
use crate::error::ApiError;
use crate::fleet::records::WorkerRecord;
use crate::fleet::Fleet;
use crate::functions::items::MAX_INLINE_ITEM_BYTES;

/// Publishes an item to its task's caller, in the order the worker sent
/// it (this stream's messages are handled one at a time), so items reach
/// the caller before the task's result. An item of a task this stream no
/// longer holds (it ended, or timed out) has nobody waiting: dropped.
pub(super) async fn forward(
    fleet: &Fleet,
    worker: &WorkerRecord,
    stream: &StreamState,
    item: TaskItem,
) -> Result<(), ApiError> {
    let ticket = stream.tickets.lock().get(&item.task_id).cloned();
    let Some(ticket) = ticket else {
        tracing::debug!(task_id = %item.task_id, "an item of a task this stream does not hold; dropped");
        return Ok(());
    };
    let mut payload = item.payload;
    if payload.len() > MAX_INLINE_ITEM_BYTES {
        fleet
            .tasks()
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
        worker_id: worker.id.clone(),
        container_id: item.container_id,
    });
    fleet.tasks().publish(&ticket.reply, event).await
}
