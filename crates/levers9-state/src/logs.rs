//! Bounded logs: the last entries appended under a name, expiring as a whole.

use std::time::Duration;

use crate::StateError;

/// Bounded, expiring logs (a container's recent output): appending keeps
/// only the newest entries and renews the whole log's TTL.
#[async_trait::async_trait]
pub trait Logs: Send + Sync {
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

    /// The entries of the log, oldest first; empty if it does not exist or
    /// expired.
    async fn log_range(&self, key: &str) -> Result<Vec<Vec<u8>>, StateError>;
}
