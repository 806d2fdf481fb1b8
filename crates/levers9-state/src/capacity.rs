//! Capacity records: named counters that the scheduler reserves from
//! atomically.

use crate::{Reservation, Reserve, StateError};

/// Capacity records, one per worker: counters (CPU, memory, GPUs) that
/// placements take from and finished containers give back, never more
/// than a record holds, even with several schedulers at once.
#[async_trait::async_trait]
pub trait Capacity: Send + Sync {
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

    /// Many [`Capacity::try_reserve`]s as one atomic step, in their order
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
}
