//! Hot state of the levers9 controlplane: TTL keys, leases, FIFO queues and
//! pub/sub that are fast, shared between controlplane replicas and may expire.
//!
//! One trait, [`HotState`], with two implementations that pass the same test
//! suite: [`RedisState`] for production and [`MemoryState`] for a
//! single-machine install.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod memory;
mod redis;

use std::time::Duration;

use futures::stream::BoxStream;

pub use crate::error::StateError;
pub use crate::memory::MemoryState;
pub use crate::redis::RedisState;

/// Fast, shared, possibly expiring state; keys, leases, queues and channels are separate namespaces.
#[async_trait::async_trait]
pub trait HotState: Send + Sync + 'static {
    /// "redis" or "memory", for the start-up log.
    fn backend(&self) -> &'static str;

    /// A cheap round trip, for readiness checks.
    async fn ping(&self) -> Result<(), StateError>;

    /// Sets key to value; it expires after ttl.
    async fn set_with_ttl(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StateError>;

    /// Sets key only if it does not exist; true if it was set.
    async fn set_if_absent(
        &self,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StateError>;

    /// The value of key, None if missing or expired.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StateError>;

    /// Deletes key; true if it existed.
    async fn delete(&self, key: &str) -> Result<bool, StateError>;

    /// Takes the lease `name` for `holder` for ttl if it is free or already held by holder (then it is renewed); true if holder holds it now.
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StateError>;

    /// Releases the lease if holder holds it; true if it did.
    async fn release_lease(&self, name: &str, holder: &str) -> Result<bool, StateError>;

    /// Appends to the tail of a FIFO queue.
    async fn push(&self, queue: &str, value: &[u8]) -> Result<(), StateError>;

    /// Takes the head of the queue, waiting up to `wait` for one; None on timeout.
    async fn pop(&self, queue: &str, wait: Duration) -> Result<Option<Vec<u8>>, StateError>;

    /// Number of items in a queue.
    async fn queue_len(&self, queue: &str) -> Result<u64, StateError>;

    /// Publishes a message to every current subscriber of channel; returns nothing about receivers.
    async fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StateError>;

    /// Subscribes to a channel: a stream of messages published after this call returns.
    async fn subscribe(&self, channel: &str) -> Result<BoxStream<'static, Vec<u8>>, StateError>;
}
