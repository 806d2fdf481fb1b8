//! The batch calls: one round trip for many keys, writes or queue items.

use crate::{StateError, Write};

use super::{millis, RedisState};

impl RedisState {
    pub(super) async fn kv_get_many(
        &self,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, StateError> {
        // MGET needs at least one key.
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut mget = ::redis::cmd("MGET");
        for key in keys {
            mget.arg(self.name("kv", key));
        }
        Ok(mget.query_async(&mut self.commands()).await?)
    }

    /// A pipeline, not MULTI/EXEC: the writes are independent, and Redis
    /// runs a connection's commands in the order they were sent.
    pub(super) async fn pipelined_writes(&self, writes: &[Write]) -> Result<(), StateError> {
        if writes.is_empty() {
            return Ok(());
        }
        let mut pipe = ::redis::pipe();
        for write in writes {
            match write {
                Write::Set { key, value, ttl } => pipe
                    .cmd("SET")
                    .arg(self.name("kv", key))
                    .arg(value.as_slice())
                    .arg("PX")
                    .arg(millis(*ttl)),
                Write::SetAdd { set, member } => {
                    pipe.cmd("SADD").arg(self.name("set", set)).arg(member)
                }
                Write::SetRemove { set, member } => {
                    pipe.cmd("SREM").arg(self.name("set", set)).arg(member)
                }
                Write::Push { queue, value } => pipe
                    .cmd("RPUSH")
                    .arg(self.name("queue", queue))
                    .arg(value.as_slice()),
            }
            .ignore();
        }
        let _: () = pipe.query_async(&mut self.commands()).await?;
        Ok(())
    }

    pub(super) async fn pop_up_to(
        &self,
        queue: &str,
        max: usize,
    ) -> Result<Vec<Vec<u8>>, StateError> {
        // LPOP with a count of 0 would return nothing anyway.
        if max == 0 {
            return Ok(Vec::new());
        }
        // LPOP with a count (Redis >= 6.2) answers nil for an empty queue.
        let popped: Option<Vec<Vec<u8>>> = ::redis::cmd("LPOP")
            .arg(self.name("queue", queue))
            .arg(max)
            .query_async(&mut self.commands())
            .await?;
        Ok(popped.unwrap_or_default())
    }
}
