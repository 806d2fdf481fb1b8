//! Blocking pops, on pooled connections of their own.

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::AsyncConnectionConfig;

use super::{
    deadline, millis, RedisState, COMMAND_TIMEOUT, CONNECT_TIMEOUT, IDLE_BLOCKING_CONNECTIONS,
};
use crate::StateError;

impl RedisState {
    /// BLPOP for up to `wait` (which must not be zero) on a pooled connection.
    pub(super) async fn pop_blocking(
        &self,
        key: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError> {
        let pooled = self.blocking.lock().await.pop();
        let (conn, popped) = match pooled {
            Some(mut conn) => match self.blocking_pop(&mut conn, key, wait).await {
                // The server may have closed an idle pooled connection; a
                // dropped connection served no BLPOP, so one retry on a fresh
                // connection cannot pop an item twice.
                Err(StateError::Redis(e)) if e.is_connection_dropped() || e.is_io_error() => {
                    let mut conn = self.blocking_connection().await?;
                    let popped = self.blocking_pop(&mut conn, key, wait).await?;
                    (conn, popped)
                }
                popped => (conn, popped?),
            },
            None => {
                let mut conn = self.blocking_connection().await?;
                let popped = self.blocking_pop(&mut conn, key, wait).await?;
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
