//! Hot state of the levers9 controlplane: TTL keys, leases, FIFO queues,
//! pub/sub, capacity counters, sets, maps and bounded logs that are fast, shared
//! between controlplane replicas and may expire.
//!
//! One trait, [`HotState`], with two implementations that pass the same test
//! suite: [`RedisState`] for production and [`MemoryState`] for a
//! single-machine install.
#![forbid(unsafe_code)]

mod amounts;
mod batch;
mod error;
pub mod keys;
mod maps;
mod memory;
mod redis;

use std::time::Duration;

use futures::stream::BoxStream;

pub use crate::batch::{Reservation, Reserve, Write};
pub use crate::error::StateError;
pub use crate::maps::MapPut;
pub use crate::memory::MemoryState;
pub use crate::redis::RedisState;

/// Fast, shared, possibly expiring state; keys, leases, queues, channels,
/// capacity records, sets, maps and logs are separate namespaces, so one name may be
/// used for each without collisions.
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

    /// The values of many keys, in their order, in one round trip; None for
    /// a key that is missing or expired.
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StateError>;

    /// Applies the writes in their order, in one round trip. Not atomic as a
    /// whole: each write is, and after an error the writes before it may
    /// have been applied (as with the single calls one after another).
    async fn write_batch(&self, writes: &[Write]) -> Result<(), StateError>;

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

    /// Takes up to `max` items from the head of the queue, oldest first,
    /// without waiting; empty if it has none.
    async fn pop_many(&self, queue: &str, max: usize) -> Result<Vec<Vec<u8>>, StateError>;

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

    /// Writes `entries` (field, value) into the map `map`, creating it, in
    /// one atomic step, unless that would leave the map with more than
    /// `max_entries` fields: then nothing is written ([`MapPut::Full`]).
    /// With `keep_existing`, a field already in the map keeps its value.
    async fn map_put(
        &self,
        map: &str,
        entries: &[(Vec<u8>, Vec<u8>)],
        max_entries: u64,
        keep_existing: bool,
    ) -> Result<MapPut, StateError>;

    /// The value of a field of the map; None if either is missing.
    async fn map_get(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Removes a field of the map and returns its value, in one atomic
    /// step; None if it was not there. An emptied map no longer exists.
    async fn map_take(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Number of fields in the map; 0 if it does not exist.
    async fn map_len(&self, map: &str) -> Result<u64, StateError>;

    /// The fields of the map, sorted; empty if it does not exist.
    async fn map_fields(&self, map: &str) -> Result<Vec<Vec<u8>>, StateError>;

    /// The fields of the map with their values, sorted by field.
    async fn map_entries(&self, map: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StateError>;

    /// Deletes the map and every field in it; true if it existed.
    async fn map_delete(&self, map: &str) -> Result<bool, StateError>;

    /// Publishes a message to every current subscriber of channel; returns nothing about receivers.
    async fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StateError>;

    /// Subscribes to a channel: a stream of messages published after this call returns.
    async fn subscribe(&self, channel: &str) -> Result<BoxStream<'static, Vec<u8>>, StateError>;

    /// Sets the named counters of the capacity record `key`, creating it if
    /// needed; counters not named keep their values. With no amounts nothing
    /// is written and a missing record stays missing.
    async fn set_capacity(&self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError>;

    /// The scheduler's atomic step: if the record exists and every named
    /// counter is at least its amount, subtracts all of them and returns true;
    /// otherwise changes nothing and returns false. A missing record or counter
    /// counts as 0; a counter named twice must fit the sum of its amounts.
    /// Amounts must not be negative ([`StateError::NegativeAmount`]).
    async fn try_reserve(&self, key: &str, amounts: &[(&str, i64)]) -> Result<bool, StateError> {
        let reserved = self.try_reserve_batch(&[Reserve { key, amounts }]).await?;
        Ok(reserved.first().is_some_and(Reservation::is_reserved))
    }

    /// Many [`HotState::try_reserve`]s as one atomic step, in their order
    /// (a later one sees what the earlier ones took): one result each, in
    /// the same order. Each is all or nothing on its own record; a refused
    /// one does not stop the others. A negative amount anywhere is an error
    /// and nothing is taken.
    async fn try_reserve_batch(
        &self,
        reservations: &[Reserve<'_>],
    ) -> Result<Vec<Reservation>, StateError>;

    /// Adds the amounts back to the record, but only if it still exists: a
    /// late release must not resurrect the record of a worker that is gone.
    /// Amounts must not be negative ([`StateError::NegativeAmount`]).
    async fn release(&self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError>;

    /// Every counter of the record, sorted by name; None if it does not exist.
    async fn get_capacity(&self, key: &str) -> Result<Option<Vec<(String, i64)>>, StateError>;

    /// Deletes the capacity record; true if it existed.
    async fn delete_capacity(&self, key: &str) -> Result<bool, StateError>;

    /// Adds member to the set; true if it was not there yet.
    async fn set_add(&self, set: &str, member: &str) -> Result<bool, StateError>;

    /// Removes member from the set; true if it was there. An emptied set no longer exists.
    async fn set_remove(&self, set: &str, member: &str) -> Result<bool, StateError>;

    /// The members of the set, sorted; empty if the set does not exist.
    async fn set_members(&self, set: &str) -> Result<Vec<String>, StateError>;

    /// Appends entry to the log `key`, keeps only its last `max_entries`
    /// entries (none if 0: the log is deleted) and makes the whole log expire
    /// after ttl from now.
    async fn log_append(
        &self,
        key: &str,
        entry: &[u8],
        max_entries: u64,
        ttl: Duration,
    ) -> Result<(), StateError>;

    /// The entries of the log, oldest first; empty if it does not exist or expired.
    async fn log_range(&self, key: &str) -> Result<Vec<Vec<u8>>, StateError>;
}
