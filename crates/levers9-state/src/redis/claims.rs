//! Claims: items moved from a queue into a claims list in one step, so a
//! process that dies holding them leaves them where another finds them.

use std::time::Duration;

use crate::StateError;

use super::RedisState;

/// Moves up to ARGV[1] items from the head of KEYS[1] to the tail of
/// KEYS[2]; returns them.
pub(super) const CLAIM_MANY: &str = r"
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local item = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not item then break end
  out[#out + 1] = item
end
return out
";

/// Removes one occurrence of each ARGV from KEYS[1] and, when KEYS[2] is
/// given, pushes each to its tail.
pub(super) const UNCLAIM: &str = r"
for i = 1, #ARGV do
  redis.call('LREM', KEYS[1], 1, ARGV[i])
  if KEYS[2] then
    redis.call('RPUSH', KEYS[2], ARGV[i])
  end
end
return 0
";

impl RedisState {
    pub(super) async fn claim_one(
        &self,
        queue: &str,
        claims: &str,
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, StateError> {
        let (from, to) = (self.name("queue", queue), self.name("queue", claims));
        if wait.is_zero() {
            return Ok(::redis::cmd("LMOVE")
                .arg(&from)
                .arg(&to)
                .arg("LEFT")
                .arg("RIGHT")
                .query_async(&mut self.commands())
                .await?);
        }
        self.move_blocking(&from, &to, wait).await
    }

    pub(super) async fn claim_up_to(
        &self,
        queue: &str,
        claims: &str,
        max: usize,
    ) -> Result<Vec<Vec<u8>>, StateError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        Ok(self
            .claim_many
            .key(self.name("queue", queue))
            .key(self.name("queue", claims))
            .arg(max)
            .invoke_async(&mut self.commands())
            .await?)
    }

    pub(super) async fn settle(
        &self,
        claims: &str,
        items: &[Vec<u8>],
        requeue: Option<&str>,
    ) -> Result<(), StateError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut invocation = self.unclaim.key(self.name("queue", claims));
        if let Some(queue) = requeue {
            invocation.key(self.name("queue", queue));
        }
        for item in items {
            invocation.arg(item.as_slice());
        }
        let _: i64 = invocation.invoke_async(&mut self.commands()).await?;
        Ok(())
    }

    pub(super) async fn claims_of(&self, claims: &str) -> Result<Vec<Vec<u8>>, StateError> {
        Ok(::redis::cmd("LRANGE")
            .arg(self.name("queue", claims))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.commands())
            .await?)
    }
}
