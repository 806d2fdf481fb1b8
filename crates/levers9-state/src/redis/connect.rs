//! Connecting to Redis: by URL or by address, password and database.

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, Script};
use tokio::sync::Mutex;

use super::capacity::{RELEASE, TRY_RESERVE_BATCH};
use super::{deadline, RedisState, ACQUIRE_LEASE, COMMAND_TIMEOUT, CONNECT_TIMEOUT, RELEASE_LEASE};
use crate::StateError;

impl RedisState {
    /// Connects to the Redis at `url` (`redis://[:password@]host:port[/db]`); `key_prefix` namespaces every key and channel.
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
            try_reserve_batch: Script::new(TRY_RESERVE_BATCH),
            release: Script::new(RELEASE),
            claim_many: Script::new(super::claims::CLAIM_MANY),
            unclaim: Script::new(super::claims::UNCLAIM),
        })
    }
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
}
