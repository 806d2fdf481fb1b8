//! FIFO queues of opaque items.

use std::time::Duration;

use crate::StateError;

/// FIFO queues: the scheduler's backlog, a worker's inbox. A queue exists
/// while it holds items; popping from one that does not is no error.
#[async_trait::async_trait]
pub trait Queues: Send + Sync {
    /// Appends to the tail of a FIFO queue.
    async fn push(&self, queue: &str, value: &[u8]) -> Result<(), StateError>;

    /// Takes the head of the queue, waiting up to `wait` for one; None on timeout.
    async fn pop(&self, queue: &str, wait: Duration) -> Result<Option<Vec<u8>>, StateError>;

    /// Takes up to `max` items from the head of the queue, oldest first,
    /// without waiting; empty if it has none.
    async fn pop_many(&self, queue: &str, max: usize) -> Result<Vec<Vec<u8>>, StateError>;

    /// Number of items in a queue.
    async fn queue_len(&self, queue: &str) -> Result<u64, StateError>;

    /// Appends `values` to the tail of a queue in one atomic step, unless
    /// that would leave it with more than `max_len` items: then nothing is
    /// pushed and None comes back. Some(the queue's length after the push)
    /// otherwise.
    async fn push_capped(
        &self,
        queue: &str,
        values: &[Vec<u8>],
        max_len: u64,
    ) -> Result<Option<u64>, StateError>;

    /// Deletes a queue and every item in it; how many items it held.
    async fn queue_delete(&self, queue: &str) -> Result<u64, StateError>;
}
