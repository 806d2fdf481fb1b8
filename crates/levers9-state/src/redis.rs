//! Hot state in Redis: the production backend, shared by every controlplane replica.

use std::future::Future;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use ::redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo,
    RedisError, Script,
};
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::Mutex;

use crate::{HotState, StateError};

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
/// (`kv:`, `lease:`, `queue:`, `channel:`), so one Redis can serve several
/// installs and a key, a lease and a queue of the same name never collide.
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
}

impl RedisState {
    /// Connects to the Redis at `url` (redis://[:password@]host:port[/db]); `key_prefix` namespaces every key and channel.
    pub async fn connect(url: &str, key_prefix: &str) -> Result<RedisState, StateError> {
        Self::from_client(Client::open(url)?, key_prefix).await
    }

    /// Connects to the first of `addrs` ("host:port"); cluster mode is not supported yet, so the others are ignored.
    ///
    /// The password goes straight into the connection settings and is never
    /// formatted into a URL or any other string that could end up in a log.
    pub async fn connect_with(
        addrs: &[String],
        password: Option<&str>,
        db: i64,
        key_prefix: &str,
    ) -> Result<RedisState, StateError> {
        let addr = addrs.first().ok_or(StateError::NoAddress)?;
        let (host, port) = parse_host_port(addr)?;
        let mut settings = RedisConnectionInfo::default().set_db(db);
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        let info = ConnectionAddr::Tcp(host, port)
            .into_connection_info()?
            .set_redis_settings(settings);
        Self::from_client(Client::open(info)?, key_prefix).await
    }

    async fn from_client(client: Client, key_prefix: &str) -> Result<RedisState, StateError> {
        // Three retries back off for about 0.7 s in all, so an unreachable
        // server reports its real error (e.g. connection refused) rather than
        // running into the connect deadline below.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(3)
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT));
        let commands = deadline(
            "connect",
            CONNECT_TIMEOUT,
            ConnectionManager::new_with_config(client.clone(), config),
        )
        .await?;
        Ok(RedisState {
            client,
            commands,
            blocking: Mutex::new(Vec::new()),
            key_prefix: key_prefix.to_owned(),
            acquire_lease: Script::new(ACQUIRE_LEASE),
            release_lease: Script::new(RELEASE_LEASE),
        })
    }

    fn name(&self, kind: &str, name: &str) -> String {
        format!("{}{kind}:{name}", self.key_prefix)
    }

    /// A handle on the shared command connection; clones are cheap and multiplexed.
    fn commands(&self) -> ConnectionManager {
        self.commands.clone()
    }

    async fn blocking_connection(&self) -> Result<MultiplexedConnection, StateError> {
        // No response timeout: each BLPOP gets its own deadline from its wait.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(None);
        deadline(
            "connect",
            CONNECT_TIMEOUT,
            self.client
                .get_multiplexed_async_connection_with_config(&config),
        )
        .await
    }

    async fn blocking_pop(
        &self,
        conn: &mut MultiplexedConnection,
        key: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError> {
        // BLPOP takes fractional seconds (Redis >= 6); 0 would mean forever.
        let seconds = millis(wait) as f64 / 1000.0;
        let popped: Option<(Vec<u8>, Vec<u8>)> = deadline(
            "pop",
            wait + COMMAND_TIMEOUT,
            ::redis::cmd("BLPOP")
                .arg(key)
                .arg(seconds)
                .query_async(conn),
        )
        .await?;
        Ok(popped.map(|(_, value)| value))
    }
}

/// Milliseconds for PX and BLPOP, rounded up and at least 1: Redis rejects PX 0 and reads a 0 wait as forever.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Splits "host:port", accepting "[v6]:port" too.
fn parse_host_port(addr: &str) -> Result<(String, u16), StateError> {
    let invalid = || StateError::InvalidAddress(addr.to_owned());
    let (host, port) = addr.rsplit_once(':').ok_or_else(invalid)?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = port.parse().map_err(|_| invalid())?;
    if host.is_empty() {
        return Err(invalid());
    }
    Ok((host.to_owned(), port))
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
        let pooled = self.blocking.lock().await.pop();
        let (conn, popped) = match pooled {
            Some(mut conn) => match self.blocking_pop(&mut conn, &key, wait).await {
                // The server may have closed an idle pooled connection; a
                // dropped connection served no BLPOP, so one retry on a fresh
                // connection cannot pop an item twice.
                Err(StateError::Redis(e)) if e.is_connection_dropped() || e.is_io_error() => {
                    let mut conn = self.blocking_connection().await?;
                    let popped = self.blocking_pop(&mut conn, &key, wait).await?;
                    (conn, popped)
                }
                popped => (conn, popped?),
            },
            None => {
                let mut conn = self.blocking_connection().await?;
                let popped = self.blocking_pop(&mut conn, &key, wait).await?;
                (conn, popped)
            }
        };
        let mut idle = self.blocking.lock().await;
        // Beyond the cap, the connection is closed here by being dropped.
        if idle.len() < IDLE_BLOCKING_CONNECTIONS {
            idle.push(conn);
        }
        Ok(popped)
    }

    async fn queue_len(&self, queue: &str) -> Result<u64, StateError> {
        Ok(::redis::cmd("LLEN")
            .arg(self.name("queue", queue))
            .query_async(&mut self.commands())
            .await?)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_is_parsed() {
        let parsed = parse_host_port("redis.internal:6380").unwrap();
        assert_eq!(parsed, ("redis.internal".to_owned(), 6380));
        let parsed = parse_host_port("[::1]:6379").unwrap();
        assert_eq!(parsed, ("::1".to_owned(), 6379));
    }

    #[test]
    fn address_without_a_port_is_rejected() {
        for bad in ["redis.internal", "redis.internal:", ":6379", "host:port"] {
            assert!(
                matches!(parse_host_port(bad), Err(StateError::InvalidAddress(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn millis_rounds_up_and_is_never_zero() {
        assert_eq!(millis(Duration::ZERO), 1);
        assert_eq!(millis(Duration::from_micros(1500)), 2);
        assert_eq!(millis(Duration::from_millis(250)), 250);
    }
}
