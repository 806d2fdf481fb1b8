//! Hot state in Redis: the production backend, shared by every controlplane replica.

use std::future::Future;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, MultiplexedConnection};
use ::redis::{Client, RedisError, Script};
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::Mutex;

use crate::{
    Capacity, Claims, HotState, Kv, Leases, Logs, MapPut, PubSub, Queues, Reservation, Reserve,
    Sets, StateError, Write,
};

mod batch;
mod capacity;
mod claims;
mod collections;
mod connect;
mod maps;
mod queue;

/// Deadline of establishing a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Deadline of one command's reply; also the margin a blocking pop gets on top of its wait.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Idle blocking-pop connections kept for reuse; more concurrent pops open (and then close) extra ones.
const IDLE_BLOCKING_CONNECTIONS: usize = 8;

/// Takes the lease if it is free, renews it if the holder already has it.
const ACQUIRE_LEASE: &str = r"
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
";

/// Deletes the lease only if the caller still holds it; atomic, unlike GET then DEL.
const RELEASE_LEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Hot state in one Redis server (cluster mode is not supported yet).
///
/// Every key and channel is namespaced by the key prefix, then by kind
/// (`kv:`, `lease:`, `queue:`, `channel:`, `capacity:`, `set:`, `map:`, `log:`), so
/// one Redis can serve several installs and a key, a lease and a queue of the
/// same name never collide.
pub struct RedisState {
    client: Client,
    commands: ConnectionManager,
    /// Blocking pops run here, never on `commands`: BLPOP holds its connection
    /// until it returns, and on the shared multiplexed connection it would
    /// delay every other command queued behind it. One connection per pop
    /// would cost a TCP handshake and a HELLO per item on a busy queue, so
    /// connections are pooled.
    blocking: Mutex<Vec<MultiplexedConnection>>,
    key_prefix: String,
    acquire_lease: Script,
    release_lease: Script,
    try_reserve_batch: Script,
    release: Script,
    claim_many: Script,
    unclaim: Script,
}

impl RedisState {
    fn name(&self, kind: &str, name: &str) -> String {
        format!("{}{kind}:{name}", self.key_prefix)
    }

    /// A handle on the shared command connection; clones are cheap and multiplexed.
    fn commands(&self) -> ConnectionManager {
        self.commands.clone()
    }
}

/// Milliseconds for PX and BLPOP, rounded up and at least 1: Redis rejects PX 0 and reads a 0 wait as forever.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Runs a Redis future under a deadline of our own, on top of any the client sets.
async fn deadline<T>(
    operation: &'static str,
    limit: Duration,
    future: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, StateError> {
    match tokio::time::timeout(limit, future).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(StateError::Timeout(operation)),
    }
}

#[async_trait::async_trait]
impl HotState for RedisState {
    fn backend(&self) -> &'static str {
        "redis"
    }

    async fn ping(&self) -> Result<(), StateError> {
        let _: String = ::redis::cmd("PING")
            .query_async(&mut self.commands())
            .await?;
        Ok(())
    }

    async fn write_batch(&self, writes: &[Write]) -> Result<(), StateError> {
        self.pipelined_writes(writes).await
    }
}

#[async_trait::async_trait]
impl Kv for RedisState {
    async fn set_with_ttl(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StateError> {
        let _: () = ::redis::cmd("SET")
            .arg(self.name("kv", key))
            .arg(value)
            .arg("PX")
            .arg(millis(ttl))
            .query_async(&mut self.commands())
            .await?;
        Ok(())
    }

    async fn set_if_absent(
        &self,
        key: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let set: Option<String> = ::redis::cmd("SET")
            .arg(self.name("kv", key))
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(millis(ttl))
            .query_async(&mut self.commands())
            .await?;
        Ok(set.is_some())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StateError> {
        Ok(::redis::cmd("GET")
            .arg(self.name("kv", key))
            .query_async(&mut self.commands())
            .await?)
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        let deleted: u64 = ::redis::cmd("DEL")
            .arg(self.name("kv", key))
            .query_async(&mut self.commands())
            .await?;
        Ok(deleted > 0)
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StateError> {
        self.kv_get_many(keys).await
    }
}

#[async_trait::async_trait]
impl Leases for RedisState {
    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let acquired: bool = self
            .acquire_lease
            .key(self.name("lease", name))
            .arg(holder)
            .arg(millis(ttl))
            .invoke_async(&mut self.commands())
            .await?;
        Ok(acquired)
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<bool, StateError> {
        let released: bool = self
            .release_lease
            .key(self.name("lease", name))
            .arg(holder)
            .invoke_async(&mut self.commands())
            .await?;
        Ok(released)
    }
}

#[async_trait::async_trait]
impl Queues for RedisState {
    async fn push(&self, queue: &str, value: &[u8]) -> Result<(), StateError> {
        let _: u64 = ::redis::cmd("RPUSH")
            .arg(self.name("queue", queue))
            .arg(value)
            .query_async(&mut self.commands())
            .await?;
        Ok(())
    }

    async fn pop(&self, queue: &str, wait: Duration) -> Result<Option<Vec<u8>>, StateError> {
        let key = self.name("queue", queue);
        if wait.is_zero() {
            return Ok(::redis::cmd("LPOP")
                .arg(&key)
                .query_async(&mut self.commands())
                .await?);
        }
        self.pop_blocking(&key, wait).await
    }

    async fn pop_many(&self, queue: &str, max: usize) -> Result<Vec<Vec<u8>>, StateError> {
        self.pop_up_to(queue, max).await
    }

    async fn queue_len(&self, queue: &str) -> Result<u64, StateError> {
        Ok(::redis::cmd("LLEN")
            .arg(self.name("queue", queue))
            .query_async(&mut self.commands())
            .await?)
    }

    async fn push_capped(
        &self,
        queue: &str,
        values: &[Vec<u8>],
        max_len: u64,
    ) -> Result<Option<u64>, StateError> {
        self.queue_push_capped(queue, values, max_len).await
    }

    async fn queue_delete(&self, queue: &str) -> Result<u64, StateError> {
        self.queue_clear(queue).await
    }
}

#[async_trait::async_trait]
impl Claims for RedisState {
    async fn claim(
        &self,
        queue: &str,
        claims: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError> {
        self.claim_one(queue, claims, wait).await
    }

    async fn claim_many(
        &self,
        queue: &str,
        claims: &str,
        max: usize,
    ) -> Result<Vec<Vec<u8>>, StateError> {
        self.claim_up_to(queue, claims, max).await
    }

    async fn unclaim(
        &self,
        claims: &str,
        items: &[Vec<u8>],
        requeue: Option<&str>,
    ) -> Result<(), StateError> {
        self.settle(claims, items, requeue).await
    }

    async fn claimed(&self, claims: &str) -> Result<Vec<Vec<u8>>, StateError> {
        self.claims_of(claims).await
    }
}

#[async_trait::async_trait]
impl crate::Maps for RedisState {
    async fn map_put(
        &self,
        map: &str,
        entries: &[(Vec<u8>, Vec<u8>)],
        max_entries: u64,
        keep_existing: bool,
    ) -> Result<MapPut, StateError> {
        self.hash_put(map, entries, max_entries, keep_existing)
            .await
    }

    async fn map_get(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.hash_get(map, field).await
    }

    async fn map_take(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.hash_take(map, field).await
    }

    async fn map_len(&self, map: &str) -> Result<u64, StateError> {
        self.hash_len(map).await
    }

    async fn map_fields(&self, map: &str) -> Result<Vec<Vec<u8>>, StateError> {
        self.hash_fields(map).await
    }

    async fn map_entries(&self, map: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StateError> {
        self.hash_entries(map).await
    }

    async fn map_delete(&self, map: &str) -> Result<bool, StateError> {
        self.hash_delete(map).await
    }
}

#[async_trait::async_trait]
impl PubSub for RedisState {
    async fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StateError> {
        let _: u64 = ::redis::cmd("PUBLISH")
            .arg(self.name("channel", channel))
            .arg(message)
            .query_async(&mut self.commands())
            .await?;
        Ok(())
    }

    /// Opens a connection of its own; the stream ends if that connection is lost.
    async fn subscribe(&self, channel: &str) -> Result<BoxStream<'static, Vec<u8>>, StateError> {
        let channel = self.name("channel", channel);
        let subscribed = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            // Returns only once Redis has acknowledged the SUBSCRIBE, so a
            // publish made after this call returns is delivered.
            pubsub.subscribe(&channel).await?;
            Ok::<_, RedisError>(pubsub)
        };
        let pubsub = deadline("subscribe", CONNECT_TIMEOUT + COMMAND_TIMEOUT, subscribed).await?;
        Ok(pubsub
            .into_on_message()
            .map(|message| message.get_payload_bytes().to_vec())
            .boxed())
    }
}

#[async_trait::async_trait]
impl Capacity for RedisState {
    async fn set_capacity(&self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError> {
        self.capacity_set(key, amounts).await
    }

    async fn try_reserve_batch(
        &self,
        reservations: &[Reserve<'_>],
    ) -> Result<Vec<Reservation>, StateError> {
        self.capacity_try_reserve_batch(reservations).await
    }

    async fn release(&self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError> {
        self.capacity_release(key, amounts).await
    }

    async fn get_capacity(&self, key: &str) -> Result<Option<Vec<(String, i64)>>, StateError> {
        self.capacity_get(key).await
    }

    async fn delete_capacity(&self, key: &str) -> Result<bool, StateError> {
        self.capacity_delete(key).await
    }
}

#[async_trait::async_trait]
impl Sets for RedisState {
    async fn set_add(&self, set: &str, member: &str) -> Result<bool, StateError> {
        self.set_insert(set, member).await
    }

    async fn set_remove(&self, set: &str, member: &str) -> Result<bool, StateError> {
        self.set_delete(set, member).await
    }

    async fn set_members(&self, set: &str) -> Result<Vec<String>, StateError> {
        self.set_list(set).await
    }
}

#[async_trait::async_trait]
impl Logs for RedisState {
    async fn log_append(
        &self,
        key: &str,
        entry: &[u8],
        max_entries: u64,
        ttl: Duration,
    ) -> Result<(), StateError> {
        self.log_push(key, entry, max_entries, ttl).await
    }

    async fn log_range(&self, key: &str) -> Result<Vec<Vec<u8>>, StateError> {
        self.log_entries(key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_rounds_up_and_is_never_zero() {
        assert_eq!(millis(Duration::ZERO), 1);
        assert_eq!(millis(Duration::from_micros(1500)), 2);
        assert_eq!(millis(Duration::from_millis(250)), 250);
    }
}
