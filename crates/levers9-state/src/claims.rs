//! Claims: items taken from a queue into a claims queue, so that what a
//! dead taker held is found and put back rather than lost.

use std::time::Duration;

use crate::StateError;

/// Acknowledged takes from the [`crate::Queues`] of the same backend: a
/// claims queue is an ordinary queue (its name is the caller's choice) that
/// holds what was taken until it is settled.
#[async_trait::async_trait]
pub trait Claims: Send + Sync {
    /// Takes the head of `queue` into the claims queue `claims` in one
    /// atomic step, waiting up to `wait` for one; None on timeout. An item
    /// stays claimed until [`Self::unclaim`]: if its taker dies first,
    /// another process finds it in `claims` ([`Self::claimed`]) and puts it
    /// back, so nothing taken is lost.
    async fn claim(
        &self,
        queue: &str,
        claims: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError>;

    /// Like [`Self::claim`] for up to `max` items, oldest first, without
    /// waiting; empty if the queue has none.
    async fn claim_many(
        &self,
        queue: &str,
        claims: &str,
        max: usize,
    ) -> Result<Vec<Vec<u8>>, StateError>;

    /// Takes one occurrence of each of `items` out of `claims` and, with
    /// `requeue`, pushes each to the tail of that queue, in order, in one
    /// atomic step (an item not claimed is still pushed).
    async fn unclaim(
        &self,
        claims: &str,
        items: &[Vec<u8>],
        requeue: Option<&str>,
    ) -> Result<(), StateError>;

    /// The items of a claims queue, oldest first.
    async fn claimed(&self, claims: &str) -> Result<Vec<Vec<u8>>, StateError>;
}
