//! A map whose entries expire, for keys, leases and logs.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// Expired entries nobody reads again are swept at most this often, on a write.
const PURGE_INTERVAL: Duration = Duration::from_secs(1);

/// A map whose entries expire: checked on every read, swept now and then on a write.
pub(super) struct Expiring<V> {
    entries: HashMap<String, (V, Instant)>,
    next_purge: Option<Instant>,
}

impl<V> Default for Expiring<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            next_purge: None,
        }
    }
}

impl<V> Expiring<V> {
    pub(super) fn get(&self, key: &str, now: Instant) -> Option<&V> {
        self.entries
            .get(key)
            .filter(|(_, expires_at)| *expires_at > now)
            .map(|(value, _)| value)
    }

    pub(super) fn insert(&mut self, key: &str, value: V, ttl: Duration, now: Instant) {
        self.purge(now);
        self.entries.insert(key.to_owned(), (value, now + ttl));
    }

    /// Removes key; the value only if it had not expired yet.
    pub(super) fn remove(&mut self, key: &str, now: Instant) -> Option<V> {
        self.purge(now);
        self.entries
            .remove(key)
            .filter(|(_, expires_at)| *expires_at > now)
            .map(|(value, _)| value)
    }

    /// A full sweep, but rate-limited so that writes stay O(1) amortised.
    fn purge(&mut self, now: Instant) {
        if self.next_purge.is_some_and(|at| at > now) {
            return;
        }
        self.entries.retain(|_, (_, expires_at)| *expires_at > now);
        self.next_purge = Some(now + PURGE_INTERVAL);
    }
}
