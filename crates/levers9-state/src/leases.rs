//! Leases: a name held by one holder at a time, until it is released or
//! its TTL runs out.

use std::time::Duration;

use crate::StateError;

/// Leases, so that one controlplane replica at a time does a job (firing
/// schedules, dispatching functions, building an image) and another takes
/// over when its holder dies.
#[async_trait::async_trait]
pub trait Leases: Send + Sync {
    /// Takes the lease `name` for `holder` for ttl if it is free or already
    /// held by holder (then it is renewed); true if holder holds it now.
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StateError>;

    /// Releases the lease if holder holds it; true if it did.
    async fn release_lease(&self, name: &str, holder: &str) -> Result<bool, StateError>;
}
