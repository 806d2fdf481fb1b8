//! Queues and claims in process: a deque per name, woken pops, and claims
//! kept as ordinary queues.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::MemoryState;
use crate::{Claims, Queues, StateError};

/// One queue: its items, oldest first, and the wake-up of pops waiting on it.
#[derive(Default)]
pub(super) struct Queue {
    items: VecDeque<Vec<u8>>,
    /// Woken once per push, so each item wakes at most one waiting pop.
    pushed: Arc<Notify>,
}

/// Drops a queue that holds nothing and that no pop is waiting on, so that
/// names used once do not pile up.
fn forget_if_idle(queues: &mut HashMap<String, Queue>, name: &str) {
    let idle = queues
        .get(name)
        .is_some_and(|q| q.items.is_empty() && Arc::strong_count(&q.pushed) == 1);
    if idle {
        queues.remove(name);
    }
}

#[async_trait::async_trait]
impl Queues for MemoryState {
    async fn push(&self, queue: &str, value: &[u8]) -> Result<(), StateError> {
        let mut queues = self.inner.queues.lock().await;
        let q = queues.entry(queue.to_owned()).or_default();
        q.items.push_back(value.to_vec());
        q.pushed.notify_one();
        Ok(())
    }

    async fn pop(&self, queue: &str, wait: Duration) -> Result<Option<Vec<u8>>, StateError> {
        let deadline = Instant::now() + wait;
        loop {
            let pushed = {
                let mut queues = self.inner.queues.lock().await;
                let q = queues.entry(queue.to_owned()).or_default();
                if let Some(item) = q.items.pop_front() {
                    if q.items.is_empty() {
                        forget_if_idle(&mut queues, queue);
                    } else {
                        // A stale wake-up or a waiter that timed out may have
                        // swallowed the notification meant for these items.
                        q.pushed.notify_one();
                    }
                    return Ok(Some(item));
                }
                // Registered before the lock is released, so a push between
                // here and the await below still wakes this pop.
                let mut pushed = Box::pin(Arc::clone(&q.pushed).notified_owned());
                pushed.as_mut().enable();
                pushed
            };
            if tokio::time::timeout_at(deadline, pushed).await.is_err() {
                forget_if_idle(&mut *self.inner.queues.lock().await, queue);
                return Ok(None);
            }
        }
    }

    async fn pop_many(&self, queue: &str, max: usize) -> Result<Vec<Vec<u8>>, StateError> {
        let mut queues = self.inner.queues.lock().await;
        let Some(q) = queues.get_mut(queue) else {
            return Ok(Vec::new());
        };
        let popped: Vec<Vec<u8>> = q.items.drain(..max.min(q.items.len())).collect();
        if q.items.is_empty() {
            forget_if_idle(&mut queues, queue);
        } else if !popped.is_empty() {
            // As in `pop`: a notification meant for the items left may have
            // been swallowed by a waiter that is gone.
            q.pushed.notify_one();
        }
        Ok(popped)
    }

    async fn queue_len(&self, queue: &str) -> Result<u64, StateError> {
        let queues = self.inner.queues.lock().await;
        let len = queues.get(queue).map_or(0, |q| q.items.len());
        Ok(u64::try_from(len).unwrap_or(u64::MAX))
    }

    async fn push_capped(
        &self,
        queue: &str,
        values: &[Vec<u8>],
        max_len: u64,
    ) -> Result<Option<u64>, StateError> {
        let mut queues = self.inner.queues.lock().await;
        let len = queues.get(queue).map_or(0, |q| q.items.len());
        if (len + values.len()) as u64 > max_len {
            return Ok(None);
        }
        if values.is_empty() {
            return Ok(Some(len as u64));
        }
        let q = queues.entry(queue.to_owned()).or_default();
        q.items.extend(values.iter().cloned());
        // One wake-up per item, as that many pushes would give.
        for _ in values {
            q.pushed.notify_one();
        }
        Ok(Some(q.items.len() as u64))
    }

    async fn queue_delete(&self, queue: &str) -> Result<u64, StateError> {
        let mut queues = self.inner.queues.lock().await;
        let Some(q) = queues.get_mut(queue) else {
            return Ok(0);
        };
        let deleted = q.items.len() as u64;
        q.items.clear();
        forget_if_idle(&mut queues, queue);
        Ok(deleted)
    }
}

#[async_trait::async_trait]
impl Claims for MemoryState {
    // In one process a claim needs no atomicity across a crash: the claims
    // die with the process that holds them.
    async fn claim(
        &self,
        queue: &str,
        claims: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError> {
        let item = self.pop(queue, wait).await?;
        if let Some(item) = &item {
            self.push(claims, item).await?;
        }
        Ok(item)
    }

    async fn claim_many(
        &self,
        queue: &str,
        claims: &str,
        max: usize,
    ) -> Result<Vec<Vec<u8>>, StateError> {
        let items = self.pop_many(queue, max).await?;
        let mut queues = self.inner.queues.lock().await;
        if !items.is_empty() {
            let claimed = queues.entry(claims.to_owned()).or_default();
            claimed.items.extend(items.iter().cloned());
        }
        Ok(items)
    }

    async fn unclaim(
        &self,
        claims: &str,
        items: &[Vec<u8>],
        requeue: Option<&str>,
    ) -> Result<(), StateError> {
        let mut queues = self.inner.queues.lock().await;
        if let Some(claimed) = queues.get_mut(claims) {
            for item in items {
                if let Some(at) = claimed.items.iter().position(|c| c == item) {
                    claimed.items.remove(at);
                }
            }
            if claimed.items.is_empty() {
                forget_if_idle(&mut queues, claims);
            }
        }
        if let Some(queue) = requeue {
            if !items.is_empty() {
                let q = queues.entry(queue.to_owned()).or_default();
                q.items.extend(items.iter().cloned());
                q.pushed.notify_one();
            }
        }
        Ok(())
    }

    async fn claimed(&self, claims: &str) -> Result<Vec<Vec<u8>>, StateError> {
        let queues = self.inner.queues.lock().await;
        Ok(queues
            .get(claims)
            .map(|q| q.items.iter().cloned().collect())
            .unwrap_or_default())
    }
}
