//! In-process hot state: the embedded default of a single-machine install.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt};
use tokio::sync::{broadcast, Mutex};
use tokio::time::Instant;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;

use crate::{
    Capacity, HotState, Kv, Leases, Logs, MapPut, PubSub, Queues, Reservation, Reserve, Sets,
    StateError, Write,
};

use self::capacity::Capacities;
use self::expiring::Expiring;
use self::maps::Maps;
use self::queues::Queue;

mod capacity;
mod expiring;
mod maps;
mod queues;

/// Messages a subscriber may fall behind by before it starts losing the oldest ones.
const CHANNEL_CAPACITY: usize = 1024;

/// Hot state kept in this process; clones share the same state.
///
/// Only tokio mutexes are used, so no lock can be poisoned and none is held
/// across an await point. A subscriber that falls more than 1024 messages
/// behind skips the messages it lost (with a warning) and carries on with the
/// oldest one still buffered.
#[derive(Clone, Default)]
pub struct MemoryState {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    keys: Mutex<Expiring<Vec<u8>>>,
    leases: Mutex<Expiring<String>>,
    queues: Mutex<HashMap<String, Queue>>,
    channels: Mutex<HashMap<String, broadcast::Sender<Vec<u8>>>>,
    capacities: Mutex<Capacities>,
    /// Emptied sets are removed, as Redis does.
    sets: Mutex<HashMap<String, BTreeSet<String>>>,
    logs: Mutex<Expiring<VecDeque<Vec<u8>>>>,
    maps: Mutex<Maps>,
}

impl MemoryState {
    /// An empty state, shared only with its clones.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait::async_trait]
impl HotState for MemoryState {
    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn ping(&self) -> Result<(), StateError> {
        Ok(())
    }

    async fn write_batch(&self, writes: &[Write]) -> Result<(), StateError> {
        // In process there is no round trip to save: the single calls, in order.
        for write in writes {
            match write {
                Write::Set { key, value, ttl } => self.set_with_ttl(key, value, *ttl).await?,
                Write::SetAdd { set, member } => {
                    self.set_add(set, member).await?;
                }
                Write::SetRemove { set, member } => {
                    self.set_remove(set, member).await?;
                }
                Write::Push { queue, value } => self.push(queue, value).await?,
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Kv for MemoryState {
    async fn set_with_ttl(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StateError> {
        let mut keys = self.inner.keys.lock().await;
        keys.insert(key, value.to_vec(), ttl, Instant::now());
        Ok(())
    }

    async fn set_if_absent(
        &self,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let mut keys = self.inner.keys.lock().await;
        let now = Instant::now();
        if keys.get(key, now).is_some() {
            return Ok(false);
        }
        keys.insert(key, value.to_vec(), ttl, now);
        Ok(true)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StateError> {
        let keys = self.inner.keys.lock().await;
        Ok(keys.get(key, Instant::now()).cloned())
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        let mut keys = self.inner.keys.lock().await;
        Ok(keys.remove(key, Instant::now()).is_some())
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StateError> {
        let stored = self.inner.keys.lock().await;
        let now = Instant::now();
        Ok(keys.iter().map(|k| stored.get(k, now).cloned()).collect())
    }
}

#[async_trait::async_trait]
impl Leases for MemoryState {
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let mut leases = self.inner.leases.lock().await;
        let now = Instant::now();
        if leases
            .get(name, now)
            .is_some_and(|current| current != holder)
        {
            return Ok(false);
        }
        leases.insert(name, holder.to_owned(), ttl, now);
        Ok(true)
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<bool, StateError> {
        let mut leases = self.inner.leases.lock().await;
        let now = Instant::now();
        if leases
            .get(name, now)
            .is_some_and(|current| current == holder)
        {
            leases.remove(name, now);
            return Ok(true);
        }
        Ok(false)
    }
}

#[async_trait::async_trait]
impl crate::Maps for MemoryState {
    async fn map_put(
        &self,
        map: &str,
        entries: &[(Vec<u8>, Vec<u8>)],
        max_entries: u64,
        keep_existing: bool,
    ) -> Result<MapPut, StateError> {
        let mut maps = self.inner.maps.lock().await;
        Ok(maps.put(map, entries, max_entries, keep_existing))
    }

    async fn map_get(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.inner.maps.lock().await.get(map, field))
    }

    async fn map_take(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.inner.maps.lock().await.take(map, field))
    }

    async fn map_len(&self, map: &str) -> Result<u64, StateError> {
        Ok(self.inner.maps.lock().await.len(map))
    }

    async fn map_fields(&self, map: &str) -> Result<Vec<Vec<u8>>, StateError> {
        Ok(self.inner.maps.lock().await.fields(map))
    }

    async fn map_entries(&self, map: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StateError> {
        Ok(self.inner.maps.lock().await.entries(map))
    }

    async fn map_delete(&self, map: &str) -> Result<bool, StateError> {
        Ok(self.inner.maps.lock().await.delete(map))
    }
}

#[async_trait::async_trait]
impl PubSub for MemoryState {
    async fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StateError> {
        let mut channels = self.inner.channels.lock().await;
        if let Some(sender) = channels.get(channel) {
            if sender.send(message.to_vec()).is_err() {
                // Every subscriber is gone.
                channels.remove(channel);
            }
        }
        Ok(())
    }

    async fn subscribe(&self, channel: &str) -> Result<BoxStream<'static, Vec<u8>>, StateError> {
        let mut channels = self.inner.channels.lock().await;
        // Channels whose subscribers all left without a publish since.
        channels.retain(|_, sender| sender.receiver_count() > 0);
        let receiver = channels
            .entry(channel.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe();
        let channel = channel.to_owned();
        let messages = BroadcastStream::new(receiver).filter_map(move |received| {
            let message = match received {
                Ok(message) => Some(message),
                Err(BroadcastStreamRecvError::Lagged(skipped)) => {
                    tracing::warn!(%channel, skipped, "slow subscriber skipped messages");
                    None
                }
            };
            futures::future::ready(message)
        });
        Ok(messages.boxed())
    }
}

#[async_trait::async_trait]
impl Capacity for MemoryState {
    async fn set_capacity(&self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError> {
        self.inner.capacities.lock().await.set(key, amounts);
        Ok(())
    }

    async fn try_reserve_batch(
        &self,
        reservations: &[Reserve<'_>],
    ) -> Result<Vec<Reservation>, StateError> {
        self.inner
            .capacities
            .lock()
            .await
            .try_reserve_batch(reservations)
    }

    async fn release(&self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError> {
        self.inner.capacities.lock().await.release(key, amounts)
    }

    async fn get_capacity(&self, key: &str) -> Result<Option<Vec<(String, i64)>>, StateError> {
        Ok(self.inner.capacities.lock().await.get(key))
    }

    async fn delete_capacity(&self, key: &str) -> Result<bool, StateError> {
        Ok(self.inner.capacities.lock().await.delete(key))
    }
}

#[async_trait::async_trait]
impl Sets for MemoryState {
    async fn set_add(&self, set: &str, member: &str) -> Result<bool, StateError> {
        let mut sets = self.inner.sets.lock().await;
        let members = sets.entry(set.to_owned()).or_default();
        Ok(members.insert(member.to_owned()))
    }

    async fn set_remove(&self, set: &str, member: &str) -> Result<bool, StateError> {
        let mut sets = self.inner.sets.lock().await;
        let Some(members) = sets.get_mut(set) else {
            return Ok(false);
        };
        let removed = members.remove(member);
        if members.is_empty() {
            sets.remove(set);
        }
        Ok(removed)
    }

    async fn set_members(&self, set: &str) -> Result<Vec<String>, StateError> {
        let sets = self.inner.sets.lock().await;
        Ok(sets
            .get(set)
            .map(|members| members.iter().cloned().collect())
            .unwrap_or_default())
    }
}

#[async_trait::async_trait]
impl Logs for MemoryState {
    async fn log_append(
        &self,
        key: &str,
        entry: &[u8],
        max_entries: u64,
        ttl: Duration,
    ) -> Result<(), StateError> {
        let mut logs = self.inner.logs.lock().await;
        let now = Instant::now();
        // An expired log starts afresh, as it would on Redis.
        let mut entries = logs.remove(key, now).unwrap_or_default();
        if max_entries == 0 {
            return Ok(());
        }
        entries.push_back(entry.to_vec());
        let keep = usize::try_from(max_entries).unwrap_or(usize::MAX);
        if entries.len() > keep {
            entries.drain(..entries.len() - keep);
        }
        logs.insert(key, entries, ttl, now);
        Ok(())
    }

    async fn log_range(&self, key: &str) -> Result<Vec<Vec<u8>>, StateError> {
        let logs = self.inner.logs.lock().await;
        Ok(logs
            .get(key, Instant::now())
            .map(|entries| entries.iter().cloned().collect())
            .unwrap_or_default())
    }
}
