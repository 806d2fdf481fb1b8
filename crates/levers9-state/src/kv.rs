//! Keys: values under a name, each with its own expiry.

use std::time::Duration;

use crate::StateError;

/// Values under a name that expire after a TTL: a container's or a
/// worker's record, a marker that lives while heartbeats arrive.
#[async_trait::async_trait]
pub trait Kv: Send + Sync {
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
}
