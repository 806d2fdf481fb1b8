//! The one mutex of the controlplane's in-memory maps and caches.

use std::sync::{MutexGuard, PoisonError};

/// A `std::sync::Mutex` whose [`Lock::lock`] ignores poisoning.
///
/// Why: what it guards here are caches and routing maps (tokens, stubs,
/// reply senders, worker inboxes, running builds, endpoint names) whose
/// critical sections are a few map operations. A panic in one of them
/// leaves at worst a stale or missing entry, which every user already
/// tolerates (a cache miss, a reply that never comes and times out),
/// whereas a poisoned mutex would fail every later call on this replica.
#[derive(Debug, Default)]
pub struct Lock<T>(std::sync::Mutex<T>);

impl<T> Lock<T> {
    /// A lock around `value`.
    pub const fn new(value: T) -> Self {
        Self(std::sync::Mutex::new(value))
    }

    /// Waits for the lock, whether or not an earlier holder panicked.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::Lock;

    #[test]
    fn a_panic_while_holding_it_does_not_lock_out_later_callers() {
        let lock = Lock::new(vec![1]);
        let panicked = std::thread::scope(|s| {
            s.spawn(|| {
                let mut held = lock.lock();
                held.push(2);
                panic!("a holder panics");
            })
            .join()
            .is_err()
        });
        assert!(panicked);
        assert_eq!(*lock.lock(), vec![1, 2]);
    }
}
