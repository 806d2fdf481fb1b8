//! In-process shortcuts of one replica: events for a dispatcher that runs
//! here, and the inputs of tasks submitted here.
//!
//! The hot state stays the record: every input is stored there too, and the
//! dispatcher's queue there is read whenever it runs here. The shortcuts
//! only spare round trips when the parts of a call meet in one process,
//! which is every call on a single replica.

use std::collections::HashMap;
use std::sync::Arc;

use levers9_sync::Lock;
use tokio::sync::mpsc;

use super::{DispatchEvent, Ticket};

/// Inputs up to this size are kept in memory as well.
const MAX_CACHED_INPUT: usize = 256 << 10;
/// All cached inputs together, at most.
const MAX_CACHED_BYTES: usize = 256 << 20;

/// The way to a dispatcher running in this process, while one does.
#[derive(Default)]
pub(super) struct DispatchLane(Lock<Option<mpsc::UnboundedSender<DispatchEvent>>>);

impl DispatchLane {
    /// Events told in this process go to the returned receiver from now on;
    /// the sender is for events from elsewhere.
    pub(super) fn open(
        &self,
    ) -> (
        mpsc::UnboundedSender<DispatchEvent>,
        mpsc::UnboundedReceiver<DispatchEvent>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.0.lock() = Some(tx.clone());
        (tx, rx)
    }

    /// Events go to the hot state's queue again.
    pub(super) fn close(&self) {
        *self.0.lock() = None;
    }

    /// Hands `event` to the dispatcher here; gives it back if none runs
    /// here (or it just stopped).
    pub(super) fn send(&self, event: DispatchEvent) -> Result<(), DispatchEvent> {
        let Some(tx) = self.0.lock().clone() else {
            return Err(event);
        };
        tx.send(event).map_err(|e| e.0)
    }
}

/// The tickets and payloads of small inputs submitted here and not yet
/// done, so handing one to a worker attached here reads no hot state.
#[derive(Default)]
pub(super) struct InputCache(Lock<Cached>);

/// Inputs by task id, and their bytes together.
type Cached = (HashMap<String, (Ticket, Arc<[u8]>)>, usize);

impl InputCache {
    pub(super) fn put(&self, ticket: &Ticket, payload: &[u8]) {
        if payload.len() > MAX_CACHED_INPUT {
            return;
        }
        let mut inner = self.0.lock();
        if inner.1 + payload.len() > MAX_CACHED_BYTES {
            return;
        }
        inner.1 += payload.len();
        let entry = (ticket.clone(), Arc::from(payload));
        if let Some((_, old)) = inner.0.insert(ticket.task_id.clone(), entry) {
            inner.1 -= old.len();
        }
    }

    pub(super) fn get(&self, task_id: &str) -> Option<(Ticket, Vec<u8>)> {
        self.0
            .lock()
            .0
            .get(task_id)
            .map(|(ticket, payload)| (ticket.clone(), payload.to_vec()))
    }

    pub(super) fn remove(&self, task_id: &str) {
        let mut inner = self.0.lock();
        if let Some((_, payload)) = inner.0.remove(task_id) {
            inner.1 -= payload.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(id: &str) -> Ticket {
        Ticket {
            task_id: id.into(),
            reply: "r".into(),
            index: 0,
        }
    }

    #[test]
    fn the_cache_keeps_small_inputs_until_removed_and_counts_their_bytes() {
        let cache = InputCache::default();
        cache.put(&ticket("a"), b"abc");
        cache.put(&ticket("big"), &vec![0; MAX_CACHED_INPUT + 1]);
        assert_eq!(cache.get("a").map(|(_, p)| p), Some(b"abc".to_vec()));
        assert!(cache.get("big").is_none());
        cache.put(&ticket("a"), b"abcdef");
        assert_eq!(cache.0.lock().1, 6);
        cache.remove("a");
        assert!(cache.get("a").is_none());
        assert_eq!(cache.0.lock().1, 0);
    }

    #[test]
    fn a_closed_lane_gives_events_back() {
        let lane = DispatchLane::default();
        let event = DispatchEvent::Cancel {
            task_id: "t".into(),
        };
        assert_eq!(lane.send(event.clone()), Err(event.clone()));
        let (_, mut rx) = lane.open();
        assert_eq!(lane.send(event.clone()), Ok(()));
        assert_eq!(rx.try_recv().ok(), Some(event.clone()));
        rx.close();
        assert_eq!(lane.send(event.clone()), Err(event.clone()));
        lane.close();
        assert_eq!(lane.send(event.clone()), Err(event));
    }
}
