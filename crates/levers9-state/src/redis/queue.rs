//! Blocking pops and claims, on pooled connections of their own.

use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Cmd, FromRedisValue};

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
        let popped: Option<(Vec<u8>, Vec<u8>)> = self
            .blocking(wait, |seconds| {
                let mut command = ::redis::cmd("BLPOP");
                command.arg(key).arg(seconds);
                command
            })
            .await?;
        Ok(popped.map(|(_, value)| value))
    }

    /// BLMOVE from the head of `from` to the tail of `to`, for up to `wait`
    /// (which must not be zero), on a pooled connection.
    pub(super) async fn move_blocking(
        &self,
        from: &str,
        to: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError> {
        self.blocking(wait, |seconds| {
            let mut command = ::redis::cmd("BLMOVE");
            command
                .arg(from)
                .arg(to)
                .arg("LEFT")
                .arg("RIGHT")
                .arg(seconds);
            command
        })
        .await
    }

    /// Runs the blocking command `command(seconds)` on a pooled connection.
    async fn blocking<T: FromRedisValue>(
        &self,
        wait: Duration,
        command: impl Fn(f64) -> Cmd,
    ) -> Result<T, StateError> {
        // Fractional seconds (Redis >= 6); 0 would mean forever.
        let command = command(millis(wait) as f64 / 1000.0);
        let pooled = self.blocking.lock().await.pop();
        let (conn, answer) = match pooled {
            Some(mut conn) => match blocking_query(&mut conn, &command, wait).await {
                // The server may have closed an idle pooled connection; a
                // dropped connection served no command, so one retry on a
                // fresh connection cannot take an item twice.
                Err(StateError::Redis(e)) if e.is_connection_dropped() || e.is_io_error() => {
                    let mut conn = self.blocking_connection().await?;
                    let answer = blocking_query(&mut conn, &command, wait).await?;
                    (conn, answer)
                }
                answer => (conn, answer?),
            },
            None => {
                let mut conn = self.blocking_connection().await?;
                let answer = blocking_query(&mut conn, &command, wait).await?;
                (conn, answer)
            }
        };
        let mut idle = self.blocking.lock().await;
        // Beyond the cap, the connection is closed here by being dropped.
        if idle.len() < IDLE_BLOCKING_CONNECTIONS {
            idle.push(conn);
        }
        Ok(answer)
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
}

async fn blocking_query<T: FromRedisValue>(
    conn: &mut MultiplexedConnection,
    command: &Cmd,
    wait: Duration,
) -> Result<T, StateError> {
    deadline("pop", wait + COMMAND_TIMEOUT, command.query_async(conn)).await
}
