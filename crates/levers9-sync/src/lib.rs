//! The one mutex of the workspace's in-memory maps and caches (the
//! controlplane's, the worker's, the runtime's, the image cache's, the
//! volumes'), so why it ignores poisoning is said, and tested, once.
//!
//! A crate of its own because no crate below all of its users is one it
//! belongs in: the runtime and the image cache depend only on
//! `levers9-ids`, the volumes only on `levers9-config`.
#![forbid(unsafe_code)]

use std::sync::{MutexGuard, PoisonError};

/// A `std::sync::Mutex` whose [`Lock::lock`] ignores poisoning.
///
/// Why: what it guards are caches, routing maps and bookkeeping (tokens,
/// stubs, reply senders, worker inboxes, running builds, endpoint names; a
/// worker's held containers, free GPUs and running execs; the image
/// cache's layers and containers; a container's log ring) whose critical
/// sections are a few map or field operations. A panic in one of them
/// leaves at worst a stale or missing entry, which every user already
/// tolerates (a cache miss, a reply that never comes and times out, a log
/// line lost), whereas a poisoned mutex would fail every later call of the
/// process.
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
