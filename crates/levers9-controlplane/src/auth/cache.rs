//! A small in-process cache of token checks, keyed by token hash.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use levers9_sync::Lock;

use super::Caller;

/// Entries past this count trigger a sweep of expired ones, which keeps the
/// map bounded by the number of tokens used within one cache time.
const SWEEP_ABOVE: usize = 10_000;

struct Entry {
    caller: Caller,
    checked_at: Instant,
    touched_at: Option<Instant>,
}

/// Positive token checks, valid for a fixed time. Unknown tokens are never
/// cached, so guessing cannot fill it.
pub(super) struct TokenCache {
    ttl: Duration,
    entries: Lock<HashMap<Vec<u8>, Entry>>,
}

impl TokenCache {
    pub(super) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Lock::new(HashMap::new()),
        }
    }

    pub(super) fn get(&self, hash: &[u8], now: Instant) -> Option<Caller> {
        let entries = self.entries.lock();
        let entry = entries.get(hash)?;
        (now.duration_since(entry.checked_at) < self.ttl).then(|| entry.caller.clone())
    }

    pub(super) fn insert(&self, hash: Vec<u8>, caller: Caller, now: Instant) {
        let mut entries = self.entries.lock();
        if entries.len() > SWEEP_ABOVE {
            let ttl = self.ttl;
            entries.retain(|_, e| now.duration_since(e.checked_at) < ttl);
        }
        // Keep the last touch across refreshes so a busy token is not written
        // on every re-check.
        let touched_at = entries.get(&hash).and_then(|e| e.touched_at);
        entries.insert(
            hash,
            Entry {
                caller,
                checked_at: now,
                touched_at,
            },
        );
    }

    /// True if the caller should record a use now (the last one recorded is
    /// older than `every`); marks it recorded.
    pub(super) fn claim_touch(&self, hash: &[u8], now: Instant, every: Duration) -> bool {
        let mut entries = self.entries.lock();
        let Some(entry) = entries.get_mut(hash) else {
            return false;
        };
        let due = entry
            .touched_at
            .is_none_or(|at| now.duration_since(at) >= every);
        if due {
            entry.touched_at = Some(now);
        }
        due
    }

    pub(super) fn remove_token(&self, token_id: &str) {
        self.entries
            .lock()
            .retain(|_, e| e.caller.token_id != token_id);
    }
}
