//! A generator's items on their way to the caller. Small ones ride in the
//! event on the caller's channel; larger ones wait in the hot state for the
//! caller's replica to take them, as large results do.
//!
//! How far ahead a generator runs is bounded by its runner, which sends
//! items only while fewer than its window are unacknowledged by the
//! caller (`ItemsReceived`, carried to the worker as `ItemsAck`); so at
//! most a window of a task's items waits here at any time.

use levers9_state::keys;

use super::TaskState;
use crate::functions::FunctionError;

/// Items up to this size go to the caller's channel in their event: Redis
/// drops a pub/sub subscriber with more than 32 MB pending, and a window
/// of items must stay far below that.
pub const MAX_INLINE_ITEM_BYTES: usize = 1 << 20;

impl TaskState {
    /// Keeps an item too large for the caller's channel until its caller's
    /// replica takes it (or the result TTL passes: a caller that went away
    /// never does).
    pub async fn put_item(
        &self,
        task_id: &str,
        item_index: u64,
        payload: &[u8],
    ) -> Result<(), FunctionError> {
        self.state
            .set_with_ttl(
                &keys::task_item(task_id, item_index),
                payload,
                self.result_ttl,
            )
            .await?;
        Ok(())
    }

    /// Takes a stored item: its payload, or `None` if it expired.
    pub async fn take_item(
        &self,
        task_id: &str,
        item_index: u64,
    ) -> Result<Option<Vec<u8>>, FunctionError> {
        let key = keys::task_item(task_id, item_index);
        let payload = self.state.get(&key).await?;
        if payload.is_some() {
            self.state.delete(&key).await?;
        }
        Ok(payload)
    }
}
