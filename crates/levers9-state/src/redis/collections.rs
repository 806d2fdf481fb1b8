//! Sets (Redis sets) and bounded logs (Redis lists with an expiry).

use std::time::Duration;

use crate::StateError;

use super::{millis, RedisState};

impl RedisState {
    pub(super) async fn set_insert(&self, set: &str, member: &str) -> Result<bool, StateError> {
        let added: u64 = ::redis::cmd("SADD")
            .arg(self.name("set", set))
            .arg(member)
            .query_async(&mut self.commands())
            .await?;
        Ok(added > 0)
    }

    pub(super) async fn set_delete(&self, set: &str, member: &str) -> Result<bool, StateError> {
        let removed: u64 = ::redis::cmd("SREM")
            .arg(self.name("set", set))
            .arg(member)
            .query_async(&mut self.commands())
            .await?;
        Ok(removed > 0)
    }

    pub(super) async fn set_list(&self, set: &str) -> Result<Vec<String>, StateError> {
        let mut members: Vec<String> = ::redis::cmd("SMEMBERS")
            .arg(self.name("set", set))
            .query_async(&mut self.commands())
            .await?;
        // Redis returns a set's members in no particular order.
        members.sort_unstable();
        Ok(members)
    }

    pub(super) async fn log_push(
        &self,
        key: &str,
        entry: &[u8],
        max_entries: u64,
        ttl: Duration,
    ) -> Result<(), StateError> {
        let key = self.name("log", key);
        if max_entries == 0 {
            // LTRIM -0 -1 would keep everything rather than nothing.
            let _: u64 = ::redis::cmd("DEL")
                .arg(&key)
                .query_async(&mut self.commands())
                .await?;
            return Ok(());
        }
        // A negative start counts from the tail; Redis clamps it to the head
        // of a shorter list.
        let keep_from = -i64::try_from(max_entries).unwrap_or(i64::MAX);
        // MULTI/EXEC, so no reader sees the log untrimmed or without an
        // expiry, and a connection lost midway cannot leave one without an expiry.
        let _: () = ::redis::pipe()
            .atomic()
            .cmd("RPUSH")
            .arg(&key)
            .arg(entry)
            .ignore()
            .cmd("LTRIM")
            .arg(&key)
            .arg(keep_from)
            .arg(-1)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(millis(ttl))
            .ignore()
            .query_async(&mut self.commands())
            .await?;
        Ok(())
    }

    pub(super) async fn log_entries(&self, key: &str) -> Result<Vec<Vec<u8>>, StateError> {
        Ok(::redis::cmd("LRANGE")
            .arg(self.name("log", key))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.commands())
            .await?)
    }
}
